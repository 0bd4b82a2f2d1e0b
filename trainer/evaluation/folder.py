"""An evaluation's folder: the settings it plays, its episodes as they end, and what is left
(the report and its plot are written at the end, by :mod:`gem_trainer.evaluation.evaluate`).

``settings.json`` is written before the first episode, so a killed evaluation can be continued
(``gem eval --resume DIR``). ``episodes.jsonl`` holds one episode per line, as
:func:`gem_core.episodes.save_episodes` writes them, plus ``"sample"``: which of the samples of
its start (environment id and seed) it is. A line that a kill cut short is not an episode; a
resume drops it before appending. A failed episode (its environment broke, see
:class:`~gem_core.episodes.Failure`) is not a finished one: a resume plays it again and appends
the new episode, which takes its place (:func:`latest`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gem_core.episodes import Episode
from gem_core.errors import GemError

SETTINGS_FILE = "settings.json"
EPISODES_FILE = "episodes.jsonl"
REPORT_FILE = "report.json"
PLOT_FILE = "report.png"

#: A start (environment id, seed) and which of its samples an episode is.
Planned = tuple[str, int, int]


def write_settings(folder: Path, settings: dict[str, Any], sources: dict[str, str]) -> None:
    """Record what the evaluation plays (``settings``) and where each value came from."""
    (folder / SETTINGS_FILE).write_text(json.dumps({"settings": settings, "sources": sources}, indent=2))


def read_settings(folder: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings and sources :func:`write_settings` recorded in ``folder``."""
    path = folder / SETTINGS_FILE
    if not path.is_file():
        raise GemError(f"{str(folder)!r} is not the folder of a `gem eval` run (no {SETTINGS_FILE}): pass the "
                       "--output-dir of the evaluation to continue.")
    try:
        saved = json.loads(path.read_text())
        return dict(saved["settings"]), dict(saved["sources"])
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise GemError(f"{path} is not a settings file written by `gem eval` ({e}).") from None


def append_episode(path: Path, episode: Episode, sample: int) -> None:
    """Append one finished episode, with its sample index, as a line of ``path``."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({**episode.to_dict(), "sample": sample}, ensure_ascii=False, default=repr) + "\n")


def read_episodes(path: Path) -> list[tuple[Episode, int]]:
    """The episodes of ``path`` with their sample indices; a last line without its newline (a
    kill struck while it was written) is left out."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]  # after the last newline: unfinished
    found = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            found.append((Episode.from_dict(record), int(record.get("sample", 0))))
        except (json.JSONDecodeError, GemError, TypeError, ValueError) as e:
            raise GemError(f"{path}, line {number}: not an episode of `gem eval` ({e}).") from None
    return found


def drop_unfinished_line(path: Path) -> None:
    """Cut ``path`` after its last newline (what a kill left half-written)."""
    if not path.exists():
        return
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with open(path, "r+b") as f:
            f.truncate(end)


def plan(env_ids: Iterable[str], first_seed: int, starts: int, samples: int) -> list[Planned]:
    """Every episode an evaluation plays: for each environment, ``starts`` seeds from
    ``first_seed``, each ``samples`` times."""
    return [(env_id, first_seed + start, sample) for env_id in env_ids for start in range(starts)
            for sample in range(samples)]


def left_to_play(planned: list[Planned], done: Iterable[tuple[Episode, int]]) -> list[Planned]:
    """The planned episodes without a valid one among ``done`` (a failed one is played again),
    in plan order."""
    finished = {(episode.env_id, episode.seed, sample) for episode, sample in done if episode.valid}
    return [item for item in planned if item not in finished]


def latest(records: Iterable[tuple[Episode, int]]) -> list[tuple[Episode, int]]:
    """The record of each start and sample: the last one (a failed episode that a resume played
    again gives way to its new play), in the order they were first recorded."""
    found: dict[tuple[str, Any, int], tuple[Episode, int]] = {}
    for episode, sample in records:
        found[(episode.env_id, episode.seed, sample)] = (episode, sample)
    return list(found.values())
