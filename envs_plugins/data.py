"""The data of dataset-backed environments: where their rows come from, and in which order
episodes visit them.

:func:`load_rows` reads rows from memory, a local copy or the Hugging Face Hub, with errors a
user can act on: missing data says how to get it (:class:`~gem_core.errors.DataNotFoundError`),
a missing column names the ones there are, a missing library names the extra to install.
``datasets`` is imported only when a source needs it. :func:`column` reads a whole column at
once. :class:`RowOrder` picks the row of each episode, and :class:`DatasetEnv` is the base of
the environments whose episodes each take one row.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gem_core import Env
from gem_core.errors import DataNotFoundError, GemError, MissingDependencyError

Rows = Sequence[Mapping[str, Any]]

FILE_FORMATS = {".parquet": "parquet", ".csv": "csv", ".arrow": "arrow"}  # read by `datasets`
SAVED_MARKERS = ("dataset_dict.json", "state.json")  # files that Dataset(Dict).save_to_disk writes
PATH_FORMS = ("a .jsonl, .json, .parquet, .csv or .arrow file, a folder written by save_to_disk, "
              "or a folder laid out like the Hub repository")


def load_rows(
    env_id: str,
    *,
    dataset_name: str | None = None,
    split: str | None = None,
    path: str | os.PathLike[str] | None = None,
    dataset: Any = None,
    columns: Mapping[str, str] | None = None,
) -> Rows:
    """The rows an environment reads: a ``datasets.Dataset`` or a list of dicts.

    Sources, first given wins: ``dataset`` (a ``datasets.Dataset``/``DatasetDict`` or a list of
    dicts); ``path`` (see :data:`PATH_FORMS`); ``dataset_name`` (a Hub id such as
    ``axon-rl/GSM-8k``, read with ``datasets.load_dataset``, which caches it for offline use).
    ``split`` picks a split; without it a source must have one split only. ``columns`` maps each
    option that names a column to the column, e.g. ``{"question_key": "problem"}``; each must
    exist.
    """
    if dataset is not None:
        rows = _one_split(dataset, split, env_id)
    elif path is not None:
        rows = _from_path(Path(path).expanduser(), split, env_id)
    elif dataset_name:
        rows = _from_hub(dataset_name, split, env_id)
    else:
        raise GemError(f"{env_id} needs data: pass dataset_name=..., path=... or dataset=....")
    _check(rows, columns or {}, env_id)
    return rows


def column(rows: Rows, key: str) -> Sequence[Any]:
    """Every value of column ``key``, read at once from a ``datasets.Dataset`` (far faster than
    row by row) or gathered from a list of dicts."""
    if hasattr(rows, "column_names"):
        return rows[key]
    return [row[key] for row in rows]


def _check(rows: Any, columns: Mapping[str, str], env_id: str) -> None:
    table = hasattr(rows, "column_names")  # a datasets.Dataset: its schema holds for every row
    if not table:
        if not isinstance(rows, Sequence) or isinstance(rows, (str, bytes)):
            raise GemError(f"{env_id}: the data must be a datasets.Dataset or a list of dicts, "
                           f"not {type(rows).__name__}.")
        for number, row in enumerate(rows):
            if not isinstance(row, Mapping):
                raise GemError(f"{env_id}: row {number} of the data is a {type(row).__name__}, not a "
                               "dict; the data must be a datasets.Dataset or a list of dicts.")
    if len(rows) == 0:
        raise DataNotFoundError(f"The data of {env_id} has no rows.")
    names = list(rows.column_names if table else rows[0])
    for option, name in columns.items():
        if name not in names:
            raise GemError(f"The data of {env_id} has no column {name!r} ({option}); its columns are "
                           f"{', '.join(map(repr, names))}. Pass {option}= one of them.")
    if not table:
        for number, row in enumerate(rows):
            absent = [name for name in columns.values() if name not in row]
            if absent:
                raise GemError(f"{env_id}: row {number} of the data has no column "
                               f"{', '.join(map(repr, absent))}, unlike row 0.")


def _from_path(path: Path, split: str | None, env_id: str) -> Rows:
    if not path.exists():
        raise DataNotFoundError(f"{env_id}: path={str(path)!r} does not exist. Pass path= {PATH_FORMS}.")
    suffix = path.suffix.lower()
    if path.is_file() and suffix in (".jsonl", ".json"):
        return _read_json(path, env_id)
    if path.is_file() and suffix not in FILE_FORMATS:
        raise GemError(f"{env_id}: cannot read {path.name}; path= takes {PATH_FORMS}.")
    datasets = _import_datasets(env_id)
    try:
        if path.is_file():  # a single file is one split
            return datasets.load_dataset(FILE_FORMATS[suffix], data_files=str(path), split="train")
        if any((path / marker).exists() for marker in SAVED_MARKERS):
            return _one_split(datasets.load_from_disk(str(path)), split, env_id)
        return _one_split(_load_dataset(datasets, str(path), split, env_id), split, env_id)
    except GemError:
        raise
    except Exception as e:
        raise GemError(f"{env_id}: cannot read {str(path)!r}: {type(e).__name__}: {e}") from e


def _read_json(path: Path, env_id: str) -> Rows:
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() == ".jsonl":
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        return json.loads(text)
    except ValueError as e:
        raise GemError(f"{env_id}: {path} is not valid JSON: {e}") from None


def _from_hub(name: str, split: str | None, env_id: str) -> Rows:
    datasets = _import_datasets(env_id)
    try:
        loaded = _load_dataset(datasets, name, split, env_id)
    except GemError:
        raise
    except Exception as e:  # offline and not cached, no such dataset, no access
        raise DataNotFoundError(how_to_get(env_id, name, split, e)) from e
    return _one_split(loaded, split, env_id)


def _load_dataset(datasets: Any, source: str, split: str | None, env_id: str) -> Any:
    try:
        return datasets.load_dataset(source, split=split)
    except ValueError as e:
        if split is not None and "split" in str(e).lower():
            raise GemError(f"{env_id}: {source!r} has no split {split!r} ({e}).") from e
        raise


def how_to_get(env_id: str, name: str, split: str | None, error: BaseException) -> str:
    """What to do when the Hub dataset ``name`` is neither cached nor reachable."""
    folder = name.rstrip("/").rsplit("/", 1)[-1]
    load = f"datasets.load_dataset({name!r}" + (f", split={split!r})" if split else ")")
    return (
        f"{env_id} reads the Hugging Face dataset {name!r}" + (f" (split {split!r})" if split else "")
        + f", which is neither cached here nor reachable ({type(error).__name__}: {error}). "
        f"On a machine with internet access, either run `python -c \"import datasets; {load}\"` once "
        "(it is then cached under $HF_HOME and also loads offline, with HF_HUB_OFFLINE=1), or run "
        f"`hf download {name} --repo-type dataset --local-dir {folder}`, copy the folder here and "
        f"pass path='{folder}'."
    )


def _one_split(data: Any, split: str | None, env_id: str) -> Any:
    if not isinstance(data, Mapping):  # a datasets.Dataset or a list: already one split
        return data
    names = list(data.keys())  # a DatasetDict, or a dict of splits
    if split is not None:
        if split not in data:
            raise GemError(f"{env_id}: no split {split!r}; the splits are {', '.join(names)}.")
        return data[split]
    if len(names) == 1:
        return data[names[0]]
    raise GemError(f"{env_id}: the data has several splits ({', '.join(names)}); pass split= one of them.")


def _import_datasets(env_id: str) -> Any:
    try:
        import datasets
    except ImportError:
        raise MissingDependencyError(env_id, "datasets", "envs") from None
    return datasets


class RowOrder:
    """The order in which an environment's episodes visit its ``size`` rows.

    Shuffled (the default): ``reset(seed)`` draws a new random order from the environment's
    generator (just re-seeded) and takes its first row; resets without a seed continue that
    order, so every row comes once per pass before any repeats. In order (``shuffle=False``):
    rows come one after another, ``reset(seed=n)`` starting at row ``n`` (modulo ``size``).
    Either way ``index=i`` picks row ``i``; in order, the next reset then continues at ``i + 1``.

    The shuffled order is drawn one row at a time (a Fisher-Yates shuffle that stores only the
    swaps made so far), so a seeded reset costs the same however many rows there are.
    """

    def __init__(self, size: int, *, shuffle: bool = True):
        self.size = size
        self.shuffle = shuffle
        self._position = 0  # rows served in this pass (shuffled), or the next row (in order)
        self._swaps: dict[int, int] = {}  # position -> row, where the shuffle moved a row

    def next(self, rng: Any, *, seed: int | None = None, index: int | None = None) -> int:
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < self.size:
                raise GemError(f"index={index!r} is out of range: there are {self.size} rows "
                               f"(0 to {self.size - 1}).")
            if not self.shuffle:
                self._position = index + 1
            return index
        if not self.shuffle:
            row = (seed if seed is not None else self._position) % self.size
            self._position = row + 1
            return row
        if seed is not None or self._position >= self.size:
            self._position, self._swaps = 0, {}
        here = self._position
        there = rng.randrange(here, self.size)
        row_here = self._swaps.pop(here, here)
        if there == here:
            row = row_here
        else:
            row = self._swaps.get(there, there)
            self._swaps[there] = row_here
        self._position += 1
        return row

    def copy(self) -> RowOrder:
        twin = RowOrder(self.size, shuffle=self.shuffle)
        twin._position, twin._swaps = self._position, dict(self._swaps)
        return twin


class DatasetEnv(Env):
    """An environment whose episodes each take one row of ``rows``, in the order a
    :class:`RowOrder` gives (``reset(seed)``, ``reset()``, ``reset(index=i)``, ``shuffle``).
    Clones share the rows, read-only, and carry on the order from where it is."""

    def __init__(self, rows: Rows, *, shuffle: bool, env_id: str):
        self.env_id = env_id
        self.rows = rows
        self.order = RowOrder(len(rows), shuffle=shuffle)
        self.index: int | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def next_row(self, seed: int | None, index: int | None) -> Mapping[str, Any]:
        """Advance to the row of a new episode (see :class:`RowOrder`) and return it."""
        self.index = self.order.next(self.rng, seed=seed, index=index)
        return self.rows[self.index]

    def clone(self) -> DatasetEnv:
        twin = copy.copy(self)
        twin._rng = copy.deepcopy(self._rng)
        twin._np_rng = copy.deepcopy(self._np_rng)
        twin._action_rng = copy.deepcopy(self._action_rng)
        twin.order = self.order.copy()
        return twin
