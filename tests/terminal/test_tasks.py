"""Loading users' terminal-bench and Harbor task folders, and refusing what the sandbox cannot run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gem_core import make
from gem_core.errors import GemError
from gem_envs.terminal.tasks import HARBOR, TERMINAL_BENCH, TaskUnsupportedError, load_task, load_tasks


def write(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(content).lstrip("\n"))
    return root


def terminal_bench_task(root: Path, dockerfile: str | None = None, run_tests: str | None = None) -> Path:
    """A task in terminal-bench's layout whose tests print pytest's summary lines."""
    return write(root, {
        "task.yaml": """
            instruction: |-
              Write the greeting from $GREETING, then the contents of data.txt, to /work/out.txt.
            difficulty: easy
            category: file-operations
            tags: [echo]
            max_test_timeout_sec: 30
            test_weights: {test_out: 3, test_data_kept: 1}
        """,
        "Dockerfile": dockerfile or """
            FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest
            WORKDIR /work
            COPY data.txt /work/
            COPY extra/ ./extra/
            ENV GREETING=hi
            RUN echo seeded > seed.txt && chmod 600 seed.txt
            CMD ["bash"]
        """,
        "docker-compose.yaml": "services:\n  client:\n    build: {context: .}\n",
        "data.txt": "payload\n",
        "extra/more.txt": "more\n",
        "run-tests.sh": run_tests or """
            #!/bin/bash
            verdict() { if eval "$2"; then echo "PASSED tests/test_outputs.py::$1"; else echo "FAILED tests/test_outputs.py::$1"; fi; }
            verdict test_out '[ "$(cat /work/out.txt 2>/dev/null)" = "$(printf "hi\\npayload")" ]'
            verdict test_data_kept '[ -f /work/out.txt ] && [ -f /work/data.txt ] && [ -f $TEST_DIR/helper.txt ]'
        """,
        "tests/helper.txt": "a file the tests bring\n",
        "solution.sh": "#!/bin/bash\n{ echo \"$GREETING\"; cat data.txt; } > /work/out.txt\n",
    })


def harbor_task(root: Path, dockerfile: str | None = None, toml: str = "") -> Path:
    return write(root, {
        "task.toml": toml or """
            version = "1.0"
            [metadata]
            difficulty = "medium"
            category = "text"
            [verifier]
            timeout_sec = 30.0
            [agent]
            timeout_sec = 120.0
        """,
        "instruction.md": "Reverse the lines of /app/in.txt into /app/out.txt.\n",
        "environment/Dockerfile": dockerfile or "FROM python:3.12-slim\nWORKDIR /app\nCOPY in.txt /app/in.txt\n",
        "environment/in.txt": "a\nb\nc\n",
        "tests/test.sh": """
            #!/bin/bash
            if [ "$(cat /app/out.txt 2>/dev/null)" = "$(printf 'c\\nb\\na')" ]; then echo 1 > /logs/verifier/reward.txt
            else echo 0 > /logs/verifier/reward.txt; fi
        """,
        "solution/solve.sh": "#!/bin/bash\ntac /app/in.txt > /app/out.txt\n",
    })


def play(env, commands: list[str]) -> tuple[float, dict]:
    for command in commands:
        env.step(f"<bash>{command}</bash>")
    _, reward, terminated, _, info = env.step("<finish>")
    assert terminated
    return reward, info


def test_a_terminal_bench_task_loads_and_grades(tmp_path, sandbox):
    task = load_task(terminal_bench_task(tmp_path / "greet"))
    assert (task.layout, task.workdir, task.difficulty, task.env) == (TERMINAL_BENCH, "/work", "easy", (("GREETING", "hi"),))
    env = make("terminal:Tasks-v0", path=str(tmp_path))
    try:
        observation, info = env.reset(seed=0)
        assert info["task"] == "greet" and "Write the greeting" in observation and "/work" in observation
        listing = env.step("<bash>pwd; ls -A; stat -c %a seed.txt; cat extra/more.txt</bash>")[0]
        assert listing.splitlines()[:6] == ["/work", "data.txt", "extra", "seed.txt", "600", "more"]
        assert play(env, []) == (0.0, {"score": 0.0, "passed": 0, "failed": 2, "errored": 0,
                                       "tests": {"test_out": "failed", "test_data_kept": "failed"}})
        env.reset(seed=0)
        reward, info = play(env, ['echo "$GREETING" > out.txt'])  # the lighter test passes, the heavier not
        assert reward == pytest.approx(0.25) and info["tests"]["test_data_kept"] == "passed"
        env.reset(seed=0)
        assert env.run_solution().exit_code == 0
        assert play(env, [])[0] == 1.0
    finally:
        env.close()


def test_a_harbor_task_loads_and_grades(tmp_path, sandbox):
    task = load_task(harbor_task(tmp_path / "reverse"))
    assert (task.layout, task.difficulty, task.test_timeout, task.agent_timeout) == (HARBOR, "medium", 30.0, 120.0)
    env = make("terminal:Tasks-v0", path=str(tmp_path / "reverse"))
    try:
        env.reset()
        assert env.step("<bash>ls -A /app</bash>")[0].startswith("in.txt\n")
        assert play(env, [])[0] == 0.0
        env.reset()
        assert play(env, ["tac in.txt > out.txt"])[0] == 1.0
    finally:
        env.close()


@pytest.mark.parametrize("dockerfile, needs", [
    ("FROM debian:bookworm\nRUN apt-get update && apt-get install -y jq\n", "apt-get"),
    ("FROM python:3.12\nRUN pip install numpy\n", "pip"),
    ("FROM ubuntu:24.04\nRUN curl -LO https://example.com/x.tgz\n", "curl"),
    ("FROM node:20\n", "node:20"),
    ("FROM ubuntu:24.04\nADD https://example.com/data.csv /app/\n", "network"),
    ("FROM ubuntu:24.04\nWORKDIR /usr/src\n", "system folder"),
    ("FROM ubuntu:24.04\nONBUILD RUN true\n", "ONBUILD"),
])
def test_tasks_needing_more_than_the_base_are_refused_by_name(tmp_path, dockerfile, needs):
    with pytest.raises(TaskUnsupportedError, match=needs):
        load_task(terminal_bench_task(tmp_path / "t", dockerfile=dockerfile))


def test_tests_that_report_nothing_say_why(tmp_path, sandbox):
    root = terminal_bench_task(tmp_path / "t", run_tests="#!/bin/bash\nno-such-test-runner $TEST_DIR\n")
    env = make("terminal:Tasks-v0", path=str(root))
    try:
        env.reset()
        _, reward, _, _, info = env.step("<finish>")
        assert reward == 0.0 and info["tests"] == {"bash /tests/run-tests.sh": "errored"}
        assert "no-such-test-runner: command not found" in info["test_output"]
    finally:
        env.close()


def test_installing_only_the_harness_tools_is_skipped(tmp_path):
    dockerfile = ("FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\n"
                  "RUN apt-get update && apt-get install -y tmux asciinema && rm -rf /var/lib/apt/lists/*\n"
                  "WORKDIR /app\nRUN apt-get update; apt-get install -y --no-install-recommends tmux; mkdir -p logs\n")
    assert load_task(terminal_bench_task(tmp_path / "t", dockerfile=dockerfile)).setup == ("mkdir -p logs",)
    with pytest.raises(TaskUnsupportedError, match="apt-get install -y tmux jq"):
        load_task(terminal_bench_task(tmp_path / "u", dockerfile="FROM debian\nRUN apt-get install -y tmux jq\n"))


def test_tests_that_download_more_than_the_test_tools_are_refused_naming_the_line(tmp_path):
    run_tests = "#!/bin/bash\ncurl -LsSf https://astral.sh/uv/install.sh | sh\nuv add pytest requests\nuv run pytest\n"
    with pytest.raises(TaskUnsupportedError, match=r"`uv add pytest requests` \(line 3\), which needs `requests` from "
                                                   r"the package index \(GEM supplies pytest and requirements pinned"):
        load_task(terminal_bench_task(tmp_path / "t", run_tests=run_tests))
    with pytest.raises(TaskUnsupportedError, match=r"curl -LO https://example.com/d.csv` \(line 2\)"):
        load_task(terminal_bench_task(tmp_path / "u", run_tests="#!/bin/bash\ncurl -LO https://example.com/d.csv\n"))


def test_several_compose_services_are_refused(tmp_path):
    root = terminal_bench_task(tmp_path / "t")
    (root / "docker-compose.yaml").write_text("services:\n  client: {}\n  db: {image: postgres}\n")
    with pytest.raises(TaskUnsupportedError, match="2 services"):
        load_task(root)


def test_a_folder_skips_unsupported_tasks_with_a_warning(tmp_path):
    terminal_bench_task(tmp_path / "good")
    terminal_bench_task(tmp_path / "needs-jq", dockerfile="FROM debian\nRUN apt-get install -y jq\n")
    harbor_task(tmp_path / "prebuilt", toml='[environment]\ndocker_image = "org/custom:1"\n')
    (tmp_path / "not-a-task").mkdir()
    with pytest.warns(UserWarning) as caught:
        tasks = load_tasks(tmp_path)
    assert [t.name for t in tasks] == ["good"]
    messages = sorted(str(w.message) for w in caught)
    assert "'needs-jq'" in messages[0] and "apt-get" in messages[0]
    assert "'prebuilt'" in messages[1] and "org/custom:1" in messages[1]


def test_clear_errors_for_bad_folders(tmp_path):
    with pytest.raises(GemError, match="pass path="):
        make("terminal:Tasks-v0")
    with pytest.raises(GemError, match="No folder of terminal tasks"):
        load_tasks(tmp_path / "missing")
    with pytest.raises(GemError, match="No usable terminal task"):
        load_tasks(tmp_path)
    write(tmp_path / "broken", {"task.yaml": "instruction: [unclosed\n"})
    with pytest.raises(GemError, match="not valid YAML"):
        load_task(tmp_path / "broken")
    write(tmp_path / "no-tests", {"task.yaml": "instruction: do it\n"})
    with pytest.raises(GemError, match="lacks run-tests.sh"):
        load_task(tmp_path / "no-tests")


def test_the_standard_pytest_boilerplate_is_run_offline_keeping_line_numbers():
    from gem_envs.terminal.test_script import offline_script

    script = ("#!/bin/bash\napt-get update\napt-get update && apt-get install -y curl\n"
              "curl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh\nsource $HOME/.local/bin/env\nuv init\n"
              "uv add pytest==8.4.1\npip3 install --no-cache-dir pytest 2>/dev/null || pip install pytest\n"
              "uv run pytest $TEST_DIR/test_outputs.py -rA\nuvx -p 3.13 -w pytest==8.4.1 pytest /tests -rA # run\n")
    offline = offline_script(script)
    lines = offline.text.splitlines()
    assert offline.network == "" and len(lines) == len(script.splitlines())
    assert all(line.startswith("true  # ") for line in lines[1:8])
    assert lines[8:] == ["pytest $TEST_DIR/test_outputs.py -rA", "pytest /tests -rA # run"]  # the kit's launcher
    assert (offline.tools, offline.python) == (("pytest==8.4.1",), "3.13")
    for line, tool in [("uvx ruff check /app", "uvx"), ("apt-get install -y curl jq", "apt-get"),
                       ("pip install pytest numpy", "`numpy` from the package index (GEM supplies pytest and "
                                                    "requirements pinned with ==)"),
                       ("uvx -w pytest-json-ctrf pytest /tests", "`pytest-json-ctrf` from the package index (GEM "
                                                                 "supplies pytest and requirements pinned with ==)"),
                       ("uv add pytest || curl -O https://x", "uv")]:
        assert offline_script(f"#!/bin/bash\n{line}\n").network.endswith(f"(line 2), which needs {tool} and the network.")


def test_terminal_bench_2s_runner_over_several_lines_runs_on_the_supplied_tools():
    from gem_envs.terminal.test_script import offline_script

    script = ("#!/bin/bash\nuvx \\\n  -p 3.13 \\\n  -w pytest==8.4.1 \\\n  -w pytest-json-ctrf==0.3.5 \\\n"
              "  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA\n"
              "if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
              "uv pip install --system pytest-timeout==2.4.0\nuv run --with pytest-xdist==3.8.0 python -m pytest -q\n"
              "uvx pytest@8.3.5 --version\n")
    offline = offline_script(script, "test.sh")
    lines = offline.text.splitlines()
    assert offline.network == "" and len(lines) == len(script.splitlines())
    assert lines[1:6] == ["pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA", "", "", "", ""]
    assert lines[6] == script.splitlines()[6]  # the script's own reward logic runs as written
    assert lines[7].startswith("true  # uv pip install --system pytest-timeout==2.4.0")
    assert lines[8:] == ["pytest -q", "pytest --version"]
    assert offline.tools == ("pytest==8.4.1", "pytest-json-ctrf==0.3.5", "pytest-timeout==2.4.0",
                             "pytest-xdist==3.8.0")  # one pytest: the first pinned
    assert offline.python == "3.13"
    assert offline_script("#!/bin/bash\necho no tests here\n").tools == ()
