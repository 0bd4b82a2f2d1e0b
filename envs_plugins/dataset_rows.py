"""Rows of a dataset-backed environment: from the Hugging Face Hub, a local copy, or memory.

One function, :func:`load_rows`, with the errors a user can act on: missing data says how to get
it (:class:`~gem_core.errors.DataNotFoundError`), a missing column names the ones there are, a
missing library names the extra to install. ``datasets`` is imported only when it is needed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gem_core.errors import DataNotFoundError, GemError, MissingDependencyError

Rows = Sequence[Mapping[str, Any]]

_HF_FORMATS = {".parquet": "parquet", ".csv": "csv", ".arrow": "arrow"}


def load_rows(
    env_id: str,
    *,
    dataset_name: str | None = None,
    split: str | None = None,
    data_path: str | os.PathLike[str] | None = None,
    dataset: Any = None,
    columns: Sequence[str] = (),
) -> Rows:
    """The rows an environment reads, each a mapping from column to value.

    Sources, first match wins: ``dataset`` (a ``datasets.Dataset``/``DatasetDict`` or a list of
    dicts); ``data_path`` (a ``.jsonl``/``.json`` file, a ``.parquet``/``.csv``/``.arrow`` file,
    a folder written by ``Dataset.save_to_disk``, or a folder of data files); ``dataset_name``
    (a Hub id such as ``axon-rl/TACO-8k``, or a local folder), read with
    ``datasets.load_dataset``, which caches it for offline use. ``split`` picks a split where the
    source has several. ``columns`` are checked to exist.
    """
    if dataset is not None:
        rows = _select_split(dataset, split, env_id)
    elif data_path is not None:
        rows = _from_path(Path(data_path).expanduser(), split, env_id)
    elif dataset_name:
        rows = _from_hub(dataset_name, split, env_id)
    else:
        raise GemError(f"{env_id} needs data: pass dataset_name=..., data_path=... or dataset=....")
    if len(rows) == 0:
        raise DataNotFoundError(f"The data of {env_id} has no rows.")
    missing = [c for c in columns if c not in rows[0]]
    if missing:
        raise GemError(
            f"The data of {env_id} has no column {', '.join(map(repr, missing))}; its columns are "
            f"{', '.join(map(repr, rows[0]))}. Point the environment at the right ones "
            "(e.g. question_key=..., answer_key=...)."
        )
    return rows


def _from_path(path: Path, split: str | None, env_id: str) -> Rows:
    if not path.exists():
        raise DataNotFoundError(f"{env_id}: data_path {str(path)!r} does not exist.")
    suffix = path.suffix.lower()
    if path.is_file() and suffix in (".jsonl", ".json"):
        return _read_json(path, env_id)
    datasets = _import_datasets(env_id)
    try:
        if path.is_dir() and any((path / f).exists() for f in ("dataset_dict.json", "state.json")):
            return _select_split(datasets.load_from_disk(str(path)), split, env_id)
        if path.is_file():
            if suffix not in _HF_FORMATS:
                raise GemError(
                    f"{env_id}: cannot read {path.name}; data_path takes .jsonl, .json, .parquet, "
                    ".csv or .arrow files, or a folder."
                )
            return datasets.load_dataset(_HF_FORMATS[suffix], data_files=str(path), split="train")
        return _select_split(datasets.load_dataset(str(path)), split, env_id)
    except GemError:
        raise
    except Exception as e:
        raise DataNotFoundError(f"{env_id}: cannot read {str(path)!r}: {type(e).__name__}: {e}") from e


def _read_json(path: Path, env_id: str) -> Rows:
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() == ".jsonl":
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            rows = json.loads(text)
    except ValueError as e:
        raise GemError(f"{env_id}: {path} is not valid JSON: {e}") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise GemError(f"{env_id}: {path} must hold JSON objects, one per row.")
    return rows


def _from_hub(name: str, split: str | None, env_id: str) -> Rows:
    datasets = _import_datasets(env_id)
    try:
        loaded = datasets.load_dataset(name, split=split) if split else datasets.load_dataset(name)
    except ValueError as e:
        if "split" in str(e).lower():
            raise GemError(f"{env_id}: the dataset {name!r} has no split {split!r} ({e}).") from e
        raise DataNotFoundError(_how_to_get(env_id, name, split, e)) from e
    except Exception as e:  # offline, not cached, no such dataset, no access
        raise DataNotFoundError(_how_to_get(env_id, name, split, e)) from e
    return _select_split(loaded, split, env_id)


def _how_to_get(env_id: str, name: str, split: str | None, error: Exception) -> str:
    load = f"datasets.load_dataset({name!r}" + (f", split={split!r})" if split else ")")
    return (
        f"{env_id} reads the Hugging Face dataset {name!r}"
        + (f" (split {split!r})" if split else "")
        + f", which is neither cached here nor reachable ({type(error).__name__}: {error}). "
        f"On a machine with internet access, run `python -c \"import datasets; {load}\"` once; "
        "it is then cached and also loads offline (HF_HUB_OFFLINE=1). Or pass a local copy: "
        "data_path='file.jsonl' (or .parquet, or a save_to_disk folder)."
    )


def _select_split(data: Any, split: str | None, env_id: str) -> Rows:
    if isinstance(data, Mapping):  # a DatasetDict, or a dict of splits
        names = list(data.keys())
        if split is not None:
            if split not in data:
                raise GemError(f"{env_id}: no split {split!r}; the splits are {', '.join(names)}.")
            return data[split]
        if len(names) == 1:
            return data[names[0]]
        raise GemError(f"{env_id}: the data has several splits ({', '.join(names)}); pass split=....")
    if hasattr(data, "__getitem__") and hasattr(data, "__len__"):
        return data
    raise GemError(f"{env_id}: dataset= must be a datasets.Dataset or a list of dicts, not {type(data).__name__}.")


def _import_datasets(env_id: str) -> Any:
    try:
        import datasets
    except ImportError:
        raise MissingDependencyError(env_id, "datasets", "envs") from None
    return datasets


class RowOrder:
    """The order in which an environment visits its rows.

    ``reset(seed)`` draws a fresh random order from the environment's generator (just re-seeded)
    and takes its first row; resets without a seed continue that order, so every row comes once
    per pass before any repeats; an explicit ``index`` picks that row.
    """

    def __init__(self, size: int):
        self.size = size
        self._order: list[int] = []
        self._position = 0

    def next(self, rng: Any, *, seed: int | None = None, index: int | None = None) -> int:
        if index is not None:
            if not isinstance(index, int) or not 0 <= index < self.size:
                raise GemError(f"index={index!r} is out of range: there are {self.size} rows.")
            return index
        if seed is not None or self._position >= len(self._order):
            self._order = list(range(self.size))
            rng.shuffle(self._order)
            self._position = 0
        self._position += 1
        return self._order[self._position - 1]

    def copy(self) -> RowOrder:
        twin = RowOrder(self.size)
        twin._order, twin._position = list(self._order), self._position
        return twin
