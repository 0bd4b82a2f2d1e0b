"""The reward-hacking probe: known exploits played against an environment, each compared with
honest plays that solve nothing.

A policy trained against a reward finds whatever it pays for: many answers at once, the prompt
echoed back, malformed answer tags, floods of tool calls, files left where the tests run, objects
equal to everything. :func:`probe` plays every registered exploit (``gem_register_exploits``;
GEM's generic ones here, the terminal and code packs' in theirs) on a few seeds and reports what
each earned.

**What "earned" means.** An exploit gives :class:`Attack` s: the actions to play, and *controls*,
honest plays of the same shape that solve nothing (the same answer once instead of 64 times; each
of many candidate answers alone). Every attack has two more kinds of control: the environment's
own random policy, and each answer the prompt shows (``Your move: \\boxed{cooperate} or
\\boxed{defect}``) played every turn, since a fixed honest strategy may beat random play (always
defecting does, in the prisoner's dilemma). A control that solved the task (``info["correct"]``)
is no honest play that solves nothing, and is left out. Each play starts from ``reset(seed)``
(the same episode, by the environment contract), plays its actions in order, the last repeated,
until the episode ends or ``turns`` steps; its return is the sum of its rewards. An attack *earned
a reward* when its return is positive and above the best of its controls' returns: it was paid
more than a wrong answer, a random move or doing nothing is paid on the same episode. Legitimate
partial credit (a small reward for a valid move, a wrong but well-formed answer's score) is in the
controls, so it does not count; penalties do not either (the probe looks for pay, not for smaller
penalties). In a multi-agent environment each seat attacks in turn while the others play their
random policy.

:class:`HackResult` holds each attack's outcome; ``gem check ENV_ID --hacks`` prints them.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gem_core.core import BaseEnv, Env
from gem_core.errors import GemError

SAMPLE = "\x00gem:sample\x00"  #: an action of an Attack meaning "the environment's random action"
TOLERANCE = 1e-9
DEFAULT_SEEDS = (0, 1)
DEFAULT_TURNS = 8
CANDIDATES = 64  # answers the many-answers attacks offer at once
SINGLES = 16  # of them, played alone as controls
FILLER = "lorem ipsum dolor sit amet " * 10_000  # the enormous answer's padding (about 270 KB)


@dataclass(frozen=True)
class Context:
    """What an exploit sees to make its attacks: the environment just reset with ``seed``
    (``env.unwrapped`` tells its family), the observation and info of that reset, and ``sample``,
    one action of the environment's random policy (a well-formed, usually wrong, answer)."""

    env: Any
    observation: str
    info: dict
    sample: str
    seed: int


@dataclass(frozen=True)
class Attack:
    """An exploit's play: ``actions`` in order, the last one repeated until the episode ends;
    ``controls`` are honest plays of the same shape (each a sequence of actions, played the same
    way) that the attack must out-earn. :data:`SAMPLE` stands for a random action.

    ``read``, for an attack that reads what holds the answers (see :mod:`gem_core.reading`), takes
    the play's observations and its last ``info`` and returns what they prove it read. Such an
    attack is judged by that alone: it earned something when it read anything, whatever it was
    paid (a reading's answer may get a scorer's partial credit for its shape)."""

    name: str
    actions: tuple[str, ...]
    controls: tuple[tuple[str, ...], ...] = ()
    read: Callable[[Sequence[Any], dict], Sequence[str]] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class HackResult:
    """One attack on one seat of one episode: its return, the best return of its controls
    (``baseline``), the actions it played and the last ``info`` it got; for a ``reading`` attack,
    what it proved it ``read``; ``error`` when it could not be played."""

    exploit: str
    attack: str
    seed: int
    reward: float
    baseline: float
    actions: tuple[str, ...]
    agent: str | None = None
    error: str = ""
    info: dict = field(default_factory=dict, compare=False)
    read: tuple[str, ...] = ()
    reading: bool = False

    @property
    def paid(self) -> bool:
        """Whether the attack was paid: a positive return above its baseline."""
        return not self.error and self.reward > max(self.baseline, 0.0) + TOLERANCE

    @property
    def earned(self) -> bool:
        """Whether the attack succeeded: a reading attack when it read what holds the answers,
        any other when it was paid."""
        return not self.error and (bool(self.read) if self.reading else self.paid)

    def describe(self) -> str:
        where = f"seed {self.seed}" + (f", agent {self.agent}" if self.agent else "")
        if self.error:
            return f"{self.attack} ({where}): could not be played: {self.error}"
        read = ""
        if self.read:
            shown = ", ".join(self.read[:3]) + (f" and {len(self.read) - 3} more" if len(self.read) > 3 else "")
            read = f" read what it must not see ({shown}) and"
        return (f"{self.attack} ({where}){read} earned {self.reward:g} where honest plays earned {self.baseline:g}; "
                f"it played {_short(' / '.join(self.actions))}")


def probe(env: str | Callable[[], BaseEnv], *, seeds: Sequence[int] = DEFAULT_SEEDS, turns: int = DEFAULT_TURNS,
          exploits: Iterable[str] | None = None, **make_kwargs: Any) -> list[HackResult]:
    """Play every registered exploit (or those named in ``exploits``) against an environment, an
    id (made with ``make_kwargs``) or a callable making one, on each of ``seeds``, for at most
    ``turns`` steps a play; one :class:`HackResult` per attack (and seat) and seed. See the
    module for what counts as earned."""
    from gem_core.registry import EXPLOITS, make

    if isinstance(env, str):
        env_id = env
        env = lambda: make(env_id, **make_kwargs)  # noqa: E731
    elif make_kwargs:
        raise GemError(f"probe takes constructor keywords ({', '.join(make_kwargs)}) only with an id.")
    if not callable(env):
        raise GemError(f"probe takes an environment id or a callable making one, not {type(env).__name__}.")
    if turns < 1:
        raise GemError(f"turns must be at least 1, not {turns}.")
    names = EXPLOITS.names() if exploits is None else list(exploits)
    for name in names:
        EXPLOITS.component(name)  # an unknown name is an error here, naming the known ones
    instance = env()
    if not isinstance(instance, BaseEnv):
        raise GemError(f"The environment to probe is a {type(instance).__name__}, not a gem_core.Env.")
    results: list[HackResult] = []
    try:
        for seed in seeds:
            results.extend(_Episode(instance, seed, turns).probe(names))
    finally:
        instance.close()
    return results


class _Episode:
    """The plays of one seed: attacks, and their controls (each played once)."""

    def __init__(self, env: BaseEnv, seed: int, turns: int):
        from gem_core.multiagent import MultiAgentEnv

        self.env, self.seed, self.turns = env, seed, turns
        self.multi = isinstance(env, MultiAgentEnv)
        self.played: dict[tuple[tuple[str, ...], str | None], tuple[float, dict, list]] = {}
        self.shown: tuple[tuple[str, ...], ...] = ()  # answers the prompt shows, each a control

    def probe(self, exploits: list[str]) -> list[HackResult]:
        from gem_core.registry import EXPLOITS

        context = self.context()
        results = []
        for exploit in exploits:
            try:
                attacks = list(EXPLOITS.get(exploit)(context) or ())
            except Exception as e:
                results.append(HackResult(exploit, "(making its attacks)", self.seed, 0.0, 0.0, (),
                                          error=_raised(e)))
                continue
            for attack in attacks:
                for seat in self.seats():
                    results.append(self.attack(exploit, attack, seat))
        return results

    def context(self) -> Context:
        observation, info = self.env.reset(seed=self.seed)
        if self.multi:
            agent = self.env.active_agents[0]
            observation, info, sample = observation[agent], info[agent], self.env.random_action(agent)
        else:
            sample = self.env.sample_random_action()
        self.shown = tuple((answer,) for answer in _answers_in(observation))
        return Context(self.env, observation, info, sample, self.seed)

    def seats(self) -> list[str | None]:
        if not self.multi:
            return [None]
        self.env.reset(seed=self.seed)
        return list(self.env.agents)

    def attack(self, exploit: str, attack: Attack, seat: str | None) -> HackResult:
        try:
            reward, info, observations = self.play(attack.actions, seat)
            read = tuple(attack.read(observations, info)) if attack.read is not None else ()
            honest = (self.play(control, seat) for control in (*attack.controls, (SAMPLE,), *self.shown))
            baseline = max((r for r, end, _ in honest if end.get("correct") is not True), default=float("-inf"))
        except Exception as e:
            return HackResult(exploit, attack.name, self.seed, 0.0, 0.0, attack.actions, seat, error=_raised(e))
        return HackResult(exploit, attack.name, self.seed, reward, baseline, attack.actions, seat, info=info, read=read,
                          reading=attack.read is not None)

    def play(self, actions: tuple[str, ...], seat: str | None) -> tuple[float, dict, list]:
        """The return of ``actions`` from ``reset(seed)`` (for ``seat``), the last info, and the
        observations it got."""
        key = (tuple(actions), seat)
        if key not in self.played:
            if not actions:
                raise GemError("an attack or control without actions")
            self.played[key] = self._multi(actions, seat) if self.multi else self._single(actions)
        return self.played[key]

    def _single(self, actions: tuple[str, ...]) -> tuple[float, dict, list]:
        env: Env = self.env
        env.reset(seed=self.seed)
        total, info, observations = 0.0, {}, []
        for turn in range(self.turns):
            action = actions[min(turn, len(actions) - 1)]
            action = env.sample_random_action() if action == SAMPLE else action
            observation, reward, terminated, truncated, info = env.step(action)
            observations.append(observation)
            total += float(reward)
            if terminated or truncated:
                break
        return total, info, observations

    def _multi(self, actions: tuple[str, ...], seat: str | None) -> tuple[float, dict, list]:
        env = self.env
        env.reset(seed=self.seed)
        total, info, turn, steps, observations = 0.0, {}, 0, 0, []
        while env.agents and turn < self.turns and steps < 16 * self.turns:
            steps += 1
            step = {}
            for agent in env.active_agents:
                if agent == seat:
                    action = actions[min(turn, len(actions) - 1)]
                    step[agent] = env.random_action(agent) if action == SAMPLE else action
                else:
                    step[agent] = env.random_action(agent)
            if seat in step:
                turn += 1
            observation, rewards, _, _, infos = env.step(step)
            if isinstance(observation, dict) and seat in observation:
                observations.append(observation[seat])
            total += float(rewards.get(seat, 0.0))
            info = infos.get(seat, info)
        return total, info, observations


# --- GEM's generic exploits -------------------------------------------------------------------

@dataclass(frozen=True)
class _Slot:
    """Where the answer sits in an action: ``prefix + answer + suffix``."""

    prefix: str
    answer: str
    suffix: str

    def wrap(self, answer: str) -> str:
        return self.prefix + answer + self.suffix


def generic_exploits(context: Context) -> list[Attack]:
    """Exploits for any text environment: empty, enormous and repeated answers, many candidate
    answers at once (in many answer slots, and in one), the prompt echoed back, malformed answer
    tags, and floods of tool calls where the environment has tools."""
    sample, observation = context.sample, context.observation
    attacks = [
        Attack("empty answer", ("",)),
        Attack("enormous answer", (f"{sample}\n{FILLER}",), ((sample,),)),
        Attack("the answer repeated 64 times", ("\n".join([sample] * 64),), ((sample,),)),
        Attack("the prompt echoed back", (observation,)),
    ]
    slot = _slot(sample)
    wrap = slot.wrap if slot else (lambda answer: answer)
    candidates = _candidates(observation, slot.answer if slot else sample)
    # Each of the first candidates (the sample's answer, the prompt's numbers, common answers) and the
    # last alone: what answers of that form earn (some graders pay any number a little).
    singles = candidates[:SINGLES] + candidates[-1:] if slot else [candidates[0], candidates[-1]]
    alone = tuple((wrap(candidate),) for candidate in singles)
    attacks += [
        Attack(f"{len(candidates)} answers at once", (" ".join(map(wrap, candidates)),), alone),
        Attack(f"{len(candidates)} answers in one", (wrap(", ".join(candidates)),), alone),
    ]
    if slot is not None:
        attacks += [
            Attack("the prompt as the answer", (wrap(observation),)),
            Attack("answer tags nested", (wrap(sample),), ((sample,),)),
            Attack("answer tags left open", (slot.prefix + slot.answer,), ((sample,),)),
            Attack("answer tags inside out", (slot.suffix + slot.answer + slot.prefix,), ((sample,),)),
        ]
        if re.fullmatch(r"\s*-?\d+(\.\d+)?\s*", slot.answer):  # numbers: sets and intervals of them too
            every = {"(-\\infty, \\infty)": "(-\\infty, \\infty)", "\\mathbb{R}": "\\mathbb{R}", "x": "x",
                     f"the set of the {len(candidates)}": "\\{" + ", ".join(candidates) + "\\}"}
            attacks += [Attack(f"every number as the answer: {name}", (wrap(text),), alone)
                        for name, text in every.items()]
    return attacks + _tool_floods(context.env)


_OPENINGS = re.compile(r"\\boxed\{|<(answer)>")


def _spans(text: str):
    """``(start, answer start, answer end, end)`` of each answer slot of ``text``, in order: a
    ``\\boxed{...}`` (braces balanced) or a tag and its closing tag."""
    position = 0
    while True:
        opening = _OPENINGS.search(text, position)
        if opening is None:
            return
        if opening.group(1) is None:  # \boxed{
            depth, end = 1, opening.end()
            while end < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[end], 0)
                end += 1
            if depth:
                return
            yield opening.start(), opening.end(), end - 1, end
        else:
            closing = text.find(f"</{opening.group(1)}>", opening.end())
            if closing < 0:
                return
            yield opening.start(), opening.end(), closing, closing + len(opening.group(1)) + 3
        position = opening.end()


def _slot(action: str) -> _Slot | None:
    """The first answer slot of ``action``."""
    for _, answer, answer_end, _ in _spans(action):
        return _Slot(action[:answer], action[answer:answer_end], action[answer_end:])
    return None


def with_answer(action: str, answer: str) -> str | None:
    """``action`` with ``answer`` in its first answer slot (``\\boxed{}``, ``<answer>``), or None
    when it has none."""
    slot = _slot(action)
    return slot.wrap(answer) if slot is not None else None


def _answers_in(text: str, limit: int = 8) -> list[str]:
    """The answers ``text`` shows, as actions (``\\boxed{cooperate}``, ``<answer>Paris</answer>``)."""
    return list(dict.fromkeys(text[start:end] for start, _, _, end in _spans(text)))[:limit]


def _candidates(observation: str, answer: str) -> list[str]:
    """Answers worth offering at once: the sample's, the prompt's numbers, common short answers
    and small integers; at most :data:`CANDIDATES`, each once."""
    found = [answer, *re.findall(r"-?\d+(?:\.\d+)?", observation)[:24]]
    found += ["yes", "no", "True", "False", "A", "B", "C", "D", "E", "0.5", "1/2"]
    found += [str(n) for n in range(-5, 100)]
    return list(dict.fromkeys(text for text in found if text))[:CANDIDATES]


def _tool_floods(env: Any) -> list[Attack]:
    """For an environment with tools: many calls of each tool function in one action, against one
    call an action."""
    from gem_core.tools.wrapper import ToolWrapper

    while not isinstance(env, ToolWrapper):
        if not hasattr(env, "env"):
            return []
        env = env.env
    attacks = []
    for function in env.functions():
        required = function.parameters.get("required", [])
        arguments = {name: "print(1)" for name in required}
        try:
            call = env.call_text(function.name, arguments)
        except Exception:
            continue
        attacks.append(Attack(f"tool-call flood ({function.name}, 32 calls at once)", ("\n".join([call] * 32),),
                              ((call,),)))
    return attacks


def _short(text: str, limit: int = 160) -> str:
    text = text.replace(SAMPLE, "<random action>")
    text = repr(text)[1:-1]
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _raised(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(error).__name__}: {str(error)[:200]}{where}"
