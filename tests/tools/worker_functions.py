"""Functions that tests run in scoring workers (module ``tests.tools.worker_functions``)."""

import os
import socket
import tempfile
import time


def add(a, b):
    return a + b


def sleep(seconds):
    time.sleep(seconds)
    return seconds


def stubborn_sleep(seconds):
    """Sleeps, swallowing every interruption, like library code with a bare ``except``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            time.sleep(0.01)
        except BaseException:
            pass
    return "finished"


def pid():
    return os.getpid()


def parent_pid():
    return os.getppid()


def noisy():
    print("text on stdout must not corrupt the replies")
    return "quiet"


def fail():
    raise ValueError("bad input")


def not_json():
    return object()


def crash():
    os._exit(3)


def hog_memory():
    return len(bytearray(64 * 1024**3))


def touch(path):
    open(path, "w").close()
    return True


def warm_up():
    """Like libraries that write a cache when imported, needs a writable temporary folder."""
    with tempfile.NamedTemporaryFile("w") as cache:
        cache.write("cache")
    os.environ["WARMED_UP"] = "yes"


def warmed_up():
    return os.environ.get("WARMED_UP")


def burn_cpu(seconds):
    """Busy for ``seconds`` of CPU time (trusted setup work)."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return seconds


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def network_interfaces():
    return sorted(name for _, name in socket.if_nameindex())


def user_ids():
    return [os.getuid(), os.geteuid()]
