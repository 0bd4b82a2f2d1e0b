"""Harbor's layout as Terminal-Bench 2 publishes it: its standard test.sh graded offline on the test
tools GEM supplies, every pytest form a test script uses, task.toml's limits, network, workdir and
timeouts, reward.json, and compose files."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gem_core.errors import GemError
from gem_envs.terminal.env import TerminalEnv, read_reward
from gem_envs.terminal.tasks import TaskUnsupportedError, load_task
from tests.terminal.images import TEST_TOOLS
from tests.terminal.public import HARBOR_TASKS  # Apache-2.0 terminal-bench tasks, in Harbor's layout
from tests.terminal.solutions import scores
from tests.terminal.test_tasks import write

PYTHON_NOTE = "asks for Python 3.13, which uv cannot download offline"


def play_both_ways(env: TerminalEnv) -> tuple[dict, dict]:
    """The final info of an episode doing nothing and of one running the task's solution."""
    try:
        env.reset()
        nothing = env.step("<finish>")[4]
        env.reset()
        solved = env.run_solution()
        solution = env.step("<finish>")[4]
        return nothing, {**solution, "solution_output": solved.output[-500:]}
    finally:
        env.close()


@pytest.mark.parametrize("backend", ["bubblewrap", "podman"])
@pytest.mark.parametrize("task", HARBOR_TASKS, ids=lambda p: p.name)
def test_terminal_bench_2_tasks_score_1_with_their_solution_and_0_doing_nothing(task, backend, request):
    images = request.getfixturevalue("podman") if backend == "podman" else request.getfixturevalue("sandbox")
    env = TerminalEnv(path=task, backend=backend, max_turns=3, **({"base_images": images} if images else {}))
    nothing, solution = play_both_ways(env)
    assert (nothing["score"], nothing["rewards"]) == (0.0, {"reward": 0.0}), nothing
    assert (solution["score"], solution["rewards"]) == (1.0, {"reward": 1.0}), solution
    assert solution["tests"] == {"test_solution_exists": "passed", "test_solution_correct": "passed"}
    where = "sandbox" if backend == "bubblewrap" else "container"
    assert [note for note in solution["test_notes"] if PYTHON_NOTE in note and f"{where}'s python3" in note]


# --- every pytest form, on the supplied tools ---------------------------------------------------

TOOLS_TEST = """\
from importlib import metadata
from pathlib import Path


def test_the_tools_are_whole_installs():
    assert metadata.version("pluggy") and metadata.version("iniconfig") and metadata.version("pytest")


def test_the_answer():
    assert Path("/app/answer.txt").read_text().strip() == "42"
"""
CTRF_CHECK = '[ -s /logs/verifier/ctrf.json ] && grep -q \'"passed": 2\' /logs/verifier/ctrf.json'
FORMS = {
    "python3 -m pytest -rA": "python3 -m pytest /tests/test_outputs.py -rA",
    "pytest -q": "pytest /tests/test_outputs.py -q",
    "uv run pytest": "uv init\nuv add pytest==8.4.1\nuv run pytest /tests/test_outputs.py -rA",
    "uvx --ctrf": "uvx \\\n  -p 3.11 \\\n  -w pytest==8.4.1 \\\n  -w pytest-json-ctrf==0.3.5 \\\n"
                  f"  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA && {CTRF_CHECK}",
    "uv pip install, then pytest --ctrf": "uv pip install --system pytest==8.4.1 pytest-json-ctrf==0.3.5\n"
                                          f"pytest --ctrf /logs/verifier/ctrf.json /tests -q && {CTRF_CHECK}",
}


def form_task(root, runner: str, toml: str = "") -> object:
    return write(root, {
        "task.toml": toml or "version = \"1.0\"\n[verifier]\ntimeout_sec = 60.0\n",
        "instruction.md": "Write 42 to /app/answer.txt.\n",
        "environment/Dockerfile": "FROM python:3.11-slim\nWORKDIR /app\n",
        "tests/test_outputs.py": TOOLS_TEST,
        "tests/test.sh": "#!/bin/bash\napt-get update\napt-get install -y curl\n"
                         "curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh\nsource $HOME/.local/bin/env\n"
                         f"{runner}\n"
                         "if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; "
                         "else echo 0 > /logs/verifier/reward.txt; fi\n",
        "solution/solve.sh": "#!/bin/bash\necho 42 > /app/answer.txt\n",
    })


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_pytest_form_grades_on_the_supplied_tools(form, tmp_path, sandbox):
    nothing, solution, why, _ = scores(TerminalEnv(path=form_task(tmp_path / "t", FORMS[form]), max_turns=3))
    assert (nothing, solution) == (0.0, 1.0), why
    assert "INTERNALERROR" not in why and PYTHON_NOTE not in why  # 3.11 asked, 3.11 found: nothing to say


def test_a_plain_pytest_summary_is_parsed_per_test_in_terminal_bench_layout(tmp_path, sandbox):
    write(tmp_path / "t", {
        "task.yaml": "instruction: Write 42 to /app/answer.txt.\n",
        "Dockerfile": "FROM python:3.11-slim\nWORKDIR /app\n",
        "run-tests.sh": "#!/bin/bash\npython3 -m pytest $TEST_DIR/test_outputs.py -rA\n",
        "tests/test_outputs.py": TOOLS_TEST,
        "solution.sh": "#!/bin/bash\necho 42 > /app/answer.txt\n",
    })
    env = TerminalEnv(path=tmp_path / "t", max_turns=3)
    try:
        env.reset()
        info = env.step("<finish>")[4]
        assert info["tests"] == {"test_the_tools_are_whole_installs": "passed", "test_the_answer": "failed"}
        assert info["score"] == 0.5
    finally:
        env.close()


# --- task.toml ------------------------------------------------------------------------------------

def limits_task(root, memory_mb: int, extra: str = "") -> object:
    toml = f"version = \"1.0\"\n[environment]\nmemory_mb = {memory_mb}\ncpus = 0.5\n{extra}"
    return form_task(root, "python3 -m pytest /tests/test_outputs.py -rA", toml=toml)


ALLOCATE = "<bash>python3 -c 'x = bytearray(400 << 20); print(\"allocated\")'; echo code=$?</bash>"


@pytest.mark.parametrize("backend", ["bubblewrap", "podman"])
def test_a_task_toml_memory_limit_bites(backend, tmp_path, request):
    images = request.getfixturevalue("podman") if backend == "podman" else request.getfixturevalue("sandbox")
    options = {"backend": backend, "max_turns": 5, **({"base_images": images} if backend == "podman" else {})}
    small = TerminalEnv(path=limits_task(tmp_path / "small", memory_mb=256), **options)
    large = TerminalEnv(path=limits_task(tmp_path / "large", memory_mb=1024), **options)
    given = TerminalEnv(path=limits_task(tmp_path / "given", memory_mb=256), memory_mb=1024, **options)
    try:
        small.reset(), large.reset(), given.reset()
        refused = small.step(ALLOCATE)[0]
        assert "allocated" not in refused and ("MemoryError" in refused or "code=137" in refused), refused
        assert "allocated" in large.step(ALLOCATE)[0]
        assert "allocated" in given.step(ALLOCATE)[0]  # a keyword the user gives wins over task.toml
        if backend == "podman":
            limits = _inspect(small.sandbox.name, "{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}}")
            assert limits == f"{256 << 20} {500_000_000}"
    finally:
        for env in (small, large, given):
            env.close()


@pytest.mark.parametrize("backend, refusal", [("bubblewrap", "No space left on device"),
                                              ("podman", "File size limit exceeded")])
def test_a_task_toml_storage_limit_bites(backend, refusal, tmp_path, request):
    images = request.getfixturevalue("podman") if backend == "podman" else request.getfixturevalue("sandbox")
    root = form_task(tmp_path / "t", "true", toml="[environment]\nstorage_mb = 16\n")
    env = TerminalEnv(path=root, backend=backend, max_turns=5, **({"base_images": images} if images else {}))
    try:
        with pytest.warns(UserWarning, match="cannot be enforced") if backend == "podman" else _no_warning():
            env.reset()
        written = env.step("<bash>head -c 32M /dev/zero > big; echo code=$?</bash>")[0]
        assert refusal in written and "code=0" not in written, written
        assert "code=0" in env.step("<bash>rm -f big; head -c 8M /dev/zero > small; echo code=$?</bash>")[0]
    finally:
        env.close()


@contextlib.contextmanager
def _no_warning():
    yield


def _inspect(container: str, form: str) -> str:
    return subprocess.run(["podman", "inspect", "--format", form, container], capture_output=True, text=True,
                          timeout=60, check=True).stdout.strip()


def test_task_toml_is_read(tmp_path):
    root = write(tmp_path / "t", {
        "task.toml": """
            version = "1.0"
            [metadata]
            difficulty = "hard"
            [agent]
            timeout_sec = 300.0
            [verifier]
            timeout_sec = 45.0
            [environment]
            cpus = 2
            memory = "1G"
            storage_mb = 4096
            allow_internet = false
            workdir = "/srv/work"
            build_timeout_sec = 120.0
        """,
        "instruction.md": "Nothing.\n",
        "environment/Dockerfile": "FROM debian:bookworm\nWORKDIR /srv/work\n",
        "tests/test.sh": "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
    })
    task = load_task(root)
    assert (task.difficulty, task.agent_timeout, task.test_timeout) == ("hard", 300.0, 45.0)
    assert (task.cpus, task.memory_mb, task.storage_mb, task.network_mode) == (2.0, 1024, 4096, "no-network")
    assert (task.workdir, task.container_workdir, task.build_timeout, task.test_tools) == ("/srv/work", "/srv/work",
                                                                                         120.0, ())
    assert not task.internet(True) and not task.internet(False)


@pytest.mark.parametrize("line, message", [
    ("memory_mb = \"2G\"", r"\[environment\] memory_mb must be a positive number, not '2G'"),
    ("cpus = -1", r"\[environment\] cpus must be a positive number"),
    ("memory = \"lots\"", r"memory must be a size such as '2G'"),
    ("allow_internet = \"yes\"", r"allow_internet must be true or false"),
    ("network_mode = \"bridge\"", r"network_mode must be one of public, no-network, allowlist"),
    ("workdir = \"app\"", r"workdir must be an absolute path"),
])
def test_task_toml_typos_are_clear_errors(tmp_path, line, message):
    root = write(tmp_path / "t", {"task.toml": f"[environment]\n{line}\n", "instruction.md": "x\n",
                                  "tests/test.sh": "#!/bin/bash\n"})
    with pytest.raises(GemError, match=message):
        load_task(root, backend="auto")


def test_the_task_workdir_and_its_network_off_apply_in_podman(tmp_path, podman):
    root = form_task(tmp_path / "t", "python3 -m pytest /tests/test_outputs.py -rA",
                     toml="[environment]\nallow_internet = false\nworkdir = \"/srv/work\"\n")
    env = TerminalEnv(path=root, backend="podman", base_images=podman, network=True, max_turns=3)
    try:
        observation, _ = env.reset()
        assert "in /srv/work, with no network access" in observation  # the task turned the network off
        shown = env.step("<bash>pwd; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '</bash>")[0]
        assert shown.splitlines()[:2] == ["/srv/work", "lo"]
    finally:
        env.close()


def test_the_agent_and_verifier_timeouts_apply(tmp_path, sandbox):
    root = form_task(tmp_path / "t", "sleep 30", toml="[agent]\ntimeout_sec = 1.0\n[verifier]\ntimeout_sec = 2.0\n")
    env = TerminalEnv(path=root, max_turns=10)
    try:
        env.reset()
        observation, reward, terminated, truncated, info = env.step("<bash>echo 42 > answer.txt; sleep 5</bash>")
        assert truncated and not terminated and "time limit (1 s of commands)" in observation
        assert reward == 0.0 and "reward.txt" in info["test_notes"][0]  # the tests were stopped before writing it
    finally:
        env.close()


# --- rewards ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("written, expected", [
    ("reward.txt\n1\n", (1.0, {"reward": 1.0}, "")),
    ("reward.txt\n0.25", (0.25, {"reward": 0.25}, "")),
    ('reward.json\n{"reward": 0.5, "style": 1}', (0.5, {"reward": 0.5, "style": 1.0}, "")),
    ('reward.json\n{"tests": 1, "lint": 0}', (0.5, {"tests": 1.0, "lint": 0.0}, "")),
    ('reward.json\n{"accuracy": 0.75}', (0.75, {"accuracy": 0.75}, "")),
    ("reward.json\n0.5", (0.5, {"reward": 0.5}, "")),
])
def test_rewards_are_read_as_harbor_reads_them(written, expected):
    assert read_reward(written) == expected


@pytest.mark.parametrize("written", ["", "reward.txt\nyes", 'reward.json\n{"reward": "high"}', "reward.json\n{}",
                                     'reward.json\n{"reward": NaN}', "reward.txt\n1e999", 'reward.json\n{"ok": true}'])
def test_unreadable_rewards_are_0_and_say_why(written):
    score, rewards, problem = read_reward(written)
    assert (score, rewards) == (0.0, {}) and problem.startswith("GEM: ") and "the reward is 0" in problem


def test_reward_json_comes_before_reward_txt_and_names_its_rewards(tmp_path, sandbox):
    root = form_task(tmp_path / "t", "true")
    (root / "tests" / "test.sh").write_text(textwrap.dedent("""\
        #!/bin/bash
        echo 0 > /logs/verifier/reward.txt
        if [ -f /app/answer.txt ]; then r=1; else r=0; fi
        echo "{\\"reward\\": $r, \\"solution_accessed\\": 0}" > /logs/verifier/reward.json
    """))
    nothing, solution, why, _ = scores(TerminalEnv(path=root, max_turns=3))
    assert (nothing, solution) == (0.0, 1.0), why
    env = TerminalEnv(path=root, max_turns=3)
    try:
        env.reset()
        env.run_solution()
        assert env.step("<finish>")[4]["rewards"] == {"reward": 1.0, "solution_accessed": 0.0}
    finally:
        env.close()


# --- compose files --------------------------------------------------------------------------------

def test_a_compose_file_of_one_service_runs_and_of_several_is_refused_by_name(tmp_path):
    one = form_task(tmp_path / "one", "true")
    (one / "environment" / "docker-compose.yaml").write_text("services:\n  main:\n    build: {context: .}\n")
    assert load_task(one).name == "one"
    several = form_task(tmp_path / "several", "true")
    (several / "environment" / "docker-compose.yaml").write_text(
        "services:\n  main:\n    build: {context: .}\n  db:\n    image: postgres:16\n")
    for backend in ("auto", "bubblewrap", "podman"):
        with pytest.raises(TaskUnsupportedError, match=r"docker-compose.yaml describes 2 services \(main, db\)"):
            load_task(several, backend=backend)


def test_the_ctrf_report_is_written_where_the_script_asks(tmp_path, sandbox):
    root = form_task(tmp_path / "t", FORMS["uvx --ctrf"])
    env = TerminalEnv(path=root, max_turns=3)
    try:
        env.reset()
        env.run_solution()
        assert env.step("<finish>")[1] == 1.0
        report = env.sandbox.execute("cat /logs/verifier/ctrf.json", timeout=10).output
        assert json.loads(report)["results"]["summary"]["passed"] == 2
    finally:
        env.close()


# --- the converter and the measurement script ------------------------------------------------------

def test_the_converter_writes_terminal_bench_tasks_in_harbor_layout_that_grade(tmp_path, sandbox):
    from tests.terminal.public import PUBLIC

    script = [sys.executable, str(Path(__file__).resolve().parents[2] / "scripts" / "harbor_tasks.py")]
    converted = subprocess.run([*script, "convert", str(PUBLIC / "evoeval-0"), str(PUBLIC / "LICENSE"),
                                "--into", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert converted.returncode == 2 and "LICENSE is not a terminal-bench task folder" in converted.stderr
    converted = subprocess.run([*script, "convert", str(PUBLIC / "evoeval-0"), "--into", str(tmp_path)],
                               capture_output=True, text=True, timeout=120)
    assert converted.returncode == 0, converted.stderr
    task = load_task(tmp_path / "evoeval-0")
    assert (task.layout, task.test_python, task.test_tools) == ("harbor", "3.13", TEST_TOOLS)
    assert (task.memory_mb, task.test_timeout) == (2048, 120.0)
    measured = subprocess.run([*script, "measure", str(tmp_path), "--backend", "bubblewrap"], capture_output=True,
                              text=True, timeout=300)
    assert measured.stdout.strip() == "1 tasks: 1 loaded, 1 solution 1.0, 1 nothing 0.0", measured.stderr


@pytest.mark.parametrize("backend", ["bubblewrap", "podman"])
def test_the_agent_cannot_change_the_test_tools(backend, tmp_path, request):
    images = request.getfixturevalue("podman") if backend == "podman" else request.getfixturevalue("sandbox")
    root = form_task(tmp_path / "t", FORMS["python3 -m pytest -rA"])
    env = TerminalEnv(path=root, backend=backend, max_turns=5, **({"base_images": images} if images else {}))
    try:
        env.reset()
        kit = env.step("<bash>ls /.gem/kits | head -1</bash>")[0].splitlines()[0]
        tampered = env.step(f"<bash>echo 'raise SystemExit' > /.gem/kits/{kit}/pytest/__init__.py; "
                            "touch /.gem/kits/planted; echo code=$?</bash>")[0]
        assert "Read-only file system" in tampered and "code=1" in tampered, tampered
        env.step("<bash>echo 42 > /app/answer.txt</bash>")
        assert env.step("<finish>")[1] == 1.0
    finally:
        env.close()
