"""What GEM has beyond OpenEnv's fields (images, multi-agent views, info) crosses the wire, and the
lines of the Serving page (docs/serving.md) run as written (on free ports instead of 8000 and 8001)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import gem_core
from gem_serve.server import EnvServer
from tests.helpers import REPO
from tests.serve.openenv_peer import openenv_python
from tests.serve.servers import gem_serve, in_thread

pytest.importorskip("PIL", reason="the vision extra (Pillow) is installed by scripts/install_test_deps.sh")


def served(env_id):
    return EnvServer(lambda: gem_core.make(env_id), env_id, max_sessions=2)


def test_images_come_back_as_the_same_pictures():
    env_id = "vision:DigitArithmetic-v0"
    with in_thread(served(env_id).app()) as url:
        remote, local = gem_core.make(f"remote:{url}"), gem_core.make(env_id)
        try:
            (observation, info), (expected, expected_info) = remote.reset(seed=2), local.reset(seed=2)
            assert observation == expected and "<image>" in observation
            assert len(info["images"]) == len(expected_info["images"]) >= 1
            for got, want in zip(info["images"], expected_info["images"]):
                assert got.size == want.size and got.convert("RGB").tobytes() == want.convert("RGB").tobytes()
            assert {k: v for k, v in info.items() if k != "images"} == \
                   {k: v for k, v in expected_info.items() if k != "images"}
        finally:
            remote.close()
            local.close()


def test_a_multi_agent_view_carries_its_seats_and_a_raw_multi_agent_env_is_refused():
    env_id = "multiagent:TicTacToe-v0-vs-bot"
    with in_thread(served(env_id).app()) as url:
        remote, local = gem_core.make(f"remote:{url}"), gem_core.make(env_id)
        try:
            assert remote.reset(seed=4) == local.reset(seed=4)
            for _ in range(9):
                action = local.sample_random_action()
                step = remote.step(action)
                assert step == local.step(action)
                if step[2] or step[3]:
                    break
            assert "seat" in step[4]
        finally:
            remote.close()
            local.close()
    refused = subprocess.run([sys.executable, "-m", "gem_core.cli", "serve", "multiagent:TicTacToe-v0", "--port", "0"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "multi-agent environment" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_the_documented_serve_lines_run_as_written(openenv, tmp_path):
    """The Serving page's commands and Python blocks, each against the server its port names (with
    ``--ors`` where a line for that port has it); the blocks that use OpenEnv's clients run in
    OpenEnv's environment, and the one that plays a verifiers environment is left to the verifiers
    stage (tests/protocols/verifiers plays the same)."""
    page = (REPO / "docs" / "serving.md").read_text()
    bash = re.findall(r"```bash\n(.*?)```", page, re.S)
    serve_lines = [block.strip() for block in bash if block.startswith("gem serve ") and "\n" not in block.strip()]
    servers = {re.search(r"--port (\d+)", line).group(1): line.split()[2] for line in serve_lines}
    assert servers == {"8000": "game:GuessTheNumber-v0-easy", "8001": "math:Arithmetic-v0+Tool"}
    over_ors = {re.search(r"--port (\d+)", line).group(1) for line in serve_lines if "--ors" in line.split()}
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert len(blocks) == 6
    blocks = [block for block in blocks if "in the verifiers environment" not in block]
    outputs = []
    with gem_serve(servers["8000"], *(["--ors"] if "8000" in over_ors else [])) as (game, _), \
            gem_serve(servers["8001"], *(["--ors"] if "8001" in over_ors else [])) as (tools, _):
        urls = {"8000": game, "8001": tools}
        for block in blocks:
            port = re.search(r"http://127.0.0.1:(\d+)", block).group(1)
            python = openenv_python() if "from openenv" in block else sys.executable
            code = block.replace(f"http://127.0.0.1:{port}", urls[port])
            result = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
            assert result.returncode == 0, result.stderr
            outputs.append(result.stdout)
        [checks] = [block for block in bash if "openenv validate" in block]
        for line in checks.strip().splitlines():
            line = line.split("#")[0].split()
            if line[:2] == ["gem", "serve"]:
                run = subprocess.run([sys.executable, "-m", "gem_core.cli", *line[1:]], capture_output=True,
                                     text=True, timeout=300, cwd=tmp_path)
            else:
                run = openenv.validate(*[urls["8000"] if word == "http://127.0.0.1:8000" else
                                         str(tmp_path / word) if word.startswith("./") else word for word in line[2:]])
            assert run.returncode == 0, run.stdout + run.stderr
    first_observation = gem_core.make(servers["8000"]).reset(seed=0)[0]
    assert outputs[0].startswith(first_observation) and "you guessed 5" in outputs[0]
    assert outputs[1].startswith(gem_core.make(servers["8001"]).reset(seed=0)[0])
    assert "['step', 'python']" in outputs[1] and "Code execution result: 42" in outputs[1]
    [ors_client] = [out for block, out in zip(blocks, outputs) if "from ors.client" in block]
    assert "['train', 'test'] 1000 ['step']" in ors_client and first_observation in ors_client
    assert "you guessed 5" in ors_client
    reward, done = outputs[1].split()[-2:]
    assert float(reward) in (0.0, 1.0) and done == "True"
