"""What a model sampled in a turn, token for token, where it was recorded as it was sampled.

An episode played by an agent program that GEM does not run (through GEM's gateway, ``gem
gateway``) cannot be re-tokenised into the sequences the model saw: the program owns its prompts.
So each of its turns carries the record of its model call in ``Turn.info["sampled"]``
(:data:`INFO_KEY`), a plain mapping that saves and loads with the episode:

``prompt_ids``
    every token id the model was given for the call (the whole context);
``response_ids``
    the ids it sampled, its stop token included when it wrote one;
``logprobs``
    the log-probability of each sampled id under the sampling model (None when not recorded);
``segment``
    which token sequence of the episode the call extends (0, 1, ...);
``reason``
    why the call opened a new segment (the program rewrote its history: dropped reasoning, a
    summary, an edited message; the tools changed), None when it continues the last one.

Within a segment each call's prompt is the previous call's prompt and response plus the chat
template's continuation, so a segment is one sequence in which exactly the sampled ids are
trained (:func:`segments`): loss mask 1 on them, 0 on the prompt and the continuations. A new
segment renders the conversation whole; the answers it shows again are context (mask 0), so no
token is trained twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gem_core.errors import GemError

INFO_KEY = "sampled"


@dataclass(frozen=True)
class SampledCall:
    """One model call as sampled (see the module documentation for the fields)."""

    prompt_ids: list[int]
    response_ids: list[int]
    logprobs: list[float] | None = None
    segment: int = 0
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.logprobs is not None and len(self.logprobs) != len(self.response_ids):
            raise GemError(f"A sampled call has {len(self.response_ids)} response ids but {len(self.logprobs)} "
                           "log-probabilities: give one per sampled id.")

    def to_info(self) -> dict[str, Any]:
        # not dataclasses.asdict, which copies every id through Python calls (milliseconds per long prompt)
        return {"prompt_ids": list(self.prompt_ids), "response_ids": list(self.response_ids),
                "logprobs": None if self.logprobs is None else list(self.logprobs), "segment": self.segment,
                "reason": self.reason}

    @classmethod
    def from_info(cls, value: Any) -> SampledCall:
        if isinstance(value, SampledCall):
            return value
        try:
            return cls(prompt_ids=[int(i) for i in value["prompt_ids"]],
                       response_ids=[int(i) for i in value["response_ids"]],
                       logprobs=None if value.get("logprobs") is None else [float(x) for x in value["logprobs"]],
                       segment=int(value.get("segment", 0)), reason=value.get("reason"))
        except (KeyError, TypeError, ValueError) as e:
            raise GemError(f'Turn.info["{INFO_KEY}"] is not a sampled call record ({type(e).__name__}: {e}).') from None


def sampled_call(turn: Any) -> SampledCall | None:
    """The record of ``turn``'s model call (a :class:`~gem_core.episodes.Turn`), or None."""
    value = turn.info.get(INFO_KEY)
    return None if value is None else SampledCall.from_info(value)


@dataclass
class Segment:
    """One token sequence of an episode: ``ids`` (the first call's prompt, then every sampled
    response and the continuations between them), ``mask`` (1 exactly on sampled ids),
    ``logprobs`` (per id: the sampled ones' where recorded, 0.0 elsewhere; None when a call of
    the segment recorded none), the indices of its ``turns``, and why it opened (``reason``)."""

    ids: list[int]
    mask: list[int]
    logprobs: list[float] | None
    turns: list[int] = field(default_factory=list)
    reason: str | None = None

    @property
    def prompt_length(self) -> int:
        """Tokens before the first sampled one."""
        return self.mask.index(1) if 1 in self.mask else len(self.ids)

    def spans(self) -> list[tuple[int, int]]:
        """(start, end) of each turn's sampled ids in ``ids``, end exclusive."""
        found, start = [], None
        for i, bit in enumerate([*self.mask, 0]):
            if bit and start is None:
                start = i
            elif not bit and start is not None:
                found.append((start, i))
                start = None
        return found


def segments(turns: Sequence[Any]) -> list[Segment]:
    """The token sequences of an episode's turns (:class:`~gem_core.episodes.Turn`), each turn
    with a sampled call record in one of them (a turn without a record, or whose call sampled
    nothing, is left out). A call that says it continues a segment but whose prompt does not
    extend that segment's tokens is an error: the record was not made as this module says."""
    found: list[Segment] = []
    current: Segment | None = None
    current_number: int | None = None
    for index, turn in enumerate(turns):
        call = sampled_call(turn)
        if call is None or not call.response_ids:
            continue
        if current is not None and call.segment == current_number:
            sent = len(current.ids)
            if call.prompt_ids[:sent] != current.ids:
                raise GemError(f"Turn {index} continues segment {call.segment}, but its prompt does not extend the "
                               "segment's tokens (a sampled call record must continue from the ids sampled).")
            between = call.prompt_ids[sent:]
            current.ids += between + call.response_ids
            current.mask += [0] * len(between) + [1] * len(call.response_ids)
            if current.logprobs is not None and call.logprobs is not None:
                current.logprobs += [0.0] * len(between) + list(call.logprobs)
            else:
                current.logprobs = None
            current.turns.append(index)
            continue
        current = Segment(ids=list(call.prompt_ids) + list(call.response_ids),
                          mask=[0] * len(call.prompt_ids) + [1] * len(call.response_ids),
                          logprobs=None if call.logprobs is None else [0.0] * len(call.prompt_ids) + list(call.logprobs),
                          turns=[index], reason=call.reason)
        current_number = call.segment
        found.append(current)
    return found
