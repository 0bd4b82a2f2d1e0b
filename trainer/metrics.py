"""The metrics log (JSON lines) and the learning-curve plot; episode statistics come from
:mod:`gem_core.episodes` (imported from here too)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gem_core.episodes import episode_stats, episode_success, last_turn_success  # noqa: F401 (also imported from here)

#: The keys of a metrics.jsonl record that measure time: they differ from run to run, the rest not.
TIMINGS = ("rollout_seconds", "train_seconds", "step_seconds", "tokens_per_second", "train_tokens_per_second")

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
        ax.plot(steps, [r.get(key, float("nan")) for r in records], marker="o", markersize=3)
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
