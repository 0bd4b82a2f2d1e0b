"""A chat model behind an OpenAI-compatible endpoint, as a judge or a simulated user reaches it.

:class:`ChatEndpoint` sends one ``/chat/completions`` request per call, synchronously
(:meth:`~ChatEndpoint.complete`) or from a coroutine (:meth:`~ChatEndpoint.acomplete`), through the
``openai`` client (extra ``openai``, imported on first use) with its retries and a timeout. Every
way a request can fail becomes an :class:`EndpointError` whose ``kind`` says which, and whose
message names the server and what to do. :meth:`~ChatEndpoint.acheck` asks the server, before the
first request, whether it serves the model.
"""

from __future__ import annotations

import asyncio
import numbers
import os
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from gem_core.errors import GemError, MissingDependencyError

#: The kinds of :class:`EndpointError`.
UNREACHABLE, TIMEOUT, REFUSED, EMPTY = "unreachable", "timeout", "refused", "empty"


class EndpointError(GemError):
    """A request to a chat endpoint that failed after the client's retries. ``kind`` is
    ``"unreachable"`` (no connection), ``"timeout"`` (no answer in time), ``"refused"`` (the server
    answered with an error: a wrong key, an unknown model, a server fault) or ``"empty"`` (an
    answer with no message)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class ChatEndpoint:
    """``model`` served at ``base_url`` (the OpenAI base, usually ending in ``/v1``; None: the
    ``openai`` client's default, ``$OPENAI_BASE_URL`` or OpenAI's own). The key is read from the
    environment variable ``api_key_env`` (a local server needs none). Each request may take
    ``timeout`` seconds and is retried ``max_retries`` times (connection errors, timeouts, 429 and
    5xx answers, with the client's backoff). ``temperature`` and ``max_tokens`` go with every
    request. ``hints`` adds a sentence to the message of an :class:`EndpointError` of a kind (say,
    which command-line flag sets the timeout).

    An endpoint is shared, never copied: ``copy.deepcopy`` returns it as it is (clones of an
    environment ask the same model), and pickling leaves its connections behind.
    """

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 temperature: float = 0.0, max_tokens: int = 512, timeout: float = 60.0, max_retries: int = 2,
                 hints: Mapping[str, str] | None = None):
        if not isinstance(model, str) or not model.strip():
            raise GemError("A chat endpoint needs model=, the name of the model the server serves.")
        if not (_number(timeout) and timeout > 0):
            raise GemError(f"timeout must be a positive number of seconds, got {timeout!r}.")
        if not (_whole(max_retries) and max_retries >= 0):
            raise GemError(f"max_retries must be a whole number >= 0, got {max_retries!r}.")
        if not (_whole(max_tokens) and max_tokens >= 1):
            raise GemError(f"max_tokens must be a whole number >= 1, got {max_tokens!r}.")
        if not (_number(temperature) and temperature >= 0):
            raise GemError(f"temperature must be a number >= 0 (0 is greedy), got {temperature!r}.")
        if base_url is not None and not isinstance(base_url, str):
            raise GemError(f"base_url must be a URL, got {base_url!r}.")
        self.model, self.base_url, self.api_key_env = model, base_url, api_key_env
        self.temperature, self.max_tokens = float(temperature), max_tokens
        self.timeout, self.max_retries = float(timeout), max_retries
        self.hints = dict(hints or {})
        self._openai = _import_openai()
        self._lock = threading.Lock()
        self._client: Any = None
        self._async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

    @property
    def where(self) -> str:
        """The server, for messages."""
        return self.base_url or "the default OpenAI endpoint"

    def settings(self) -> dict[str, Any]:
        """What shapes the answers: the model and the sampling settings."""
        return {"model": self.model, "temperature": self.temperature, "max_tokens": self.max_tokens}

    def complete(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> str:
        """The model's answer to ``messages`` (``options``, e.g. ``seed``, go with the request)."""
        with self._lock:
            if self._client is None:
                self._client = self._openai.OpenAI(**self._client_options())
            client = self._client
        try:
            response = client.chat.completions.create(**self._request(messages, options))
        except self._openai.APIError as error:
            raise self._failure(error) from None
        return self._text(response)

    async def acomplete(self, messages: Sequence[Mapping[str, Any]], **options: Any) -> str:
        """:meth:`complete` for coroutines: the request is awaited on the running event loop."""
        try:
            response = await self._async_client().chat.completions.create(**self._request(messages, options))
        except self._openai.APIError as error:
            raise self._failure(error) from None
        return self._text(response)

    async def acheck(self) -> None:
        """Fail early, from a coroutine, when the server cannot be reached, rejects the key, or
        lists its models without this one (a server that lists none is asked anyway)."""
        try:
            listing = await self._async_client().with_options(max_retries=1, timeout=min(self.timeout, 30.0)).models.list()
        except (self._openai.APIConnectionError, self._openai.AuthenticationError) as error:
            raise self._failure(error) from None
        except self._openai.APIStatusError:
            return  # some servers do not list models; the first request will tell
        names = [m.id for m in listing.data]
        if names and self.model not in names:
            raise self._error(REFUSED, f"{self.where} does not serve model {self.model!r}; it serves: "
                                       f"{', '.join(names)}.")

    async def aclose(self) -> None:
        """Close the connections of the running event loop's client."""
        client = self._async_clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()

    def close(self) -> None:
        """Close the synchronous client's connections (asynchronous ones close with their loop)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _async_client(self) -> Any:
        loop = asyncio.get_running_loop()
        client = self._async_clients.get(loop)
        if client is None:  # connections belong to the loop that opened them
            client = self._async_clients[loop] = self._openai.AsyncOpenAI(**self._client_options())
        return client

    def _client_options(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "api_key": os.environ.get(self.api_key_env) or "EMPTY",
                "timeout": self.timeout, "max_retries": self.max_retries}

    def _request(self, messages: Sequence[Mapping[str, Any]], options: Mapping[str, Any]) -> dict[str, Any]:
        return {"model": self.model, "messages": list(messages), "temperature": self.temperature,
                "max_tokens": self.max_tokens, **options}

    def _text(self, response: Any) -> str:
        choices = getattr(response, "choices", None)
        if not choices or choices[0].message is None:
            raise self._error(EMPTY, f"{self.where} answered with no message for model {self.model!r}.")
        return choices[0].message.content or ""

    def _failure(self, error: Exception) -> EndpointError:
        openai, where = self._openai, self.where
        if isinstance(error, openai.APITimeoutError):
            return self._error(TIMEOUT, f"{where} gave no answer within {self.timeout:g} s "
                                        f"({self.max_retries} retries): a slow server needs a longer timeout.")
        if isinstance(error, openai.APIConnectionError):
            return self._error(UNREACHABLE, f"Cannot reach {where} ({error}). Is the server running, and is "
                                            "the URL its OpenAI base (usually ending in /v1)?")
        if isinstance(error, openai.AuthenticationError):
            return self._error(REFUSED, f"{where} rejected the API key: put the key in the environment "
                                        f"variable {self.api_key_env}.")
        status = getattr(error, "status_code", None)
        return self._error(REFUSED, f"{where} refused the request for model {self.model!r}"
                                    f"{f' (HTTP {status})' if status else ''}: {error}")

    def _error(self, kind: str, message: str) -> EndpointError:
        hint = self.hints.get(kind)
        return EndpointError(kind, f"{message} {hint}" if hint else message)

    def __deepcopy__(self, memo: dict[int, Any]) -> ChatEndpoint:
        return self

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in ("_openai", "_lock", "_client", "_async_clients"):
            del state[name]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._openai = _import_openai()
        self._lock = threading.Lock()
        self._client = None
        self._async_clients = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"ChatEndpoint({self.model!r} at {self.where})"


def _number(value: Any) -> bool:
    """Whether ``value`` is a real number (not a bool, not NaN)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and value == value


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _import_openai() -> Any:
    try:
        import openai
    except ImportError:
        raise MissingDependencyError("Asking a model at an OpenAI-compatible endpoint", "openai", "openai") from None
    return openai
