"""GEM's wheelhouse: the local folder of wheels that test tools are installed from, offline.

Wheels come from two places. A distribution installed in the running interpreter is packed back
into its wheel from the files its ``RECORD`` lists (everything pip installed but the console
scripts, which pip makes again from the entry points), so a machine with pytest installed needs
no network to supply it. Anything else is downloaded from the package index with ``pip download``,
once per set of requirements; the index is asked only when the wheelhouse cannot already satisfy
them. pip's own configuration (an index mirror, a proxy) applies to the download.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from gem_core.cache import cache_dir
from gem_core.errors import GemError

from gem_envs.terminal.cache import locked

_NOT_PACKED = ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")  # what an installer adds to a wheel's .dist-info
_PIP_TIMEOUT = 600.0
_OUTPUT_KEPT = 1500  # characters of pip's output in an error


class WheelhouseError(GemError):
    """The wheels for a set of requirements are neither installed here nor downloadable."""


def folder() -> Path:
    """The wheelhouse: ``wheels/`` in GEM's cache folder."""
    return cache_dir("wheels")


def installed_version(requirement: str) -> str | None:
    """The version of ``requirement``'s distribution installed in this interpreter, if it satisfies it."""
    parsed = Requirement(requirement)
    try:
        version = metadata.version(parsed.name)
    except metadata.PackageNotFoundError:
        return None
    return version if parsed.specifier.contains(version, prereleases=True) else None


def provide(requirements: list[str], python: str | None = None) -> None:
    """Make sure the wheelhouse can install ``requirements`` (and what they need) for Python
    ``python`` (``"3.12"``; this interpreter's when None): pack the installed distributions that
    satisfy them, then download what is still missing; :class:`WheelhouseError` if that fails."""
    for requirement in requirements:
        if installed_version(requirement) is not None:
            pack_installed(Requirement(requirement).name)
    with locked("wheelhouse"):
        if _pip_download(requirements, python, offline=True).returncode == 0:
            return
        result = _pip_download(requirements, python, offline=False)
    if result.returncode != 0:
        raise WheelhouseError(f"Cannot supply {' '.join(requirements)} for Python {python or _this_python()}: "
                              "neither installed here nor downloadable from the package index (`pip download` "
                              f"said: {result.stdout.strip()[-_OUTPUT_KEPT:]}).")


def pack_installed(name: str) -> None:
    """Pack the installed distribution ``name`` and the installed distributions it requires into
    the wheelhouse (those already there are kept; editable installs and distributions without a
    ``RECORD`` are left out, to be downloaded instead)."""
    target = folder()
    seen: set[str] = set()
    pending = [name]
    while pending:
        current = canonicalize_name(pending.pop())
        if current in seen:
            continue
        seen.add(current)
        try:
            dist = metadata.distribution(current)
        except metadata.PackageNotFoundError:
            continue
        with locked("wheelhouse"):
            _pack(dist, target)
        pending.extend(_needed(dist))


def _needed(dist: metadata.Distribution) -> list[str]:
    """The names of what ``dist`` requires in this interpreter (markers evaluated, extras left out)."""
    names = []
    for line in dist.requires or ():
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.marker is None or requirement.marker.evaluate({**default_environment(), "extra": ""}):
            names.append(requirement.name)
    return names


def _pack(dist: metadata.Distribution, into: Path) -> Path | None:
    """``dist`` as a wheel in ``into`` (made unless there already), or None if it cannot be packed."""
    files = [f for f in dist.files or () if f.parts and f.parts[0] != ".."]
    info = next((f.parts[0] for f in files if f.parts[0].endswith(".dist-info") and f.name == "METADATA"), None)
    wheel = dist.read_text("WHEEL")
    direct = json.loads(dist.read_text("direct_url.json") or "{}")
    if info is None or not wheel or direct.get("dir_info", {}).get("editable"):
        return None
    tags = [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
    if not tags:
        return None
    name, version = canonicalize_name(dist.metadata["Name"]).replace("-", "_"), dist.version.replace("-", "_")
    path = into / f"{name}-{version}-{_compressed(tags)}.whl"
    if path.exists():
        return path
    into.mkdir(parents=True, exist_ok=True)
    fd, staging = tempfile.mkstemp(prefix=".packing-", suffix=".whl", dir=into)
    os.close(fd)
    rows = []
    try:
        with zipfile.ZipFile(staging, "w", zipfile.ZIP_DEFLATED) as archive:
            for file in sorted(files, key=str):
                if "__pycache__" in file.parts or file.suffix == ".pyc" or (
                        file.parts[0] == info and file.name in _NOT_PACKED):
                    continue
                data = Path(dist.locate_file(file)).read_bytes()
                archive.writestr(file.as_posix(), data)
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                rows.append((file.as_posix(), f"sha256={digest}", str(len(data))))
            record = io.StringIO()
            csv.writer(record, lineterminator="\n").writerows([*rows, (f"{info}/RECORD", "", "")])
            archive.writestr(f"{info}/RECORD", record.getvalue())
        os.replace(staging, path)
    except OSError:
        Path(staging).unlink(missing_ok=True)
        return None
    return path


def _compressed(tags: list[str]) -> str:
    """Wheel tags as a file name's compressed tag set (``py2.py3-none-any``)."""
    parts = [tag.split("-") for tag in tags]
    return "-".join(".".join(dict.fromkeys(p[i] for p in parts)) for i in range(3))


def _pip_download(requirements: list[str], python: str | None, offline: bool) -> subprocess.CompletedProcess:
    target = folder()
    target.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
            "--only-binary", ":all:", "--dest", str(target), "--find-links", str(target),
            *(["--python-version", python] if python else []), *(["--no-index"] if offline else []), *requirements]
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", timeout=_PIP_TIMEOUT)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 1, f"`pip download` took more than {_PIP_TIMEOUT:.0f} s")


def _this_python() -> str:
    return "%d.%d" % sys.version_info[:2]
