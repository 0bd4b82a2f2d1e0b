"""The gateway's OpenAI API with the ``openai`` SDK: tool calls read from the sampled ids (every
parallel call, a malformed one as plain text), streamed answers equal to plain ones, sessions by
key and by path, 8 concurrent sessions that never mix, bad input refused with the field named, a
backend that fails, answers garbage or is gone answered with a 502, and idle connections kept open
longer than clients keep theirs."""

from __future__ import annotations

import asyncio
import json
import re
import threading

import httpx
import pytest

from gem_core.errors import GemError
from gem_serve.gateway.backends import VLLMBackend
from tests.gateway.conftest import gateway_over
from tests.gateway.scripted import ScriptedBackend

openai = pytest.importorskip("openai")

TOOLS = [{"type": "function", "function": {"name": "step", "description": "Act.", "parameters": {
    "type": "object", "properties": {"action": {"type": "string"}}, "required": ["action"]}}}]


def tool_script(tokenizer):
    """Two parallel calls, then a malformed call, then text."""
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    answers = {
        0: 'Two moves.\n<tool_call>\n{"name": "step", "arguments": {"action": "a"}}\n</tool_call>\n'
           '<tool_call>\n{"name": "step", "arguments": {"action": "b"}}\n</tool_call>',
        1: '<tool_call>\n{"name": "step", "arguments": {"action": </tool_call>',
        2: "Done.",
    }

    def answer(prompt):
        turn = tokenizer.decode(prompt).count("<|im_start|>assistant") - 1
        return tokenizer.encode(answers[min(turn, 2)], add_special_tokens=False) + [end]

    return answer


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_tool_calls_come_from_the_sampled_ids_every_parallel_one_and_a_malformed_one_as_text(
        stream, qwen3_tokenizer):
    with gateway_over(qwen3_tokenizer, tool_script(qwen3_tokenizer)) as (gateway, url, backend):
        session = gateway.open()
        client = openai.OpenAI(base_url=f"{url}/sessions/{session.id}/v1", api_key="anything", max_retries=0)
        messages = [{"role": "user", "content": "Play."}]
        seen = []
        for _ in range(3):
            if stream:
                content, calls, finish = "", {}, None
                for chunk in client.chat.completions.create(model="m", messages=messages, tools=TOOLS, stream=True,
                                                            stream_options={"include_usage": True}):
                    if not chunk.choices:
                        assert chunk.usage.completion_tokens > 0
                        continue
                    delta = chunk.choices[0].delta
                    content += delta.content or ""
                    for call in delta.tool_calls or []:
                        calls[call.index] = (call.id, call.function.name, call.function.arguments)
                    finish = chunk.choices[0].finish_reason or finish
                calls = [calls[k] for k in sorted(calls)]
            else:
                choice = client.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0]
                content, finish = choice.message.content or "", choice.finish_reason
                calls = [(c.id, c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
            seen.append((content, [(name, json.loads(arguments)) for _, name, arguments in calls], finish))
            messages.append({"role": "assistant", "content": content or None, **({"tool_calls": [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]} if calls else {})})
            messages += [{"role": "tool", "tool_call_id": i, "content": f"moved {json.loads(a)['action']}"}
                         for i, _, a in calls] or [{"role": "user", "content": "Go on."}]
    assert seen[0] == ("Two moves.", [("step", {"action": "a"}), ("step", {"action": "b"})], "tool_calls")
    assert seen[1] == ('<tool_call>\n{"name": "step", "arguments": {"action": </tool_call>', [], "stop")
    assert seen[2] == ("Done.", [], "stop")
    assert [call.sampled.segment for call in session.calls] == [0, 0, 0]  # the SDK's messages extend the chain
    tool_results = qwen3_tokenizer.decode(backend.calls[1][0][len(backend.calls[0][0]) + len(backend.calls[0][1]):])
    assert tool_results == ("\n<|im_start|>user\n<tool_response>\nmoved a\n</tool_response>\n<tool_response>\nmoved b\n"
                            "</tool_response><|im_end|>\n<|im_start|>assistant\n")  # the new messages only


def test_eight_concurrent_sessions_streamed_and_not_never_mix(smollm2_tokenizer):
    tokenizer = smollm2_tokenizer
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")

    def answer(prompt):
        session, turn = re.findall(r"<<(\d+):(\d+)>>", tokenizer.decode(prompt))[-1]
        return tokenizer.encode(f"s{session} t{turn}", add_special_tokens=False) + [end]

    failures = []
    with gateway_over(tokenizer, answer, delay=0.05) as (gateway, url, backend):
        sessions = [gateway.open() for _ in range(8)]

        def harness(number: int) -> None:
            try:
                client = openai.OpenAI(base_url=f"{url}/v1", api_key=sessions[number].key, max_retries=0)
                messages = [{"role": "user", "content": f"<<{number}:0>>"}]
                for turn in range(4):
                    stream = number % 2 == 1
                    if stream:
                        text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
                            model="m", messages=messages, stream=True) if c.choices)
                    else:
                        text = client.chat.completions.create(model="m", messages=messages).choices[0].message.content
                    assert text == f"s{number} t{turn}", text
                    messages += [{"role": "assistant", "content": text}, {"role": "user", "content": f"<<{number}:{turn + 1}>>"}]
            except Exception as e:  # noqa: BLE001 - reported below
                failures.append(f"session {number}: {type(e).__name__}: {e}")

        threads = [threading.Thread(target=harness, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    assert failures == []
    for number, session in enumerate(sessions):
        assert [call.sampled.segment for call in session.calls] == [0, 0, 0, 0]
        text = tokenizer.decode(session.calls[-1].sampled.prompt_ids)
        assert set(re.findall(r"<<(\d+):", text)) == {str(number)} and set(re.findall(r"s(\d+) t", text)) == {str(number)}


def test_bad_input_gets_401_or_a_400_naming_what_and_the_session_goes_on(smollm2_tokenizer):
    tokenizer = smollm2_tokenizer
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    with gateway_over(tokenizer, lambda prompt: tokenizer.encode("ok", add_special_tokens=False) + [end]) as (
            gateway, url, backend):
        session = gateway.open()
        good = {"model": "m", "messages": [{"role": "user", "content": "Hi."}]}

        def post(body, key=session.key, path="/v1/chat/completions"):
            return httpx.post(url + path, json=body, headers={"Authorization": f"Bearer {key}"}, timeout=30)

        unknown = post(good, key="gem-not-a-key")
        assert unknown.status_code == 401 and "Unknown key" in unknown.json()["error"]["message"]
        assert post(good, path="/sessions/nope/v1/chat/completions").status_code == 401
        for extra, param in [({"n": 2}, "n"), ({"stop": ["\n"]}, "stop"), ({"logit_bias": {"5": 1}}, "logit_bias"),
                             ({"response_format": {"type": "json_object"}}, "response_format"),
                             ({"tool_choice": "required"}, "tool_choice"), ({"top_logprobs": 3}, "top_logprobs"),
                             ({"audio": {"voice": "x"}}, "audio"), ({"guided_json": {}}, "guided_json"),
                             ({"tools": TOOLS}, "tools"),  # SmolLM2's template does not render tools
                             ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
                              "messages[0].content"),
                             ({"max_tokens": 0}, "max_tokens"), ({"temperature": "hot"}, "temperature")]:
            answer = post({**good, **extra})
            assert answer.status_code == 400, (extra, answer.text)
            assert answer.json()["error"]["param"] == param, (extra, answer.json())
        assert httpx.post(url + "/v1/chat/completions", content=b"{nope",
                          headers={"Authorization": f"Bearer {session.key}"}).status_code == 400
        nan = httpx.post(url + "/v1/chat/completions", content=b'{"messages": [{"role": "user", "content": "Hi."}], '
                         b'"temperature": NaN}', headers={"Authorization": f"Bearer {session.key}"})
        assert nan.status_code == 400 and nan.json()["error"]["param"] == "temperature"
        with pytest.raises(openai.BadRequestError, match="n must be 1"):
            openai.OpenAI(base_url=f"{url}/v1", api_key=session.key, max_retries=0).chat.completions.create(
                model="m", messages=good["messages"], n=3)
        assert post(good).json()["choices"][0]["message"]["content"] == "ok"
        assert len(session.calls) == 1  # nothing refused was sampled or recorded


@pytest.mark.parametrize("missing, flag", [({"echo_prompt": False}, "return_token_ids"),
                                           ({"writes_ids": False}, "return_tokens_as_token_ids")])
def test_a_backend_that_does_not_return_token_ids_is_refused_at_start(missing, flag):
    backend = ScriptedBackend(lambda prompt: [7], **missing)
    with backend.serving():
        with pytest.raises(GemError, match=flag):
            asyncio.run(VLLMBackend(backend.url, "m").check())


def test_sessions_open_read_and_close_over_http(smollm2_tokenizer):
    tokenizer = smollm2_tokenizer
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    with gateway_over(tokenizer, lambda prompt: tokenizer.encode("ok", add_special_tokens=False) + [end],
                      admin_token="admin") as (gateway, url, backend):
        assert httpx.post(f"{url}/sessions").status_code == 401
        opened = httpx.post(f"{url}/sessions", headers={"Authorization": "Bearer admin"}).json()
        client = openai.OpenAI(base_url=opened["base_url"], api_key=opened["key"], max_retries=0)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi."}])
        read = httpx.get(f"{url}/sessions/{opened['id']}", headers={"Authorization": "Bearer admin"}).json()
        assert [call["sampled"]["response_ids"][-1] for call in read["calls"]] == [end]
        closed = httpx.delete(f"{url}/sessions/{opened['id']}", headers={"Authorization": "Bearer admin"})
        assert closed.json()["calls"] == read["calls"]
        with pytest.raises(openai.AuthenticationError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi."}])


def test_gem_gateway_refuses_a_backend_without_token_ids_at_start_with_what_to_do(smollm2_tokenizer, tmp_path):
    import subprocess
    import sys

    folder = tmp_path / "tokenizer"
    smollm2_tokenizer.save_pretrained(folder)
    backend = ScriptedBackend(lambda prompt: [7], echo_prompt=False)
    with backend.serving():
        started = subprocess.run([sys.executable, "-m", "gem_core.cli", "gateway", "--backend-url", backend.url,
                                  "--model", "m", "--tokenizer", str(folder), "--port", "0"],
                                 capture_output=True, text=True, timeout=120)
    assert started.returncode == 1 and "Traceback" not in started.stderr
    assert "return_token_ids" in started.stderr and "--backend local" in started.stderr
    missing = subprocess.run([sys.executable, "-m", "gem_core.cli", "gateway"], capture_output=True, text=True,
                             timeout=60)
    assert missing.returncode == 1 and "--backend vllm needs --backend-url" in missing.stderr


def test_an_idle_connection_stays_open_longer_than_clients_keep_theirs(smollm2_tokenizer):
    """httpx and the OpenAI SDKs keep an idle connection 5 s, aiohttp 15 s: a gateway that closed
    its side first would race a client sending its next call on it (a ReadError at load)."""
    import socket
    import time
    from urllib.parse import urlsplit

    from gem_serve.gateway.serving import KEEP_ALIVE_S

    assert KEEP_ALIVE_S > 15
    tokenizer = smollm2_tokenizer
    with gateway_over(tokenizer, lambda prompt: [tokenizer.eos_token_id]) as (gateway, url, backend):
        where = urlsplit(url)
        with socket.create_connection((where.hostname, where.port), timeout=10) as connection:
            request = f"GET /health HTTP/1.1\r\nHost: {where.netloc}\r\n\r\n".encode()
            for wait in (0, 6.5):  # uvicorn's own default closes an idle connection after 5 s
                time.sleep(wait)
                connection.sendall(request)
                answer = b""
                while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < length(answer):
                    received = connection.recv(65536)
                    assert received, f"the gateway closed the connection after {wait} s idle"
                    answer += received
                assert answer.startswith(b"HTTP/1.1 200"), (wait, answer)


def length(response: bytes) -> int:
    """The Content-Length of an HTTP response's head."""
    head = response.partition(b"\r\n\r\n")[0].decode().lower()
    return int(re.search(r"content-length: (\d+)", head).group(1))


def test_a_backend_that_fails_or_answers_garbage_gets_the_harness_a_502_and_the_session_goes_on(smollm2_tokenizer):
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from gem_serve.gateway.server import Gateway
    from gem_serve.gateway.serving import served
    from tests.serve.servers import in_thread

    tokenizer = smollm2_tokenizer
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    answers = iter([Response("overloaded", status_code=500), JSONResponse([1, 2]), Response("<html>"),
                    JSONResponse({"choices": ["text"]}), JSONResponse({"choices": 5}),
                    JSONResponse({"choices": [{"logprobs": [1]}]}), None])

    async def completions(request):
        body = json.loads(await request.body())
        if body.get("return_token_ids"):  # the start check
            return JSONResponse({"choices": [{"prompt_token_ids": body["prompt"], "token_ids": [7],
                                              "logprobs": {"tokens": ["token_id:7"], "token_logprobs": [-1.0]}}]})
        answer = next(answers)
        return answer or JSONResponse({"choices": [{"finish_reason": "stop", "logprobs": {
            "tokens": [f"token_id:{end}"], "token_logprobs": [-0.5]}}]})

    with in_thread(Starlette(routes=[Route("/v1/completions", completions, methods=["POST"])])) as backend_url:
        gateway = Gateway(VLLMBackend(backend_url, "m"), tokenizer, model="m")
        with served(gateway.app()) as (url, loop):
            asyncio.run_coroutine_threadsafe(gateway.backend.check(), loop).result(30)
            session = gateway.open()
            body = {"model": "m", "messages": [{"role": "user", "content": "Hi."}]}
            headers = {"Authorization": f"Bearer {session.key}"}
            for _ in range(6):
                failed = httpx.post(f"{url}/v1/chat/completions", json=body, headers=headers, timeout=30)
                assert failed.status_code == 502 and failed.json()["error"]["code"] == "backend_error", failed.text
            assert len(session.errors) == 6 and "HTTP 500" in session.errors[0] and session.calls == []
            answered = httpx.post(f"{url}/v1/chat/completions", json=body, headers=headers, timeout=30)
            assert answered.status_code == 200 and [c.sampled.response_ids for c in session.calls] == [[end]]
        dead = Gateway(VLLMBackend(backend_url, "m"), tokenizer, model="m")
    with served(dead.app()) as (url, loop):  # its backend is gone
        key = dead.open().key
        gone = httpx.post(f"{url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"},
                          timeout=30)
        assert gone.status_code == 502 and "did not answer" in gone.json()["error"]["message"]
