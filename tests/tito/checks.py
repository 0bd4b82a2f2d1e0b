"""The checks every path's trained sequences must pass.

A path hands over what its library trains on as :class:`Trained` sequences (every token, prompt
first; the loss mask; the reward the library carries for each run of masked tokens), and the
scripted sampler's record of every call (:class:`~tests.tito.script.Call`). The checks, numbered
as the documentation's account of token faithfulness (docs/training.md):

1. every run of loss-masked tokens is one sampled output, in order, and the ids to its left are
   the ids sent to the sampler for that turn;
2. no token the loss reads was not sampled (an end-of-turn token only where it was sampled);
3. a sequence's earlier tokens never change as turns are added;
4. the environment got each answer's text, whatever the answer's ids (the echo environment
   repeats it in the next observation);
5. where asked, each prompt is what a full render of the conversation gives;
6. after a turn without its end-of-turn token, the context holds that token, as an environment
   (mask 0) token;
7. turns = runs of masked tokens = rewards.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest

from tests.tito import echo
from tests.tito.script import KINDS, Call, Script


@dataclass
class Trained:
    """One sequence a library trains on."""

    seed: int  # the episode's
    ids: list[int]
    mask: list[int]  # 1 where the loss reads the token
    #: The reward the library carries for each run of masked tokens, in order (None: it carries none per run).
    rewards: list[float] | None = None


def runs(mask: Sequence[int]) -> list[tuple[int, int]]:
    """(start, end) of every run of 1s, end exclusive."""
    spans, start = [], None
    for i, bit in enumerate([*mask, 0]):
        if bit and start is None:
            start = i
        elif not bit and start is not None:
            spans.append((start, i))
            start = None
    return spans


def assert_faithful(trained: Sequence[Trained], script: Script, *,
                    render: Callable[[list[dict[str, str]]], list[int]] | None = None,
                    every_prompt_rendered: bool = False) -> None:
    """Checks 1-4, 6 and 7, and 5 when ``render`` (messages -> the ids of their full render with
    the generation prompt) is given: for every prompt when ``every_prompt_rendered`` (a path that
    renders each turn afresh), else up to an episode's first answer whose ids are not the
    tokenisation of its text (past it, a sequence that keeps the sampled ids cannot be a render)."""
    assert trained and script.calls, "nothing was trained or sampled"
    matched = assert_runs_are_sampled(trained, script)
    assert_prefixes_kept(matched, script)
    assert_end_of_turn_after_cut_turns(trained, script)
    assert_turns_runs_and_rewards_agree(trained, script)
    assert_actions_reached_the_environment(script)
    if render is not None:
        assert_full_render(script, render, every_prompt=every_prompt_rendered)


def assert_runs_are_sampled(trained: Sequence[Trained], script: Script) -> list[list[Call]]:
    """Checks 1 and 2; returns each sequence's calls, in the order of its runs."""
    unused = list(script.calls)
    matched = []
    for sequence in trained:
        assert len(sequence.ids) == len(sequence.mask), "ids and mask differ in length"
        calls = []
        for number, (start, end) in enumerate(runs(sequence.mask)):
            before, run = tuple(sequence.ids[:start]), tuple(sequence.ids[start:end])
            call = next((c for c in unused if c.seed == sequence.seed and c.prompt == before and c.output == run), None)
            if call is None:
                raise AssertionError(_not_sampled(sequence, number, start, end, script))
            unused.remove(call)
            calls.append(call)
        matched.append(calls)
    assert not unused, (f"{len(unused)} sampled answer(s) are in no trained sequence, e.g. game {unused[0].seed} "
                        f"round {unused[0].turn} ({unused[0].kind})")
    return matched


def assert_prefixes_kept(matched: Sequence[Sequence[Call]], script: Script) -> None:
    """Check 3: within a sequence, each turn's prompt starts with the previous turn's prompt and output."""
    for calls in matched:
        for earlier, later in zip(calls, calls[1:]):
            sent = earlier.prompt + earlier.output
            if later.prompt[:len(sent)] != sent:
                at = next(i for i, (a, b) in enumerate(zip(sent, later.prompt)) if a != b)
                raise AssertionError(
                    f"game {later.seed} round {later.turn}: the tokens of earlier turns changed at token {at}: "
                    f"{_text(script, sent[at:at + 12])!r} became {_text(script, later.prompt[at:at + 12])!r}")


def assert_actions_reached_the_environment(script: Script) -> None:
    """Check 4: each answer's text (without special tokens) is what the environment answered."""
    calls = {(c.seed, c.turn): c for c in script.calls}
    for (seed, turn), call in calls.items():
        if turn == 0:
            continue
        previous = calls[(seed, turn - 1)]
        expected = echo.observation(seed, turn, script.action(previous.output))
        shown = script.tokenizer.decode(list(call.prompt), skip_special_tokens=False)
        assert expected in shown, (f"game {seed} round {turn}: after the answer {_text(script, previous.output)!r} "
                                   f"({previous.kind}) the environment should say {expected!r}; the prompt ends "
                                   f"{shown[-160:]!r}")


def assert_end_of_turn_after_cut_turns(trained: Sequence[Trained], script: Script) -> None:
    """Check 6: a run not ended by the end-of-turn token is followed by it, unmasked."""
    for sequence in trained:
        for start, end in runs(sequence.mask):
            if end == len(sequence.ids) or sequence.ids[end - 1] == script.end_id:
                continue
            follows = sequence.ids[end:end + 6]
            assert follows[0] == script.end_id and sequence.mask[end] == 0, (
                f"game {sequence.seed}: the answer {_text(script, sequence.ids[start:end])!r} has no "
                f"{script.end_of_turn} of its own, and the context goes on with {_text(script, follows)!r} "
                f"(mask {sequence.mask[end:end + 6]}) instead of an unmasked {script.end_of_turn}")


def assert_turns_runs_and_rewards_agree(trained: Sequence[Trained], script: Script) -> None:
    """Check 7: every episode was sampled once per turn, its sequences hold one run per turn, and
    the rewards the library carries are the environment's, one per run."""
    turns: dict[int, list[int]] = defaultdict(list)
    for call in script.calls:
        turns[call.seed].append(call.turn)
    rewards: dict[int, list[float]] = defaultdict(list)
    run_counts: dict[int, int] = defaultdict(int)
    for sequence in trained:
        count = len(runs(sequence.mask))
        run_counts[sequence.seed] += count
        if sequence.rewards is not None:
            assert len(sequence.rewards) == count, (f"game {sequence.seed}: {count} runs of model tokens but "
                                                    f"{len(sequence.rewards)} rewards")
            rewards[sequence.seed] += list(sequence.rewards)
    for seed, sampled in turns.items():
        assert sorted(sampled) == list(range(echo.TURNS)), f"game {seed}: sampled rounds {sorted(sampled)}"
        assert run_counts[seed] == echo.TURNS, f"game {seed}: {run_counts[seed]} runs for {echo.TURNS} turns"
        if seed in rewards:
            expected = [echo.reward(turn) for turn in range(1, echo.TURNS + 1)]
            assert rewards[seed] == pytest.approx(expected, abs=1e-6), f"game {seed}: rewards {rewards[seed]}"
    assert {c.kind for c in script.calls} == set(KINDS)


def assert_full_render(script: Script, render: Callable[[list[dict[str, str]]], list[int]], *,
                       every_prompt: bool) -> None:
    """Check 5."""
    by_seed: dict[int, dict[int, Call]] = defaultdict(dict)
    for call in script.calls:
        by_seed[call.seed][call.turn] = call
    for seed, calls in by_seed.items():
        messages = [{"role": "user", "content": echo.first_observation(seed)}]
        for turn in range(len(calls)):
            call = calls[turn]
            expected = tuple(render(messages))
            if call.prompt != expected:
                at = next((i for i, (a, b) in enumerate(zip(call.prompt, expected)) if a != b),
                          min(len(call.prompt), len(expected)))
                raise AssertionError(
                    f"game {seed} round {turn}: the prompt differs from a full render of the conversation at "
                    f"token {at}: sent {_text(script, call.prompt[at:at + 16])!r}, rendered "
                    f"{_text(script, expected[at:at + 16])!r}")
            if not (every_prompt or script.canonical(call.output)):
                break
            action = script.action(call.output)
            messages += [{"role": "assistant", "content": action},
                         {"role": "user", "content": echo.observation(seed, turn + 1, action)}]


def _text(script: Script, ids: Sequence[int]) -> str:
    return script.tokenizer.decode(list(ids), skip_special_tokens=False)


def _not_sampled(sequence: Trained, number: int, start: int, end: int, script: Script) -> str:
    """What went wrong with run ``number`` of ``sequence``, next to the sampling call it should be."""
    ids, run = tuple(sequence.ids), tuple(sequence.ids[start:end])
    message = (f"game {sequence.seed}: trained run {number} {_text(script, run)!r} (tokens {start}-{end}) is not "
               "an output of the sampler in the context it was sampled in")
    candidates = [c for c in script.calls if c.seed == sequence.seed]
    same = [c for c in candidates if c.prompt == ids[:start]]
    if same:
        call = same[0]
        return (message + f"; in this very context the sampler (round {call.turn}, {call.kind}) returned ids "
                f"{list(call.output)} {_text(script, call.output)!r}, and the sequence trains ids {list(run)}")
    if not candidates:
        return message + "; the sampler never saw this game"

    def shared(call: Call) -> int:
        return next((i for i, (a, b) in enumerate(zip(call.prompt, ids)) if a != b), min(len(call.prompt), start))

    call = max(candidates, key=shared)
    at = shared(call)
    return (message + f"; no call was sent its context: the closest (round {call.turn}, {call.kind}) departs from "
            f"it at token {at}: trained {_text(script, ids[at:at + 12])!r}, "
            f"sent {_text(script, call.prompt[at:at + 12])!r}")
