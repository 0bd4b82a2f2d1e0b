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
@click.option("--ors", "ors", is_flag=True,
              help="Also serve over ORS, the Open Reward Standard (the ors extra), on the same port: ENV_ID and "
                   "every --ors-env, each task a seed.")
@click.option("--ors-env", "ors_envs", multiple=True, metavar="PATTERN",
              help="Another id to serve over ORS (implies --ors; repeatable): an id, a glob such as 'game:*', or "
                   "'all' (every registered id that can be served here; those a glob skips are listed).")
@click.option("--ors-tasks", default=None, type=click.IntRange(1, 10_000_000), metavar="N",
              help="Tasks (seeds) in each ORS split, train and test  [default: 1000].")
@click.option("--export", "export_dir", default=None, type=click.Path(file_okay=False, path_type=Path), metavar="DIR",
              help="Do not serve: write an OpenEnv environment package for ENV_ID into DIR (new or empty): "
                   "openenv.yaml, README.md with Hugging Face Space front matter, Dockerfile, server/app.py.")
def serve(env_id: str, host: str, port: int, max_sessions: int, session_timeout: float | None,
          token_env: str | None, log_level: str, ors: bool, ors_envs: tuple[str, ...], ors_tasks: int | None,
          export_dir: Path | None) -> None:
    """Serve ENV_ID (wrappers included) over OpenEnv's HTTP API.

    OpenEnv clients (EnvClient, GenericEnvClient, MCPToolClient; sync or async), and GEM's own
    remote:URL environments, connect to http://HOST:PORT. Each WebSocket session (/ws) has its own
    environment; actions are {"message": TEXT}, observations {"prompt": TEXT, "metadata": {...}}.
    /mcp offers the environment's tools over MCP (step, and those of its tool wrapper);
    /openapi.json, /health, /metadata and /schema describe it (`openenv validate --url` passes).
    With --ors, ORS clients (ors-sdk's ORS, openreward's client) play ENV_ID (and every --ors-env)
    at the same address: tasks by split (train, test) and index, tools step and the tool wrapper's.

    Examples: gem serve game:GuessTheNumber-v0-easy --port 8000

              gem serve math:Arithmetic-v0+Tool --export ./arithmetic-space

              gem serve game:GuessTheNumber-v0-easy --ors --ors-env 'game:*'
    """
    from gem_core.errors import GemError

    if export_dir is not None:
        from gem_serve.export import export

        context = click.get_current_context()
        serving = [f"--{name.replace('_', '-')}" for name in ("host", "port", "max_sessions", "session_timeout",
                                                               "token_env", "log_level", "ors", "ors_envs",
                                                               "ors_tasks")
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
    ors_ids = None
    if ors or ors_envs:
        from gem_serve.ors_server import servable_ids

        if log_level in ("info", "debug"):
            os.environ.setdefault("ORS_LOG_LEVEL", log_level.upper())  # ors-sdk's own logs, a line per request
        ors_ids, skipped = servable_ids([env_id, *ors_envs])
        for skipped_id, reason in skipped.items():
            click.echo(f"Not served over ORS: {skipped_id} ({reason})", err=True)
    elif ors_tasks is not None:
        raise GemError("--ors-tasks sizes the ORS splits: add --ors (or --ors-env).")
    over_ors = f"; over ORS too: {len(ors_ids)} environment(s)" if ors_ids else ""
    run_server(env_id, host=host, port=port, max_sessions=max_sessions, session_timeout=session_timeout,
               token=token, log_level=log_level, ors_ids=ors_ids, ors_tasks=ors_tasks,
               announce=lambda url: click.echo(f"Serving {env_id} at {url} (Ctrl+C to stop){over_ors}", err=False))
