"""The container backend (podman): real terminal-bench tasks, offline grading, containment.

The images are local (tests/terminal/images.py): no registry is reachable, so the tasks' FROM
names are mapped to a Debian base built from Debian's packages.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gem_core import make
from gem_core.errors import EnvArgumentError, GemError
from gem_envs.terminal import container
from gem_envs.terminal.container import ContainerSandbox, TaskBuildError
from gem_envs.terminal.env import TerminalEnv
from gem_envs.terminal.sandbox import TerminalSandbox
from gem_envs.terminal.tasks import TaskUnsupportedError, builtin_tasks, load_task
from tests.terminal.images import TASKS_DIR
from tests.terminal.public import PUBLIC  # Apache-2.0 terminal-bench tasks
from tests.terminal.solutions import scores

REAL_TASKS = [PUBLIC / "evoeval-0", PUBLIC / "evoeval-1", PUBLIC / "evoeval-2", TASKS_DIR / "jq-report"]


def containers() -> set[str]:
    """Names of every container podman knows, build containers included.

    A container removed while podman lists them makes `--external` fail with "container not known";
    the listing is then taken again.
    """
    for _ in range(10):
        done = subprocess.run(["podman", "ps", "-a", "--external", "--format", "{{.Names}}"],
                              capture_output=True, text=True, timeout=60)
        if done.returncode == 0:
            return set(done.stdout.split())
        assert "container not known" in done.stderr, done.stderr
        time.sleep(0.2)
    raise AssertionError(f"podman could not list its containers: {done.stderr}")


def wait_gone(name: str, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if name not in containers():
            return True
        time.sleep(0.5)
    return False


@pytest.mark.parametrize("task", REAL_TASKS, ids=lambda p: p.name)
def test_real_tasks_score_1_with_their_solution_and_0_doing_nothing_in_podman(task, podman):
    nothing, solution, why, sandbox = scores(TerminalEnv(path=task, backend="podman", base_images=podman, max_turns=3))
    assert isinstance(sandbox, ContainerSandbox)
    assert (nothing, solution) == (0.0, 1.0), why


def test_every_shipped_task_scores_as_its_solution_says_in_podman(podman):
    def check(name: str) -> tuple[str, float, float, str]:
        return (name, *scores(TerminalEnv(task=name, backend="podman", base_images=podman, max_turns=3))[:3])

    with ThreadPoolExecutor(4) as pool:  # containers start in about half a second; threads overlap the waits
        results = list(pool.map(check, [task.name for task in builtin_tasks()]))
    wrong = [result for result in results if result[1:3] != (0.0, 1.0)]
    assert not wrong, wrong


def test_the_pytest_boilerplate_grades_offline_in_bubblewrap(sandbox):
    nothing, solution, why, sandbox = scores(TerminalEnv(path=PUBLIC / "evoeval-1", backend="bubblewrap", max_turns=3))
    assert isinstance(sandbox, TerminalSandbox)
    assert (nothing, solution) == (0.0, 1.0), why


def test_auto_runs_each_task_where_it_can(podman, sandbox, tmp_path):
    env = TerminalEnv(path=PUBLIC, backend="auto", base_images=podman)
    try:
        env.reset(task="evoeval-0")
        assert isinstance(env.sandbox, TerminalSandbox)  # its Dockerfile is only FROM and WORKDIR
    finally:
        env.close()
    env = TerminalEnv(path=TASKS_DIR / "jq-report", backend="auto", base_images=podman)
    try:
        observation, _ = env.reset()
        assert isinstance(env.sandbox, ContainerSandbox) and "in /app, with no network access" in observation
    finally:
        env.close()
    with pytest.raises(TaskUnsupportedError, match="apt-get"):
        TerminalEnv(path=TASKS_DIR / "jq-report", backend="bubblewrap")


def test_unknown_keywords_are_named_with_the_accepted_ones(tmp_path):
    with pytest.raises(EnvArgumentError, match=r"does not accept 'bogus'.*backend='auto'.*base_images=None"):
        make("terminal:Tasks-v0", path=str(PUBLIC / "evoeval-0"), bogus=1)


def test_tests_that_need_the_network_are_refused_at_load_unless_it_is_on(tmp_path, podman):
    task = tmp_path / "needs-net"
    for name in ("task.yaml", "Dockerfile", "solution.sh", "tests"):
        src = PUBLIC / "evoeval-0" / name
        (task / name).parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            (task / name).mkdir()
            (task / name / "test_outputs.py").write_text((src / "test_outputs.py").read_text())
        else:
            (task / name).write_text(src.read_text())
    (task / "run-tests.sh").write_text("#!/bin/bash\npip install requests\npython3 -m pytest $TEST_DIR -rA\n")
    for backend in ("bubblewrap", "podman"):
        with pytest.raises(TaskUnsupportedError, match=r"`pip install requests` \(line 2\)"):
            TerminalEnv(path=task, backend=backend)
    env = TerminalEnv(path=task, backend="podman", network=True, base_images=podman)
    try:
        assert "with network access" in env.reset()[0]
    finally:
        env.close()


# --- containment -----------------------------------------------------------------------------


@pytest.fixture
def box(podman):
    env = TerminalEnv(path=PUBLIC / "evoeval-0", backend="podman", base_images=podman, command_timeout=10,
                      max_command_timeout=20, max_turns=50, memory_mb=512, max_processes=64)
    env.reset()
    yield env
    env.close()


def test_no_network_by_default(box):
    observation = box.step("<bash>cat /proc/net/dev | tail -n +3 | cut -d: -f1; python3 -c \"import socket; "
                           "socket.create_connection(('deb.debian.org', 80), timeout=3)\"</bash>")[0]
    assert observation.split()[0] == "lo" and ("OSError" in observation or "gaierror" in observation), observation


def test_a_fork_bomb_is_contained(box):
    observation, _, _, _, info = box.step("<bash>{cmd: 'bomb() { bomb | bomb; }; bomb', timeout_secs: 3}</bash>")
    assert info["timed_out"] and "timed out after 3 s" in observation
    observation, _, _, _, info = box.step("<bash>ls /proc | grep -c '^[0-9]'</bash>")
    assert info["exit_code"] == 0 and int(observation.splitlines()[-2]) < 10  # the bomb is gone, the shell alive
    box.step("<bash>bomb() { bomb | bomb & }; bomb</bash>")  # in the background it lives on, held by the pid limit
    observation = box.step("<bash>{cmd: 'sleep 1; ls /proc | grep -c \"^[0-9]\"', timeout_secs: 3}</bash>")[0]
    assert observation.splitlines()[-1].startswith(("[exit code", "[timed out", "[the shell ended"))
    bombed = box.sandbox.name
    box.reset()  # removes the bombed container
    assert bombed not in containers() and box.step("<bash>echo fresh</bash>")[0].startswith("fresh")


def test_a_memory_bomb_is_contained(box):
    observation = box.step("<bash>python3 -c 'x = bytearray(2 << 30)'; echo code=$?</bash>")[0]
    assert "code=0" not in observation and ("MemoryError" in observation or "code=137" in observation)
    assert box.step("<bash>echo still here</bash>")[0].startswith("still here")


def test_nothing_survives_close_and_reset_removes_the_previous_container(box):
    box.step("<bash>nohup setsid sleep 4242 >/dev/null 2>&1 & sleep 600 &</bash>")
    first = box.sandbox.name
    assert first in containers()
    box.reset()
    assert box.sandbox.name != first and first not in containers()
    second = box.sandbox.name
    box.step("<bash>nohup setsid sleep 4242 >/dev/null 2>&1 &</bash>")
    box.close()
    assert second not in containers()
    left = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline(pid) == "sleep 4242"]
    assert not left


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def test_the_container_goes_when_the_python_process_dies(podman):
    script = textwrap.dedent(f"""
        from gem_envs.terminal.env import TerminalEnv
        env = TerminalEnv(path={str(PUBLIC / 'evoeval-0')!r}, backend="podman", base_images={podman!r})
        env.reset()
        env.step("<bash>sleep 600 &</bash>")
        print(env.sandbox.name, flush=True)
        import time; time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        name = proc.stdout.readline().strip()
        assert name.startswith("gem-terminal-") and name in containers()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    assert wait_gone(name), f"{name} outlived its owner"


def test_a_failing_build_is_a_clear_error_and_leaves_nothing(tmp_path, podman):
    task = tmp_path / "broken-build"
    task.mkdir()
    (task / "task.yaml").write_text("instruction: nothing\n")
    (task / "Dockerfile").write_text("FROM debian:bookworm\nRUN echo building && exit 3\nWORKDIR /app\n")
    (task / "run-tests.sh").write_text("#!/bin/bash\ntrue\n")
    (task / "solution.sh").write_text("#!/bin/bash\ntrue\n")
    (task / "tests").mkdir()
    before = containers()
    env = TerminalEnv(path=task, backend="podman", base_images=podman)
    with pytest.raises(TaskBuildError, match=r"(?s)'broken-build' failed.*exit(ed with)? .*building"):
        env.reset()
    env.close()
    assert containers() <= before
    images = subprocess.run(["podman", "images", "--format", "{{.Repository}}"], capture_output=True, text=True,
                            timeout=60).stdout
    assert "gem-terminal/broken-build" not in images


def test_an_engine_that_cannot_run_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker on it
    container.engine_problem.cache_clear()
    try:
        env = TerminalEnv(path=PUBLIC / "evoeval-0", backend="docker")
        with pytest.raises(container.ContainerError, match="docker is not installed"):
            env.reset()
        env.close()
    finally:
        container.engine_problem.cache_clear()


def test_a_harbor_task_on_a_prebuilt_image_grades_with_the_uvx_boilerplate(tmp_path, podman):
    task = tmp_path / "harbor-sum"
    (task / "tests").mkdir(parents=True)
    (task / "solution").mkdir()
    (task / "task.toml").write_text('version = "1.0"\n[environment]\ndocker_image = "ghcr.io/laude-institute/t-bench/'
                                    'python-3-13:20250620"\n[verifier]\ntimeout_sec = 60.0\n')
    (task / "instruction.md").write_text("Write the sum of 2 and 3 to /root/sum.txt.\n")
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\necho 5 > /root/sum.txt\n")
    (task / "tests" / "test_outputs.py").write_text(
        "from pathlib import Path\n\ndef test_sum():\n    assert Path('/root/sum.txt').read_text().strip() == '5'\n")
    (task / "tests" / "test.sh").write_text(textwrap.dedent("""\
        #!/bin/bash
        apt-get update
        apt-get install -y curl
        curl -LsSf https://astral.sh/uv/0.9.7/install.sh | sh
        source $HOME/.local/bin/env
        uvx -p 3.13 -w pytest==8.4.1 pytest /tests/test_outputs.py -rA
        if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
    """))
    with pytest.raises(TaskUnsupportedError, match="prebuilt image"):
        load_task(task)  # bubblewrap cannot
    env = TerminalEnv(path=task, backend="auto", base_images=podman, max_turns=3)
    nothing, solution, why, sandbox = scores(env)
    assert isinstance(sandbox, ContainerSandbox) and sandbox.workdir == "/"
    assert (nothing, solution) == (0.0, 1.0), why
    env.reset()
    try:
        with pytest.raises(GemError, match="sets no WORKDIR"):
            env.clone()
    finally:
        env.close()


def test_clone_copies_the_workspace_into_a_new_container(box):
    box.step("<bash>mkdir -p sub && cd sub && export GREETING=hi && echo draft > notes.txt</bash>")
    twin = box.clone()  # a new container with the workspace, directory and variables
    try:
        assert twin.sandbox.name != box.sandbox.name
        assert twin.step("<bash>pwd; echo $GREETING; cat notes.txt</bash>")[0].startswith("/app/sub\nhi\ndraft")
    finally:
        twin.close()


def test_containers_of_a_dead_owner_are_removed_by_the_sweep(podman):
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid whose process is gone
    owner = container._owner().rsplit(":", 1)[0] + f":{dead.pid}"
    name = "gem-terminal-orphan-test"
    subprocess.run(["podman", "run", "-d", "--rm", "--name", name, "--label", f"{container.LABEL}={owner}",
                    "--entrypoint", "sleep", next(iter(podman.values())), "600"], check=True, capture_output=True,
                   timeout=60)
    assert name in containers()
    assert name in container.remove_orphans("podman")
    assert name not in containers()


def test_a_prebuilt_image_that_is_nowhere_is_a_clear_error(tmp_path, podman):
    task = tmp_path / "absent-image"
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text('[environment]\ndocker_image = "localhost/gem-test/absent:1"\n')
    (task / "instruction.md").write_text("Nothing.\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    env = TerminalEnv(path=task, backend="podman", base_images=podman)
    with pytest.raises(container.ContainerError, match=r"'localhost/gem-test/absent:1' is not in podman and could "
                                                        r"not be pulled.*base_images="):
        env.reset()
    env.close()
