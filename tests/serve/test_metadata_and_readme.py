"""What GEM has beyond OpenEnv's fields (images, multi-agent views, info) crosses the wire, and the
serve lines of the Serving page (docs/serving.md) run as written (on a free port instead of 8000)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import gem_core
from gem_core.remote.server import EnvServer
from tests.helpers import REPO
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


def test_the_documented_serve_lines_run_as_written():
    section = (REPO / "docs" / "serving.md").read_text()
    command = re.search(r"```bash\n(gem serve .*?)\n```", section).group(1)
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert command.startswith("gem serve ") and "--port 8000" in command and len(blocks) == 2
    env_id = command.split()[2]
    outputs = []
    with gem_serve(env_id) as (url, _):
        for block in blocks:
            code = block.replace("http://127.0.0.1:8000", url)
            result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
            assert result.returncode == 0, result.stderr
            outputs.append(result.stdout)
    first_observation = gem_core.make(env_id).reset(seed=0)[0]
    assert outputs[0].startswith(first_observation) and "you guessed 5" in outputs[0]
