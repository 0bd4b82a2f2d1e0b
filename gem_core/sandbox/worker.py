"""The worker side of :mod:`gem_core.sandbox.worker_pool`: ``python -m gem_core.sandbox.worker MODULE MEMORY_MB``.

Messages are length-prefixed: requests are pickles from the trusted caller, replies are JSON (so
that code run on hostile input cannot send the caller anything but data). The worker replies
``{"ready": true}`` once ``MODULE`` is imported and warmed up, then for each request
``(setup, function, args, time_limit)``: ``{"started": true}`` after the setup (when there is
one), then ``{"value": ...}``, ``{"timeout": true}`` or ``{"error": "..."}``.
"""

from __future__ import annotations

import importlib
import json
import logging
import math
import os
import pickle
import select
import signal
import struct
import sys
import threading
import warnings
from typing import Any, BinaryIO

#: Each message's length, before it.
HEADER = struct.Struct(">I")
#: Largest message either side accepts.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class TimeLimitExceeded(BaseException):
    """Raised by the alarm; a BaseException so that ``except Exception`` in library code does not
    swallow it."""


_expired = False


def _on_alarm(signum: int, frame: Any) -> None:
    global _expired
    _expired = True
    raise TimeLimitExceeded


def main(argv: list[str]) -> int:
    module_name, memory_mb = argv[0], int(argv[1])
    replies = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # stray prints must not corrupt the replies
    requests = os.fdopen(0, "rb", buffering=0)
    threading.Thread(target=_exit_when_caller_exits, daemon=True).start()
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    try:
        module = importlib.import_module(module_name)
        warm_up = getattr(module, "warm_up", None)
        if warm_up is not None:
            warm_up()
    except BaseException as e:
        _send(replies, {"error": f"cannot load {module_name}: {type(e).__name__}: {e}"})
        return 1
    _limit_resources(memory_mb)
    signal.signal(signal.SIGALRM, _on_alarm)
    _send(replies, {"ready": True})
    while True:
        request = _receive(requests)
        if request is None:
            return 0
        try:
            setup, function, args, time_limit = pickle.loads(request)
            if setup is not None:
                _allow_cpu_seconds(None)  # trusted work, bounded by the caller's start timeout
                getattr(module, setup[0])(*setup[1])
        except BaseException as e:
            _send(replies, {"error": f"setup failed: {type(e).__name__}: {_short(e)}"})
            continue
        if setup is not None:
            _send(replies, {"started": True})
        _send(replies, _run(module, function, args, time_limit))


def _run(module: Any, name: str, args: tuple[Any, ...], time_limit: float) -> dict[str, Any]:
    global _expired
    _expired = False
    _allow_cpu_seconds(time_limit)
    try:
        function = getattr(module, name)
        try:
            signal.setitimer(signal.ITIMER_REAL, time_limit)
            value = function(*args)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except TimeLimitExceeded:
        return {"timeout": True}
    except MemoryError:
        return {"error": "out of memory"}
    except BaseException as e:
        return {"timeout": True} if _expired else {"error": f"{type(e).__name__}: {_short(e)}"}
    if _expired:  # the function swallowed the interruption; its result is not trustworthy
        return {"timeout": True}
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return {"error": f"{name} returned a {type(value).__name__}, not JSON data"}
    return {"value": value}


def _short(error: BaseException, limit: int = 300) -> str:
    try:
        text = str(error)
    except BaseException:  # str() of an exception from hostile input may itself fail
        text = "?"
    return text if len(text) <= limit else text[:limit] + "..."


def _limit_resources(memory_mb: int) -> None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    limits = [(resource.RLIMIT_AS, memory_mb * 1024 * 1024), (resource.RLIMIT_FSIZE, 0)]
    for kind, value in limits:
        soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        try:
            resource.setrlimit(kind, (value, hard))
        except (ValueError, OSError):
            pass


def _allow_cpu_seconds(time_limit: float | None) -> None:
    """Let the kernel kill this process if the coming call burns much more CPU than allowed,
    even inside C code and even if its caller is gone (None: no limit)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if time_limit is None:
        soft = hard
    else:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        soft = math.ceil(usage.ru_utime + usage.ru_stime + time_limit) + 5
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (ValueError, OSError):
        pass


def _exit_when_caller_exits() -> None:
    """Exit as soon as the caller's end of the request pipe closes (the caller died)."""
    poller = select.poll()
    poller.register(0, 0)  # no events asked: poll reports only hang-ups and errors
    while True:
        for _, event in poller.poll():
            if event & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                os._exit(0)


def _send(stream: BinaryIO, message: dict[str, Any]) -> None:
    payload = json.dumps(message).encode()
    data = memoryview(HEADER.pack(len(payload)) + payload)
    while data:
        data = data[stream.write(data):]


def _receive(stream: BinaryIO) -> bytes | None:
    header = _read_exactly(stream, HEADER.size)
    if header is None:
        return None
    (size,) = HEADER.unpack(header)
    if size > MAX_MESSAGE_BYTES:
        return None
    return _read_exactly(stream, size)


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    chunks: list[bytes] = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
