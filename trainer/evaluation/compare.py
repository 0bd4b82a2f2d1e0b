"""Comparing two evaluations (``gem eval compare BASELINE CANDIDATE``).

Per environment both folders played, the candidate's success rate and mean return minus the
baseline's, each with a bootstrap confidence interval over starts (environment id and seed; a
start's value is the mean over its samples). When both evaluations played the same starts, the
starts are resampled in pairs, which removes the spread between starts from the difference;
otherwise each evaluation's starts are resampled on their own. A difference whose interval holds
0 is within noise. The resampling is seeded, so the same folders give the same intervals. Failed
episodes (their environment broke) are left out, as the reports leave them out.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gem_core.errors import GemError

from gem_trainer.evaluation.folder import EPISODES_FILE, REPORT_FILE, SETTINGS_FILE, read_episodes, read_settings
from gem_trainer.evaluation.scores import by_start
from gem_trainer.metrics import episode_success, percent, save_figure

COMPARE_FILE = "compare.json"
PLOT_FILE = "compare.png"
#: Settings whose difference is the point of a comparison, or says nothing about the episodes.
_NOT_COMPARED = {"model", "base_url", "output_dir", "api_key_env", "concurrency", "device", "timeout", "ray_address",
                 "env_hosts", "envs"}


@dataclass
class Difference:
    """One metric of one environment: candidate minus baseline, with its confidence interval."""

    baseline: float
    candidate: float
    difference: float
    low: float
    high: float

    @property
    def within_noise(self) -> bool:
        return self.low <= 0.0 <= self.high


@dataclass
class EnvComparison:
    env_id: str
    paired: bool  # both evaluations played the same starts, resampled in pairs
    starts: tuple[int, int]  # baseline's, candidate's
    episodes: tuple[int, int]
    success_rate: Difference
    mean_return: Difference


def compare_evaluations(baseline: Path, candidate: Path, *, resamples: int = 10_000, confidence: float = 0.95,
                        output_dir: Path | None = None, console: Any = None, seed: int = 0) -> dict[str, Any]:
    """Compare the evaluations in two ``gem eval`` folders; write ``compare.json`` and
    ``compare.png`` into ``output_dir`` (default ``gem-runs/compare-<time>``), print a table on
    ``console``, and return what ``compare.json`` holds."""
    if resamples < 100:
        raise GemError(f"--resamples must be at least 100, got {resamples}.")
    if not 0.5 <= confidence < 1:
        raise GemError(f"--confidence must be within [0.5, 1), got {confidence}.")
    runs = [_starts(folder) for folder in (baseline, candidate)]
    shared = [env_id for env_id in runs[0] if env_id in runs[1]]
    if not shared:
        raise GemError(f"{baseline} and {candidate} played no environment in common "
                       f"({', '.join(runs[0]) or 'none'}; {', '.join(runs[1]) or 'none'}).")
    import numpy as np

    rng = np.random.default_rng(seed)
    comparisons = [_compare(env_id, runs[0][env_id], runs[1][env_id], rng, resamples, confidence) for env_id in shared]
    result = {
        "baseline": str(baseline), "candidate": str(candidate), "confidence": confidence, "resamples": resamples,
        "settings_differ": _differing_settings(baseline, candidate),
        "only_in_baseline": [e for e in runs[0] if e not in runs[1]],
        "only_in_candidate": [e for e in runs[1] if e not in runs[0]],
        "environments": [{**asdict(c), "success_rate": {**asdict(c.success_rate), "within_noise": c.success_rate.within_noise},
                          "mean_return": {**asdict(c.mean_return), "within_noise": c.mean_return.within_noise}}
                         for c in comparisons],
    }
    output = output_dir or Path("gem-runs") / datetime.now().strftime("compare-%Y%m%d-%H%M%S")
    output.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=2)
    (output / COMPARE_FILE).write_text(text)
    plot_comparison(comparisons, output / PLOT_FILE, title=f"{candidate} minus {baseline} ({confidence:.0%} intervals)")
    if console is not None:
        _print(console, result, comparisons, output)
    return json.loads(text)


def _starts(folder: Path) -> dict[str, dict[Any, tuple[float, float, int]]]:
    """Per environment, each start's seed -> (success rate, mean return, samples), in the order played."""
    path = folder / EPISODES_FILE
    if not path.is_file():
        raise GemError(f"{str(folder)!r} is not the folder of a `gem eval` run (no {EPISODES_FILE}).")
    episodes = [episode for episode, _ in read_episodes(path) if episode.valid]  # a failed one scores nothing
    found: dict[str, dict[Any, tuple[float, float, int]]] = {}
    for (env_id, seed), samples in by_start(episodes).items():
        found.setdefault(env_id, {})[seed] = (sum(map(episode_success, samples)) / len(samples),
                                              sum(e.total_reward for e in samples) / len(samples), len(samples))
    return found


def _compare(env_id: str, baseline: dict[Any, tuple[float, float, int]], candidate: dict[Any, tuple[float, float, int]],
             rng: Any, resamples: int, confidence: float) -> EnvComparison:
    import numpy as np

    paired = set(baseline) == set(candidate)
    seeds = sorted(baseline, key=str)
    a = np.asarray([baseline[s][:2] for s in seeds])
    b = np.asarray([candidate[s][:2] for s in (seeds if paired else sorted(candidate, key=str))])
    if paired:
        picks = rng.integers(0, len(a), size=(resamples, len(a)))
        draws = b[picks].mean(axis=1) - a[picks].mean(axis=1)
    else:
        draws = (b[rng.integers(0, len(b), size=(resamples, len(b)))].mean(axis=1)
                 - a[rng.integers(0, len(a), size=(resamples, len(a)))].mean(axis=1))
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail], axis=0)
    metrics = [Difference(float(a[:, m].mean()), float(b[:, m].mean()), float(b[:, m].mean() - a[:, m].mean()),
                          float(low[m]), float(high[m])) for m in (0, 1)]
    episodes = (sum(v[2] for v in baseline.values()), sum(v[2] for v in candidate.values()))
    return EnvComparison(env_id, paired, (len(a), len(b)), episodes, *metrics)


def _differing_settings(baseline: Path, candidate: Path) -> dict[str, list[Any]]:
    """The settings (besides the model) the two evaluations played differently: name -> [baseline's, candidate's]."""
    saved = [_settings(folder) for folder in (baseline, candidate)]
    names = sorted((set(saved[0]) | set(saved[1])) - _NOT_COMPARED)
    return {name: [saved[0].get(name), saved[1].get(name)] for name in names if saved[0].get(name) != saved[1].get(name)}


def _settings(folder: Path) -> dict[str, Any]:
    """What an evaluation played: its settings.json, else its report's settings."""
    if (folder / SETTINGS_FILE).is_file():
        return read_settings(folder)[0]
    try:
        return dict(json.loads((folder / REPORT_FILE).read_text()).get("settings") or {})
    except (OSError, json.JSONDecodeError, AttributeError):
        return {}


def plot_comparison(comparisons: list[EnvComparison], path: Path, *, title: str = "") -> Path:
    """Each environment's difference in success rate and in mean return, as a point with its
    interval, beside a line at 0."""
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(range(len(comparisons)))
    fig, axes = plt.subplots(1, 2, figsize=(11, 1.8 + 0.6 * len(comparisons)), sharey=True)
    for ax, metric, label in ((axes[0], "success_rate", "success rate"), (axes[1], "mean_return", "mean return")):
        for row, c in zip(rows, comparisons):
            d: Difference = getattr(c, metric)
            color = "tab:gray" if d.within_noise else "tab:green" if d.difference > 0 else "tab:red"
            ax.errorbar([d.difference], [row], xerr=[[d.difference - d.low], [d.high - d.difference]], fmt="o",
                        color=color, capsize=4)
            shown = percent(d.difference) if metric == "success_rate" else f"{d.difference:+.3f}"
            ax.annotate(shown + (" (noise)" if d.within_noise else ""), (d.high, row), xytext=(5, 0),
                        textcoords="offset points", va="center", fontsize=9)
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_title(f"difference in {label}", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
        ax.margins(x=0.3)
    axes[0].set_yticks(rows, [c.env_id for c in comparisons])
    axes[0].set_ylim(len(rows) - 0.5, -0.5)
    return save_figure(fig, path, "\n".join(textwrap.wrap(title, 100)))


def _print(out: Any, result: dict[str, Any], comparisons: list[EnvComparison], output: Path) -> None:
    from rich.markup import escape
    from rich.table import Table

    def shown(d: Difference, rate: bool) -> str:
        value = (lambda x: percent(x) if rate else f"{x:+.3f}")
        verdict = "within noise" if d.within_noise else "better" if d.difference > 0 else "worse"
        return f"{'+' if rate and d.difference >= 0 else ''}{value(d.difference)} [{value(d.low)}, {value(d.high)}] {verdict}"

    table = Table(title=escape(f"{result['candidate']} minus {result['baseline']} "
                               f"({result['confidence']:.0%} bootstrap intervals)"))
    for column in ("environment", "starts", "success", "difference", "mean return", "difference "):
        table.add_column(column, justify="left" if column == "environment" else "right")
    for c in comparisons:
        table.add_row(escape(c.env_id), f"{c.starts[0]} / {c.starts[1]}" + ("" if c.paired else " (unpaired)"),
                      f"{percent(c.success_rate.baseline)} -> {percent(c.success_rate.candidate)}",
                      shown(c.success_rate, True),
                      f"{c.mean_return.baseline:+.3f} -> {c.mean_return.candidate:+.3f}", shown(c.mean_return, False))
    out.print(table)
    for name, (a, b) in result["settings_differ"].items():
        out.print(f"[yellow]The evaluations differ in {name}: {a!r} and {b!r}.[/]")
    for key, which in (("only_in_baseline", "baseline"), ("only_in_candidate", "candidate")):
        if result[key]:
            out.print(f"Only in the {which}: {', '.join(result[key])}")
    out.print(f"Comparison: {output / COMPARE_FILE}")
    out.print(f"Plot:       {output / PLOT_FILE}")
