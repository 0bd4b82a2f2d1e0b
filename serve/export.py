"""``gem serve ENV_ID --export DIR``: an OpenEnv environment package serving ``ENV_ID``.

The package is what OpenEnv's tools and hub read: ``openenv.yaml`` (the manifest, with the
``validation:`` block that ``openenv validate DIR`` checks), ``README.md`` (with the front matter of
a Hugging Face Docker Space), a ``Dockerfile`` at the root, ``requirements.txt`` and
``server/app.py`` (``gem serve`` as the ASGI app ``server.app:app``, plus a ``main()``), each
written from its template in ``gem_serve/templates`` (``@{name}`` placeholders). The image
installs ``gem-adapters`` with the extras the environment needs, and any third-party package it
comes from, at the versions installed here.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import string
from importlib import resources
from pathlib import Path

from gem_core import __version__
from gem_core.errors import GemError

PORT = 8000
#: Per-step rewards declared in the manifest: GEM's built-in environments give at most 1 for a
#: solved task and at least -1 (a format error is -0.1). Check it for a third-party environment.
REWARD_RANGE = (-1.0, 1.0)
RESOURCES = {"cpu": 1.0, "memory_mb": 2048, "disk_mb": 4096, "episode_timeout_s": 600.0}
#: The package's files -> the template each is written from.
TEMPLATES = {"openenv.yaml": "openenv.yaml.template", "README.md": "README.md.template",
             "Dockerfile": "Dockerfile.template", "server/app.py": "app.py.template",
             ".dockerignore": "dockerignore.template"}
SANDBOX_LINES = ("# The Python tool runs code in a bubblewrap sandbox.\n"
                 "RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap "
                 "&& rm -rf /var/lib/apt/lists/*\n")


def export(env_id: str, directory: str | Path) -> list[Path]:
    """Write the package of ``env_id`` into ``directory`` (new or empty); the files written."""
    from gem_core.registry import spec
    from gem_core.tools import actions
    from gem_serve.sessions import make_servable

    target = Path(directory)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise GemError(f"--export {target}: the folder exists and is not empty; give a new or empty folder.")
    env_spec = spec(env_id)
    env = make_servable(env_id)
    try:
        tools = [function.name for function in actions.functions(env)]
        uses_tools = bool(actions.tool_wrappers(env))
    finally:
        env.close()
    name = package_name(env_id)
    category = env_id.partition(":")[0] if ":" in env_id else "gem"
    low, high = REWARD_RANGE
    description = env_spec.description
    values = {
        "env_id": env_id, "env_id_literal": repr(env_id), "name": name, "port": PORT, "version": __version__,
        "category": category, "reward_low": low, "reward_high": high, "resources": json.dumps(RESOURCES),
        "tools": json.dumps(tools), "tags": json.dumps(sorted({"gem", category})),
        "title": json.dumps(env_id), "description": description or f"The GEM environment {env_id}.",
        "short_description": json.dumps(_short_description(description or f"GEM environment {env_id}")),
        "tool_list": ", ".join(f"`{tool}`" for tool in tools),
        "sandbox": SANDBOX_LINES if "python" in tools else "",
    }
    files = {relative: _fill(template, values) for relative, template in TEMPLATES.items()}
    files["requirements.txt"] = "\n".join(requirements(env_spec, uses_tools)) + "\n"
    files["server/__init__.py"] = ""
    written = []
    for relative, text in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def package_name(env_id: str) -> str:
    """The package's name: ``gem-`` and the id in lower case, other characters as dashes
    (``game:GuessTheNumber-v0-easy`` -> ``gem-game-guessthenumber-v0-easy``)."""
    return "gem-" + re.sub(r"[^a-z0-9]+", "-", env_id.lower()).strip("-")


def requirements(env_spec, uses_tools: bool) -> list[str]:
    """What the image installs: gem-adapters with the extras the environment needs, and the
    distribution it comes from when that is not gem-adapters."""
    extras = {"openenv", *env_spec.requires.values()} | ({"tools"} if uses_tools else set())
    lines = [f"gem-adapters[{','.join(sorted(extras))}]=={__version__}"]
    entry = env_spec.entry_point
    module = entry.partition(":")[0] if isinstance(entry, str) else getattr(entry, "__module__", "")
    for distribution in importlib.metadata.packages_distributions().get(module.partition(".")[0], []):
        if distribution != "gem-adapters":
            lines.append(f"{distribution}=={importlib.metadata.version(distribution)}")
    return lines


class _Template(string.Template):
    delimiter = "@"  # `$` is the Dockerfile's and the shell's


def _fill(template: str, values: dict[str, object]) -> str:
    """The text of one of this package's templates (``gem_serve/templates``), its ``@{name}``
    placeholders filled from ``values``."""
    text = resources.files("gem_serve").joinpath("templates", template).read_text(encoding="utf-8")
    return _Template(text).substitute({key: str(value) for key, value in values.items()})


def _short_description(text: str, limit: int = 60) -> str:
    """The first sentence of ``text`` within the Hub's 60 characters."""
    first = text.split(". ")[0].strip().rstrip(".")
    return first if len(first) <= limit else first[: limit - 3].rstrip() + "..."
