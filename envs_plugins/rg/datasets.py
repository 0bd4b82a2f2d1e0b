"""reasoning-gym datasets: the static list of their names, and creating them with clear errors.

``datasets.json`` maps each dataset name of the supported reasoning-gym release to its category,
so that registering the ``rg:*`` ids needs no ``import reasoning_gym`` (which takes seconds). A
test checks it against the installed registry; ``python -m gem_envs.rg.datasets`` rewrites it.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import json
import random
import sys
from collections.abc import Iterator, Mapping
from importlib import resources
from typing import Any

from gem_core.errors import GemError, MissingDependencyError, UnknownNameError
from gem_envs.rg import generation
from gem_envs.rg.catalog import MIX, dataset_categories  # noqa: F401 - part of this module's API


def installed_categories() -> dict[str, str]:
    """The same mapping, read from the installed reasoning-gym."""
    factory = _factory()
    categories = {}
    for name, (dataset_class, _) in factory.DATASETS.items():
        parts = dataset_class.__module__.split(".")
        categories[name] = parts[1] if len(parts) >= 3 else "other"
    return dict(sorted(categories.items()))


class TaskDataset:
    """A reasoning-gym dataset together with the arguments that rebuild it in a scoring worker.

    Item ``i`` is the same for the same ``(name, size, seed, config)``. Immutable: clones of an
    environment share it.
    """

    def __init__(self, name: str, size: int, seed: int, config: Mapping[str, Any]):
        self.name, self.size, self.seed = name, size, seed
        self.config = dict(config)
        try:
            config_json = json.dumps(self.config, sort_keys=True)
        except (TypeError, ValueError) as e:
            raise GemError(f"config= for reasoning-gym dataset {name!r} must hold only JSON data "
                           f"(numbers, strings, lists, dicts): {e}") from None
        self._config_json = config_json
        self.dataset = _build(name, size, seed, config_json)

    @property
    def arguments(self) -> tuple[str, int, int, dict[str, Any]]:
        return self.name, self.size, self.seed, self.config

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> dict[str, Any]:
        if not 0 <= index < self.size:
            raise IndexError(f"item {index} of a dataset of {self.size}")
        return copy.deepcopy(_item(self.name, self.size, self.seed, self._config_json, index))

    def __deepcopy__(self, memo: dict[int, Any]) -> TaskDataset:
        return self

    def __repr__(self) -> str:
        return f"<TaskDataset {self.name} size={self.size} seed={self.seed}>"


def create_dataset(name: str, *, size: int, seed: int, config: Mapping[str, Any] | None = None,
                   mix: Mapping[str, Any] | None = None) -> TaskDataset:
    """A :class:`TaskDataset`; ``config`` sets the dataset's own options (see its config class in
    reasoning-gym), ``mix`` the weighted datasets of :data:`MIX`."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise GemError(f"size must be a positive integer, got {size!r}.")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise GemError(f"seed must be an integer, got {seed!r}.")
    config = dict(config or {})
    if name == MIX:
        if not mix:
            raise GemError(
                "rg:composite mixes reasoning-gym datasets: pass datasets={name: weight, ...}, e.g. "
                "make('rg:composite', datasets={'leg_counting': 2, 'basic_arithmetic': 1}); a "
                "weight may also be {'weight': 2, 'config': {...}}."
            )
        config["datasets"] = mix_specs(mix)
    elif mix:
        raise GemError(f"datasets= mixes datasets and is only accepted by rg:{MIX}, not rg:{name}.")
    return TaskDataset(name, size, seed, config)


def mix_specs(mix: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``{name: weight | {"weight": w, "config": {...}}}`` as reasoning-gym dataset specs."""
    if not isinstance(mix, Mapping):
        raise GemError(f"datasets= must map dataset names to weights, got {type(mix).__name__}.")
    known = dataset_categories()
    specs = []
    for name, value in mix.items():
        if name not in known or name == MIX:
            raise UnknownNameError("reasoning-gym dataset", name, [k for k in known if k != MIX])
        spec = dict(value) if isinstance(value, Mapping) else {"weight": value}
        unknown = set(spec) - {"weight", "config"}
        weight = spec.get("weight", 1.0)
        if unknown or isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight > 0:
            raise GemError(f"datasets[{name!r}] must be a positive weight or "
                           f"{{'weight': w, 'config': {{...}}}}, got {value!r}.")
        specs.append({"name": name, "weight": float(weight), "config": dict(spec.get("config") or {})})
    return specs


@functools.lru_cache(maxsize=1024)
def _item(name: str, size: int, seed: int, config_json: str, index: int) -> dict[str, Any]:
    """Item ``index`` of a dataset, made once: some generators take a second per problem, and the
    episodes of a group (and the instances of a vector environment) reset to the same problems.
    Generators that run the dataset's programs run in a sandboxed worker (see
    :mod:`gem_envs.rg.generation`)."""
    if generation.runs_programs(name, json.loads(config_json)):
        return generation.sandboxed_item(name, size, seed, config_json, index)
    return generate_item(name, size, seed, config_json, index)


def generate_item(name: str, size: int, seed: int, config_json: str, index: int) -> dict[str, Any]:
    """Item ``index`` of a dataset, made in this process."""
    with _seeded_global_random(f"{name}/{seed}/{index}"):
        return _build(name, size, seed, config_json)[index]


@contextlib.contextmanager
def _seeded_global_random(seed: str) -> Iterator[None]:
    """Some generators (codeio's sampled programs) draw from the global ``random`` module: seed it
    for the item, so that an item is the same every time, and put the caller's state back."""
    state = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)


@functools.lru_cache(maxsize=64)
def _build(name: str, size: int, seed: int, config_json: str) -> Any:
    factory = _factory()
    if name not in factory.DATASETS:
        raise UnknownNameError("reasoning-gym dataset", name, factory.DATASETS)
    dataset_class, config_class = factory.DATASETS[name]
    options = json.loads(config_json)
    if name == MIX:
        from reasoning_gym.composite import DatasetSpec

        options["datasets"] = [DatasetSpec(**spec) for spec in options["datasets"]]
    fields = {f.name: f for f in dataclasses.fields(config_class)}
    unknown = sorted(set(options) - set(fields) | ({"size", "seed"} & set(options)))
    if unknown:
        raise GemError(f"reasoning-gym dataset {name!r} has no option {', '.join(map(repr, unknown))} "
                       f"(size and seed are set directly). Its options: {_describe(fields)}.")
    try:
        config = config_class(**options, size=size, seed=seed)
        return dataset_class(config=config)
    except (AssertionError, ValueError, TypeError, KeyError) as e:
        raise GemError(f"Invalid options for reasoning-gym dataset {name!r}: {type(e).__name__}: "
                       f"{e}. Its options: {_describe(fields)}.") from e


def _describe(fields: Mapping[str, dataclasses.Field]) -> str:
    shown = []
    for name, field in fields.items():
        if name in ("size", "seed"):
            continue
        default = field.default if field.default is not dataclasses.MISSING else "..."
        shown.append(f"{name}={default!r}" if default != "..." else name)
    return ", ".join(shown) or "(none)"


def _factory() -> Any:
    try:
        from reasoning_gym import factory
    except ImportError:
        raise MissingDependencyError("ReasoningGym environments", "reasoning_gym", "envs") from None
    return factory


def _write_static_list() -> None:
    """Rewrite ``datasets.json`` from the installed reasoning-gym."""
    path = resources.files(__package__).joinpath("datasets.json")
    text = json.dumps(installed_categories(), indent=1, sort_keys=True) + "\n"
    with resources.as_file(path) as file:
        file.write_text(text)
    print(f"wrote {len(installed_categories())} dataset names to {path}", file=sys.stderr)


if __name__ == "__main__":
    _write_static_list()
