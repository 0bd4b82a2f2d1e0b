"""run_python: what a program sees and what comes back."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest

from gem_core.errors import GemError
from gem_core.tools import (
    PythonResult,
    SandboxConfigError,
    SandboxUnavailableError,
    arun_python,
    run_python,
    sandbox_problem,
)

pytestmark = pytest.mark.usefixtures("sandbox")


def test_stdout_stderr_exit_code_and_stdin():
    result = run_python(
        "import sys\n"
        "name = input()\n"
        "print('hello', name)\n"
        "print('warning', file=sys.stderr)\n"
        "sys.exit(3)\n",
        stdin="world\n",
    )
    assert result.stdout == "hello world\n"
    assert result.stderr == "warning\n"
    assert result.exit_code == 3
    assert not result.ok and not result.timed_out and result.sandboxed
    assert result.signal is None


def test_program_runs_as_main_from_its_file_with_a_clean_traceback():
    result = run_python("def f():\n    return 1 / 0\n\nprint(__name__, __file__)\nf()\n")
    assert result.stdout == "__main__ /tmp/main.py\n"
    assert result.exit_code == 1
    assert result.stderr.startswith("Traceback (most recent call last):\n")
    assert '  File "/tmp/main.py", line 5, in <module>\n    f()' in result.stderr
    assert "    return 1 / 0" in result.stderr  # source lines are shown
    assert "<string>" not in result.stderr  # the bootstrap's frame is hidden
    assert result.stderr.rstrip().endswith("ZeroDivisionError: division by zero")


def test_syntax_error_is_reported_like_python_does():
    result = run_python("print(1 +\n")
    assert result.exit_code == 1
    assert result.stderr.startswith('  File "/tmp/main.py", line 1')
    assert "SyntaxError" in result.stderr
    assert "Traceback" not in result.stderr


def test_installed_packages_import_and_exit_builtin_works():
    result = run_python("import json, numpy\nprint(numpy.arange(4).sum())\nexit(0)\n")
    assert result.ok, result.stderr
    assert result.stdout == "6\n"


def test_files_are_placed_in_the_working_directory():
    result = run_python("import os\nprint(open('data/in.txt').read(), os.getcwd())",
                        files={"data/in.txt": "payload", "b.bin": b"\x00\x01"})
    assert result.stdout == "payload /tmp\n"


@pytest.mark.parametrize("name", ["/etc/passwd", "../x", "main.py", "", "a/../../b"])
def test_bad_file_names_are_refused(name):
    with pytest.raises(SandboxConfigError, match="relative path"):
        run_python("pass", files={name: "x"})


@pytest.mark.parametrize("options", [{"timeout": 0}, {"timeout": float("inf")}, {"memory_mb": -1},
                                     {"max_processes": 0}, {"max_output": 1.5}, {"cpu_seconds": "2"}])
def test_bad_limits_are_refused(options):
    with pytest.raises(SandboxConfigError):
        run_python("pass", **options)


def test_code_must_be_text():
    with pytest.raises(SandboxConfigError, match="str"):
        run_python(b"print(1)")  # type: ignore[arg-type]


def test_output_beyond_max_output_keeps_head_and_tail():
    result = run_python("for i in range(20000):\n    print(i)\n", max_output=1000)
    assert result.ok and result.truncated
    assert result.stdout.startswith("0\n1\n2\n")
    assert result.stdout.endswith("19998\n19999\n")
    assert "bytes of output truncated" in result.stdout
    assert len(result.stdout) < 1100


def test_unicode_output_and_invalid_bytes():
    result = run_python("import sys\nprint('π ≈ 3.14 ✓')\nsys.stdout.flush()\nsys.stdout.buffer.write(b'\\xff\\n')")
    assert result.stdout.startswith("π ≈ 3.14 ✓\n")
    assert "\ufffd" in result.stdout  # undecodable bytes are replaced, never an exception


def test_cpu_time_limit_kills_a_busy_program_with_sigxcpu():
    result = run_python("while True:\n    pass\n", timeout=10, cpu_seconds=1)
    assert not result.timed_out
    assert result.exit_code == 128 + 24 and result.signal == 24  # SIGXCPU
    assert result.duration < 8


def test_async_calls_run_concurrently():
    async def main():
        start = time.monotonic()
        results = await asyncio.gather(*[arun_python("import time\ntime.sleep(1)\nprint('done')") for _ in range(4)])
        return results, time.monotonic() - start

    results, elapsed = asyncio.run(main())
    assert all(r.stdout == "done\n" for r in results)
    assert elapsed < 3.5  # four one-second sleeps, side by side (sequential would take 4+)


def test_refuses_without_bubblewrap_unless_allowed(monkeypatch, tmp_path):
    monkeypatch.setenv("GEM_BWRAP", str(tmp_path / "no-such-bwrap"))
    problem = sandbox_problem()
    assert problem is not None and "GEM_BWRAP" in problem
    with pytest.raises(SandboxUnavailableError, match="allow_unsandboxed=True") as excinfo:
        run_python("print(1)")
    assert isinstance(excinfo.value, GemError)
    result = run_python("import os\nprint('ran', os.getcwd() != '/tmp')", allow_unsandboxed=True)
    assert result == PythonResult(result.stdout, "", 0, False, False, result.duration)
    assert result.stdout == "ran True\n" and result.sandboxed is False


def test_unsandboxed_runs_still_enforce_the_timeout(monkeypatch, tmp_path):
    monkeypatch.setenv("GEM_BWRAP", str(tmp_path / "no-such-bwrap"))
    result = run_python("import time\ntime.sleep(30)", timeout=1, allow_unsandboxed=True)
    assert result.timed_out and not result.sandboxed
    assert result.duration < 5


def test_another_interpreter_can_be_chosen():
    result = run_python("import sys\nprint(sys.version_info[0])", python=sys.executable)
    assert result.stdout == "3\n"
    with pytest.raises(SandboxConfigError, match="interpreter"):
        run_python("pass", python="/nonexistent/python3")


def test_async_calls_work_in_a_forked_child():
    import multiprocessing

    assert run_python("pass").ok  # the parent has used the sandbox and its thread pool
    asyncio.run(arun_python("pass"))
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        assert pool.apply_async(_child_run).get(timeout=60) == "from child\n"


def _child_run() -> str:
    return asyncio.run(arun_python("print('from child')", timeout=20)).stdout


def test_tmp_stays_private_when_the_interpreter_lives_under_tmp(python_under_tmp):
    result = run_python("import os, sys\nprint(sorted(os.listdir('/tmp')))\nprint(sys.executable)",
                        python=python_under_tmp)
    listing, executable = result.stdout.splitlines()
    assert listing == "['main.py']", result.stderr  # only the program's own file
    assert executable == "/run/gem-host" + python_under_tmp  # the interpreter, seen elsewhere


@pytest.mark.parametrize("code", [
    "import sys\nprint(input(), sys.argv, __name__, __file__)\nprint('err', file=sys.stderr)\nsys.exit(3)",
    "def f():\n    return 1 / 0\nf()",
    "print(1 +",
    "import sys\nsys.exit('bye')",
    "import sys\nsys.exit(300)",
    "import atexit, threading, time\natexit.register(print, 'at exit')\n"
    "threading.Thread(target=lambda: (time.sleep(0.1), print('thread'))).start()\nprint('main')",
    "import os, sys\nprint(sorted(set(globals()) - {'__warningregistry__'}), sys.flags.isolated, os.getuid(),\n"
    "      sorted(os.environ), os.getcwd(), sys.stdout.encoding)",
    "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)",
])
def test_warm_and_fresh_sandboxes_give_the_same_results(code):
    warm, fresh = (run_python(code, stdin="in\n", timeout=5, sandbox=mode) for mode in ("warm", "fresh"))
    assert (warm.stdout, warm.stderr, warm.exit_code, warm.timed_out) == \
        (fresh.stdout, fresh.stderr, fresh.exit_code, fresh.timed_out)


def test_unknown_sandbox_kind_is_refused():
    with pytest.raises(SandboxConfigError, match="sandbox must be one of"):
        run_python("pass", sandbox="cold")
