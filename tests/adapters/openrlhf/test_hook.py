"""GEM's estimator reaches the process where OpenRLHF computes advantages: a real local Ray cluster
started with the entry point's runtime environment, and an actor created the way OpenRLHF creates
its PPOTrainer (a ``@ray.remote`` class, ``.remote()`` without options). Inside it, importing
OpenRLHF's experience maker installs the estimator through the setup hook, and the conformance
batch gets gem_core's ReBN. Stood in for, at import only: flash_attn and vllm (standins.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

REPO = Path(__file__).resolve().parents[3]


@ray.remote
class TrainerLike:
    """Where OpenRLHF's PPOTrainer runs: a Ray worker process started with the job's runtime env."""

    def probe(self) -> dict:
        import tests
        from gem_adapters.openrlhf import ESTIMATOR_VARIABLE
        from gem_adapters.openrlhf.advantages import installed
        from tests.adapters.openrlhf import standins

        standins.install()
        before = "openrlhf.trainer.ppo_utils.experience_maker" in __import__("sys").modules
        from tests.adapters import conformance as batch
        from tests.adapters.openrlhf.test_advantages import experiences_for, rows

        maker = SimpleMaker()
        result = maker.compute_advantages_and_returns(experiences_for(maker))
        batch.assert_per_token(rows(result, "advantages"), batch.REBN)
        return {"tests": tests.__file__, "estimator": installed(), "variable": os.environ.get(ESTIMATOR_VARIABLE),
                "imported_before": before, "pid": os.getpid()}


def SimpleMaker():  # noqa: N802 - builds OpenRLHF's RemoteExperienceMaker with the arguments it reads
    from types import SimpleNamespace

    from openrlhf.trainer.ppo_utils.experience_maker import RemoteExperienceMaker
    from openrlhf.trainer.ppo_utils.kl_controller import FixedKLController

    from tests.adapters import conformance as batch

    args = SimpleNamespace(
        reward=SimpleNamespace(clip_range=(-10, 10)),
        rollout=SimpleNamespace(n_samples_per_prompt=1, micro_batch_size=2),
        train=SimpleNamespace(dynamic_batch_enable=False),
        algo=SimpleNamespace(advantage=SimpleNamespace(gamma=batch.GAMMA, estimator="reinforce")),
    )
    return RemoteExperienceMaker(None, None, None, None, FixedKLController(0.0), SimpleNamespace(args=args),
                                 tokenizer=SimpleNamespace(pad_token_id=0))


def test_the_setup_hook_installs_the_estimator_inside_a_ray_actor():
    from gem_adapters.openrlhf.train import runtime_env

    env = runtime_env("rebn")
    env["env_vars"]["PYTHONPATH"] = str(REPO)  # the actor imports this test module (and its tests package)
    ray.init(address="local", num_cpus=2, include_dashboard=False, runtime_env=env, log_to_driver=False)
    try:
        probe = ray.get(TrainerLike.remote().probe.remote(), timeout=240)
    finally:
        ray.shutdown()
    assert probe["pid"] != os.getpid()
    assert probe["estimator"] == "rebn" and probe["variable"] == "rebn"
    assert not probe["imported_before"]  # installed when OpenRLHF's module was imported, by the hook
    assert Path(probe["tests"]).resolve() == REPO / "tests" / "__init__.py"
