"""``gem serve``: serve an environment over OpenEnv's protocol."""

from __future__ import annotations

import os

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
def serve(env_id: str, host: str, port: int, max_sessions: int, session_timeout: float | None,
          token_env: str | None, log_level: str) -> None:
    """Serve ENV_ID (wrappers included) over OpenEnv's wire protocol.

    OpenEnv clients (EnvClient, GenericEnvClient; sync or async), and GEM's own remote:URL
    environments, connect to http://HOST:PORT. Each WebSocket session (/ws) has its own
    environment; actions are {"message": TEXT}, observations {"prompt": TEXT, "metadata": {...}}.

    Example: gem serve game:GuessTheNumber-v0-easy --port 8000
    """
    from gem_core.errors import GemError
    from gem_core.remote.server import serve as run_server

    token = None
    if token_env is not None:
        token = os.environ.get(token_env)
        if not token:
            raise GemError(f"--token-env {token_env}: the environment variable {token_env} is not set or empty.")
    run_server(env_id, host=host, port=port, max_sessions=max_sessions, session_timeout=session_timeout,
               token=token, log_level=log_level,
               announce=lambda url: click.echo(f"Serving {env_id} at {url} (Ctrl+C to stop)", err=False))
