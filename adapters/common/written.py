"""What a config command writes for a library that reads the datasets and one GEM file of its own
(an agent or environment file the library loads), and the launch command it prints; and
:func:`yaml_writer`, the YAML writer of every config command that writes YAML."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gem_adapters.common.dataset import RowFunction, WrittenSplits, write_splits
from gem_adapters.common.launch import command_line
from gem_adapters.common.settings import RunSettings
from gem_core.errors import GemError, MissingDependencyError


@dataclass(frozen=True)
class WrittenRun:
    splits: WrittenSplits  # the datasets
    file: Path  # the library's GEM file
    argv: tuple[str, ...]  # the launch command

    @property
    def command(self) -> str:
        return command_line(self.argv)


def check_episodes_per_gpu(settings: RunSettings, library: str) -> None:
    """Raise a :class:`GemError` unless every GPU gets at least one episode per step."""
    if settings.batch_size * settings.rollouts_per_start < settings.total_gpus:
        raise GemError("batch size x rollouts per start must be at least the number of GPUs "
                       f"({settings.total_gpus}), as {library} requires.")


def write_run(settings: RunSettings, *, row: RowFunction, file_name: str, file_text: str,
              launch_argv: Callable[[Path, Path, Path], list[str]], progress: Any = None) -> WrittenRun:
    """Write the datasets (rows from ``row``) and the file ``file_name`` into ``settings.out_dir``;
    ``launch_argv(train, val, file)`` builds the launch command. ``progress``, when given, is
    called with the number of rows written so far."""
    out = settings.out_dir.expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    splits = write_splits(settings, out, row, progress=progress)
    path = out / file_name
    path.write_text(file_text, encoding="utf-8")
    return WrittenRun(splits, path, tuple(launch_argv(splits.train, splits.val, path)))


@dataclass(frozen=True)
class FileRun:
    """What a config command writes for a library that reads the datasets and one GEM file."""

    library: str  # the library's name, as messages give it
    file_name: str
    row: RowFunction
    file_text: Callable[[RunSettings], str]
    launch_argv: Callable[[RunSettings, Path, Path, Path], list[str]]  # (settings, train, val, file)

    def check(self, settings: RunSettings) -> None:
        """Raise a :class:`GemError` for settings the library would reject or GEM cannot serve."""
        settings.check()
        check_episodes_per_gpu(settings, self.library)

    def write(self, settings: RunSettings, *, progress: Any = None) -> WrittenRun:
        """Check ``settings``, then write the datasets and the file into ``settings.out_dir``;
        ``progress``, when given, is called with the number of rows written so far."""
        self.check(settings)
        return write_run(settings, row=self.row, file_name=self.file_name, file_text=self.file_text(settings),
                         launch_argv=lambda train, val, file: self.launch_argv(settings, train, val, file),
                         progress=progress)


def yaml_writer(library: str, *, hydra: bool) -> Callable[[Any], str]:
    """A function that writes data as YAML for ``gem <library> config``: OmegaConf's writer (the
    dialect Hydra reads) when ``hydra``, else PyYAML's, keys in their order. Raises
    :class:`MissingDependencyError`, naming the library's extra, when the writer is not installed;
    call it before writing anything."""
    command = f"`gem {library} config`"
    if hydra:
        try:
            from omegaconf import OmegaConf
        except ImportError:
            raise MissingDependencyError(command, "omegaconf", library) from None
        return lambda data: OmegaConf.to_yaml(OmegaConf.create(data))
    try:
        import yaml
    except ImportError:
        raise MissingDependencyError(command, "yaml", library) from None
    return lambda data: yaml.safe_dump(data, sort_keys=False)
