"""Assert tests' candidates: the submission's function runs in processes of its own, and only
plain data comes back to the test that called it.

An assert test (HumanEval's ``assert candidate(x) == y``) holds its expectation in its own code,
so the process that runs it must never run submitted code: an object equal to everything, patched
builtins or modules, a trace function that skips the ``assert``, a forged report or an early exit
would all pass it. So the test harness (:mod:`gem_envs.code.harness`) runs the tests, and the
submission runs in the **candidate server**, a new interpreter started for the job (it holds
nothing of the harness's memory, so no test's expectations) that forks a process for the
program. The test calls a stand-in (:class:`Candidate`); its arguments go to that process, and
the return value comes back as **plain data** (:func:`plain`): ``None``, ``bool``, ``int``,
``float``, ``complex``, ``str``, ``bytes``, and lists, tuples, dicts, sets and frozensets of them.
Instances of subclasses of those types come back as their plain values (a ``str`` subclass as its
text, a named tuple as a tuple), numpy's numbers and arrays as Python numbers and lists; anything
else fails the test, saying what was returned. The harness checks again what arrives.

This file is both ends, standard library only. The harness runs it as a module (the runner puts
its source in the job) for :class:`Server` and :class:`Session`; the server runs it as a program,
``python -I -S -c SOURCE REQUESTS REPLIES PATH``. Messages are ``marshal``-ed tuples, each after
its length, on two pipes. The first request is ``("program", source, entry_point, imports,
limits)``, answered ``("loaded", None)`` once compiled; then ``("begin", nonce)`` (for a harness
child, before its first test) makes the server fork a process that runs the program in a fresh
namespace and answers ``("ready", nonce)`` (or ``("error", nonce, text)``), then answers each
``("call", nonce, name, args, kwargs)`` with ``("return", nonce, value)``, ``("raise", nonce,
name, text)`` or ``("unplain", nonce, text)``, until ``("end", nonce)``. When that process has ended, for whatever reason, the server says
``("ended", nonce, status)``; a request that finds none gets ``("gone", nonce)``.
"""

import builtins
import marshal
import os
import resource
import sys

FRAME_LIMIT = 1 << 26  # bytes of one message
DEPTH_LIMIT = 100  # nesting of a value
ERROR_TAIL = 2000
SCALARS = (type(None), bool, int, float, complex, str, bytes)
CONTAINERS = (list, tuple, set, frozenset, dict)
PLAIN = "None, bool, int, float, complex, str, bytes, and lists, tuples, dicts and sets of them"


# --- the harness's end ------------------------------------------------------------------------

class Server:
    """A candidate server (this file's ``source``, run as a program), in a process group of its
    own; :meth:`load` gives it a job's program, and the harness's children that run the job's
    assert tests talk to it through :attr:`channel`."""

    def __init__(self, source, null_fd, keep_only_fds):
        requests_r, requests_w = os.pipe()
        replies_r, replies_w = os.pipe()
        argv = [sys.executable, "-I", "-S", "-B", *(["-X", "utf8"] if sys.flags.utf8_mode else []), "-c",
                source, str(requests_r), str(replies_w), marshal.dumps(list(sys.path)).hex()]
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the server-to-be
            try:
                os.setpgid(0, 0)
                for fd in (0, 1, 2):
                    os.dup2(null_fd, fd)
                keep_only_fds(requests_r, replies_w)
                os.set_inheritable(requests_r, True)
                os.set_inheritable(replies_w, True)
                os.execv(sys.executable, argv)
            finally:
                os._exit(1)
        try:
            os.setpgid(self.pid, self.pid)
        except OSError:
            pass  # it did so itself, or has exited already
        os.close(requests_r)
        os.close(replies_w)
        self.channel = (requests_w, replies_r)

    def load(self, job, limits, deadline):
        """Give the server ``job``'s program and the limits of each of its tests' processes, and
        wait (until the ``time.monotonic()`` ``deadline``) until it has compiled it, so that its
        start is not counted in the first test's time."""
        entry_point = next(test["entry_point"] for test in job["tests"] if test["kind"] == "assert")
        try:
            send(self.channel[0], ("program", job["prelude"] + job["program"], entry_point, list(job["imports"]),
                                   limits))
        except OSError:
            return  # it died already: the tests will say so
        import select
        import time

        if select.select([self.channel[1]], [], [], max(0.0, deadline - time.monotonic()))[0]:
            receive(self.channel[1])  # ("loaded", None), or the end of a server that died

    def session(self, timeout):
        """A link for the next harness child, its program's process started (waiting at most
        ``timeout`` seconds for it, which then does not count in the first test's time)."""
        session = Session(self.channel)
        try:
            session.begin(timeout)
        except CandidateError:
            pass  # the program fails: each test will say so
        return session

    def stop(self):
        """Kill the server and the processes of its tests, and reap it."""
        try:
            os.killpg(self.pid, 9)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        for fd in self.channel:
            os.close(fd)


class CandidateError(Exception):
    """The submission's function gave no plain value (raised into the test)."""


class Session:
    """A harness child's link to the candidate server: one process of the program serves the
    child's tests, as one namespace serves HumanEval's ``check``; it starts at the first test, and
    again after it ended (an exit, a crash)."""

    def __init__(self, channel):
        self.requests, self.replies = channel
        self.nonce, self.alive, self.starting = None, False, False

    def begin(self, timeout=None):
        """Start a process of the program and wait until it runs (at most ``timeout`` seconds: it
        is then still starting); :class:`CandidateError` if the program cannot run."""
        self.nonce, self.starting = os.urandom(8), True
        send(self.requests, ("begin", self.nonce))
        self.settle(timeout)

    def settle(self, timeout=None):
        reply = self.reply(timeout)
        if reply is None:
            return
        self.starting = False
        if reply[0] == "error" and len(reply) == 3 and isinstance(reply[2], str):
            raise CandidateError(reply[2])
        if reply[0] != "ready":
            raise CandidateError(self.ended(reply, "the program ran"))
        self.alive = True

    def candidate(self, name):
        """The test's stand-in for the submission's function ``name``; :class:`CandidateError`
        if the program cannot run."""
        if self.starting:
            self.settle()
        elif not self.alive:
            self.begin()
        return Candidate(self, name)

    def call(self, name, args, kwargs):
        if not self.alive:
            raise CandidateError(f"{name}() cannot be called: the program's process has ended.")
        try:
            send(self.requests, ("call", self.nonce, name, args, kwargs))
        except ValueError:
            raise CandidateError(f"The test passes {name}() a value that cannot be sent.") from None
        reply = self.reply()
        kind = reply[0]
        if kind == "return" and len(reply) == 3 and is_plain(reply[2]):
            return reply[2]
        if kind == "raise" and len(reply) == 4 and isinstance(reply[2], str) and isinstance(reply[3], str):
            error = getattr(builtins, reply[2], None)  # the harness's own builtins: untouched
            if not (isinstance(error, type) and issubclass(error, Exception)):
                error = CandidateError
            message = reply[3]
            raise error(message[len(reply[2]) + 2:] if message.startswith(reply[2] + ": ") else message)
        if kind == "unplain" and len(reply) == 3 and isinstance(reply[2], str):
            raise CandidateError(f"{name}() {reply[2]}")
        if kind == "return":
            raise CandidateError(f"{name}() returned a value that is not plain data ({PLAIN}).")
        self.alive = False
        raise CandidateError(self.ended(reply, f"{name}() returned"))

    def reply(self, timeout=None):
        """The next reply to this process (any other is a former one's leftover); None when
        ``timeout`` seconds pass first."""
        import select

        while True:
            if timeout is not None and not select.select([self.replies], [], [], timeout)[0]:
                return None
            reply = receive(self.replies)
            if reply is None:
                return ("gone",)
            if isinstance(reply, tuple) and len(reply) >= 2 and reply[1] == self.nonce:
                return reply

    @staticmethod
    def ended(reply, before):
        status = reply[2] if reply[0] == "ended" and len(reply) == 3 else None
        if isinstance(status, int):
            return f"The program's process ended (exit status {status}) before {before}."
        return f"The program's process is gone before {before}."

    def close(self):
        """Let the program's process end, and wait until it has."""
        if self.alive:
            self.alive = False
            send(self.requests, ("end", self.nonce))
            while self.reply()[0] not in ("ended", "gone"):
                pass


class Candidate:
    """A test's stand-in for the submission's function: calls go to the session's process."""

    def __init__(self, session, name):
        self.session, self.name = session, name

    def __call__(self, *args, **kwargs):
        return self.session.call(self.name, args, kwargs)


def is_plain(value, depth=0):
    """Whether ``value`` is plain data: exactly those types, nested at most ``DEPTH_LIMIT`` deep."""
    kind = type(value)
    if kind in SCALARS:
        return True
    if depth > DEPTH_LIMIT:
        return False
    if kind is dict:
        return all(is_plain(k, depth + 1) and is_plain(v, depth + 1) for k, v in value.items())
    return kind in CONTAINERS and all(is_plain(item, depth + 1) for item in value)


# --- the server's end -------------------------------------------------------------------------

def main():
    requests, replies = int(sys.argv[1]), int(sys.argv[2])
    sys.path[:] = marshal.loads(bytes.fromhex(sys.argv[3]))
    first = receive(requests)
    if not (isinstance(first, tuple) and first[:1] == ("program",)):
        os._exit(1)
    _, source, entry_point, imports, limits = first
    program = compile(source, "solution.py", "exec")
    for name in imports:  # once here, so that each test's process inherits them
        try:
            __import__(name)
        except BaseException:  # noqa: BLE001 - the program's own import reports it
            pass
    send(replies, ("loaded", None))
    while True:
        request = receive(requests)
        if request is None:
            os._exit(0)  # the tests are over
        nonce = request[1] if isinstance(request, tuple) and len(request) > 1 else None
        if not (isinstance(request, tuple) and request[:1] == ("begin",)):
            send(replies, ("gone", nonce))
            continue
        pid = os.fork()
        if pid == 0:
            try:
                serve(program, entry_point, limits, nonce, requests, replies)
            finally:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        send(replies, ("ended", nonce, os.waitstatus_to_exitcode(status)))


def serve(program, entry_point, limits, nonce, requests, replies):
    """One test's process: run the program, then answer calls until told to end."""
    for limit, value in limits:
        _, hard = resource.getrlimit(limit)
        if hard == resource.RLIM_INFINITY or value < hard:
            resource.setrlimit(limit, (value, value))
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec(program, namespace)
        function = namespace.get(entry_point)
        if not callable(function):
            raise NameError(f"The program does not define {entry_point}().")
    except BaseException as e:  # noqa: BLE001 - the program's failure is the test's outcome
        send(replies, ("error", nonce, describe(e)))
        os._exit(0)
    send(replies, ("ready", nonce))
    while True:
        request = receive(requests)
        if not (isinstance(request, tuple) and len(request) == 5 and request[:3] == ("call", nonce, entry_point)):
            os._exit(0)  # ("end", nonce), or the tests are gone
        try:
            value = function(*request[3], **request[4])
        except BaseException as e:  # noqa: BLE001
            send(replies, ("raise", nonce, type(e).__name__, describe(e)))
            continue
        try:
            message = ("return", nonce, plain(value))
        except NotPlain as e:
            message = ("unplain", nonce, str(e))
        except BaseException as e:  # noqa: BLE001 - too deep, too large, a failing conversion
            message = ("unplain", nonce, f"returned a value that cannot be sent: {describe(e)}")
        send(replies, message)


class NotPlain(Exception):
    """A return value that is not plain data."""


def plain(value, depth=0):
    """``value`` as plain data (see the module); :class:`NotPlain` if it is something else."""
    kind = type(value)
    if kind in SCALARS:
        return value
    if depth > DEPTH_LIMIT:
        raise NotPlain(f"returned a value nested more than {DEPTH_LIMIT} deep")
    if kind is dict:
        return {plain(k, depth + 1): plain(v, depth + 1) for k, v in value.items()}
    if kind in CONTAINERS:
        return kind(plain(item, depth + 1) for item in value)
    for base in SCALARS[1:] + CONTAINERS:
        if issubclass(kind, base):  # a subclass: its plain value, whatever its methods say
            return plain(base(value), depth + 1)
    if getattr(kind, "__module__", "") == "numpy" and hasattr(value, "tolist"):
        return plain(value.tolist(), depth + 1)
    raise NotPlain(f"returned a {kind.__module__}.{kind.__qualname__}, which is not plain data (tests compare "
                   f"{PLAIN})")


# --- both ends --------------------------------------------------------------------------------

def describe(error):
    try:
        message = str(error)
    except BaseException:  # noqa: BLE001 - the submission's own exception class
        message = ""
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return text[-ERROR_TAIL:]


def send(fd, message):
    """Write ``message`` to ``fd``: ``marshal``-ed, after its length."""
    data = marshal.dumps(message)
    view = memoryview(len(data).to_bytes(4, "little") + data)
    while view:
        view = view[os.write(fd, view):]


def receive(fd):
    """The next message on ``fd``, or None when it is closed or the message is malformed."""
    head = read_exactly(fd, 4)
    size = int.from_bytes(head, "little") if head is not None else FRAME_LIMIT + 1
    body = read_exactly(fd, size) if size <= FRAME_LIMIT else None
    try:
        return marshal.loads(body) if body is not None else None
    except (EOFError, ValueError, TypeError):
        return None


def read_exactly(fd, size):
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


if __name__ == "__main__":
    main()
