"""``gem gateway``: an OpenAI-compatible chat endpoint that records, per session, exactly what the
model was given and sampled.

A session is opened by whoever runs the harness (``POST /sessions``, or :meth:`Gateway.open`
in-process) and gets a key. The harness calls ``/v1/chat/completions`` with the key as its bearer
token (``OPENAI_API_KEY``), or ``/sessions/{id}/v1/chat/completions`` with any key; a key the
gateway did not hand out gets HTTP 401.

Each call's prompt continues the session's token chain (:mod:`~gem_serve.gateway.chains`); the
backend samples from the ids (:mod:`~gem_serve.gateway.backends`); tool calls are read from the
sampled text in the model's format (:mod:`~gem_serve.gateway.tool_calls`) and every one is
returned. Calls of one session run one at a time, sessions side by side.

SDKs retry: a call whose body is byte for byte the session's last call's, within
``retry_window`` seconds or marked as a retry (``x-stainless-retry-count`` above 0), gets the
last call's answer again (awaited if it is still being sampled), and nothing is sampled or
recorded twice.

``GET /sessions/{id}`` returns a session's calls; ``DELETE /sessions/{id}`` closes it and returns
them. With ``admin_token`` set, those routes and ``POST /sessions`` need it as bearer token.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import secrets
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from gem_adapters.common.chat import ChatFormat
from gem_core.errors import GemError
from gem_core.sampled import SampledCall
from gem_serve.gateway.backends import Backend, BackendError
from gem_serve.gateway.chains import Chain, RequestError
from gem_serve.gateway.jsonio import json_response, read_json
from gem_serve.gateway.openai_api import Answer, ChatRequest, error_body, parse_request
from gem_serve.gateway.tool_calls import parser_for

logger = logging.getLogger("gem_serve")

RETRY_HEADER = "x-stainless-retry-count"
PROBE_TOOL = {"type": "function", "function": {"name": "gem_probe_tool", "description": "probe",
                                               "parameters": {"type": "object", "properties": {}}}}


@dataclass
class Call:
    """One recorded call: the messages rendered for it (template form: those it added, or all of
    those of a call that opened a segment), the ids sent to the backend and sampled, and the
    answer returned."""

    messages: list[dict[str, Any]]
    sampled: SampledCall
    answer: dict[str, Any]  # the assistant message returned
    finish_reason: str
    started: float
    seconds: float
    backend: dict[str, Any] = field(default_factory=dict)  # what the backend said besides (Sampled.fields)

    def to_dict(self) -> dict[str, Any]:
        return {"messages": self.messages, "sampled": self.sampled.to_info(), "answer": self.answer,
                "finish_reason": self.finish_reason, "started": self.started, "seconds": self.seconds,
                "backend": self.backend}


@dataclass
class Session:
    """One harness's conversation with the model."""

    id: str
    key: str
    chain: Chain
    calls: list[Call] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_body: bytes | None = None
    last_at: float = 0.0
    last_answer: asyncio.Future | None = None
    retries_answered: int = 0
    #: Backend failures in this session (the harness got HTTP 502 for each).
    errors: list[str] = field(default_factory=list)
    #: This session's own forced sampling settings and answer cap (None: the gateway's).
    sampling: dict[str, Any] | None = None
    max_tokens: int | None = None


class Gateway:
    """Sessions, chains and the backend; :meth:`app` is the Starlette application.

    ``tokenizer`` (with its chat template, or ``chat_template``) renders and tokenises the
    harness's messages, as the backend's model reads them. ``max_tokens`` caps each answer
    (and is the length of an answer that asks none); ``sampling`` (``temperature``, ``top_p``)
    replaces the harness's settings where given. ``tool_format``: how the model writes tool
    calls (:func:`~gem_serve.gateway.tool_calls.parser_for`)."""

    def __init__(self, backend: Backend, tokenizer: Any, *, model: str = "gem", chat_template: str | None = None,
                 template_kwargs: dict[str, Any] | None = None, max_tokens: int = 1024,
                 sampling: dict[str, float] | None = None, tool_format: str = "auto", retry_window: float = 10.0,
                 admin_token: str | None = None, max_sessions: int = 10_000):
        self.backend, self.tokenizer, self.model = backend, tokenizer, model
        self.chat = ChatFormat(tokenizer, chat_template=chat_template, template_kwargs=template_kwargs)
        template = chat_template or tokenizer.chat_template
        self.parse_calls = parser_for(template if isinstance(template, str) else json.dumps(template), tool_format)
        self.renders_tools = PROBE_TOOL["function"]["name"] in self.chat.render(
            [{"role": "user", "content": "x"}], generation_prompt=True, tools=[PROBE_TOOL])
        self.max_tokens, self.sampling = max_tokens, dict(sampling or {})
        self.retry_window, self.admin_token, self.max_sessions = retry_window, admin_token, max_sessions
        self.sessions: dict[str, Session] = {}
        self._by_key: dict[str, Session] = {}

    # ---- sessions -----------------------------------------------------------------------

    def open(self, *, sampling: dict[str, Any] | None = None, max_tokens: int | None = None) -> Session:
        """A new session with a key of its own; ``sampling`` and ``max_tokens``, when given,
        replace the gateway's for its calls (a trainer's rollout settings, which differ between
        training and validation)."""
        if len(self.sessions) >= self.max_sessions:
            raise GemError(f"The gateway holds {self.max_sessions} sessions already: close some.")
        session = Session(uuid.uuid4().hex, "gem-" + secrets.token_urlsafe(24), Chain(self.chat),
                          sampling=None if sampling is None else dict(sampling), max_tokens=max_tokens)
        self.sessions[session.id] = session
        self._by_key[session.key] = session
        return session

    def close(self, session_id: str) -> Session | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            self._by_key.pop(session.key, None)
        return session

    def by_key(self, key: str) -> Session | None:
        session = self._by_key.get(key)
        return session if session is not None and hmac.compare_digest(session.key, key) else None

    # ---- calls --------------------------------------------------------------------------

    async def complete(self, session: Session, raw: bytes, retry: bool = False) -> tuple[ChatRequest | None, Answer]:
        """Answer one call of ``session`` (``raw``: its body). A retry of the last call gets the
        last answer. :class:`RequestError` for a request refused, :class:`BackendError` when the
        backend failed."""
        now = time.monotonic()
        if session.last_body == raw and session.last_answer is not None and (retry or now - session.last_at
                                                                              <= self.retry_window):
            if not session.last_answer.done() or session.last_answer.exception() is None:
                session.retries_answered += 1
                return None, await asyncio.shield(session.last_answer)
        try:
            body = read_json(raw)
        except ValueError as e:
            raise RequestError(f"The body is not JSON: {e}") from None
        request = parse_request(body, max_tokens=session.max_tokens or self.max_tokens,
                                forced=self.sampling if session.sampling is None else session.sampling)
        if request.tools and not self.renders_tools:
            raise RequestError("This model's chat template does not render tools, so the model would never see "
                               "them: serve it with a template that does (gem gateway --chat-template FILE).", "tools")
        async with session.lock:
            session.last_body, session.last_at = raw, time.monotonic()
            future = asyncio.get_running_loop().create_future()
            session.last_answer = future
            task = asyncio.ensure_future(self._sample(session, request))  # a caller that leaves does not cancel it
            try:
                answer = await asyncio.shield(task)
            except BaseException as e:
                if not task.done():
                    answer = await task  # the caller left: the call still completes and is recorded
                else:
                    future.set_exception(e if isinstance(e, Exception) else RuntimeError(str(e)))
                    future.exception()  # retrieved: nobody need await it
                    raise
            future.set_result(answer)
            return request, answer

    async def _sample(self, session: Session, request: ChatRequest) -> Answer:
        started = time.time()
        clock = time.perf_counter()
        prompt = session.chain.prompt(request.messages, request.tools)
        try:
            sampled = await self.backend.generate(prompt.ids, request.sampling)
        except BackendError as e:
            session.errors.append(str(e))
            raise
        text = self.tokenizer.decode(sampled.ids, skip_special_tokens=True)
        content, calls = self.parse_calls(text) if request.calls_allowed and request.tools else (text, [])
        logprobs = None
        if request.logprobs:
            if sampled.logprobs is None:
                raise RequestError("logprobs were asked, but the backend returns none.", "logprobs")
            tokens = self.tokenizer.convert_ids_to_tokens(sampled.ids)
            logprobs = [(self.tokenizer.convert_tokens_to_string([t]), v) for t, v in zip(tokens, sampled.logprobs)]
        answer = Answer.new(request.model or self.model, content, calls, sampled.finish_reason, len(prompt.ids),
                            len(sampled.ids), logprobs)
        answered = answer.template_message()
        session.chain.advance(prompt, request.messages, request.tools, sampled.ids, answered)
        session.calls.append(Call(prompt.rendered, SampledCall(prompt.ids, list(sampled.ids), sampled.logprobs,
                                                                prompt.segment, prompt.reason),
                                  answer.message(), answer.finish_reason, started, time.perf_counter() - clock,
                                  dict(sampled.fields)))
        return answer

    # ---- the application ----------------------------------------------------------------

    def app(self):
        """The Starlette application (its lifespan closes the backend's client)."""
        from contextlib import asynccontextmanager

        from starlette.applications import Starlette

        @asynccontextmanager
        async def lifespan(app):
            try:
                yield
            finally:
                await self.shutdown()

        return Starlette(routes=self.routes(), lifespan=lifespan)

    def routes(self) -> list[Any]:
        """The gateway's routes, to mount beside others (what ``gem train`` serves)."""
        from starlette.routing import Route

        return [
            Route("/health", self._health, methods=["GET"]),
            Route("/v1/models", self._models, methods=["GET"]),
            Route("/v1/chat/completions", self._completions, methods=["POST"]),
            Route("/sessions", self._open, methods=["POST"]),
            Route("/sessions/{id}", self._session, methods=["GET", "DELETE"]),
            Route("/sessions/{id}/v1/models", self._models, methods=["GET"]),
            Route("/sessions/{id}/v1/chat/completions", self._completions, methods=["POST"]),
        ]

    async def shutdown(self) -> None:
        """Close the backend's client."""
        close = getattr(self.backend, "aclose", None)
        if close is not None:
            await close()

    async def _health(self, request):
        return json_response({"status": "healthy", "sessions": len(self.sessions)})

    def _caller(self, request) -> Session | None:
        if "id" in request.path_params:
            return self.sessions.get(request.path_params["id"])
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        return self.by_key(key.strip()) if scheme.lower() == "bearer" else None

    async def _models(self, request):
        if self._caller(request) is None:
            return _unauthorized()
        return json_response({"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "gem"}]})

    async def _completions(self, request):
        from starlette.responses import StreamingResponse

        session = self._caller(request)
        if session is None:
            return _unauthorized()
        retry = request.headers.get(RETRY_HEADER, "0").strip() not in ("", "0")
        try:
            parsed, answer = await self.complete(session, await request.body(), retry)
        except RequestError as e:
            return json_response(error_body(str(e), e.param), status_code=e.status)
        except BackendError as e:
            return json_response(error_body(str(e), kind="api_error", code="backend_error"), status_code=502)
        stream = parsed.stream if parsed is not None else _streamed(session.last_body)
        if stream:
            include_usage = parsed.include_usage if parsed is not None else _usage_asked(session.last_body)
            events = answer.events(include_usage)
            return StreamingResponse(iter(events), media_type="text/event-stream")
        return json_response(answer.completion())

    def _admin(self, request) -> bool:
        if self.admin_token is None:
            return True
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), self.admin_token.encode())

    async def _open(self, request):
        if not self._admin(request):
            return _unauthorized()
        try:
            session = self.open()
        except GemError as e:
            return json_response(error_body(str(e), code="capacity"), status_code=503)
        base = str(request.base_url).rstrip("/")
        return json_response({"id": session.id, "key": session.key, "base_url": f"{base}/v1",
                             "session_url": f"{base}/sessions/{session.id}/v1"})

    async def _session(self, request):
        if not self._admin(request):
            return _unauthorized()
        session_id = request.path_params["id"]
        session = self.close(session_id) if request.method == "DELETE" else self.sessions.get(session_id)
        if session is None:
            return json_response(error_body(f"No session {session_id!r}."), status_code=404)
        return json_response({"id": session.id, "calls": [call.to_dict() for call in session.calls],
                             "retries_answered": session.retries_answered, "errors": session.errors})


def _unauthorized():
    return json_response(error_body("Unknown key: use the key the gateway gave when the session was opened "
                                   "(POST /sessions), as the bearer token.", code="invalid_api_key"),
                        status_code=401, headers={"WWW-Authenticate": "Bearer"})


def _streamed(raw: bytes | None) -> bool:
    try:
        return bool(read_json(raw or b"{}").get("stream"))
    except (ValueError, AttributeError):
        return False


def _usage_asked(raw: bytes | None) -> bool:
    try:
        return bool((read_json(raw or b"{}").get("stream_options") or {}).get("include_usage"))
    except (ValueError, AttributeError):
        return False

