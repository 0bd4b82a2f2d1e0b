"""Checks of the ROLL adapter that need ROLL itself, which CI cannot install (it is not on the
package index). Run it by hand in a virtual environment holding a ROLL checkout:

    pip install torch --index-url https://download.pytorch.org/whl/cpu
    pip install --no-deps -e $ROLL_SOURCE
    pip install "ray[default]==2.48.0" tensordict codetiming dacite "hydra-core>=1.3" "omegaconf>=2.3" \
        transformers "numpy<2" "pyarrow<18" gem-llm==0.0.4 TransferQueue==0.1.6 peft openai imageio \
        "datasets==3.1.0" more_itertools httpx pybase64 opentelemetry-api opentelemetry-sdk \
        opentelemetry-exporter-otlp
    pip install -e .            # this project
    ROLL_SOURCE=/path/to/ROLL python scripts/roll_by_hand.py

``ROLL_TOKENIZER`` names a local Hugging Face tokenizer folder with a chat template (default: the
built-in SmolLM2 tokenizer of ``gem train``). Everything runs on CPU, offline, with a one-CPU local
Ray for the calls ROLL's env managers make through Ray; no model is loaded (ROLL's ``random`` LLM
proxy answers with the environment's random actions).

1. ``gem roll config`` output loaded through ROLL's own Hydra + dacite path into ``AgenticConfig``,
   and the classes it names imported with ROLL's ``safe_import_class``.
2. ROLL's real ``TrajEnvManager``, ``StepEnvManager`` and ``StepConcatEnvManager`` (their own
   ``run_rollout_loop``) playing a GEM adapters environment, and ``StepEnvManager.formulate_rollouts``
   turning its episodes into step samples.
3. ROLL's real advantage chain (``compute_discounted_returns`` -> ``compute_response_level_rewards``
   -> ``compute_token_reward`` -> ``agentic_compute_advantage``) on those samples and on the shared
   conformance batch: with the ReBN pipeline every response token carries gem_core's ReBN; ROLL's
   own normalisation is printed beside it.
4. The conformance batch plus failed episodes, through GEM's env manager (ROLL's
   ``formulate_rollouts``, the failure marked on the samples) and ROLL's advantage chain: the valid
   episodes' tokens carry gem_core's ReBN over the valid episodes alone, the failed ones' samples
   lose their ``response_mask``, and ROLL's own loss code (the strategy's ``op_compute_log_probs``
   and ``agg_loss``, as its agentic actor calls them) gives their tokens no gradient.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
ENV_ID = "game:GuessTheNumber-v0-easy"
EPISODES_PER_MANAGER = 4


def say(message: str) -> None:
    print(message, flush=True)


def write_config(out: Path, roll_source: Path) -> Path:
    command = [sys.executable, "-m", "gem_core.cli", "roll", "config", "--env", ENV_ID, "--model", "Qwen/Qwen3-0.6B",
               "--out", str(out), "--roll-dir", str(roll_source), "--batch-size", "4", "--train-size", "8",
               "--val-size", "4", "--gamma", "0.9", "--max-turns", "6", "--env-manager", "step",
               "--wrappers", "episode_tracking"]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    say(f"   gem roll config -> {result.stdout.strip()}")
    return out / "gem_roll.yaml"


def load_as_roll_does(config: Path):
    """ROLL's examples/start_agentic_pipeline.py up to the pipeline: Hydra compose, dacite into
    AgenticConfig, pipeline_cls imported by ROLL's safe_import_class."""
    from dacite import from_dict
    from hydra import compose, initialize
    from omegaconf import OmegaConf

    from roll.pipeline.agentic.agentic_config import AgenticConfig
    from roll.utils.import_utils import safe_import_class

    relative = os.path.relpath(config.parent, Path(__file__).resolve().parent)  # initialize is caller-relative
    with initialize(config_path=relative, job_name="app", version_base=None):
        cfg = compose(config_name=config.stem)
    pipeline_config = from_dict(data_class=AgenticConfig, data=OmegaConf.to_container(cfg, resolve=True))
    pipeline_cls = safe_import_class(cfg.pipeline_cls)
    return cfg, pipeline_config, pipeline_cls


class EpisodeQueue:
    """Stands in for ROLL's GroupQueueManager Ray actor on the two calls an env manager makes
    (``get_episode_id.remote``, ``put.remote``), answering through Ray's object store; after
    ``episodes`` episodes it stops the manager, as ROLL's scheduler does."""

    def __init__(self, episodes: int):
        self.episodes, self.next_id, self.rollouts, self.manager = episodes, 0, [], None
        queue = self

        class Remote:
            def __init__(self, function):
                self.remote = function

        def get_episode_id(group_id, env_id):
            import ray

            if queue.next_id >= queue.episodes:
                queue.manager.stop()
                return ray.put(None)
            queue.next_id += 1
            return ray.put(queue.next_id - 1)

        def put(group_id, episode_id, start_step, rollout, env_id):
            import ray

            if rollout is not None:
                queue.rollouts.append(rollout)
            return ray.put(None)

        self.get_episode_id, self.put = Remote(get_episode_id), Remote(put)


def play_with(manager_name: str, pipeline_config, tokenizer):
    """ROLL's env manager ``manager_name`` (through gem_adapters.roll.env_managers) playing
    EPISODES_PER_MANAGER episodes with ROLL's random LLM proxy; returns the rollouts it put."""
    from gem_adapters.roll.config import AGENT_TEMPLATES
    from roll.distributed.scheduler.protocol import DataProto
    from roll.utils.import_utils import safe_import_class

    pipeline_config = copy.deepcopy(pipeline_config)
    worker_config = pipeline_config.train_env_manager
    worker_config.llm_proxy.proxy_type = "random"
    env_config = copy.deepcopy(worker_config.env_configs[0][0])
    env_config["env_manager_cls"] = f"gem_adapters.roll.env_managers.{manager_name}"
    template = pipeline_config.custom_envs[env_config["tag"]]
    if manager_name == "TrajEnvManager":  # its templates: a system message and {observation}
        template["agent_system_template"], template["agent_template"] = "You play games.", "{observation}"
    else:  # the template `gem roll config --env-manager` writes for this manager
        template["agent_template"] = AGENT_TEMPLATES["step_concat" if "Concat" in manager_name else "step"]
    manager_cls = safe_import_class(env_config["env_manager_cls"])
    queue = EpisodeQueue(EPISODES_PER_MANAGER)
    manager = manager_cls(worker_config=worker_config, pipeline_config=pipeline_config, env_config=env_config,
                          tokenizer=tokenizer, generate_scheduler=None, output_queue=queue,
                          thread_lock=threading.Lock(), mode="train")
    queue.manager = manager
    manager.update_step(0)
    manager.run_rollout_loop(DataProto(meta_info={"seed": 1234}))
    manager.env.close()
    return manager_cls, queue.rollouts


def gem_core_rebn(batch, gamma: float, keep=None) -> dict[tuple[str, int], float]:
    """gem_core's ReBN of the batch's episodes (those whose traj_id is in ``keep``, when given), per
    (traj_id, step)."""
    from gem_core import get_estimator

    episodes: dict[str, dict[int, float]] = {}
    for traj, step, score in zip(batch.non_tensor_batch["traj_id"], batch.non_tensor_batch["step"],
                                 batch.non_tensor_batch["step_scores"]):
        if keep is None or traj in keep:
            episodes.setdefault(traj, {})[int(step)] = float(score)
    rewards = [[turns[t] for t in range(len(turns))] for turns in episodes.values()]
    values = get_estimator("rebn")(rewards, gamma=gamma)
    return {(traj, t): float(v) for traj, row in zip(episodes, values) for t, v in enumerate(row)}


def swapped_in_function(pipeline_cls, pipeline_config):
    """What ``compute_response_level_rewards`` is in ROLL's pipeline module while ``pipeline_cls.run``
    runs (ROLL's own run, which needs GPUs, is replaced for the call), and whether ROLL's function is
    back afterwards; and whether the pipeline refuses a config without per-turn samples."""
    import roll.pipeline.agentic.agentic_pipeline as roll_pipeline
    from gem_core import GemError

    original, seen = roll_pipeline.compute_response_level_rewards, []
    saved = roll_pipeline.AgenticPipeline.run
    roll_pipeline.AgenticPipeline.run = lambda self: seen.append(roll_pipeline.compute_response_level_rewards)
    try:
        pipeline_cls.run(object.__new__(pipeline_cls))
    finally:
        roll_pipeline.AgenticPipeline.run = saved
    wrong = copy.deepcopy(pipeline_config)
    wrong.adv_estimator = "reinforce"
    try:
        pipeline_cls(wrong)
        refused = False
    except GemError:
        refused = True
    return seen[0], seen[0] is not original and roll_pipeline.compute_response_level_rewards is original, refused


def roll_advantage_chain(batch, pipeline_config, *, response_level=None):
    """ROLL's driver-side chain from AgenticPipeline.run; ``response_level`` replaces ROLL's
    ``compute_response_level_rewards`` (as our pipeline_cls does)."""
    import torch

    from roll.pipeline.agentic.utils import (
        agentic_compute_advantage,
        compute_discounted_returns,
        compute_response_level_rewards,
    )
    from roll.utils.functionals import compute_token_reward
    from roll.utils.kl_controller import get_kl_controller

    batch = copy.deepcopy(batch)
    width = batch.batch["input_ids"].shape[1] - 1
    batch.batch["old_log_probs"] = torch.zeros(len(batch), width)  # the actor's, zero: no KL here
    batch.batch["ref_log_probs"] = torch.zeros(len(batch), width)
    batch = compute_discounted_returns(batch, pipeline_config.adv_estimator, pipeline_config.step_reward_gamma)
    batch, _ = (response_level or compute_response_level_rewards)(batch=batch, pipeline_config=pipeline_config)
    batch, _ = compute_token_reward(batch, pipeline_config, get_kl_controller(pipeline_config.init_kl_coef))
    batch = agentic_compute_advantage(
        data=batch, gamma=pipeline_config.gamma, lambd=pipeline_config.lambd,
        adv_estimator=pipeline_config.adv_estimator, advantage_clip=pipeline_config.advantage_clip,
        whiten_advantages=pipeline_config.whiten_advantages, whiten_rewards=pipeline_config.whiten_rewards,
        pipeline_config=pipeline_config)
    return batch


def per_token_gap(batch, expected: dict[tuple[str, int], float]) -> tuple[float, int, list[float]]:
    """Largest |advantage - expected| over every response token, the number of tokens compared, and
    one advantage per sample (the first response token's)."""
    advantages = batch.batch["advantages"]
    mask = batch.batch["response_mask"][:, 1:].bool()
    gap, tokens, firsts = 0.0, 0, []
    for row, (traj, step) in enumerate(zip(batch.non_tensor_batch["traj_id"], batch.non_tensor_batch["step"])):
        values = advantages[row][mask[row]].double().numpy()
        gap = max(gap, float(np.abs(values - expected[(traj, int(step))]).max()))
        tokens += values.size
        firsts.append(round(float(values[0]), 4))
    return gap, tokens, firsts


def conformance_samples(manager_cls, pipeline_config, tokenizer, *, episodes=None, layouts=None, valid=None):
    """ROLL's StepEnvManager.formulate_rollouts on episodes with the conformance batch's rewards
    (a manager without an environment: formulate_rollouts reads only its cache and config); a
    failed episode (``valid`` False) has the failure in its last step's record, as RollEnv's info
    puts it there."""
    from roll.distributed.scheduler.protocol import DataProto
    from roll.pipeline.agentic.env_manager.base_env_manager import RolloutCache
    from tests.adapters import conformance as c

    episodes, layouts = episodes or c.EPISODES, layouts or c.LAYOUT
    valid = valid or [True] * len(episodes)
    manager = object.__new__(manager_cls)
    manager.pipeline_config, manager.tokenizer = pipeline_config, tokenizer
    x = tokenizer.encode("x")[-1]
    rollouts = []
    for e, (rewards, layout, ok) in enumerate(zip(episodes, layouts, valid)):
        cache = RolloutCache(env_id=e, group_id=e, tag="conformance")
        for t, (reward, (model_tokens, env_tokens)) in enumerate(zip(rewards, layout)):
            failure = "sandbox" if not ok and t == len(rewards) - 1 else ""
            cache.history.append({"prompt_ids": tokenizer.encode(f"turn {t} of episode {e}") + [x] * env_tokens,
                                  "response_ids": [x] * model_tokens, "gem_failure": failure,
                                  "reward": reward, "state_hash": f"{e}-{t}", "metrics": {}})
        cache.step = len(rewards)
        manager.rollout_cache = cache
        rollout = manager.formulate_rollouts(cache)
        traj = f"conformance_{e}"
        rollout.non_tensor_batch["traj_id"] = np.array([traj] * len(rollout), dtype=object)
        rollout.non_tensor_batch["traj_group_id"] = np.array([traj] * len(rollout), dtype=object)
        rollouts.append(rollout)
    return DataProto.concat(rollouts)


def failed_episodes_check(step_manager, pipeline_config, tokenizer, gem_function) -> int:
    """Part 4 (see the module documentation); returns the number of failed checks."""
    import torch

    from roll.distributed.strategy.strategy import InferenceStrategy
    from roll.utils.functionals import agg_loss
    from tests.adapters import conformance as c

    batch = conformance_samples(step_manager, pipeline_config, tokenizer, episodes=c.MIXED, layouts=c.MIXED_LAYOUT,
                                valid=c.MIXED_VALID)
    failures = [str(kind) for kind in batch.non_tensor_batch["gem_failure"]]
    failed = torch.tensor([bool(kind) for kind in failures])
    gamma = pipeline_config.step_reward_gamma
    valid_trajs = {traj for traj, kind in zip(batch.non_tensor_batch["traj_id"], failures) if not kind}
    expected = gem_core_rebn(batch, gamma, keep=valid_trajs)
    gem_batch = roll_advantage_chain(batch, pipeline_config, response_level=gem_function)
    advantages, mask = gem_batch.batch["advantages"], gem_batch.batch["response_mask"]
    gap = 0.0
    for row, (traj, step) in enumerate(zip(gem_batch.non_tensor_batch["traj_id"], gem_batch.non_tensor_batch["step"])):
        if traj in valid_trajs:
            values = advantages[row][mask[row, 1:].bool()].double().numpy()
            gap = max(gap, float(np.abs(values - expected[(traj, int(step))]).max()))
    masked = not mask[failed].any() and bool(mask[~failed].any())
    # ROLL's agentic actor: log-probabilities masked by response_mask, the PPO ratio, agg_loss
    logits = torch.randn(*gem_batch.batch["input_ids"].shape, len(tokenizer), requires_grad=True)
    log_probs = InferenceStrategy.op_compute_log_probs(None, logits, gem_batch.batch["input_ids"], mask)
    ratio = (log_probs - log_probs.detach()).exp()
    loss_mask = mask[:, 1:].long()
    loss = agg_loss(loss_mat=-advantages * ratio, loss_mask=loss_mask, loss_agg_mode="token-mean")
    loss.backward()
    no_gradient = not logits.grad[failed].any() and bool(logits.grad[~failed].abs().sum() > 0)
    ok = gap < 1e-5 and masked and no_gradient
    say(f"   conformance batch plus failed episodes: {int(failed.sum())} failed samples of {len(failed)}")
    say(f"     valid tokens: max |advantage - gem_core ReBN over the valid episodes| = {gap:.2e}; failed samples' "
        f"response_mask 0: {masked}; ROLL's loss gives them no gradient: {no_gradient}: {'ok' if ok else 'FAILED'}")
    return int(not ok)


def main() -> int:
    roll_source = os.environ.get("ROLL_SOURCE")
    if not roll_source or not (Path(roll_source) / "examples" / "start_agentic_pipeline.py").exists():
        say("Set ROLL_SOURCE to a ROLL checkout (https://github.com/alibaba/ROLL), installed in this "
            "Python with `pip install --no-deps -e $ROLL_SOURCE` (see this script's docstring).")
        return 2
    sys.path.insert(0, str(REPO))  # tests.adapters.conformance
    import ray
    from transformers import AutoTokenizer

    from roll.distributed.scheduler.protocol import DataProto
    from roll.pipeline.agentic.agentic_pipeline import AgenticPipeline

    tokenizer_dir = os.environ.get("ROLL_TOKENIZER")
    if not tokenizer_dir:
        from gem_trainer.models import default_model_dir

        tokenizer_dir = str(default_model_dir(weights=False))
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    failures = 0

    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)  # ROLL writes ./output/logs
        say("1. gem roll config -> ROLL's Hydra + dacite -> AgenticConfig")
        config = write_config(Path(scratch) / "run", Path(roll_source))
        cfg, pipeline_config, pipeline_cls = load_as_roll_does(config)
        env_config = pipeline_config.train_env_manager.env_configs[0][0]
        ok = (type(pipeline_config).__name__ == "AgenticConfig" and issubclass(pipeline_cls, AgenticPipeline)
              and pipeline_config.adv_estimator == "step_reinforce")
        failures += not ok
        norm = pipeline_config.reward_normalization
        say(f"   {type(pipeline_config).__name__}: adv_estimator={pipeline_config.adv_estimator} "
            f"step_reward_gamma={pipeline_config.step_reward_gamma} gamma={pipeline_config.gamma} "
            f"reward_normalization=({norm.grouping}, {norm.norm_mean_type}, {norm.norm_std_type})")
        say(f"   env 0: env_type={env_config['env_type']} env_manager_cls={env_config['env_manager_cls']} "
            f"config={dict(env_config['config'])}")
        say(f"   pipeline_cls {cfg.pipeline_cls}: a subclass of "
            f"{AgenticPipeline.__module__}.AgenticPipeline: {'ok' if ok else 'FAILED'}")

        gem_function, restored, refused = swapped_in_function(pipeline_cls, pipeline_config)
        failures += not (restored and refused)
        say(f"   while {pipeline_cls.__name__}.run runs, ROLL's compute_response_level_rewards is "
            f"{gem_function.__module__}'s; ROLL's is back after: {'ok' if restored else 'FAILED'}; "
            f"adv_estimator reinforce refused: {'ok' if refused else 'FAILED'}")

        say(f"2. ROLL's env managers play {ENV_ID} (random LLM proxy, {EPISODES_PER_MANAGER} episodes each)")
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        try:
            step_manager = None
            for name in ("TrajEnvManager", "StepEnvManager", "StepConcatEnvManager"):
                manager_cls, rollouts = play_with(name, pipeline_config, tokenizer)
                batch = DataProto.concat(rollouts)
                scores = [list(np.atleast_1d(s).astype(float)) for s in batch.non_tensor_batch["step_scores"]]
                roll_class = manager_cls.__mro__[1]  # GEM's env managers subclass ROLL's
                ok = len(rollouts) == EPISODES_PER_MANAGER and roll_class.__module__.startswith("roll.") \
                    and "gem_failure" in batch.non_tensor_batch
                failures += not ok
                say(f"   {manager_cls.__module__}.{name} (ROLL's {roll_class.__module__}.{name}, its samples "
                    f"marked): {len(rollouts)} episodes, {len(batch)} samples, "
                    f"episode scores {[round(float(s), 2) for s in batch.non_tensor_batch['episode_scores'][:8]]}"
                    f"{' ...' if len(batch) > 8 else ''}: {'ok' if ok else 'FAILED'}")
                if name == "StepEnvManager":
                    say(f"   env/ metrics ROLL logged: {sorted(batch.meta_info['metrics'])}")
                    step_batch, step_manager = batch, manager_cls
                    say(f"   StepEnvManager.formulate_rollouts: steps {list(batch.non_tensor_batch['step'])}, "
                        f"step_scores {[round(s[0], 2) for s in scores]}")
        finally:
            ray.shutdown()

        say("3. ROLL's advantage chain (compute_discounted_returns -> ... -> agentic_compute_advantage)")
        gamma = pipeline_config.step_reward_gamma
        conformance = conformance_samples(step_manager, pipeline_config, tokenizer)
        for label, batch in (("played episodes", step_batch), ("conformance batch", conformance)):
            expected = gem_core_rebn(batch, gamma)
            gem_batch = roll_advantage_chain(batch, pipeline_config, response_level=gem_function)
            gap, tokens, gem_values = per_token_gap(gem_batch, expected)
            roll_batch = roll_advantage_chain(batch, pipeline_config)
            roll_gap, _, roll_values = per_token_gap(roll_batch, expected)
            ok = gap < 1e-5
            failures += not ok
            say(f"   {label}: {len(batch)} samples, {tokens} response tokens")
            say(f"     pipeline_cls rebn: max |advantage - gem_core ReBN| over tokens = {gap:.2e}: "
                f"{'ok' if ok else 'FAILED'}")
            say(f"     per sample {gem_values}")
            say(f"     ROLL's own step_reinforce normalisation: max gap {roll_gap:.4f}; per sample {roll_values}")
        say("4. Failed episodes: GEM's env manager marks them, the pipeline masks them, ROLL's loss skips them")
        failures += failed_episodes_check(step_manager, pipeline_config, tokenizer, gem_function)
    say("all checks passed" if not failures else f"{failures} check(s) FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
