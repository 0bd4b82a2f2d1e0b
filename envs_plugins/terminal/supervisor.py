"""The supervisor that runs inside a terminal sandbox: it owns the agent's shell and every process.

This file is executed as a standalone program (its source is handed to the sandbox) and uses the
standard library only. It is the sandbox's first process (after bwrap's init), so everything the
agent starts descends from it or is reparented to bwrap's init, and all of it shows in the
sandbox's own ``/proc``.

The configuration (the second line of standard input) gives the shell's ``env`` and ``cwd``;
``inherit_env`` adds the process's own variables beneath them, and ``as_root`` runs the agent's
processes as this process's user instead of ``nobody`` (in a container, whose root is the agent's).

Protocol: one JSON request per line on standard input, one JSON reply per line on standard output
(binary payloads are base64). Requests (``op``):

* ``shell``: ``{"command", "timeout", "max_output"}`` runs a command in the persistent shell;
  replies ``{"output", "exit_code", "timed_out", "restarted"}``.
* ``exec``: ``{"script", "timeout", "max_output", "env", "isolated"}`` runs ``bash -c script`` in a
  fresh process (set-up and grading), with the same reply; ``isolated`` gives it the variables of a
  test run (:func:`isolated`).
* ``put``: ``{"dir", "tar", "clean"}`` extracts a tar archive into ``dir`` (emptied first with
  ``clean``, whatever modes the agent left there; an error when something stays).
* ``snapshot``: ``{"dir"}`` replies ``{"tar"}``, the directory as a tar archive.
* ``kill_all``: ends the shell and every other process of the sandbox.

A command's time limit kills the processes it started (found as those not running before it) and
leaves the shell, its background jobs and its state alone; if the shell itself is stuck (a builtin
loop, ``exec``), it is replaced by a fresh one in the working directory. Standard input closing
ends the sandbox.
"""

import base64
import io
import json
import os
import select
import signal
import sys
import time

SHELL = ["/bin/bash", "--noprofile", "--norc"]
AGENT_UID = 65534  # nobody: the sandbox user
# Started by root, the supervisor stays the namespace's root (which the agent's processes cannot
# signal or trace) and runs everything else as the agent's user; otherwise all share one user.
PRIVILEGED = os.getuid() == 0
SUPERVISOR = os.getpid()
AS_AGENT = {"user": AGENT_UID, "group": AGENT_UID, "extra_groups": []} if PRIVILEGED else {}

GRACE = 1.0  # seconds a command's shell has to report back once its processes are killed
AGENT_PLACES = ("/tmp", "/var/tmp", "/dev/shm")  # writable by the agent wherever it runs


class Capture:
    """Keeps the first and last bytes of a stream, ``limit`` bytes in all."""

    def __init__(self, limit):
        self.limit, self.total = limit, 0
        self.head, self.tail = bytearray(), bytearray()

    def feed(self, data):
        self.total += len(data)
        if len(self.head) < self.limit:
            self.head += data[: self.limit - len(self.head)]
        self.tail = (self.tail + data)[-(self.limit // 2):]

    def text(self):
        if self.total <= self.limit:
            data = bytes(self.head)
        else:
            keep = self.limit - self.limit // 2
            dropped = self.total - keep - len(self.tail)
            data = (bytes(self.head[:keep]) + b"\n[... %d bytes of output truncated ...]\n" % dropped
                    + bytes(self.tail))
        return data.decode("utf-8", "replace")


def processes():
    """``{pid: start time}`` of every process in the sandbox but bwrap's init and this one."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in (1, SUPERVISOR, os.getpid()):
            try:
                with open("/proc/%s/stat" % name, "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
                if fields[0] != b"Z":  # a zombie is gone already; its parent reaps it
                    found[int(name)] = fields[19].decode()
            except (OSError, IndexError):
                pass
    return found


def as_agent(function, *args):
    """``function(*args)`` run as the agent's user: in a child process when this one is privileged."""
    if not PRIVILEGED:
        return function(*args)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read)
            os.setgroups([])
            os.setresgid(AGENT_UID, AGENT_UID, AGENT_UID)
            os.setresuid(AGENT_UID, AGENT_UID, AGENT_UID)
            payload = {"result": function(*args)}
        except BaseException as e:
            payload = {"error": "%s: %s" % (type(e).__name__, e)}
        with os.fdopen(write, "wb") as f:
            f.write(json.dumps(payload).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    reply = json.loads(data) if data else {"error": "the helper process died"}
    if "error" in reply:
        raise RuntimeError(reply["error"])
    return reply["result"]


def kill(keep):
    """Kill every process of the agent not in ``keep`` (``{pid: start time}``)."""
    as_agent(_kill, keep)


def _kill(keep):
    """Stop them all first, then kill, until none is left, however fast they fork."""
    keep = {int(pid): start for pid, start in keep.items()}
    for _ in range(100):
        victims = {pid: start for pid, start in processes().items() if keep.get(pid) != start}
        if not victims:
            return
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in victims:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        time.sleep(0.001)


class Shell:
    """A bash process reading commands from a pipe; its stdout and stderr share one pipe."""

    def __init__(self, cwd, env):
        self.cwd, self.env = cwd, env
        self.proc = self.exited = None

    def start(self):
        import subprocess

        self.proc = subprocess.Popen(SHELL, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, cwd=self.cwd, env=self.env,
                                     preexec_fn=default_signals, **AS_AGENT)
        os.set_blocking(self.proc.stdout.fileno(), False)
        try:
            self.exited = os.pidfd_open(self.proc.pid)  # readable once the shell has exited
        except (AttributeError, OSError):
            self.exited = None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def run(self, command, timeout, limit):
        restarted = False
        if not self.alive():
            restarted = self.proc is not None
            self.stop()
            self.start()
        marker = b"\n__gem_done_%s__ " % os.urandom(8).hex().encode()
        quoted = "'" + command.replace("'", "'\\''") + "'"
        line = "eval %s </dev/null\nprintf '%s%%s\\n' \"$?\"\n" % (quoted, marker.decode().replace("\n", "\\n"))
        before = processes()
        try:
            self.proc.stdin.write(line.encode("utf-8", "surrogateescape"))
            self.proc.stdin.flush()
        except OSError:
            pass
        capture, pending = Capture(limit), b""
        fd = self.proc.stdout.fileno()
        deadline, timed_out, code = time.monotonic() + timeout, False, None
        while code is None:
            wait = deadline - time.monotonic()
            if wait <= 0:
                if timed_out:
                    break  # the shell did not come back: it is stuck itself
                timed_out = True
                kill(before)
                deadline = time.monotonic() + GRACE
                continue
            watched = [fd] if self.exited is None else [fd, self.exited]
            ready = select.select(watched, [], [], wait if self.exited is not None else min(wait, 0.05))[0]
            if fd not in ready:
                if ready or (self.exited is None and self.proc.poll() is not None):
                    data = self.drain()  # the shell exited (while its jobs may hold the output open)
                    capture.feed(pending + data)
                    pending = b""
                    break
                continue
            try:
                data = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            if not data:
                break  # the shell exited
            pending += data
            at = pending.find(marker)
            if at >= 0 and b"\n" in pending[at + len(marker):]:
                status = pending[at + len(marker):].split(b"\n", 1)[0]
                capture.feed(pending[:at])
                code = int(status) if status.isdigit() else 1
                break
            keep = len(marker) + 16
            if len(pending) > keep:
                capture.feed(pending[:-keep])
                pending = pending[-keep:]
        if code is None:  # exited or stuck: a new shell replaces it
            if not timed_out and pending:
                capture.feed(pending)
            code = self.stop()
            self.start()
            restarted = True
        if timed_out:
            code = 124
        return {"output": capture.text(), "exit_code": code, "timed_out": timed_out, "restarted": restarted}

    def drain(self):
        """What the output pipe holds now."""
        chunks = []
        while True:
            try:
                data = os.read(self.proc.stdout.fileno(), 1 << 16)
            except BlockingIOError:
                break
            if not data:
                break
            chunks.append(data)
        return b"".join(chunks)

    def stop(self):
        """End the shell and everything it started; its exit status, or 137 if it was killed."""
        if self.proc is None:
            return 0
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            code = self.proc.wait(0.05)
        except Exception:
            code = None
        kill({})
        self.proc.stdout.close()
        self.proc.wait()
        if self.exited is not None:
            os.close(self.exited)
        self.proc = self.exited = None
        return code if code is not None and code >= 0 else 137


def run_once(script, timeout, limit, cwd, env):
    """``bash -c script`` in a fresh process; everything it started is killed when it ends."""
    import subprocess

    before = processes()
    proc = subprocess.Popen(["/bin/bash", "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, cwd=cwd, env=env, preexec_fn=default_signals, **AS_AGENT)
    capture, fd = Capture(limit), proc.stdout.fileno()
    deadline, timed_out, ended = time.monotonic() + timeout, False, None
    while True:
        now = time.monotonic()
        if ended is None and proc.poll() is not None:
            ended = now  # what it left running may hold the output open: read what is there, then stop
        if ended is None and now >= deadline:
            timed_out = True
            break
        wait = 0.05 if ended is None else 0.02
        if select.select([fd], [], [], wait)[0]:
            data = os.read(fd, 1 << 16)
            if not data:
                break
            capture.feed(data)
        elif ended is not None:
            break
    if not timed_out:
        try:  # the output may close a moment before the process has exited
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    kill(before)
    proc.stdout.close()
    code = proc.wait()
    return {"output": capture.text(), "exit_code": 124 if timed_out else (128 - code if code < 0 else code),
            "timed_out": timed_out, "restarted": False}


IGNORED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def default_signals():
    """In a child: undo the supervisor's ignored signals (an ignored signal stays so across exec)."""
    for sig in IGNORED_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)


def isolated(env, cwd):
    """The variables of a test run: a fresh, empty ``HOME``, no Python user site, and ``PATH`` with
    the folders the agent may write (the working directory, its ``HOME``, the temporary folders,
    relative entries) after all the others, so that nothing the agent left there shadows a tool."""
    import tempfile

    places = [place.rstrip("/") for place in (cwd, env.get("HOME", ""), *AGENT_PLACES) if place.strip("/")]

    def agents(entry):
        return not entry.startswith("/") or any(entry == p or entry.startswith(p + "/") for p in places)

    entries = [entry for entry in env.get("PATH", "").split(":") if entry]
    result = {name: value for name, value in env.items() if name != "PYTHONUSERBASE"}
    result.update(HOME=as_agent(tempfile.mkdtemp, "", "gem-test-home-", "/tmp"), PYTHONNOUSERSITE="1")
    if entries:
        result["PATH"] = ":".join([e for e in entries if not agents(e)] + [e for e in entries if agents(e)])
    return result


def empty(directory):
    """Remove everything in ``directory``, whatever modes the agent gave it (in a container, where
    the agent is root, ``directory`` itself may have been replaced); raise if anything stays."""
    import shutil

    if os.path.islink(directory) or not os.path.isdir(directory):
        if os.path.lexists(directory):
            os.unlink(directory)
        os.mkdir(directory)
    for root, folders, _ in os.walk(directory):
        for name in folders:  # before os.walk enters them: a folder the agent locked opens again
            if not os.path.islink(os.path.join(root, name)):
                os.chmod(os.path.join(root, name), 0o700)
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    if os.listdir(directory):
        raise RuntimeError("%s could not be emptied" % directory)


def put(directory, data, clean):
    import tarfile

    if clean:
        empty(directory)
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(data))) as tar:
        if hasattr(tarfile, "tar_filter"):
            tar.extractall(directory, filter="tar")
        else:  # pragma: no cover - Python before 3.10.12
            tar.extractall(directory)
    return {}


def snapshot(directory):
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in sorted(os.listdir(directory)):
            tar.add(os.path.join(directory, name), arcname=name)
    return {"tar": base64.b64encode(buffer.getvalue()).decode()}


def main():
    global PRIVILEGED, AS_AGENT
    for sig in IGNORED_SIGNALS:  # `pkill python3` and the like leave the supervisor alone
        signal.signal(sig, signal.SIG_IGN)
    config = json.loads(sys.stdin.buffer.readline())
    env, cwd = config["env"], config["cwd"]
    if config.get("as_root"):  # in a container the agent is root, as terminal-bench has it
        PRIVILEGED, AS_AGENT = False, {}
    if config.get("inherit_env"):  # the image's own variables (PATH, ...) under the given ones
        env = dict(os.environ, **env)
    shell = Shell(cwd, env)
    out = sys.stdout.buffer
    out.write(json.dumps({"ready": True, "python": "%d.%d" % sys.version_info[:2]}).encode() + b"\n")
    out.flush()
    for line in sys.stdin.buffer:
        request = json.loads(line)
        op = request["op"]
        try:
            if op == "shell":
                reply = shell.run(request["command"], request["timeout"], request["max_output"])
            elif op == "exec":
                variables = dict(env, **request.get("env", {}))
                reply = run_once(request["script"], request["timeout"], request["max_output"], cwd,
                                 isolated(variables, cwd) if request.get("isolated") else variables)
            elif op == "put":
                reply = as_agent(put, request["dir"], request["tar"], request.get("clean", False))
            elif op == "snapshot":
                reply = as_agent(snapshot, request["dir"])
            elif op == "kill_all":
                shell.stop()
                kill({})
                reply = {}
            else:
                reply = {"error": "unknown request %r" % op}
        except Exception as e:  # reported to the host, which raises it
            reply = {"error": "%s: %s" % (type(e).__name__, e)}
        out.write(json.dumps(reply).encode() + b"\n")
        out.flush()
    shell.stop()
    kill({})


main()
