"""verl's own launcher (``python -m verl.trainer.main_ppo``) on the config ``gem verl config``
writes, on a Ray cluster the size of a one-GPU workstation: exactly the CPUs the config says it
needs, fewer than the 9 that verl's default TransferQueue alone holds.

The GPU is a Ray resource declared on this CPU machine, so verl places its workers as it would on
the workstation; the launch then stops where the workers load the model onto the device, which
needs CUDA. What the test shows is that it gets there: TransferQueue and verl's worker bundles fit,
and nothing waits forever (with verl's default of 8 storage units the launch never gets past
TransferQueue on this cluster, and the test would fail on its timeout).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gem_adapters.verl.config import RunSettings, cluster_cpus, storage_units, write_run

LAUNCH_TIMEOUT = 600  # seconds; the launch takes about two minutes on a busy two-core machine


def launch(command: list[str], folder: Path, timeout: float) -> tuple[int, str]:
    """Run ``command`` in ``folder`` (Hydra writes its outputs there), in a session of its own; on
    timeout, stop it and everything it started (the local Ray cluster included) and fail."""
    process = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"verl's launch was still waiting after {timeout} s:\n{output[-5000:]}")
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # whatever Ray left behind
        except ProcessLookupError:
            pass
    return process.returncode, output


@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU the launch would go on to train")
def test_the_launch_gets_past_transfer_queue_on_a_one_gpu_workstation(tmp_path, tiny_model, gem_estimators):
    settings = RunSettings(env_ids=("game:GuessTheNumber-v0-easy",), model=str(tiny_model), out_dir=tmp_path / "run",
                           train_size=8, val_size=2, batch_size=4)
    written = write_run(settings)
    cpus = cluster_cpus(settings)
    assert storage_units(settings) == 1 and cpus < 9
    returncode, output = launch(
        [sys.executable, "-m", "verl.trainer.main_ppo", "--config-path", str(written.config.parent),
         "--config-name", written.config.stem,
         "+ray_kwargs.ray_init.address=local", f"ray_kwargs.ray_init.num_cpus={cpus}",
         f"+ray_kwargs.ray_init.num_gpus={settings.total_gpus}", "+ray_kwargs.ray_init.include_dashboard=false"],
        folder=tmp_path, timeout=LAUNCH_TIMEOUT)
    assert "'num_data_storage_units': 1" in output  # the config verl prints before starting TransferQueue
    # past TransferQueue and the placement of verl's workers: they fail loading the model without CUDA
    assert returncode != 0 and "actor_rollout_init_model" in output, output[-5000:]
