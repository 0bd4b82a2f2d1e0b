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

What verl's loggers (``trainer.logger``) get: each step verl logs the episodes' turns
(``num_turns/*``: verl counts messages, two per turn), their returns (``critic/score/*``) and the
estimator's advantages (``critic/advantages/*``) itself. The episode's numbers
(:meth:`~gem_adapters.common.session.EnvSession.metrics`: ``turns``, ``terminated``, ``success``,
``format_error``) ride in ``extra_fields["reward_extra_info"]``, which verl logs for validation
(``val-aux/<data source>/<name>/...``) and writes with each step's dumped rollouts
(``trainer.rollout_data_dir``); its v1 training step logs a fixed set, with no way in for them.
"""

from __future__ import annotations

import math
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register
from verl.utils.profiler import simple_timer
from verl.utils.rollout_trace import rollout_trace_op

from gem_adapters.common.chat import ChatFormat
from gem_adapters.common.options import EpisodeOptions
from gem_adapters.common.session import STOP_REASONS as SESSION_STOPS
from gem_adapters.common.session import EnvSession
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
            return await self.play(session, sampling_params)

    async def play(self, session: EnvSession, sampling_params: dict[str, Any]) -> GemAgentLoopOutput:
        """Play one episode; returns the tokens, masks and per-turn rewards."""
        timing: dict[str, float] = {}
        with simple_timer("tool_calls", timing):
            observation = await session.reset()
        messages = [chat_message("user", observation, session.images)]
        multi_modal_data = {"images": list(session.images)} if session.images else {}
        self._assert_mm_supported(bool(multi_modal_data))
        images = multi_modal_data.get("images")
        tokens = await self.ct_build_initial_tokens(messages, images=images)
        num_messages = 1  # messages whose tokens are in the sequence
        mask: list[int] = []
        logprobs: list[float] | None = [] if sampling_params.get("logprobs") else None
        extra: dict[str, Any] = {}
        preempted = -1
        request_id = uuid4().hex  # one id per episode: the server keeps its prefix cached
        while True:
            budget = self.response_length - len(mask)
            if budget <= 0:
                stop = "response_length"
                break
            limit = min(budget, self.options.max_tokens_per_turn or budget)
            with simple_timer("generate_sequences", timing):
                output = await self.server_manager.generate(
                    request_id, prompt_ids=tokens, sampling_params={**sampling_params, "max_tokens": limit},
                    **({"image_data": images} if images else {}))
            preempted = merge_server_fields(extra, output, preempted)
            generated = list(output.token_ids)
            if not generated:
                if not session.rewards:
                    raise GemError("The model server returned no tokens for the first turn of an episode.")
                stop = "empty_response"
                break
            tokens, mask = tokens + generated, mask + [1] * len(generated)
            if logprobs is not None:
                if output.log_probs is None or len(output.log_probs) != len(generated):
                    raise GemError("The model server returned no log-probability for each generated token, "
                                   "though the rollout asked for them.")
                logprobs += list(output.log_probs)
            num_messages += 1
            with simple_timer("tool_calls", timing):
                outcome = await session.step(self.chat.answer_content(generated))
            if outcome.done:
                stop = outcome.stop
                break
            if session.images:
                raise GemError(f"{session.env_id} shows images after its first observation, which the gem "
                               "agent loop cannot give verl (its token builder adds images to the first prompt only).")
            between = self.chat.encode(self.chat.after_answer(generated, outcome.observation))
            if len(mask) + len(between) >= self.response_length:  # the observation leaves no room to answer
                stop = "response_length"
                break
            tokens, mask = tokens + between, mask + [0] * len(between)
            if logprobs is not None:
                logprobs += [0.0] * len(between)
            num_messages += 1

        rewards = session.rewards
        runs = len(turn_end_positions(mask))
        if runs != len(rewards):
            raise GemError(
                f"The episode has {len(rewards)} turns but its response mask holds {runs} runs of "
                "model tokens: a turn's tokens were merged with another's or dropped."
            )
        split = len(tokens) - len(mask)
        total = math.fsum(rewards)
        extra.update({
            "turn_scores": rewards,
            "gem_stop": stop,
            "reward_extra_info": session.metrics(),  # turns, terminated, success, format_error
        })
        return GemAgentLoopOutput(
            prompt_ids=tokens[:split],
            response_ids=tokens[split:],
            response_mask=mask,
            response_logprobs=logprobs,
            reward_score=total,
            turn_rewards=rewards,
            num_turns=num_messages,
            metrics={"generate_sequences": timing.get("generate_sequences", 0.0),
                     "tool_calls": timing.get("tool_calls", 0.0), "num_preempted": preempted},
            extra_fields=extra,
            multi_modal_data=multi_modal_data or None,
        )


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
