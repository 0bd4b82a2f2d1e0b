"""GEM environments behind RL2 0.0.2's environment hook (``rollout.env_path``).

RL2 executes the file named by ``rollout.env_path`` on rank 0 and, for every data row without a
``prompt``, awaits ``reset(extra_info) -> (state_text, extra_info)`` and then, once per model turn,
``step(state_text, action_text, extra_info) -> {next_state, reward, score, done, extra_info}``.
``gem rl2 config`` writes such a file; it binds :func:`environment` to the model and episode
options of the run. For each row:

* the row's ``extra_info`` (``env_id``, ``seed``) names the environment and its seed; an
  :class:`~gem_adapters.common.session.EnvSession` makes it with the configured wrappers, honours
  ``max_turns`` and ``episode_deadline``, and fails the episode if the environment breaks or the
  deadline passes;
* the first observation becomes the prompt through the model's chat template, and each next
  observation follows the answer as a user message rendered by the same template, so
  ``next_state`` extends ``state_text + action_text`` and RL2 keeps the episode in one sequence;
* the environment gets the answer's text without special tokens, and the turn's reward is the
  step's ``reward``, which RL2 puts on the turn's last action token (also its ``score``).

RL2's hook hands over the answer as text only, which cannot tell an end-of-turn token from the
same characters written as ordinary tokens, nor a cut answer ending in ``<`` from one that ended
its turn. So the environment file also wraps RL2's ``async_generate`` (:func:`record_answers`):
each episode's step reads the token ids of the answer it is given, and an answer cut before its
end-of-turn token gets that token before the next observation.

**A failed episode** ends at the step that failed (``done``), with reward NaN on that turn's last
action token: RL2 keeps the environment's reward per token and nothing else, so "not a number"
is how the failure reaches GEM's ``compute_advantages`` on rank 0
(:mod:`gem_adapters.rl2.advantages`), which leaves the episode out of its statistics and sets its
``action_mask`` to 0 (no token of it trains in RL2's actor). Its ``score`` is 0. Only GEM's
estimator reads that mark: with RL2's own (no ``gem.estimator``) a failed episode is trained on
with reward 0, as RL2 has no way to leave it out, and the file says so once (a warning). The
failure's kind is kept for GEM's log line (:mod:`gem_adapters.rl2.failures`). RL2 generates on its
own and calls ``step`` between its generations, so a deadline that passes while RL2 generates ends the
episode at the next step; RL2 0.0.2 has no deadline of its own over a rollout.

RL2 git HEAD replaced this hook with ``generate(config, tokenizer, router_url, sample)``, in which
the environment file generates too; this adapter serves RL2 0.0.2 only.
"""

from __future__ import annotations

import logging
import math
import weakref
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from gem_adapters.common.chat import ChatFormat
from gem_adapters.common.options import EpisodeOptions
from gem_adapters.common.session import EnvSession
from gem_adapters.rl2.failures import FAILURES
from gem_core.errors import GemError

logger = logging.getLogger("gem_adapters.rl2")

#: The key of ``extra_info`` that carries a row's running episode from ``reset`` to ``step``.
EPISODE_KEY = "gem_episode"
#: The text and token ids of the answer RL2 generated last in this episode's task.
LAST_ANSWER: ContextVar[tuple[str, list[int]] | None] = ContextVar("gem_rl2_last_answer", default=None)


class Episode:
    """A row's running session; the environment is closed when the episode ends, or when RL2 drops
    the row's ``extra_info`` (RL2's own ``rollout.max_turns`` cut it)."""

    def __init__(self, session: EnvSession):
        self.session = session
        self._close = weakref.finalize(self, session.close)

    def close(self) -> None:
        self._close()


class GemEnvironment:
    """The ``reset`` and ``step`` of an environment file, for one model and set of episode options."""

    def __init__(self, model: str, options: EpisodeOptions, tokenizer: Any = None):
        self.model, self.options, self._tokenizer = model, options, tokenizer
        self._chat: ChatFormat | None = None

    @property
    def chat(self) -> ChatFormat:
        """The model's chat format, read from its tokenizer once (as RL2 loads it)."""
        if self._chat is None:
            tokenizer = self._tokenizer
            if tokenizer is None:
                from transformers import AutoTokenizer

                tokenizer = AutoTokenizer.from_pretrained(self.model, trust_remote_code=True)
            self._chat = ChatFormat(tokenizer)
            self._chat.warn_if_rewriting("RL2")
        return self._chat

    async def reset(self, extra_info: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
        env_id, seed = episode_start(extra_info)
        session = EnvSession.start(env_id, seed, self.options)
        try:
            state_text = self.chat.first(await session.reset())
        except BaseException:
            session.close()
            raise
        return state_text, {**dict(extra_info or {}), EPISODE_KEY: Episode(session)}

    async def step(self, state_text: str, action_text: str, extra_info: Mapping[str, Any]) -> dict[str, Any]:
        episode = extra_info.get(EPISODE_KEY) if isinstance(extra_info, Mapping) else None
        if not isinstance(episode, Episode):
            raise GemError("RL2 stepped a GEM environment that was never reset: its data row has a "
                           "'prompt' or 'messages' field, so RL2 skipped reset. Write the rows with "
                           "`gem rl2 config` (extra_info only).")
        answer = answer_ids(action_text)
        session = episode.session
        outcome = await session.step(self.chat.answer_content(answer))
        next_state = state_text + action_text
        if outcome.done:
            episode.close()
        else:
            next_state += self.chat.after_answer(answer, outcome.observation)
        reward = outcome.reward
        if session.failure is not None:
            FAILURES.append(session.failure.kind)
            reward = failed_reward()
        return {"next_state": next_state, "reward": reward, "score": 0.0 if session.failure else reward,
                "done": outcome.done, "extra_info": extra_info}


_warned = False  # that RL2's own estimator trains on failed episodes


def failed_reward() -> float:
    """The reward that marks a failed episode's last turn: NaN, which GEM's estimator reads as
    the failure, or 0.0 (with a warning, once) under RL2's own estimator, which cannot leave the
    episode out and would turn a NaN into NaN advantages."""
    from gem_adapters.rl2.advantages import installed

    if installed() is not None:
        return math.nan
    global _warned
    if not _warned:
        _warned = True
        logger.warning("A GEM episode failed, and RL2's own estimator (no gem.estimator) cannot leave it out of "
                       "training: it is trained on with reward 0. Train with gem_adapters.rl2.train and "
                       "gem.estimator=NAME to leave failed episodes out.")
    return 0.0


def answer_ids(action_text: str) -> list[int]:
    """The token ids of the answer RL2 handed over as ``action_text``."""
    recorded = LAST_ANSWER.get()
    if recorded is None or recorded[0] != action_text:
        raise GemError("GEM's RL2 environment did not see the token ids of the answer it was given: RL2's "
                       "async_generate is not the one the environment file wraps (see record_answers).")
    return recorded[1]


def record_answers() -> None:
    """Wrap ``RL2.workers.rollout.async_generate`` (once) so that it keeps, for the episode's task,
    the text and token ids of the answer it returns, which :func:`answer_ids` reads in ``step``."""
    import RL2.workers.rollout as rollout

    generate = rollout.async_generate
    if getattr(generate, "gem_records_answers", False):
        return

    async def async_generate(*args: Any, **kwargs: Any) -> Any:
        response = await generate(*args, **kwargs)
        ids = [int(token) for _, token, _ in response["meta_info"]["output_token_logprobs"]]
        LAST_ANSWER.set((response["text"], ids))
        return response

    async_generate.gem_records_answers = True
    rollout.async_generate = async_generate


def episode_start(extra_info: Mapping[str, Any] | None) -> tuple[str, int | None]:
    """The (environment id, seed) a row's ``extra_info`` names."""
    if not isinstance(extra_info, Mapping) or not extra_info.get("env_id"):
        raise GemError(f"An RL2 data row for GEM needs extra_info with 'env_id' and 'seed', not "
                       f"{extra_info!r}; write the rows with `gem rl2 config`.")
    seed = extra_info.get("seed")
    return str(extra_info["env_id"]), None if seed is None else int(seed)


def environment(model: str, options: Mapping[str, Any] | None = None, *, tokenizer: Any = None) -> GemEnvironment:
    """The environment of an environment file: ``model`` names the tokenizer whose chat template
    formats the turns (RL2's ``actor.model_name``), ``options`` the episode options (``wrappers``,
    ``max_turns``, ``max_tokens_per_turn``, ``episode_deadline``), checked here."""
    checked = EpisodeOptions.from_config(options, where="the options of the GEM environment file")
    record_answers()
    return GemEnvironment(model, checked, tokenizer)
