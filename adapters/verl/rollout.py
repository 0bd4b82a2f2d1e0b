"""The ``gem`` agent loop: one GEM environment per sample, played turn by turn through verl's
server manager.

Each dataset row names an environment and a seed (``extra_info.env_id`` and ``extra_info.seed``;
``gem verl config`` writes such rows). The loop makes that environment with the wrappers of the
config's ``gem`` section, resets it with the seed, and shows the observation to the model as a
user message. Then, turn after turn: generate with verl's server manager (token ids in, token ids
out), step the environment with the decoded text, and append the next observation as a user
message, until the episode ends, ``gem.max_turns`` is reached or the response budget
(``rollout.response_length``) runs out.

Tokens: the first prompt is verl's (its continuous-token builder renders the first message, with
the processor for a visual task, and left-truncates a prompt over ``rollout.prompt_length``). After
that GEM builds the sequence, where verl lets the agent loop decide: each answer's token ids as the
server returned them, then the text the chat template puts between that answer and the next
(:class:`~gem_adapters.common.chat.ChatFormat`): the rest of the answer's turn (the newline after
``<|im_end|>``, which verl's own builders add for a few registered model types only, and the
end-of-turn token itself when the answer was cut by the token limit), the observation as a user
message, and the generation prompt. So, for any model type, the context of every turn is what a
full render of the conversation gives, except with templates that render earlier answers otherwise
than the model wrote them (Qwen3's drops past reasoning): an episode is one sequence, so the
answers stay as sampled, and the loop says so once (a warning).

A visual task's first observation goes to the model with its images (``info["images"]``):
the user message holds image parts (:func:`gem_core.images.chat_message`), verl's
vision-language token builder renders them through the model's processor, the server gets them as
``image_data``, and the output's ``multi_modal_data`` carries them into training (the images as
the environment drew them: the processor resizes them). Images in later observations are refused: verl's
builder adds images only to the first prompt.

The output's ``response_mask`` is 1 on the model's tokens and 0 on what the environment and the
chat template inserted; ``rm_scores`` holds each turn's reward on that turn's last model token,
which is where GEM's estimators inside verl (``algorithm.adv_estimator=rebn``) read per-turn
rewards from. Needs verl's v1 trainer (``trainer.use_v1=true``, verl's default).

**A failed episode** (its environment broke, or ``gem.episode_deadline`` passed; see
:mod:`gem_adapters.common.session`) keeps the tokens it played, with ``response_mask`` 0 on every
one of them and no reward. verl trains with ``response_mask`` as the loss mask, so none of its
tokens reaches the gradient (verl's ``agg_loss`` also leaves fully masked rows out of its
per-sequence means), and GEM's estimators, which see only token tensors, read a row without a
model turn as a failed episode and leave it out of their statistics (ReBN's mean and std, a
group's baseline). ``extra_fields["gem_failure"]`` holds the failure (kind, error, phase, turn)
and ``gem_stop`` is ``failed``. The deadline covers the whole episode (the environment's calls
and the server's generations: the loop is cancelled at the deadline, which abandons the request
it awaits); verl has no deadline of its own over a step's rollouts, so with GEM's a step waits at
most one episode deadline for its slowest row.

What verl's loggers (``trainer.logger``) get: each step verl logs the episodes' turns
(``num_turns/*``: verl counts messages, two per turn), their returns (``critic/score/*``) and the
estimator's advantages (``critic/advantages/*``) itself. The episode's numbers
(:meth:`~gem_adapters.common.session.EnvSession.metrics`: ``turns``, ``terminated``, ``success``,
``format_error``, ``failed`` and ``failed_<kind>``, whose means are the shares of failed
episodes) ride in ``extra_fields["reward_extra_info"]``, which verl logs for validation
(``val-aux/<data source>/<name>/...``) and writes with each step's dumped rollouts
(``trainer.rollout_data_dir``); its v1 training step logs a fixed set, with no way in for them.
GEM's estimator logs the failed rows it left out of each training batch (logger
``gem_adapters.verl``, see :mod:`gem_adapters.verl.advantages`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
from verl.utils.profiler import simple_timer
from verl.utils.rollout_trace import rollout_trace_op

from gem_adapters.common.chat import ChatFormat
from gem_adapters.common.options import EpisodeOptions
from gem_adapters.common.session import FAILED, EnvSession
from gem_adapters.common.session import STOP_REASONS as SESSION_STOPS
from gem_adapters.common.turns import rewards_on_turn_ends, turn_end_positions
from gem_adapters.verl import AGENT_LOOP_NAME
from gem_core.errors import GemError
from gem_core.images import chat_message

#: Why an episode stopped, kept in ``extra_fields["gem_stop"]``: the session's reasons (see
#: :mod:`gem_adapters.common.session`) or verl's token budget.
STOP_REASONS = (*SESSION_STOPS, "response_length", "empty_response")


class GemAgentLoopOutput(AgentLoopOutput):
    """An agent-loop output whose ``rm_scores`` carry one reward per turn."""

    turn_rewards: list[float] = []

    def as_dict(self) -> dict[str, Any]:
        output = super().as_dict()
        output.pop("turn_rewards", None)
        output["rm_scores"] = rewards_on_turn_ends(output["response_mask"], self.turn_rewards)
        return output


@register(AGENT_LOOP_NAME)
class GemAgentLoop(AgentLoopBase):
    """Plays one GEM environment per sample; see the module documentation."""

    def __init__(self, *args: Any, tools: Any = None, **kwargs: Any):
        super().__init__(*args, **kwargs)  # ``tools``: verl's tool list; GEM's tools are wrappers
        if not self.config.trainer.get("use_v1", True):
            raise GemError(
                "The gem agent loop needs verl's v1 trainer (trainer.use_v1=true): the legacy "
                "trainer keeps only one reward per sample, which would lose the per-turn rewards."
            )
        self.options = EpisodeOptions.from_config(self.config.get("gem"),
                                                  where="the `gem` section of the verl config")
        self.response_length = int(self.rollout_config.response_length)
        template = getattr(self.processor, "chat_template", None) if self.processor is not None else None
        self.chat = ChatFormat(self.tokenizer, chat_template=template, template_kwargs=self.apply_chat_template_kwargs)
        self.chat.warn_if_rewriting("verl")

    @rollout_trace_op
    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> GemAgentLoopOutput:
        env_id, seed = episode_source(kwargs)
        with EnvSession.start(env_id, seed, self.options) as session:
            played = Played()
            await session.within_deadline(self.play(session, sampling_params, played))
            if session.failure is not None:
                return await self.failed_output(session, played)
            return self.output(session, played)

    async def play(self, session: EnvSession, sampling_params: dict[str, Any], played: Played) -> None:
        """Play one episode into ``played``: the tokens, masks and why it stopped."""
        timing = played.timing
        played.logprobs = [] if sampling_params.get("logprobs") else None
        with simple_timer("tool_calls", timing):
            observation = await session.reset()
        if session.failure is not None:
            return
        messages = [chat_message("user", observation, session.images)]
        played.multi_modal_data = {"images": list(session.images)} if session.images else {}
        self._assert_mm_supported(bool(played.multi_modal_data))
        images = played.multi_modal_data.get("images")
        played.tokens = await self.ct_build_initial_tokens(messages, images=images)
        played.prompt_length = len(played.tokens)
        request_id = uuid4().hex  # one id per episode: the server keeps its prefix cached
        while True:
            budget = self.response_length - len(played.mask)
            if budget <= 0:
                played.stop = "response_length"
                return
            limit = min(budget, self.options.max_tokens_per_turn or budget)
            with simple_timer("generate_sequences", timing):
                output = await self.server_manager.generate(
                    request_id, prompt_ids=played.tokens, sampling_params={**sampling_params, "max_tokens": limit},
                    **({"image_data": images} if images else {}))
            played.preempted = merge_server_fields(played.extra, output, played.preempted)
            generated = list(output.token_ids)
            if not generated:
                if not session.rewards:
                    raise GemError("The model server returned no tokens for the first turn of an episode.")
                played.stop = "empty_response"
                return
            played.add(generated, model=True)
            if played.logprobs is not None:
                if output.log_probs is None or len(output.log_probs) != len(generated):
                    raise GemError("The model server returned no log-probability for each generated token, "
                                   "though the rollout asked for them.")
                played.logprobs[-len(generated):] = list(output.log_probs)
            played.num_messages += 1
            with simple_timer("tool_calls", timing):
                outcome = await session.step(self.chat.answer_content(generated))
            if outcome.done:
                played.stop = outcome.stop
                return
            if session.images:
                raise GemError(f"{session.env_id} shows images after its first observation, which the gem "
                               "agent loop cannot give verl (its token builder adds images to the first prompt only).")
            between = self.chat.encode(self.chat.after_answer(generated, outcome.observation))
            if len(played.mask) + len(between) >= self.response_length:  # the observation leaves no room to answer
                played.stop = "response_length"
                return
            played.add(between, model=False)
            played.num_messages += 1

    def output(self, session: EnvSession, played: Played) -> GemAgentLoopOutput:
        """The output of an episode that did not fail: its tokens, masks and per-turn rewards."""
        rewards = session.rewards
        runs = len(turn_end_positions(played.mask))
        if runs != len(rewards):
            raise GemError(
                f"The episode has {len(rewards)} turns but its response mask holds {runs} runs of "
                "model tokens: a turn's tokens were merged with another's or dropped."
            )
        return self._output(session, played, played.mask, rewards, math.fsum(rewards))

    async def failed_output(self, session: EnvSession, played: Played) -> GemAgentLoopOutput:
        """The output of a failed episode: what was played, with every token's mask 0 (no loss,
        and no turn for GEM's estimators, which leave the row out of their statistics), no
        reward, and the failure in ``extra_fields["gem_failure"]``."""
        if played.tokens is None:  # it failed before its first prompt: one says so
            played.tokens = await self.ct_build_initial_tokens(
                [{"role": "user", "content": f"The episode failed ({session.error})."}])
            played.prompt_length = len(played.tokens)
        if not played.mask:  # verl needs a response token
            played.add([self.tokenizer.eos_token_id], model=False)
        played.stop = FAILED
        return self._output(session, played, [0] * len(played.mask), [], 0.0)

    def _output(self, session: EnvSession, played: Played, mask: list[int], rewards: list[float],
                total: float) -> GemAgentLoopOutput:
        tokens = played.tokens or []
        failure = session.failure
        played.extra.update({
            "turn_scores": rewards,
            "gem_stop": played.stop,
            "gem_failure": None if failure is None else dataclasses.asdict(failure),
            "reward_extra_info": session.metrics(),  # turns, terminated, success, format_error, failed...
        })
        return GemAgentLoopOutput(
            prompt_ids=tokens[:played.prompt_length],
            response_ids=tokens[played.prompt_length:],
            response_mask=mask,
            response_logprobs=played.logprobs,
            reward_score=total,
            turn_rewards=rewards,
            num_turns=played.num_messages,
            metrics={"generate_sequences": played.timing.get("generate_sequences", 0.0),
                     "tool_calls": played.timing.get("tool_calls", 0.0), "num_preempted": played.preempted},
            extra_fields=played.extra,
            multi_modal_data=played.multi_modal_data or None,
        )


@dataclass
class Played:
    """An episode's sequence as it is played: ``tokens`` (the prompt's, then the response's),
    the response ``mask`` (1 on model tokens) and ``logprobs``, and why it stopped. Kept outside
    the play so that an episode cut by its deadline still has what it played."""

    tokens: list[int] | None = None
    prompt_length: int = 0
    mask: list[int] = field(default_factory=list)
    logprobs: list[float] | None = None
    num_messages: int = 1  # messages whose tokens are in the sequence
    stop: str | None = None
    preempted: int = -1
    extra: dict[str, Any] = field(default_factory=dict)
    timing: dict[str, float] = field(default_factory=dict)
    multi_modal_data: dict[str, Any] = field(default_factory=dict)

    def add(self, ids: list[int], *, model: bool) -> None:
        self.tokens = (self.tokens or []) + list(ids)
        self.mask += [int(model)] * len(ids)
        if self.logprobs is not None:
            self.logprobs += [0.0] * len(ids)


def episode_source(row: dict[str, Any]) -> tuple[str, int | None]:
    """The environment id and seed of a dataset row."""
    info = row.get("extra_info") or {}
    env_id = info.get("env_id") if hasattr(info, "get") else None
    if not isinstance(env_id, str) or not env_id:
        raise GemError(
            "A dataset row for the gem agent loop needs extra_info.env_id (and extra_info.seed); "
            "write the dataset with `gem verl config`."
        )
    seed = info.get("seed")
    return env_id, None if seed is None else int(seed)


def merge_server_fields(extra: dict[str, Any], output: Any, preempted: int) -> int:
    """Keep the server's extra fields (weight versions for off-policy control: the first turn's
    ``min_global_steps``, the latest ``max_global_steps``); returns the preemption count so far."""
    fields = dict(getattr(output, "extra_fields", None) or {})
    for key, value in fields.items():
        if key not in extra or (key == "max_global_steps" and value is not None):
            extra[key] = value
    count = getattr(output, "num_preempted", None)
    if count is None:
        return preempted
    return count if preempted < 0 else preempted + count
