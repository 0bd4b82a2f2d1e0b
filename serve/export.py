"""``gem serve ENV_ID --export DIR``: an OpenEnv environment package serving ``ENV_ID``.

The package is what OpenEnv's tools and hub read: ``openenv.yaml`` (the manifest, with the
``validation:`` block that ``openenv validate DIR`` checks), ``README.md`` (with the front matter of
a Hugging Face Docker Space), a ``Dockerfile`` at the root, ``requirements.txt`` and
``server/app.py`` (``gem serve`` as the ASGI app ``server.app:app``, plus a ``main()``). The
image installs ``gem-adapters`` with the extras the environment needs, and any third-party
package it comes from, at the versions installed here.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
from pathlib import Path

from gem_core.errors import GemError

PORT = 8000
#: Per-step rewards declared in the manifest: GEM's built-in environments give at most 1 for a
#: solved task and at least -1 (a format error is -0.1). Check it for a third-party environment.
REWARD_RANGE = (-1.0, 1.0)
RESOURCES = {"cpu": 1.0, "memory_mb": 2048, "disk_mb": 4096, "episode_timeout_s": 600.0}


def export(env_id: str, directory: str | Path) -> list[Path]:
    """Write the package of ``env_id`` into ``directory`` (new or empty); the files written."""
    from gem_core.registry import spec
    from gem_core.tools import actions
    from gem_serve.server import make_servable

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
    files = {
        "openenv.yaml": _manifest(env_id, name, env_spec, tools),
        "README.md": _readme(env_id, name, env_spec.description, tools),
        "Dockerfile": _dockerfile(env_id, sandboxed="python" in tools),
        "requirements.txt": "\n".join(requirements(env_spec, uses_tools)) + "\n",
        "server/__init__.py": "",
        "server/app.py": _app(env_id),
        ".dockerignore": "__pycache__/\n*.pyc\n.git/\n",
    }
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
    from gem_core import __version__

    extras = {"openenv", *env_spec.requires.values()} | ({"tools"} if uses_tools else set())
    lines = [f"gem-adapters[{','.join(sorted(extras))}]=={__version__}"]
    entry = env_spec.entry_point
    module = entry.partition(":")[0] if isinstance(entry, str) else getattr(entry, "__module__", "")
    for distribution in importlib.metadata.packages_distributions().get(module.partition(".")[0], []):
        if distribution != "gem-adapters":
            lines.append(f"{distribution}=={importlib.metadata.version(distribution)}")
    return lines


def _manifest(env_id: str, name: str, env_spec, tools: list[str]) -> str:
    from gem_core import __version__

    low, high = REWARD_RANGE
    category = env_id.partition(":")[0] if ":" in env_id else "gem"
    return f"""# OpenEnv manifest of the GEM environment {env_id}, written by `gem serve {env_id} --export`.
spec_version: 1
name: {name}
version: {__version__}
type: space
runtime: fastapi
app: server.app:app
port: {PORT}
validation:
  reward:
    range: [{low}, {high}]  # per step; GEM's built-in environments stay within it
    oracle_tolerance: 0.0
    floor_margin: 0.1
  resources: {json.dumps(RESOURCES)}
  capabilities:
    verifier:
      kind: reward_channel
    declared_tools: {json.dumps(tools)}
  types:
    tags: {json.dumps(sorted({"gem", category}))}
"""


def _readme(env_id: str, name: str, description: str, tools: list[str]) -> str:
    category = env_id.partition(":")[0] if ":" in env_id else "gem"
    short = _short_description(description or f"GEM environment {env_id}")
    tool_list = ", ".join(f"`{tool}`" for tool in tools)
    return f"""---
title: {json.dumps(env_id)}
emoji: 🎲
colorFrom: indigo
colorTo: green
sdk: docker
app_port: {PORT}
pinned: false
short_description: {json.dumps(short)}
tags:
  - openenv
  - gem
  - {category}
---

# {env_id}

{description or f"The GEM environment {env_id}."}

This Space serves the GEM environment `{env_id}` with `gem serve` (package `gem-adapters`), which
speaks OpenEnv's HTTP API: sessions on the WebSocket `/ws`
(`reset`, `step`, `state`), its tools over MCP on `/mcp` ({tool_list}), and `/health`, `/metadata`,
`/schema`, `/openapi.json`. Actions are `{{"message": TEXT}}`; observations are
`{{"prompt": TEXT, "metadata": {{...}}}}`.

```python
from openenv.core.generic_client import GenericEnvClient

with GenericEnvClient(base_url="https://<space-url>").sync() as env:
    result = env.reset(seed=0)
    print(result.observation["prompt"])
```

Run it yourself: `docker build -t {name} . && docker run -p {PORT}:{PORT} {name}`, or without a
container: `pip install -r requirements.txt && python -m server.app --port {PORT}`. Set
`GEM_SERVE_TOKEN` (a Space secret) to require that token on every request but `/health`.
"""


def _dockerfile(env_id: str, sandboxed: bool) -> str:
    sandbox = ("# The Python tool runs code in a bubblewrap sandbox.\n"
               "RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap "
               "&& rm -rf /var/lib/apt/lists/*\n") if sandboxed else ""
    return f"""# The GEM environment {env_id}, served by `gem serve` on port {PORT}.
ARG BASE_IMAGE=python:3.11-slim
FROM ${{BASE_IMAGE}}
# pip's settings for the install below, e.g. --build-arg PIP_NO_INDEX=1 --build-arg
# PIP_FIND_LINKS=/app/wheels to install from wheels put in this folder's wheels/.
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
ARG PIP_FIND_LINKS
ARG PIP_NO_INDEX
{sandbox}WORKDIR /app
COPY . /app
RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir -r requirements.txt
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1
EXPOSE {PORT}
HEALTHCHECK --interval=30s --timeout=3s --start-period=20s --retries=3 \\
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:{PORT}/health', timeout=2)"
CMD ["python", "-m", "server.app", "--host", "0.0.0.0", "--port", "{PORT}"]
"""


def _app(env_id: str) -> str:
    return f'''"""The OpenEnv server of the GEM environment {env_id}: `gem serve` as the ASGI app `app`.

    python -m server.app --port {PORT}          (what the image runs)
    uvicorn server.app:app --port {PORT}

GEM_SERVE_TOKEN, when set, is the token every request but /health must carry.
"""

import argparse
import os

from gem_serve.server import create_app

ENV_ID = {env_id!r}

app = create_app(ENV_ID, token=os.environ.get("GEM_SERVE_TOKEN") or None)


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=f"Serve {{ENV_ID}} over OpenEnv's HTTP API.")
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default={PORT})
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
'''


def _short_description(text: str, limit: int = 60) -> str:
    """The first sentence of ``text`` within the Hub's 60 characters."""
    first = text.split(". ")[0].strip().rstrip(".")
    return first if len(first) <= limit else first[: limit - 3].rstrip() + "..."
