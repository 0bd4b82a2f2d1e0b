"""Workload: what ``gem gateway`` adds to a model call, and 256 sessions at once.

A backend that answers at once (a process speaking vLLM's ``/v1/completions`` with token ids,
answering every call with the same few ids) is called two ways, side by side in one run, in
alternating rounds: directly, with a token-id prompt as the gateway sends it, and through
``gem gateway`` (a process of its own, SmolLM2's tokenizer and chat template), with chat messages
that extend the session's conversation. The difference is the gateway's added latency per call
(p50, p99), and the gateway process's CPU time per call, measured on a short conversation (a few
messages) and on a long one (hundreds of messages, thousands of tokens), which should cost about
the same: only the new messages are rendered and tokenised. Then 256 sessions make calls at once;
every call must succeed.

Run as ``python bench/workloads/gateway.py --impl ours [--quick]``. gem-llm has no gateway, so
``--impl reference`` exits 3. The last stdout line is the metrics JSON.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from pathlib import Path

from _protocol import Metrics, no_counterpart, parser as workload_parser, percentile

REPO = Path(__file__).resolve().parents[2]
SESSIONS = 256
JSON = {"Content-Type": "application/json"}
BACKEND = r'''
import json, socket, sys
import uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

ANSWER = [16, 2]  # a short answer ending with <|im_end|>

async def completions(request):
    body = json.loads(await request.body())
    prompt = body["prompt"]
    ids = prompt[:1] if body.get("max_tokens") == 1 else ANSWER
    echo = body.get("return_token_ids")  # as vLLM: the prompt's ids come back only when asked
    choice = {"index": 0, "text": "", "finish_reason": "stop", "prompt_token_ids": prompt if echo else None,
              "token_ids": ids if echo else None,
              "logprobs": {"tokens": [f"token_id:{i}" for i in ids], "token_logprobs": [-0.5] * len(ids)}}
    return Response(json.dumps({"id": "x", "object": "text_completion", "choices": [choice]}),
                    media_type="application/json")

sock = socket.create_server(("127.0.0.1", 0))
print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
uvicorn.Server(uvicorn.Config(Starlette(routes=[Route("/v1/completions", completions, methods=["POST"])]),
                              log_level="warning")).run(sockets=[sock])
'''


def start(command: list[str], pattern: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    line = process.stdout.readline()
    match = re.search(pattern, line)
    if not match:
        process.kill()
        raise SystemExit(f"did not start: {command[:4]} {line!r} {process.stderr.read()[-2000:]}")
    return process, match.group(0)


def tokenizer_folder() -> Path:
    from gem_trainer.models import default_model_dir

    return default_model_dir(weights=False)


def main() -> None:
    args = workload_parser(__doc__, "fewer calls and a shorter long conversation").parse_args()
    if args.impl == "reference":
        no_counterpart("gem-llm 0.1.0 has no gateway")
    import httpx

    backend, backend_url = start([sys.executable, "-c", BACKEND], r"http://\S+")
    gateway, gateway_url = start([sys.executable, "-m", "gem_core.cli", "gateway", "--backend-url", backend_url,
                                  "--model", "bench", "--tokenizer", str(tokenizer_folder()), "--port", "0",
                                  "--retry-window", "0"], r"http://127\.0\.0\.1:\d+")
    try:
        metrics = Metrics()
        rounds = 60 if args.quick else 200
        long_messages = 100 if args.quick else 300
        with httpx.Client(timeout=300) as client:
            for label, length in (("short", 4), ("long", long_messages)):
                direct, through, cpu = measure(client, backend_url, gateway_url, length, rounds, gateway.pid)
                metrics.add(f"direct_p50_ms_{label}", percentile(direct, 0.5) * 1e3, "ms", "lower")
                metrics.add(f"gateway_p50_ms_{label}", percentile(through, 0.5) * 1e3, "ms", "lower")
                metrics.add(f"added_p50_ms_{label}", (percentile(through, 0.5) - percentile(direct, 0.5)) * 1e3, "ms",
                            "lower")
                metrics.add(f"added_p99_ms_{label}", (percentile(through, 0.99) - percentile(direct, 0.99)) * 1e3,
                            "ms", "lower")
                metrics.add(f"gateway_cpu_ms_per_call_{label}", cpu * 1e3, "ms", "lower")
        calls, failures, seconds = asyncio.run(concurrent(gateway_url, SESSIONS, 2 if args.quick else 4))
        metrics.add("sessions_256_failures", failures, "calls", "lower")
        metrics.add("sessions_256_calls_per_second", calls / seconds, "calls/s")
        metrics.emit()
    finally:
        for process in (gateway, backend):
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:  # a server still closing connections
                process.kill()
                process.wait(10)


def conversation(length: int) -> list[dict]:
    messages = [{"role": "system", "content": "You are a terse assistant."}]
    while len(messages) < length - 1:
        k = len(messages)
        messages += [{"role": "user", "content": f"Step {k}: the board shows " + "x o " * 20},
                     {"role": "assistant", "content": "!"}]
    return messages


def measure(client, backend_url: str, gateway_url: str, length: int, rounds: int,
            gateway_pid: int) -> tuple[list[float], list[float], float]:
    """Per-call seconds, directly and through the gateway, alternating, and the gateway's CPU
    seconds per call; the gateway's calls extend one session's conversation of about ``length``
    messages. Both bodies are written with orjson, so that what the client spends writing the
    conversation or the ids is next to nothing on either side."""
    import orjson
    import psutil

    def cpu() -> float:
        times = psutil.Process(gateway_pid).cpu_times()
        return times.user + times.system

    session = client.post(f"{gateway_url}/sessions").json()
    headers = {"Authorization": f"Bearer {session['key']}"}
    messages = conversation(length)
    messages.append({"role": "user", "content": "Go."})
    first = client.post(f"{gateway_url}/v1/chat/completions", headers=headers,
                        json={"model": "bench", "messages": messages, "max_tokens": 8})
    first.raise_for_status()
    record = client.get(f"{gateway_url}/sessions/{session['id']}").json()["calls"][-1]["sampled"]
    prompt = record["prompt_ids"] + record["response_ids"]
    messages.append(first.json()["choices"][0]["message"])
    direct, through = [], []
    cpu_before = cpu()
    for k in range(rounds):
        messages.append({"role": "user", "content": f"Go {k}."})
        started = time.perf_counter()
        answer = client.post(f"{gateway_url}/v1/chat/completions", headers={**headers, **JSON},
                             content=orjson.dumps({"model": "bench", "messages": messages, "max_tokens": 8}))
        through.append(time.perf_counter() - started)
        answer.raise_for_status()
        messages.append(answer.json()["choices"][0]["message"])
        prompt = prompt + [16, 2] * 4  # a prompt as long as the gateway's, grown as it grows
        started = time.perf_counter()
        client.post(f"{backend_url}/v1/completions", headers=JSON, content=orjson.dumps(
            {"model": "bench", "prompt": prompt, "max_tokens": 8, "return_tokens_as_token_ids": True, "logprobs": 0}
        )).raise_for_status()
        direct.append(time.perf_counter() - started)
    cpu_per_call = (cpu() - cpu_before) / rounds
    client.delete(f"{gateway_url}/sessions/{session['id']}")
    return direct, through, cpu_per_call


async def concurrent(gateway_url: str, sessions: int, turns: int) -> tuple[int, int, float]:
    """``sessions`` conversations of ``turns`` calls at once: (calls, failed calls, seconds)."""
    import httpx

    failures = 0
    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=sessions)) as client:
        opened = [(await client.post(f"{gateway_url}/sessions")).json() for _ in range(sessions)]

        async def talk(session: dict) -> None:
            nonlocal failures
            messages = [{"role": "user", "content": f"Session {session['id']}"}]
            for _ in range(turns):
                try:
                    answer = await client.post(f"{gateway_url}/v1/chat/completions",
                                               headers={"Authorization": f"Bearer {session['key']}"},
                                               json={"model": "bench", "messages": messages, "max_tokens": 8})
                    answer.raise_for_status()
                    messages += [answer.json()["choices"][0]["message"], {"role": "user", "content": "More."}]
                except Exception:  # noqa: BLE001 - counted
                    failures += 1
                    return

        started = time.perf_counter()
        await asyncio.gather(*(talk(session) for session in opened))
        seconds = time.perf_counter() - started
        for session in opened:
            await client.delete(f"{gateway_url}/sessions/{session['id']}")
    return sessions * turns, failures, seconds


if __name__ == "__main__":
    main()
