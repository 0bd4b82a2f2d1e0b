"""The metrics log (JSON lines), the learning-curve plot, and what a batch's failed episodes
were; episode statistics come from :mod:`gem_core.episodes` (imported from here too)."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gem_core.episodes import (  # noqa: F401 (also imported from here)
    Episode,
    episode_stats,
    episode_success,
    failure_counts,
    last_turn_success,
)

#: The keys of a metrics.jsonl record that measure time: they differ from run to run, the rest not.
TIMINGS = ("rollout_seconds", "train_seconds", "step_seconds", "tokens_per_second", "train_tokens_per_second")

#: The statistics of a step's record taken over its valid episodes: None in a step whose every
#: episode failed.
OVER_VALID_EPISODES = ("mean_return", "success_rate", "turns_per_episode", "turns_per_success",
                       "format_error_rate", "tool_call_rate")

#: The curves of the learning-curve plot: metric key, panel title.
CURVES = (
    ("mean_return", "mean return"),
    ("success_rate", "success rate"),
    ("turns_per_episode", "turns per episode"),
    ("tokens_per_second", "sampled tokens / s"),
)


def percent(rate: float) -> str:
    """A rate as every report shows it: ``0.6875`` is ``68.8%``."""
    return f"{rate:.1%}"


def failure_shares(episodes: Sequence[Episode]) -> dict[str, float]:
    """Per environment, in the order their ids first come: ``failed_rate/<env id>``, the share of
    that environment's episodes that failed, and ``failed_<kind>/<env id>`` for each failure kind
    that occurred there (the per-environment side of :func:`episode_stats`' ``failed_rate`` and
    ``failed_<kind>``)."""
    by_env: dict[str, list[Episode]] = {}
    for episode in episodes:
        by_env.setdefault(episode.env_id, []).append(episode)
    shares: dict[str, float] = {}
    for env_id, played in by_env.items():
        counts = failure_counts(played)
        shares[f"failed_rate/{env_id}"] = sum(counts.values()) / len(played)
        shares.update({f"failed_{kind}/{env_id}": count / len(played) for kind, count in counts.items()})
    return shares


def failures_text(record: dict[str, Any]) -> str:
    """What a step's record says of its failed episodes, for the step line: ``""`` when none
    failed, else the share that failed and, per environment, each kind's share of its episodes
    (``failed 25.0% (malformed 25.0%)``; with several environments, each named)."""
    if not record.get("failed_rate"):
        return ""
    kinds: dict[str, list[str]] = {}
    for key, value in record.items():
        name, _, env_id = key.partition("/")
        if env_id and name.startswith("failed_") and name != "failed_rate":
            kinds.setdefault(env_id, []).append(f"{name.removeprefix('failed_')} {percent(value)}")
    parts = [", ".join(found) if len(kinds) == 1 else f"{env_id}: {', '.join(found)}" for env_id, found in kinds.items()]
    return f"failed {percent(record['failed_rate'])} ({'; '.join(parts)})"


def failure_report(episodes: Sequence[Episode], *, examples: int = 3) -> str:
    """The failed episodes of a batch as one paragraph: per environment, how many of its episodes
    failed, then per kind how many, the most common errors (up to ``examples``) and the seeds."""
    by_env: dict[str, list[Episode]] = {}
    for episode in episodes:
        by_env.setdefault(episode.env_id, []).append(episode)
    parts = []
    for env_id, played in by_env.items():
        failed = [e for e in played if e.failure is not None]
        if not failed:
            continue
        kinds = []
        for kind, count in failure_counts(failed).items():
            of_kind = [e for e in failed if e.failure.kind == kind]  # type: ignore[union-attr]
            errors = Counter(_short(e.failure.error) or "no error given" for e in of_kind)  # type: ignore[union-attr]
            shown = "; ".join(f"{error!r}" + (f" x{n}" if n > 1 else "") for error, n in errors.most_common(examples))
            more = f"; and {len(errors) - examples} other error(s)" if len(errors) > examples else ""
            seeds = ", ".join(str(e.seed) for e in of_kind[:examples]) + (", ..." if len(of_kind) > examples else "")
            kinds.append(f"{count} {kind} ({shown}{more}; seeds {seeds})")
        parts.append(f"{env_id}: {len(failed)} of {len(played)} failed: {', '.join(kinds)}")
    return ". ".join(parts) + "." if parts else ""


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


class MetricsLog:
    """One JSON object per line, appended as training goes."""

    def __init__(self, path: Path):
        self.path = path

    def append(self, record: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, allow_nan=False, default=float) + "\n")

    def read(self) -> list[dict[str, Any]]:
        """The records; a last line cut short by a kill (no newline) is not one."""
        if not self.path.exists():
            return []
        text = self.path.read_text(encoding="utf-8")
        lines = text.split("\n")
        complete = lines[:-1]  # the part after the last newline was never finished
        return [json.loads(line) for line in complete if line.strip()]

    def truncate_after(self, step: int) -> None:
        """Keep only the records of steps up to ``step`` (the checkpoint a run resumes), replacing
        the file at once so that no kill leaves it half-written."""
        kept = [r for r in self.read() if r.get("step", 0) <= step]
        write_atomically(self.path, "".join(json.dumps(r) + "\n" for r in kept))


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file renamed over it."""
    temporary = path.with_name(f".{path.name}.writing")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def plot_learning_curve(records: Sequence[dict[str, Any]], path: Path, *, title: str = "") -> Path:
    """Save the :data:`CURVES` of ``records`` (one per step) as a PNG of four panels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(2, 2, figsize=(9, 6), sharex=True)
    steps = [r["step"] for r in records]
    for ax, (key, label) in zip(axes.flat, CURVES):
        values = [r.get(key) for r in records]
        ax.plot(steps, [float("nan") if v is None else v for v in values], marker="o", markersize=3)
        ax.set_title(label)
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in axes[-1]:
        ax.set_xlabel("step")
    return save_figure(fig, path, title)


def save_figure(fig: Any, path: Path, title: str = "") -> Path:
    """Lay out, title and write a matplotlib figure as a PNG, then free it."""
    import matplotlib.pyplot as plt

    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
