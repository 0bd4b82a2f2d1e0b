"""`gem eval` on a terminal-bench task in a container, through an OpenAI-compatible endpoint, with
its episodes written as Harbor trajectories.

The endpoint is a scripted model on localhost (tests/openai_servers.py's stub): its
first reply runs the task's reference solution, its second finishes. `gem eval` talks to it with
its real client, and the task runs in podman.
"""

from __future__ import annotations

import json

from tests.helpers import gem_command
from tests.openai_servers import StubChatServer
from tests.terminal.public import PUBLIC

TASK = PUBLIC / "evoeval-0"


def scripted(first: str) -> StubChatServer:
    """A server that answers the first turn with ``first``, every later turn with ``<finish>``."""
    return StubChatServer(lambda body: first if len(body["messages"]) == 1 else "<finish>", model="scripted")


def test_gem_eval_scores_a_terminal_bench_task_in_podman_through_an_endpoint(podman, tmp_path):
    solution = (TASK / "solution.sh").read_text()
    out = tmp_path / "eval"
    with scripted(f"<bash>{solution}</bash>") as server:
        result = gem_command(
            "eval", "--base-url", server.base_url, "--model", "scripted", "--env", "terminal:Tasks-v0",
            "--env-arg", f"path={TASK}", "--env-arg", "backend=podman", "--env-arg", f"base_images={json.dumps(podman)}",
            "--episodes", "2", "--concurrency", "2", "--max-new-tokens", "64", "--output-dir", str(out),
            "--no-progress", "--trajectories", env={"OPENAI_API_KEY": "unused"},
        )
    assert result.returncode == 0, result.stderr
    report = json.loads((out / "report.json").read_text())["environments"][0]
    assert (report["episodes"], report["success_rate"], report["mean_return"]) == (2, 1.0, 1.0), report
    paths = sorted((out / "trajectories").iterdir())
    assert [p.name for p in paths] == ["terminal_Tasks-v0-0000.json", "terminal_Tasks-v0-0001.json"]
    for path in paths:  # Harbor's trajectory format: the task, the agent's command and what it showed, the verdict
        trajectory = json.loads(path.read_text())
        assert (trajectory["schema_version"], trajectory["agent"]["model_name"]) == ("ATIF-v1.4", "scripted")
        task, command, finish = trajectory["steps"]
        assert task["source"] == "user" and "Write it to solution.py" in task["message"]
        assert command["message"] == f"<bash>{solution}</bash>" and "[exit code 0]" in command["observation"]["results"][0]["content"]
        assert finish["message"] == "<finish>" and finish["extra"]["reward"] == 1.0
        assert "Tests: 2 of 2 passed" in finish["observation"]["results"][0]["content"]
    bad = gem_command("eval", "--env", "terminal:Tasks-v0", "--env-arg", "path", "--model", "x", "--base-url",
                      server.base_url)
    assert bad.returncode != 0 and "'path' is not KEY=VALUE" in bad.stderr
