"""``python -m gem_adapters.rl2.train``: RL2's own trainer module run as ``__main__`` (its Hydra
``main`` reading RL2's ppo.yaml, ``PPOTrainer.__init__`` loading the datasets with RL2's RLDataset
and dataloader, RL2's ``train`` loop) with GEM's estimator in place of ``compute_advantages``.

The overrides are the ones ``gem rl2 config`` prints. Only what needs a GPU is replaced, in the
modules RL2's trainer imports it from: the FSDP actor (here it records what it is asked to train
on), the sglang rollout (here it returns the conformance batch packed by RL2), NCCL set-up (a
one-process gloo group) and saving the model; wandb is disabled. Stood in for, at import only:
sglang, sglang_router, flash_attn, ring_flash_attn."""

from __future__ import annotations

import pytest
import torch

from gem_adapters.common.settings import RunSettings
from gem_adapters.rl2 import train
from gem_adapters.rl2.advantages import uninstall
from gem_adapters.rl2.config import write_run
from tests.adapters import conformance as batch
from tests.adapters.rl2.conftest import EASY
from tests.adapters.rl2.test_advantages import PROMPT, packed


@pytest.fixture
def rl2_main(monkeypatch, tmp_path, gloo):
    """Runs ``train.main(argv)``; returns its exit code and what RL2's trainer did."""
    import RL2.utils.algorithms
    import RL2.utils.checkpointing
    import RL2.utils.comm
    import RL2.workers

    seen = {}

    class Actor:
        def __init__(self, config, train):
            self.config, self.tokenizer = config, None
            self.optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=config.lr)

        def update(self, tensor_dict, step):
            seen.setdefault("advantages", []).append(tensor_dict["advantages"])
            seen["action_mask"] = tensor_dict["action_mask"].bool()

    class Rollout:
        def __init__(self, config):
            seen["rollout_config"] = config

        def __call__(self, data_list, train, step):
            seen.setdefault("rows", []).append(data_list)
            seen["estimator"] = getattr(RL2.utils.algorithms.compute_advantages, "gem_estimator", None)
            return packed(batch.EPISODES, batch.LAYOUT)

        def update(self, actor, step):
            pass

    monkeypatch.chdir(tmp_path)  # Hydra's run folder
    monkeypatch.setattr(RL2.workers, "Actor", Actor)
    monkeypatch.setattr(RL2.workers, "Rollout", Rollout)
    monkeypatch.setattr(RL2.utils.comm, "initialize_global_process_group", lambda: None)
    monkeypatch.setattr(RL2.utils.checkpointing, "save_model", lambda trainer, actor: seen.setdefault("saved", True))
    monkeypatch.setattr(torch.distributed, "destroy_process_group", lambda: None)

    def run(argv):
        seen.clear()
        try:
            code = train.main(argv)
        finally:
            uninstall()
        return code, seen

    return run


def printed_overrides(tmp_path, **fields):
    settings = RunSettings(env_ids=(EASY,), model="HuggingFaceTB/SmolLM2-135M-Instruct", out_dir=tmp_path / "run",
                           train_size=4, val_size=2, batch_size=2, **fields)
    argv = write_run(settings).argv
    return list(argv[argv.index(train.__name__) + 1:])


def test_rl2s_trainer_trains_on_gem_rebn_advantages(rl2_main, tmp_path):
    overrides = printed_overrides(tmp_path)
    assert overrides[-1] == "gem.estimator=rebn"
    code, seen = rl2_main(overrides)
    assert code == 0 and seen["saved"]
    assert seen["estimator"] == "rebn"  # rebound before RL2's trainer ran
    assert seen["rollout_config"].env_path == str(tmp_path / "run" / "gem_env.py")
    # RL2's dataloader: two steps of two rows from train.jsonl, each row reaching reset by extra_info
    assert [[row["extra_info"]["env_id"] for row in rows] for rows in seen["rows"]] == [[EASY, EASY]] * 2
    assert all("prompt" not in row for rows in seen["rows"] for row in rows)
    for advantages in seen["advantages"]:
        batch.assert_per_token(advantages[:, PROMPT - 1:], batch.REBN)


def test_without_gem_estimator_rl2_runs_as_it_is(rl2_main, tmp_path):
    overrides = printed_overrides(tmp_path)[:-1] + ["adv.global_norm=true"]
    code, seen = rl2_main(overrides)
    assert code == 0 and seen["estimator"] is None
    advantages, mask = seen["advantages"][0], seen["action_mask"]
    per_episode = [advantages[row][mask[row]].unique().tolist() for row in range(len(mask))]
    assert all(len(values) == 1 for values in per_episode)  # RL2's own: one value per episode
    assert len({values[0] for values in per_episode}) > 1


@pytest.mark.parametrize(("argv", "message"), [
    (["gem.estimator=rebnn"], "rebn"),
    (["gem.estimator="], "needs a value"),
    (["gem.gamma=0.5"], "the only GEM option is gem.estimator"),
    (["adv.estimator=gae", "gem.estimator=rebn"], "drop adv.estimator"),
])
def test_bad_overrides_fail_before_rl2_starts(rl2_main, argv, message, capsys):
    code, seen = rl2_main(argv)
    assert code == 2 and not seen
    assert message in capsys.readouterr().err
