"""The security battery: hostile programs stay contained, within their timeout, and leave the host
as it was. (The autouse fixture in conftest also checks that no process is left behind.)"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest

from gem_core.sandbox import run_python

from .conftest import processes_matching

pytestmark = pytest.mark.usefixtures("sandbox")

TIMEOUT = 3.0
MARGIN = 3.0  # seconds of slack for a loaded machine


def assert_contained(result, *, timed_out: bool | None = None):
    assert result.sandboxed
    assert result.duration < TIMEOUT + MARGIN, result.duration
    if timed_out is not None:
        assert result.timed_out is timed_out, (result.stdout, result.stderr)


def test_network_access_is_impossible():
    # A server on the host's loopback: the sandbox has its own, empty network namespace.
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.2)
        port = server.getsockname()[1]
        result = run_python(
            "import socket\n"
            "for host in [('127.0.0.1', %d), ('1.1.1.1', 80), ('8.8.8.8', 53)]:\n"
            "    try:\n"
            "        socket.create_connection(host, timeout=2)\n"
            "        print('CONNECTED', host)\n"
            "    except OSError as e:\n"
            "        print('blocked', host, e.errno)\n"
            "print(sorted(name for _, name in socket.if_nameindex()))\n" % port,
            timeout=TIMEOUT,
        )
        with pytest.raises(socket.timeout):
            server.accept()  # nothing reached the host
    assert_contained(result, timed_out=False)
    assert "CONNECTED" not in result.stdout
    assert result.stdout.count("blocked") == 3
    assert result.stdout.strip().endswith("['lo']")


def test_writing_outside_the_private_tmp_fails(tmp_path):
    marker = uuid.uuid4().hex
    targets = ["/etc", "/usr", "/", str(Path.home()), str(Path.cwd()), "/var/tmp", str(tmp_path), "/dev"]
    code = (
        "import os\n"
        f"for directory in {targets!r}:\n"
        "    try:\n"
        f"        open(os.path.join(directory, 'gem-{marker}'), 'w').write('x')\n"
        "        print('WROTE', directory)\n"
        "    except OSError:\n"
        "        print('refused', directory)\n"
        f"open('/tmp/gem-{marker}', 'w').write('private')\n"
        f"print('tmp', open('/tmp/gem-{marker}').read())\n"
    )
    result = run_python(code, timeout=TIMEOUT)
    assert_contained(result, timed_out=False)
    assert "WROTE" not in result.stdout, result.stdout
    assert result.stdout.count("refused") == len(targets)
    assert "tmp private" in result.stdout  # the private /tmp is writable...
    for directory in [*targets, "/tmp"]:  # ...and nothing reached the host
        assert not Path(directory, f"gem-{marker}").exists()


def test_files_under_the_home_directory_cannot_be_read():
    secret = Path.home() / f".gem-test-secret-{uuid.uuid4().hex}"
    secret.write_text("TOP-SECRET-VALUE")
    try:
        result = run_python(
            "import os\n"
            f"path = {str(secret)!r}\n"
            "try:\n"
            "    print(open(path).read())\n"
            "except OSError as e:\n"
            "    print('unreadable', type(e).__name__)\n"
            "home = os.path.dirname(path)\n"
            "print('listing', os.listdir(home) if os.path.isdir(home) else 'no home')\n",
            timeout=TIMEOUT,
        )
    finally:
        secret.unlink()
    assert_contained(result, timed_out=False)
    assert "TOP-SECRET-VALUE" not in result.stdout
    assert "unreadable" in result.stdout
    assert secret.name not in result.stdout


def test_fork_bomb_is_stopped_by_the_process_limit():
    result = run_python(
        "import os\n"
        "while True:\n"
        "    try:\n"
        "        os.fork()\n"
        "    except OSError:\n"
        "        pass\n",
        timeout=TIMEOUT, max_processes=16,
    )
    assert_contained(result, timed_out=True)
    assert os.fork  # the host can still start processes:
    assert run_python("print('fine')", timeout=TIMEOUT).stdout == "fine\n"


def test_memory_bomb_hits_the_memory_limit():
    result = run_python(
        "chunks = []\n"
        "while True:\n"
        "    chunks.append(bytearray(50 * 2**20))\n",
        timeout=TIMEOUT, memory_mb=256,
    )
    assert_contained(result, timed_out=False)
    assert result.exit_code == 1
    assert "MemoryError" in result.stderr


def test_infinite_loop_is_killed_at_the_timeout():
    start = time.monotonic()
    result = run_python("while True:\n    pass\n", timeout=1.0)
    assert result.timed_out and result.exit_code == 137
    assert time.monotonic() - start < 1.0 + MARGIN


def test_sleeping_program_is_killed_at_the_wall_clock_timeout():
    result = run_python("import time\ntime.sleep(600)\n", timeout=1.0)
    assert result.timed_out
    assert 1.0 <= result.duration < 1.0 + MARGIN


def test_gigabytes_of_output_cost_no_memory():
    rss_before = _rss_mb()
    result = run_python(
        "import sys\n"
        "chunk = 'x' * 2**20\n"
        "while True:\n"
        "    sys.stdout.write(chunk)\n",
        timeout=TIMEOUT, max_output=4096,
    )
    assert_contained(result, timed_out=True)
    assert result.truncated
    assert len(result.stdout) < 4096 + 100
    assert _rss_mb() - rss_before < 100


def test_killing_the_parent_has_no_effect():
    result = run_python(
        "import os, signal\n"
        "for pid in (os.getppid(), 1, -1):\n"
        "    try:\n"
        "        os.kill(pid, signal.SIGKILL)\n"
        "    except OSError as e:\n"
        "        print('refused', pid)\n"
        "print('still here')\n",
        timeout=TIMEOUT,
    )
    assert_contained(result, timed_out=False)
    assert result.stdout.strip().endswith("still here")
    assert os.getpid()  # and this process is alive to check it


def test_child_that_tries_to_outlive_the_call_is_killed():
    token = f"{time.time_ns() % 10**6}.4242"  # an argument only this test's sleep carries
    start = time.monotonic()
    result = run_python(
        "import os, subprocess\n"
        f"subprocess.Popen(['sleep', '{token}'], start_new_session=True)\n"
        "if os.fork() == 0:\n"  # a daemon: double fork and setsid
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execvp('sleep', ['sleep', '{token}'])\n"
        "    os._exit(0)\n"
        "print('parent exits')\n",
        timeout=TIMEOUT,
    )
    assert result.stdout == "parent exits\n"
    assert not result.timed_out  # the call ends with the program, not at the timeout
    assert time.monotonic() - start < TIMEOUT
    deadline = time.monotonic() + 3
    while processes_matching(f"sleep {token}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not processes_matching(f"sleep {token}")


def test_filling_tmp_stops_at_its_size():
    result = run_python(
        "total = 0\n"
        "try:\n"
        "    for i in range(1000):\n"
        "        with open(f'/tmp/fill{i}', 'wb') as f:\n"
        "            for _ in range(4):\n"
        "                f.write(b'0' * 2**20)\n"
        "                total += 1\n"
        "except OSError as e:\n"
        "    print('stopped at', total, 'MiB:', e.strerror)\n",
        timeout=TIMEOUT, tmp_mb=16, max_file_mb=8,
    )
    assert_contained(result, timed_out=False)
    assert "No space left on device" in result.stdout
    written = int(result.stdout.split()[2])
    assert written <= 16


def test_concurrent_hostile_calls_do_not_disturb_each_other():
    results = {}

    def call(name, code, **options):
        results[name] = run_python(code, timeout=TIMEOUT, **options)

    threads = [
        threading.Thread(target=call, args=("bomb", "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass\n"),
                         kwargs={"max_processes": 8}),
        threading.Thread(target=call, args=("work", "import os\nprint(sum(range(10**6)))\nos.fork() or print('forked')")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results["bomb"].timed_out
    assert results["work"].ok and "499999500000" in results["work"].stdout  # its own process budget


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def test_the_program_runs_as_an_unprivileged_user_without_capabilities():
    result = run_python(
        "import os\n"
        "status = dict(line.split(':', 1) for line in open('/proc/self/status').read().splitlines())\n"
        "print(os.getuid(), os.getgid(), os.getgroups(), status['CapEff'].strip(), status['CapPrm'].strip(),\n"
        "      status['CapAmb'].strip(), status['NoNewPrivs'].strip())\n"
        "try:\n"
        "    os.setuid(0)\n"
        "    print('BECAME ROOT')\n"
        "except PermissionError:\n"
        "    print('setuid refused')\n",
        timeout=TIMEOUT,
    )
    assert_contained(result, timed_out=False)
    ids, refusal = result.stdout.splitlines()
    assert ids == "65534 65534 [] 0000000000000000 0000000000000000 0000000000000000 1"
    assert refusal == "setuid refused"


def test_consecutive_calls_cannot_see_each_others_files_environment_state_or_processes():
    from gem_core.sandbox import warm_python

    warm_python.close_warm_sandboxes()  # a sandbox of this test's own, to count its calls
    token = f"{time.time_ns() % 10**6}.4343"
    leave = (
        "import builtins, ctypes, os, sys\n"
        "os.environ['GEM_LEFT'] = 'env'\n"
        "builtins.GEM_LEFT = sys.GEM_LEFT = 'state'\n"
        "open('/tmp/left.txt', 'w').write('file')\n"
        "os.makedirs('/tmp/d/e')\n"
        "open('/tmp/d/e/f', 'w').write('file')\n"
        "os.chmod('/tmp/d', 0)\n"
        "open('/dev/shm/left', 'w').write('shm')\n"
        "print('left')\n"
    )
    look = (
        "import builtins, os, sys\n"
        "print(os.environ.get('GEM_LEFT'), getattr(builtins, 'GEM_LEFT', None), getattr(sys, 'GEM_LEFT', None),\n"
        "      sorted(os.listdir('/tmp')), os.listdir('/dev/shm'))\n"
        "others = []\n"
        "for pid in filter(str.isdigit, os.listdir('/proc')):\n"
        "    try:\n"
        "        others.append(open(f'/proc/{pid}/cmdline', 'rb').read().replace(b'\\0', b' ').decode())\n"
        "    except OSError:\n"
        "        pass\n"
        f"print(any('sleep {token}' in command for command in others))\n"
        "print(open('/proc/sysvipc/shm').read().count('\\n'))\n"
    )
    nothing = "None None None ['main.py'] []\nFalse\n1\n"
    assert run_python(leave, timeout=TIMEOUT).stdout == "left\n"
    assert run_python(look, timeout=TIMEOUT).stdout == nothing
    (sandbox,) = warm_python._pools[next(iter(warm_python._pools))]._idle
    assert sandbox.jobs == 2  # both ran in one warm sandbox, one after the other

    # A process left running, or a System V shared memory segment, ends the sandbox it was left in.
    daemon = (
        "import os\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        f"    os.execvp('sleep', ['sleep', '{token}'])\n"
        "print('started')\n"
    )
    assert run_python(daemon, timeout=TIMEOUT).stdout == "started\n"
    assert run_python(look, timeout=TIMEOUT).stdout == nothing
    segment = "import ctypes\nprint(ctypes.CDLL(None).shmget(0, 4096, 0o1600) >= 0)\n"  # IPC_PRIVATE, IPC_CREAT
    assert run_python(segment, timeout=TIMEOUT).stdout == "True\n"
    assert run_python(look, timeout=TIMEOUT).stdout == nothing
