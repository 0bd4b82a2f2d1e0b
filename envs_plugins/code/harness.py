"""The test harness that runs inside the sandbox: every test of one submission in one process.

This file is executed as a standalone program (its source is handed to the sandbox), so it uses
the standard library only and imports nothing from GEM.

Protocol. Standard input carries one JSON object::

    {"program": str, "prelude": str, "imports": [str], "per_test_timeout": float,
     "total_timeout": float, "tests": [{"kind": "stdio", "input": str, "max_output": int}
             | {"kind": "call", "fn_name": str, "args": list, "max_output": int}
             | {"kind": "assert", "entry_point": str, "candidate": str,
                "preamble": str, "setup": str, "test": str}]}

Standard output carries one JSON line per finished test, ``{"i", "status", "seconds", "output",
"error"}``, then ``{"done": true}``. ``status`` is ``ok`` (ran to the end; stdio and call tests
are judged outside the sandbox), ``passed``/``failed`` (assert tests), ``error``, ``timeout`` or
``output_limit``.

Design. The harness compiles the program once, imports the modules listed in ``imports`` (those
the program imports, so that each test does not pay for them again), then forks one child per test. Only children run the submission:
the harness itself never executes untrusted code, a test that hangs is killed with SIGKILL (a
signal no program can catch), and a crash, ``os._exit`` or corrupted interpreter state stays in
its child. Expected outputs of stdio and call tests never enter the sandbox, so a submission
cannot read them; assert tests carry their expectations in their code, which a determined
submission can subvert (as with the original HumanEval harness).
"""

import json
import os
import select
import signal
import sys
import time

REPORT_LIMIT = 1 << 16  # bytes a child may write to its report channel
ERROR_TAIL = 2000  # characters of an error message kept


def main():
    result_fd = os.dup(1)  # the only channel the parent reports on
    null_fd = os.open(os.devnull, os.O_RDWR)
    os.dup2(null_fd, 1)  # anything else printed (by imports, say) goes nowhere
    job = json.loads(sys.stdin.buffer.read())
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"  # thread pools and fork do not mix

    def report(record):
        data = (json.dumps(record) + "\n").encode()
        while data:
            data = data[os.write(result_fd, data):]

    source = job.get("prelude", "") + job["program"]
    try:
        program = compile(source, "solution.py", "exec")
    except (SyntaxError, ValueError) as e:
        message = f"{type(e).__name__}: {e}"
        for i in range(len(job["tests"])):
            report({"i": i, "status": "error", "seconds": 0.0, "output": None, "error": message})
        report({"done": True})
        return
    preimport(job.get("imports", ()))
    start = time.monotonic()
    for i, test in enumerate(job["tests"]):
        remaining = job["total_timeout"] - (time.monotonic() - start)
        if remaining <= 0:
            break  # the runner counts tests never reported as timed out
        try:
            if test["kind"] == "assert":  # compiled here, so that children only run it
                test["code"] = [compile(test.get(part, ""), f"<test {part}>", "exec")
                                for part in ("preamble", "setup", "test")]
        except (SyntaxError, ValueError) as e:
            record = {"status": "error", "seconds": 0.0, "output": None, "error": describe(e)}
        else:
            record = run_test(program, test, null_fd, min(job["per_test_timeout"], remaining))
        record["i"] = i
        report(record)
    report({"done": True})


def preimport(names):
    """Import, in the harness, the modules the program imports, so that children inherit them."""
    for name in names:
        try:
            __import__(name)
        except BaseException:
            pass  # the test itself reports the failure


def run_test(program, test, null_fd, timeout):
    kind = test["kind"]
    limit = int(test.get("max_output", 0)) + 1 if kind == "stdio" else 0
    in_fd = make_file("stdin", test["input"].encode("utf-8", "surrogateescape")) if kind == "stdio" else null_fd
    out_fd = make_file("stdout") if kind == "stdio" else null_fd
    report_fd = make_file("report")
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        child(program, test, in_fd, out_fd, null_fd, report_fd, max(limit, REPORT_LIMIT))
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass  # the child already did it, or already exited
    status = wait_child(pid, timeout)
    kill_group(pid)
    seconds = round(time.monotonic() - started, 6)
    report = read_file(report_fd, REPORT_LIMIT)
    output = read_file(out_fd, limit) if kind == "stdio" else b""
    for fd in {in_fd, out_fd, report_fd} - {null_fd}:
        os.close(fd)
    record = {"status": "ok", "seconds": seconds, "output": None, "error": None}
    try:
        outcome = json.loads(report.decode()) if report else {}
    except ValueError:
        outcome = {}
    if status is None:
        record["status"], record["error"] = "timeout", f"Time limit of {timeout:.3g} s exceeded."
    elif status == -signal.SIGXFSZ or (limit and len(output) >= limit):
        record["status"] = "output_limit"
        record["error"] = "Output limit exceeded."
    elif status < 0:
        record["status"], record["error"] = "error", f"Killed by signal {signal.Signals(-status).name}."
    elif kind == "stdio":
        if status != 0:
            record["status"] = "error"
            record["error"] = outcome.get("error") or f"Exited with status {status}."
        record["output"] = output.decode("utf-8", "replace")
    elif outcome.get("status") in ("ok", "passed", "failed", "error"):
        record["status"], record["error"] = outcome["status"], outcome.get("error")
        record["output"] = outcome.get("value")
    else:
        record["status"] = "error"
        record["error"] = f"The program exited (status {status}) before the test finished."
    return record


def child(program, test, in_fd, out_fd, null_fd, report_fd, file_limit):
    """Run one test and leave through ``os._exit``; the outcome goes to ``report_fd``."""
    code = 1
    try:
        os.setpgid(0, 0)  # a group of its own, so that a timeout kills its children too
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.dup2(in_fd, 0)
        os.dup2(out_fd, 1)
        os.dup2(null_fd, 2)
        sys.stdin = open(0, encoding="utf-8", errors="surrogateescape", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
        outcome, code = execute(program, test)
    except BaseException as e:  # noqa: BLE001 - everything a program raises is a test outcome
        outcome = {"status": "error", "error": describe(e)}
    try:
        sys.stdout.flush()
    except BaseException:
        pass
    try:
        os.write(report_fd, json.dumps(outcome).encode()[:REPORT_LIMIT])
    except BaseException:
        pass
    os._exit(code)


def execute(program, test):
    """Run the test; returns (outcome for the report, exit status)."""
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    kind = test["kind"]
    try:
        exec(program, namespace)
    except SystemExit as e:
        if kind == "stdio" and e.code in (None, 0):
            return {"status": "ok"}, 0
        return {"status": "error", "error": f"SystemExit({e.code!r})"}, 1
    except BaseException as e:
        return {"status": "error", "error": describe(e)}, 1
    if kind == "stdio":
        return {"status": "ok"}, 0
    if kind == "call":
        function = find_function(namespace, test["fn_name"])
        value = function(*test["args"])
        try:
            text = json.dumps(value)
        except (TypeError, ValueError) as e:
            return {"status": "error", "error": f"The return value cannot be compared: {e}"}, 1
        if len(text) > test.get("max_output", REPORT_LIMIT):
            return {"status": "error", "error": "The return value is too large."}, 1
        return {"status": "ok", "value": text}, 0
    candidate = namespace.get(test["entry_point"])
    if candidate is None:
        return {"status": "error", "error": f"The program does not define {test['entry_point']}()."}, 1
    scope = dict(namespace)
    scope[test["candidate"]] = candidate
    try:
        for code in test["code"]:
            exec(code, scope)
    except AssertionError as e:
        return {"status": "failed", "error": describe(e)}, 0
    except BaseException as e:
        return {"status": "error", "error": describe(e)}, 1
    return {"status": "passed"}, 0


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
    child's process group is then killed)."""
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
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    os.waitpid(pid, 0)
    return None


def kill_group(pid):
    """Kill what a test left behind in its process group."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


if __name__ == "__main__":
    main()
