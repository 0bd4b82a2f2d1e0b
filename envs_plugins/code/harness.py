"""The test harness that runs inside the sandbox: every test of one submission in one process.

This file is executed as a standalone program (its source is handed to the sandbox). It uses the
standard library only, imports nothing from GEM, and avoids modules that are slow to import
(``json``, ``signal``, ``re``): its start-up time is paid once per submission.

Protocol. Each job is one line of standard input: base64 of a ``marshal``-ed dict (written by
:mod:`gem_envs.code.runner`, a trusted process)::

    {"program": str, "prelude": str, "imports": [str], "per_test_timeout": float,
     "total_timeout": float, "memory_mb": int, "protect": bool, "kill_strays": bool,
     "tests": [{"kind": "stdio", "input": str, "max_output": int}
             | {"kind": "call", "fn_name": str, "args": list, "max_output": int}
             | {"kind": "assert", "entry_point": str, "candidate": str,
                "preamble": str, "setup": str, "test": str}]}

For each job, standard output carries JSON lines: ``{"started": true}``, then one line per
finished test, ``{"i", "status", "seconds", "exit_code", "output", "report"}``, then
``{"done": true}``. ``status`` is what the harness saw (``exited``, ``timeout``,
``output_limit`` or ``signal``); ``output`` is a stdio test's standard output; ``report`` is the
JSON text the child wrote about its own run (its outcome, an error message, a call's return
value), which the runner parses and trusts no more than the program.

With ``--serve`` (a warm sandbox, see :mod:`gem_envs.code.pool`) the harness first writes
``{"ready": true}``, then runs jobs until standard input closes; with ``kill_strays`` it kills
whatever a test left running, even in a session of its own, and empties its working directory
after each job, so that one submission cannot touch the next.

Design. The harness compiles the program once, imports the modules listed in ``imports`` (those
the program imports, so that each test does not pay for them again), then forks one child per
test. Only children run the submission: the harness never executes untrusted code nor parses
what children write, a test that hangs is killed with SIGKILL (which no program can catch), and a
crash, ``os._exit`` or corrupted interpreter state stays in its child. Expected outputs of stdio
and call tests never enter the sandbox, so a submission cannot read them; assert tests carry
their expectations in their code, which a determined submission could subvert, as with the
original HumanEval harness. With ``protect`` the harness makes itself non-dumpable, so that
children (which lose the result channel) cannot reach it through /proc either.
"""

import _json
import _signal  # the C module: `signal` would import `enum`
import binascii
import marshal
import os
import resource
import select
import sys
import time

REPORT_LIMIT = 1 << 16  # bytes a child may write about its run
ERROR_TAIL = 2000  # characters of an error message kept
SIGKILL, SIGXFSZ = _signal.SIGKILL, _signal.SIGXFSZ
quote = _json.encode_basestring_ascii


def main():
    result_fd = os.dup(1)  # the only channel results go out on
    null_fd = os.open(os.devnull, os.O_RDWR)
    os.dup2(null_fd, 1)  # anything else printed (by an import, say) goes nowhere
    serve = "--serve" in sys.argv
    protected = False
    if serve:
        protected = protect_from_children()
        emit(result_fd, {"ready": True})
    for line in sys.stdin.buffer:
        job = marshal.loads(binascii.a2b_base64(line))
        if job.get("protect") and not protected:
            protected = protect_from_children()
        for record in run_job(job, null_fd, result_fd):
            emit(result_fd, record)
        if not serve:
            break
        if job.get("kill_strays"):
            kill_strays()
            clean_directory(os.getcwd())
    os._exit(0)  # everything is written; skip the interpreter's clean-up


def emit(fd, fields):
    """Write one JSON line; values are str, int, float, bool or None."""
    parts = []
    for key, value in fields.items():
        if value is None:
            text = "null"
        elif value is True or value is False:
            text = "true" if value else "false"
        elif isinstance(value, str):
            text = quote(value)
        else:
            text = repr(value)
        parts.append(quote(key) + ": " + text)
    data = ("{" + ", ".join(parts) + "}\n").encode()
    while data:
        data = data[os.write(fd, data):]


def run_job(job, null_fd, result_fd):
    yield {"started": True}  # from here on, whatever goes wrong is the program's doing
    tests = job["tests"]
    try:
        program = compile(job["prelude"] + job["program"], "solution.py", "exec")
    except (SyntaxError, ValueError) as e:
        message = describe(e)
        for i in range(len(tests)):
            yield {"i": i, "status": "exited", "seconds": 0.0, "output": None,
                   "report": '{"status": "error", "error": ' + quote(message) + "}"}
        yield {"done": True}
        return
    preimport(job["imports"])
    if any(test["kind"] == "call" for test in tests):
        import json  # noqa: F401 - the children encode return values with it
    memory = int(job.get("memory_mb") or 0) << 20  # address space per test; 0: no limit
    start = time.monotonic()
    for i, test in enumerate(tests):
        remaining = job["total_timeout"] - (time.monotonic() - start)
        if remaining <= 0:
            break  # the runner counts tests never reported as not run
        record = run_test(program, test, null_fd, result_fd, min(job["per_test_timeout"], remaining), memory)
        record["i"] = i
        if job.get("kill_strays"):
            kill_strays()  # processes a test started in a session of their own
        yield record
    yield {"done": True}


def protect_from_children():
    """Make this process non-dumpable, so that the children it forks cannot open its file
    descriptors or memory through /proc, nor trace it. True when that worked."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE
    except Exception:
        return False


def preimport(names):
    """Import, in the harness, the modules the program imports, so that children inherit them."""
    for name in names:
        try:
            __import__(name)
        except BaseException:
            pass  # the test itself reports the failure


def kill_strays():
    """Kill every process of the sandbox but this one and its init. Only asked for where the
    harness has a PID namespace of its own (a warm sandbox), never elsewhere."""
    try:
        os.kill(-1, SIGKILL)
    except OSError:
        pass
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def clean_directory(path):
    """Empty the sandbox's private working directory between two submissions."""
    import shutil

    for entry in os.listdir(path):
        target = os.path.join(path, entry)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target, ignore_errors=True)
        else:
            try:
                os.unlink(target)
            except OSError:
                pass


def run_test(program, test, null_fd, result_fd, timeout, memory):
    kind = test["kind"]
    limit = int(test.get("max_output", 0)) + 1 if kind == "stdio" else 0
    in_fd = make_file("stdin", test["input"].encode("utf-8", "surrogateescape")) if kind == "stdio" else null_fd
    out_fd = make_file("stdout") if kind == "stdio" else null_fd
    report_fd = make_file("report")
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(result_fd)
        child(program, test, in_fd, out_fd, null_fd, report_fd, max(limit, REPORT_LIMIT), memory, timeout)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # the child already did it, or already exited
    status = wait_child(pid, timeout)
    kill_group(pid)
    seconds = round(time.monotonic() - started, 6)
    report = read_file(report_fd, REPORT_LIMIT).decode("utf-8", "replace")
    output = read_file(out_fd, limit) if kind == "stdio" else b""
    for fd in {in_fd, out_fd, report_fd} - {null_fd}:
        os.close(fd)
    record = {"status": "exited", "seconds": seconds, "exit_code": status, "output": None, "report": report}
    if status is None:
        record["status"] = "timeout"
    elif status == -SIGXFSZ or (limit and len(output) >= limit):
        record["status"] = "output_limit"
    elif status < 0:
        record["status"] = "signal"
    elif kind == "stdio":
        record["output"] = output.decode("utf-8", "replace")
    return record


def child(program, test, in_fd, out_fd, null_fd, report_fd, file_limit, memory, timeout):
    """Run one test and leave through ``os._exit``; the outcome goes to ``report_fd``."""
    code = 1
    try:
        os.setpgid(0, 0)  # a group of its own, so that a timeout kills its children too
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        cpu = int(timeout) + 2
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if hard == resource.RLIM_INFINITY or cpu < hard:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        if memory:
            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            if hard == resource.RLIM_INFINITY or memory < hard:
                resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        os.dup2(in_fd, 0)
        os.dup2(out_fd, 1)
        os.dup2(null_fd, 2)
        sys.stdin = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
        report, code = execute(program, test)
    except BaseException as e:  # noqa: BLE001 - everything a program raises is a test outcome
        report = outcome("error", describe(e))
    try:
        sys.stdout.flush()
    except BaseException:
        pass
    try:
        os.write(report_fd, report.encode("utf-8", "replace")[:REPORT_LIMIT])
    except BaseException:
        pass
    os._exit(code)


def outcome(status, error=None, value=None):
    text = '{"status": ' + quote(status)
    if error is not None:
        text += ', "error": ' + quote(error)
    if value is not None:
        text += ', "value": ' + quote(value)
    return text + "}"


def execute(program, test):
    """Run the test; returns (the report, exit status)."""
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    kind = test["kind"]
    try:
        exec(program, namespace)
    except SystemExit as e:
        if kind == "stdio" and e.code in (None, 0):
            return outcome("ok"), 0
        return outcome("error", f"SystemExit({e.code!r})"), 1
    except BaseException as e:
        return outcome("error", describe(e)), 1
    if kind == "stdio":
        return outcome("ok"), 0
    if kind == "call":
        import json

        value = find_function(namespace, test["fn_name"])(*test["args"])
        try:
            text = json.dumps(value)
        except (TypeError, ValueError) as e:
            return outcome("error", f"The return value cannot be compared: {e}"), 1
        if len(text) > test["max_output"]:
            return outcome("error", "The return value is too large."), 1
        return outcome("ok", value=text), 0
    candidate = namespace.get(test["entry_point"])
    if candidate is None:
        return outcome("error", f"The program does not define {test['entry_point']}()."), 1
    scope = dict(namespace)
    scope[test["candidate"]] = candidate
    try:
        for part in ("preamble", "setup", "test"):
            exec(compile(test[part], f"<test {part}>", "exec"), scope)
    except AssertionError as e:
        return outcome("failed", describe(e)), 0
    except BaseException as e:
        return outcome("error", describe(e)), 1
    return outcome("passed"), 0


def find_function(namespace, name):
    solution = namespace.get("Solution")
    if isinstance(solution, type) and hasattr(solution, name):
        return getattr(solution(), name)
    function = namespace.get(name)
    if not callable(function):
        raise NameError(f"The program does not define {name}().")
    return function


def describe(error):
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return text[-ERROR_TAIL:]


def make_file(name, data=b""):
    fd = os.memfd_create(name) if hasattr(os, "memfd_create") else _temporary_fd()
    while data:
        data = data[os.write(fd, data):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _temporary_fd():
    import tempfile

    fd, path = tempfile.mkstemp()
    os.unlink(path)
    return fd


def read_file(fd, limit):
    os.lseek(fd, 0, os.SEEK_SET)
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(fd, min(1 << 20, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def wait_child(pid, timeout):
    """The child's exit status (negative: killed by that signal), or None after a timeout (the
    child is then killed)."""
    deadline = time.monotonic() + timeout
    pidfd = None
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pass
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if pidfd is not None:
                poller = select.poll()
                poller.register(pidfd, select.POLLIN)
                poller.poll(max(1, int(left * 1000)))
            else:
                time.sleep(min(left, 0.002))
    finally:
        if pidfd is not None:
            os.close(pidfd)
    kill_group(pid)
    try:
        os.kill(pid, SIGKILL)
    except OSError:
        pass
    os.waitpid(pid, 0)
    return None


def kill_group(pid):
    """Kill what a test left behind in its process group."""
    try:
        os.killpg(pid, SIGKILL)
    except OSError:
        pass


if __name__ == "__main__":
    main()
