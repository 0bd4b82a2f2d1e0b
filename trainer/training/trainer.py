"""The single-machine trainer: multi-turn REINFORCE with any registered advantage estimator.

One step:

1. play ``episodes_per_step`` episodes in a vector environment whose observations are the
   conversation so far through the tokenizer's chat template (``concat_chat``); each response
   the model samples is one action (response-level actions);
2. turn per-turn rewards into per-turn advantages with the estimator (ReBN by default);
3. take one optimiser step on the token-level REINFORCE loss (:mod:`gem_trainer.training.loss`),
   accumulating gradients over micro-batches of episodes packed end to end into rows;
4. log metrics, and save a checkpoint when due.

A failed episode (the environment raised, returned something malformed, timed out, ...: see
:class:`~gem_core.episodes.Failure`) leaves the estimator's statistics and the loss, and is counted
per environment and kind in the step's metrics. A step with nothing to train on (every episode
failed, say) makes no optimiser step and says why. When more than ``max_failed_share`` of a
step's episodes fail, the run stops (:class:`FailedEpisodesError`) before training on that step,
naming what failed, with the steps trained so far saved in its checkpoint.

Everything that can be checked before the long work (configuration, environment ids, estimator,
model folder, chat template, memory) is checked first.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gem_core.errors import GemError
from gem_core.estimators import advantage_stats
from gem_trainer.config import ConfigError, TrainConfig, save_config, validate, vector_mode
from gem_trainer.metrics import (
    OVER_VALID_EPISODES,
    MetricsLog,
    episode_stats,
    failure_report,
    failure_shares,
    failures_text,
    percent,
    plot_learning_curve,
)
from gem_trainer.model_calls import takes_explicit_mask
from gem_trainer.training import checkpoint as ckpt
from gem_trainer.training.loss import micro_batches, pack, reinforce_loss
from gem_trainer.training.memory import check_training_memory, micro_batch_tokens
from gem_trainer.models import (
    LoraSettings,
    load_model,
    is_vision_language,
    load_processor,
    load_tokenizer,
    quiet_transformers,
    resolve_device,
    resolve_dtype,
    resolve_model,
    sampling_model,
)
from gem_trainer.decoding.sampling import LocalPolicy, SamplingSettings
from gem_trainer.runtime import prefer_passive_openmp
from gem_trainer.trackers import RunInfo, Trackers
from gem_trainer.training.rollout import carried_sampled, seat_advantages, slot_env_ids, step_seeds, training_samples

METRICS_FILE = "metrics.jsonl"
PLOT_FILE = "learning_curve.png"
CONFIG_FILE = "config.yaml"
EPISODES_DIR = "episodes"


@dataclass
class TrainResult:
    """Where a finished run left its outputs, and its metrics."""

    output_dir: Path
    metrics_path: Path
    plot_path: Path
    checkpoint: Path | None
    records: list[dict[str, Any]]


class FailedEpisodesError(GemError):
    """More than ``max_failed_share`` of a step's episodes failed: the run stopped before
    training on them (the message names the environments, kinds and errors)."""


def default_output_dir() -> Path:
    return Path("gem-runs") / datetime.now().strftime("train-%Y%m%d-%H%M%S")


class Trainer:
    """Trains a local model on GEM environments; :meth:`run` does the whole run.

    ``resume``: the output folder of an earlier run; training continues from its checkpoint
    (step count, weights, optimizer and random state) up to ``config.steps``.
    """

    def __init__(self, config: TrainConfig, *, resume: Path | None = None, progress: bool = True,
                 console: Any = None):
        prefer_passive_openmp()
        self.config = config
        self.resume = resume
        self.progress = progress
        self.console = console
        self._phase: Any = lambda step, doing: None  # what a step is doing, for the progress display
        #: For an agent run, options of :class:`~gem_trainer.training.agents.AgentRollout` (a
        #: program object, a backend in place of the model): what Python callers and tests set.
        self.agent_options: dict[str, Any] = {}
        validate(config)
        if resume is not None:
            ckpt.checkpoint_dir(resume)  # fail now, not after loading the model
        self.output_dir = Path(resume or config.output_dir or default_output_dir())

    # ---- setup ----------------------------------------------------------------------------

    def setup(self) -> None:
        """Load everything and check it fits, before any episode is played."""
        import gem_core
        from gem_core import get_estimator

        c = self.config
        self.estimator = get_estimator(c.estimator)
        self._probe_estimator()
        base = resolve_model(c.model, on_convert=self._say)
        self._say(f"Loading {base} and playing a first batch; every step plays {c.episodes_per_step} "
                  "episodes, then trains on them.")

        import torch

        quiet_transformers()
        if c.threads:
            torch.set_num_threads(c.threads)
        self.device = resolve_device(c.device)
        self.dtype = resolve_dtype(c.dtype, self.device)
        state = None
        if self.resume is not None:
            state = ckpt.load_trainer_state(self.resume)
            source = ckpt.checkpoint_dir(self.resume) / ckpt.MODEL
            if state.step >= c.steps:
                raise ConfigError(
                    f"The run in {str(self.resume)!r} has already done {state.step} steps; pass "
                    f"--steps above {state.step} to train further."
                )
            saved_lora = (source / "adapter_config.json").exists()
            if saved_lora != c.lora:
                raise ConfigError(
                    f"The run in {str(self.resume)!r} trained {'LoRA adapters' if saved_lora else 'every weight'}; "
                    f"resume it with {'--lora' if saved_lora else '--no-lora'}."
                )
        else:
            source = base
        # a vision-language model's processor turns a visual task's images into model inputs
        self.processor = load_processor(source, chat_template=c.chat_template) if is_vision_language(source) else None
        self.tokenizer = self.processor.tokenizer if self.processor else load_tokenizer(source, chat_template=c.chat_template)
        lora = LoraSettings(rank=c.lora_rank, alpha=c.lora_alpha) if c.lora and self.resume is None else None
        torch.manual_seed(c.seed)  # new LoRA weights are drawn from torch's generator: the same run, the same draw
        self.model = load_model(source, device=self.device, dtype=self.dtype, lora=lora)
        self.parameters = [p for p in self.model.parameters() if p.requires_grad]
        if not self.parameters:
            raise GemError(f"The model loaded from {str(source)!r} has no trainable parameters.")
        self.micro_batch_tokens = micro_batch_tokens(self.model, self.parameters, c, self.device)
        check_training_memory(self.model, self.parameters, c, self.device, self.micro_batch_tokens)
        self.optimizer = torch.optim.AdamW(self.parameters, lr=c.lr, weight_decay=c.weight_decay)
        self.start_step = 0
        self.saved_step = 0  # the step the run folder's checkpoint holds (0: none)
        if state is not None:
            try:
                self.optimizer.load_state_dict(state.optimizer)
            except ValueError as e:
                raise ConfigError(f"The optimizer state in {str(self.resume)!r} does not fit this model ({e}); "
                                  "resume with the settings the run was started with.") from None
            torch.set_rng_state(state.torch_rng)
            if state.cuda_rng is not None and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(state.cuda_rng)
            self.start_step = self.saved_step = state.step
        else:
            torch.manual_seed(c.seed)
        self.policy = LocalPolicy(sampling_model(self.model), self.tokenizer, SamplingSettings(
            max_new_tokens=c.max_new_tokens, temperature=c.temperature, top_p=c.top_p,
            max_prompt_tokens=c.max_prompt_tokens, batch_size=c.episodes_per_step,
        ), processor=self.processor)
        self.output_dir.mkdir(parents=True, exist_ok=True)
        (self.output_dir / EPISODES_DIR).mkdir(exist_ok=True)
        if c.agent is not None:  # a program plays the episodes, through the gateway (gem_trainer.training.agents)
            from gem_trainer.training.agents import AgentRollout

            self.vec_env = AgentRollout(c, self.policy, self.tokenizer, **self.agent_options)
        else:
            timed = c.episode_deadline is not None or c.deadline is not None  # a hung environment holds back no other
            self.vec_env = gem_core.make_vec(
                slot_env_ids(c.envs, c.episodes_per_step + c.spares, c.group_size), wrappers=c.wrappers,
                wrapper_options={"tokenizer": self.processor or self.tokenizer},
                **vector_mode(c.ray_address, c.env_hosts, here="async" if timed else "sync"),
            )
        save_config(c, self.output_dir / CONFIG_FILE)
        self.metrics = MetricsLog(self.output_dir / METRICS_FILE)
        if self.resume is None:
            self.metrics.path.write_text("")
        else:  # what a killed run wrote after its checkpoint is played again
            self.metrics.truncate_after(self.start_step)
            for stale in (self.output_dir / EPISODES_DIR).glob("step-*.jsonl"):
                if int(stale.stem.removeprefix("step-")) > self.start_step:
                    stale.unlink()
        what = f"LoRA rank {c.lora_rank}" if c.lora else "every weight"
        self._say(f"Training {c.model} ({what}, {self.device}) on {', '.join(c.envs)} with {c.estimator}, "
                  f"gamma {c.gamma}: steps {self.start_step + 1}-{c.steps}, {c.episodes_per_step} episodes each. "
                  f"Run folder: {self.output_dir}")

    def _say(self, message: str) -> None:
        if self.progress:
            self._tell(message)

    def _tell(self, message: str) -> None:
        """Print, with or without progress (where the trackers log, and a tracker that stopped)."""
        if self.console is None:
            from gem_core.cli.output import console

            self.console = console()
        self.console.print(message, markup=False)

    def _probe_estimator(self) -> None:
        """Call the estimator on a batch shaped like the real ones, so a layout it rejects
        (e.g. no groups for GRPO) fails now."""
        c = self.config
        n = min(c.episodes_per_step, max(64 // c.group_size, 1) * c.group_size)  # the layout, not the size
        groups = [slot // c.group_size for slot in range(n)] if c.group_size > 1 else None
        rewards = [[float(slot % 2)] for slot in range(n)]
        try:
            self.estimator(rewards, gamma=c.gamma, group_ids=groups)
        except GemError as e:
            raise ConfigError(
                f"The {c.estimator} estimator rejects the batch layout ({c.episodes_per_step} "
                f"episodes, group size {c.group_size}): {e} Adjust --group-size or "
                "--episodes-per-step."
            ) from None

    # ---- training -------------------------------------------------------------------------

    def run(self) -> TrainResult:
        """Set up, train to ``config.steps``, save, plot; return where everything is."""
        self.setup()
        c = self.config
        last_checkpoint = None
        trackers = Trackers()
        try:
            trackers = Trackers.open(c.report_to, RunInfo(self.output_dir, "train", c.to_dict(), self.start_step + 1,
                                                          resumed=self.resume is not None), say=self._tell)
            records = self.metrics.read() if trackers else []
            with self._progress_bar() as bar:
                self._phase = bar.phase
                for step in range(self.start_step + 1, c.steps + 1):
                    record = self.train_step(step)
                    self.metrics.append(record)
                    if self._stopping is not None:  # keep what the steps before it trained
                        if self.saved_step < step - 1:
                            last_checkpoint = self.save(step - 1, rng=self._rng_before_step)
                            trackers.log_text("train/checkpoint", str(last_checkpoint / ckpt.MODEL), step - 1)
                    elif (c.save_every and step % c.save_every == 0) or step == c.steps:
                        last_checkpoint = self.save(step)
                        trackers.log_text("train/checkpoint", str(last_checkpoint / ckpt.MODEL), step)
                    if trackers:  # the learning curve so far, with the step's metrics
                        records.append(record)
                        trackers.log_step(record, self._plot(records))
                    bar(record)
                    if self._stopping is not None:
                        self._plot(self.metrics.read())
                        raise FailedEpisodesError(f"{self._stopping} {self._after_stop(step)}")
        finally:
            trackers.finish()
            self.vec_env.close()
        records = self.metrics.read()
        return TrainResult(self.output_dir, self.metrics.path, self._plot(records), last_checkpoint, records)

    def _after_stop(self, step: int) -> str:
        """Where a run stopped for failed episodes stands, and how to go on."""
        folder = self.output_dir
        if self.saved_step == 0:
            return (f"No step was trained before it, so {folder} has no checkpoint: fix the environment and "
                    "start the run again, or raise --max-failed-share (1 trains through any failures, leaving "
                    "the failed episodes out).")
        return (f"The checkpoint in {folder / ckpt.CHECKPOINT} holds step {self.saved_step}: fix the environment and "
                f"continue with `gem train --resume {folder}`, or raise --max-failed-share (1 trains through any "
                "failures, leaving the failed episodes out).")

    def _plot(self, records: list[dict[str, Any]]) -> Path:
        c = self.config
        return plot_learning_curve(records, self.output_dir / PLOT_FILE,
                                   title=f"{', '.join(c.envs)} - {c.estimator}, gamma {c.gamma}")

    def train_step(self, step: int) -> dict[str, Any]:
        """Play one batch of episodes and take one optimiser step; return the step's metrics."""
        import torch

        from gem_core import collect_episodes
        from gem_core.episodes import save_episodes

        c = self.config
        started = time.perf_counter()
        self._stopping: str | None = None  # why the run stops after this step (too many failed episodes)
        self._rng_before_step = (torch.get_rng_state(),  # what a checkpoint of the step before holds
                                 torch.cuda.get_rng_state_all() if self.device.startswith("cuda") else None)
        self.policy.reset_records(keep=carried_sampled(self.vec_env))
        seeds = step_seeds(c.seed, step, c.episodes_per_step + c.spares, c.group_size)
        self._phase(step, f"playing {c.episodes_per_step} episodes")
        if c.agent is not None:
            episodes = self.vec_env.play(slot_env_ids(c.envs, c.episodes_per_step, c.group_size), seeds)
        else:
            episodes = collect_episodes(self.vec_env, self.policy, c.episodes_per_step, seed=seeds,
                                        episode_deadline=c.episode_deadline, deadline=c.deadline,
                                        carry_over=c.carry_over, spares=c.spares, group_size=c.group_size,
                                        policy_version=step)
        rollout_s = time.perf_counter() - started
        episodes_file = self.output_dir / EPISODES_DIR / f"step-{step:05d}.jsonl"
        writing = episodes_file.with_name(f".{episodes_file.name}.writing")
        save_episodes(episodes, writing)
        os.replace(writing, episodes_file)  # a kill never leaves a half-written episode file

        failed = sum(not e.valid for e in episodes)
        if failed > c.max_failed_share * len(episodes):
            self._stopping = (f"Step {step}: {failed} of {len(episodes)} episodes failed, more than "
                              f"--max-failed-share {c.max_failed_share:g} allows, so the run stopped without "
                              f"training on them. {failure_report(episodes)}")
            parts, samples, trained, skipped = [], [], 0, sum(e.num_turns for e in episodes)
        else:
            parts = [part for seats in seat_advantages(episodes, self.estimator, gamma=c.gamma,
                                                       group_size=c.group_size) for part in seats]
            if c.agent is not None:
                from gem_trainer.training.agents import training_samples as recorded_samples

                samples, trained, skipped = recorded_samples([p for p, _ in parts], [a for _, a in parts])
            else:
                samples, trained, skipped = training_samples([p for p, _ in parts], [a for _, a in parts],
                                                             self.policy)
        total_tokens = sum(s.num_model_tokens for s in samples)
        no_update = _why_no_update(self._stopping is not None, failed, len(episodes), samples)

        train_started = time.perf_counter()
        self._phase(step, f"training on {total_tokens} response tokens" if no_update is None else "no update")
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        loss_sum = 0.0
        grad_norm = 0.0
        if no_update is None:
            for rows in micro_batches(samples, self.micro_batch_tokens, packed=takes_explicit_mask(self.model)):
                loss, _ = reinforce_loss(self.model, pack(rows, self.tokenizer.pad_token_id, self.device), total_tokens)
                loss.backward()
                loss_sum += float(loss.detach())
            grad_norm = float(torch.nn.utils.clip_grad_norm_(self.parameters, c.max_grad_norm))
            self.optimizer.step()
            self.policy.set_model(sampling_model(self.model, previous=self.policy.model))
        train_s = time.perf_counter() - train_started

        gen_s = self.policy.generation_seconds
        stats = episode_stats(episodes)
        if failed == len(episodes):  # no episode to take them over: none, rather than a made-up 0
            stats.update(dict.fromkeys(OVER_VALID_EPISODES))
        return {
            "step": step,
            **stats,
            **failure_shares(episodes),
            **advantage_stats([a for p, a in parts if p.valid]),
            "tokens_per_second": self.policy.generated_tokens / gen_s if gen_s else 0.0,
            "response_tokens": total_tokens / max(trained, 1),
            "turns_trained": trained,
            "sequences_trained": len(samples),
            "turns_skipped": skipped,
            "loss": loss_sum,
            "grad_norm": grad_norm if grad_norm == grad_norm else 0.0,  # NaN guard for the JSON log
            "rollout_seconds": rollout_s,
            "train_seconds": train_s,
            "train_tokens_per_second": sum(len(s.prompt_ids) + len(s.completion_ids) for s in samples) / train_s
            if train_s else 0.0,
            "quarantined_slots": len(self.vec_env.quarantined),
            "carried_episodes": len(getattr(self.vec_env, "carried", None) or ()),  # none with an agent program
            "updated": no_update is None,
            **({} if no_update is None else {"no_update": no_update}),
            "step_seconds": time.perf_counter() - started,
        }

    def save(self, step: int, *, rng: tuple[Any, Any] | None = None) -> Path:
        """Save the checkpoint of ``step``; ``rng``: the random state to keep (torch's and CUDA's),
        by default the current one."""
        import torch

        torch_rng, cuda_rng = rng or (torch.get_rng_state(),
                                      torch.cuda.get_rng_state_all() if self.device.startswith("cuda") else None)
        state = ckpt.TrainerState(step=step, optimizer=self.optimizer.state_dict(), torch_rng=torch_rng,
                                  cuda_rng=cuda_rng)
        acting = {key: getattr(self.config, key) for key in ckpt.ACTING_SETTINGS}
        saved = ckpt.save_checkpoint(self.output_dir, self.model, self.processor or self.tokenizer, state, acting=acting)
        self.saved_step = step
        return saved

    def _progress_bar(self) -> Any:
        return _StepProgress(self.start_step, self.config.steps, enabled=self.progress, console=self.console)


def _why_no_update(stopping: bool, failed: int, episodes: int, samples: list[Any]) -> str | None:
    """Why a step takes no optimiser step (None: it takes one)."""
    if stopping:
        return f"{failed} of {episodes} episodes failed, more than max_failed_share allows"
    if not episodes:
        return "no episode ended within --deadline (those running carry over)"
    if failed == episodes:
        return f"all {episodes} episodes failed"
    if not samples:
        return "no turn to train on (every prompt over --max-prompt-tokens, or nothing sampled)"
    return None


class _StepProgress:
    """A rich progress bar over steps, showing the latest return and success rate, and what the
    step is doing (:meth:`phase`): in the bar on a terminal, as a line otherwise. Call it with each
    step's record."""

    def __init__(self, done: int, total: int, *, enabled: bool, console: Any):
        self.done, self.total, self.enabled, self.console = done, total, enabled, console

    def __enter__(self) -> _StepProgress:
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("[bold]training"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("{task.fields[status]}"), console=self.console,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task("steps", total=self.total, completed=self.done, status="")
        return self

    def phase(self, step: int, doing: str) -> None:
        if not self.enabled:
            return
        if self._progress.console.is_terminal:
            self._progress.update(self._task, status=f"step {step}: {doing}")
        else:
            self._progress.console.print(f"step {step}: {doing}...")

    def __call__(self, record: dict[str, Any]) -> None:
        if not self.enabled:
            return
        if record["mean_return"] is None:  # every episode failed
            status = f"no valid episode  {record['tokens_per_second']:.0f} tok/s"
        else:
            status = (f"return {record['mean_return']:+.3f}  success {percent(record['success_rate'])}  "
                      f"turns {record['turns_per_episode']:.2f}  {record['tokens_per_second']:.0f} tok/s")
        if record.get("failed_rate"):
            status += f"  {failures_text(record)}"
        if record.get("quarantined_slots"):
            status += f"  {record['quarantined_slots']} slot(s) quarantined"
        if record.get("no_update"):
            status += f"  no update: {record['no_update']}"
        self._progress.update(self._task, advance=1, status=status)
        self._progress.console.print(f"step {record['step']}: {status}")

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self._progress.__exit__(*exc)
