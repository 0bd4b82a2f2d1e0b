"""``gem gateway``: serve the recording gateway in front of vLLM or a local model."""

from __future__ import annotations

import os

import click


@click.command("gateway")
@click.option("--backend", type=click.Choice(["vllm", "local"]), default="vllm", show_default=True,
              help="Where answers are sampled: vLLM's OpenAI server (--backend-url), or a local model through GEM's "
                   "decoder (--model).")
@click.option("--backend-url", metavar="URL", help="vLLM's address, e.g. http://127.0.0.1:8000 (with --backend vllm).")
@click.option("--backend-key-env", metavar="VAR", help="Environment variable holding vLLM's API key, if it has one.")
@click.option("--model", default="smollm2", show_default=True, metavar="NAME|PATH",
              help="The model: the name vLLM serves (with --backend vllm), or smollm2 (built in) or a model folder "
                   "(with --backend local).")
@click.option("--tokenizer", metavar="PATH", help="The model's tokenizer folder (default: --model's, when it is a "
                                                  "folder or smollm2).")
@click.option("--chat-template", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="A Jinja chat template replacing the tokenizer's (one that renders tools, to offer them).")
@click.option("--tool-format", type=click.Choice(["auto", "hermes", "none"]), default="auto", show_default=True,
              help="How the model writes tool calls (auto: from the chat template).")
@click.option("--max-tokens", default=1024, show_default=True, type=click.IntRange(1),
              help="Longest answer, in tokens (also the length of a call that asks none).")
@click.option("--temperature", type=click.FloatRange(0, 2), help="Sample at this temperature whatever a call asks.")
@click.option("--retry-window", default=10.0, show_default=True, type=click.FloatRange(0),
              metavar="SECONDS", help="A call identical to the session's last within this long is a retry.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8100, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: a free one, printed at start).")
@click.option("--admin-token-env", metavar="VAR",
              help="Require the token held by VAR to open, read and close sessions.")
@click.option("--log-level", default="warning", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
def gateway(backend: str, backend_url: str | None, backend_key_env: str | None, model: str, tokenizer: str | None,
            chat_template: str | None, tool_format: str, max_tokens: int, temperature: float | None,
            retry_window: float, host: str, port: int, admin_token_env: str | None, log_level: str) -> None:
    """Serve an OpenAI-compatible /v1/chat/completions that records, per session, the exact prompt
    and sampled token ids of every call, continuing each session from what was sampled.

    Open a session with POST /sessions: its answer holds a key; give the harness
    base_url http://HOST:PORT/v1 and that key (or base_url http://HOST:PORT/sessions/ID/v1).
    GET /sessions/ID returns the recorded calls; DELETE /sessions/ID closes it.

    Examples: gem gateway --backend-url http://127.0.0.1:8000 --model Qwen/Qwen3-0.6B --tokenizer ./qwen3

              gem gateway --backend local --model smollm2 --port 8100
    """
    from gem_core.errors import GemError
    from gem_serve.gateway.serving import serve_gateway

    def secret(variable: str | None, flag: str) -> str | None:
        if variable is None:
            return None
        value = os.environ.get(variable)
        if not value:
            raise GemError(f"{flag} {variable}: the environment variable {variable} is not set or empty.")
        return value

    if backend == "vllm" and not backend_url:
        raise GemError("--backend vllm needs --backend-url (vLLM's address), or use --backend local.")
    if backend == "local" and backend_url:
        raise GemError("--backend-url is for --backend vllm; --backend local samples from --model itself.")
    serve_gateway(backend=backend, backend_url=backend_url, backend_key=secret(backend_key_env, "--backend-key-env"),
                  model=model, tokenizer=tokenizer, chat_template=chat_template, tool_format=tool_format,
                  max_tokens=max_tokens, temperature=temperature, retry_window=retry_window, host=host, port=port,
                  admin_token=secret(admin_token_env, "--admin-token-env"), log_level=log_level,
                  announce=lambda url: click.echo(f"Gateway at {url} (open sessions with POST {url}/sessions; "
                                                  "Ctrl+C to stop)"))
