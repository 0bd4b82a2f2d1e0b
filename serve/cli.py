"""``gem serve``: serve an environment over OpenEnv's HTTP API, or export it as an OpenEnv package."""

from __future__ import annotations

import os
from pathlib import Path

import click


@click.command("serve")
@click.argument("env_id")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every interface).")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: a free one, printed at start).")
@click.option("--max-sessions", default=64, show_default=True, type=click.IntRange(1, 100_000),
              help="Sessions at once; one more is refused with a CAPACITY_REACHED error.")
@click.option("--session-timeout", default=None, type=click.FloatRange(0, min_open=True), metavar="SECONDS",
              help="Close a session idle for this long (default: never).")
@click.option("--token-env", default=None, metavar="VAR",
              help="Require the token held by environment variable VAR (Authorization: Bearer TOKEN).")
@click.option("--log-level", default="warning", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@click.option("--export", "export_dir", default=None, type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Do not serve: write an OpenEnv environment package for ENV_ID into DIR (new or empty): "
                   "openenv.yaml, README.md with Hugging Face Space front matter, Dockerfile, server/app.py.")
def serve(env_id: str, host: str, port: int, max_sessions: int, session_timeout: float | None,
          token_env: str | None, log_level: str, export_dir: Path | None) -> None:
    """Serve ENV_ID (wrappers included) over OpenEnv's HTTP API.

    OpenEnv clients (EnvClient, GenericEnvClient, MCPToolClient; sync or async), and GEM's own
    remote:URL environments, connect to http://HOST:PORT. Each WebSocket session (/ws) has its own
    environment; actions are {"message": TEXT}, observations {"prompt": TEXT, "metadata": {...}}.
    /mcp offers the environment's tools over MCP (step, and those of its tool wrapper);
    /openapi.json, /health, /metadata and /schema describe it (`openenv validate --url` passes).

    Examples: gem serve game:GuessTheNumber-v0-easy --port 8000

              gem serve math:Arithmetic-v0+Tool --export ./arithmetic-space
    """
    from gem_core.errors import GemError

    if export_dir is not None:
        from gem_serve.export import export

        context = click.get_current_context()
        serving = [f"--{name.replace('_', '-')}" for name in ("host", "port", "max_sessions", "session_timeout",
                                                               "token_env", "log_level")
                   if context.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT]
        if serving:
            raise GemError(f"--export writes a package and serves nothing: {', '.join(serving)} would be ignored; "
                           "drop them (the package's server takes --host and --port, and GEM_SERVE_TOKEN).")

        written = export(env_id, export_dir)
        click.echo(f"Wrote the OpenEnv package of {env_id} to {export_dir} ({len(written)} files); "
                   f"check it with `openenv validate {export_dir} --level static`.")
        return
    from gem_serve.server import serve as run_server

    token = None
    if token_env is not None:
        token = os.environ.get(token_env)
        if not token:
            raise GemError(f"--token-env {token_env}: the environment variable {token_env} is not set or empty.")
    run_server(env_id, host=host, port=port, max_sessions=max_sessions, session_timeout=session_timeout,
               token=token, log_level=log_level,
               announce=lambda url: click.echo(f"Serving {env_id} at {url} (Ctrl+C to stop)", err=False))
