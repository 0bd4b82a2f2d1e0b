"""The GEM actor for oat: each step plays GEM episodes with oat's vLLM engine and returns them as
oat ``Transition``\\ s, one per model turn.

oat's learner hands every actor step a batch of episode starts (environment id and seed, see
:mod:`gem_adapters.oat.advantages`); each start is played ``--num_samples`` times in one async GEM
vector environment (:func:`gem_core.make_vec`, with the ``--wrappers``), through
:func:`gem_core.collect_episodes`. The environments' faults follow GEM's rules: a step that raises
ends its episode truncated and the batch goes on; a slot that keeps failing to reset is
quarantined and the others play its episodes.

oat's multi-turn learner trains each turn as a sample of its own: the prompt is the turn's
observation (rendered with the model's chat template unless a chat wrapper such as
``concat_chat`` already did), and the response is what the model generated. Every turn is
generated in one batch across the episodes still running, each capped at
``--generate_max_length`` tokens and at what is left of ``--max_model_len``. A turn whose prompt
leaves no room ends its episode there (the turns before it are kept; the environment's later
turns are not trained on).

A transition carries the turn's observation and action, its reward, ``done`` on the episode's
last kept turn, the prompt and response text and token ids, vLLM's log-probabilities of the
response tokens, whether the response ran out of tokens (``response_is_truncated``; then
``action_is_formatted`` is False, and with ``--ignore_no_eos`` the loss mask is off), the
episode's environment id and seed, which the learner's group estimators group by, and
``failure``: the kind of the episode's failure, or ``""``.

A failed episode (:func:`gem_core.collect_episodes` marks one whose environment raised, returned
something malformed or timed out, or that ran past ``--episode_deadline``) keeps its transitions,
each with ``loss_mask`` False, which oat's learning step multiplies its policy and KL losses by:
none of its tokens trains. The learner leaves it out of GEM's estimator statistics
(:mod:`gem_adapters.oat.advantages`).

The step's metrics, which oat logs, add the episodes counted as ``gem train`` counts them:
``actor/gem_success_rate``, ``actor/gem_format_error_rate``, ``actor/gem_turns_per_episode`` and
``actor/gem_mean_return`` (over the episodes that did not fail), and the shares that failed,
``actor/gem_failed_rate`` and ``actor/gem_failed_<kind>``; oat's learner logs the advantages
itself (``adv_mean``, ``adv_min``, ``adv_max``).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Optional

from oat.algorithms.ppo_multiturn import PPOMultiTurnActor
from oat.types import Transition

from gem_adapters.common.chat import ChatFormat
from gem_adapters.common.options import EpisodeOptions
from gem_adapters.common.session import failure_metrics

logger = logging.getLogger("gem_adapters.oat")

#: Wrappers whose observations are already rendered with the chat template.
CHAT_WRAPPERS = frozenset({"concat_chat", "concat_chat_on_reset"})


@dataclass
class GemTransition(Transition):
    """oat's ``Transition`` with the episode start it belongs to."""

    env_id: str = ""
    seed: Optional[int] = None
    failure: str = ""


@dataclass(frozen=True)
class Sampled:
    """What the model generated for one prompt."""

    prompt: str
    prompt_ids: list[int]
    response: str
    response_ids: list[int]
    logprobs: list[float]
    truncated: bool


class GemOatActor(PPOMultiTurnActor):
    """A ``PPOMultiTurnActor`` that plays GEM environments; see the module documentation."""

    def init(self, actor_id: int, save_path: str) -> None:
        """oat's actor start (the vLLM engine, its tokenizer), then GEM's."""
        super().init(actor_id, save_path)
        import vllm

        args = self.args
        self.sampling_params = vllm.SamplingParams(  # one response per episode turn, with log-probs
            temperature=args.temperature, top_p=args.top_p, top_k=args.top_k,
            max_tokens=args.generate_max_length, n=1, logprobs=1)
        self.setup_episodes()

    def setup_episodes(self) -> None:
        """GEM's part of the start: needs ``self.args``, ``self.tokenizer`` and ``self.sampling_params``."""
        self.options = EpisodeOptions.from_config(
            {"wrappers": self.args.wrappers, "max_turns": self.args.max_turns,
             "episode_deadline": getattr(self.args, "episode_deadline", None)},
            where="the launcher's GEM options", history_in_context=False)
        self.rendered = any(name in CHAT_WRAPPERS for name in self.options.wrappers)
        self.chat = None if self.rendered else ChatFormat(self.tokenizer)
        self.starts: list[tuple[str, int]] = []
        self._vector: Any = None
        self._sampled: dict[tuple[str, str], list[Sampled]] = defaultdict(list)

    def step(self, prompts=None, formatted_prompts=None, references=None):
        """oat's actor step; the learner's rows name the starts (environment ids, and seeds as
        references)."""
        self.starts = [(str(env_id), int(seed)) for env_id, seed in zip(prompts, references)]
        return super().step()

    def collect_experience(self) -> tuple[list[list[GemTransition]], dict[str, float]]:
        """Play every start ``--num_samples`` times; one list of transitions per episode, the
        episodes of a start next to each other."""
        from gem_core import collect_episodes
        from gem_core.episodes import episode_stats

        samples = self.args.num_samples
        slots = [start for start in self.starts for _ in range(samples)]
        vector = self.vector_env([env_id for env_id, _ in slots])
        self._sampled.clear()
        deadline = {} if self.options.episode_deadline is None else {"episode_deadline": self.options.episode_deadline}
        episodes = collect_episodes(vector, self.act, len(slots), seed=[seed for _, seed in slots],
                                    max_turns=self.options.max_turns, **deadline)
        played, cut = [], 0
        for episode in episodes:
            transitions = self.transitions(episode)
            cut += len(transitions) < episode.num_turns
            if transitions:
                played.append(transitions)
        self._sampled.clear()
        faults = sum("fault" in turn.info for episode in episodes for turn in episode.turns)
        stats = episode_stats(episodes)  # as `gem train` counts them
        failed = failure_metrics(None)  # every kind, so that oat logs the same keys each step
        failed = {key: stats.get(key, 0.0) for key in failed if key != "failed"}
        return played, {"actor/gem_episodes": float(len(played)),
                        "actor/gem_episodes_cut_at_max_model_len": float(cut),
                        "actor/gem_env_faults": float(faults),
                        "actor/gem_quarantined_slots": float(len(vector.quarantined)),
                        "actor/gem_failed_rate": stats["failed_rate"],
                        **{f"actor/gem_{key}": value for key, value in failed.items()},
                        **{f"actor/gem_{key}": stats[key] for key in ("mean_return", "success_rate",
                                                                       "format_error_rate", "turns_per_episode")}}

    def vector_env(self, env_ids: list[str]) -> Any:
        """An async GEM vector environment with one slot per id; kept for the next step while
        the ids stay the same and no slot is quarantined."""
        from gem_core import make_vec

        vector = self._vector
        if vector is not None and (vector.env_ids != env_ids or vector.quarantined):
            vector.close()
            vector = None
        if vector is None:
            options = {"tokenizer": self.tokenizer} if self.rendered else None
            vector = make_vec(env_ids, wrappers=list(self.options.wrappers), wrapper_options=options, mode="async")
            self._vector = vector
        return vector

    def act(self, observations: list[str]) -> list[str]:
        """The policy :func:`gem_core.collect_episodes` calls: one batched generation over the
        episodes still running."""
        prompts = [observation if self.rendered else self.chat.first(observation) for observation in observations]
        prompt_ids = [self.tokenizer(prompt, add_special_tokens=False)["input_ids"] for prompt in prompts]
        budget = self.args.max_model_len
        room = [self.args.generate_max_length if budget is None else min(self.args.generate_max_length,
                                                                          budget - len(ids))
                for ids in prompt_ids]
        asked = [i for i, tokens in enumerate(room) if tokens > 0]
        actions = [""] * len(observations)  # a prompt without room: nothing is generated, the episode ends
        if asked:
            params = []
            for i in asked:
                limited = self.sampling_params.clone()
                limited.max_tokens = room[i]
                params.append(limited)
            outputs = self.generate([prompt_ids[i] for i in asked], params)
            for i, output in zip(asked, outputs):
                completion = output.outputs[0]
                token_ids = list(completion.token_ids)
                logprobs = [float(step[token].logprob) for step, token in zip(completion.logprobs, token_ids)]
                actions[i] = completion.text
                self._sampled[(observations[i], actions[i])].append(Sampled(
                    prompts[i], list(prompt_ids[i]), completion.text, token_ids, logprobs,
                    completion.finish_reason == "length"))
        return actions

    def transitions(self, episode: Any) -> list[GemTransition]:
        """The episode's turns as transitions, up to its first turn that had no room; a failed
        episode's with ``loss_mask`` False."""
        kept = []
        failure = "" if episode.failure is None else episode.failure.kind
        for turn in episode.turns:
            found = self._sampled.get((turn.observation, turn.action))
            if not found:
                break
            sampled = found.pop(0)
            kept.append(GemTransition(
                obs=turn.observation, action=turn.action, rewards=float(turn.reward), done=False,
                prompt=sampled.prompt, prompt_ids=sampled.prompt_ids, response=sampled.response,
                response_ids=sampled.response_ids, response_logprobs=sampled.logprobs,
                response_is_truncated=sampled.truncated, action_is_formatted=not sampled.truncated,
                loss_mask=not failure and not (sampled.truncated and self.args.ignore_no_eos), info={},
                env_id=episode.env_id, seed=episode.seed, failure=failure))
        if kept:
            kept[-1].done = True
        return kept
