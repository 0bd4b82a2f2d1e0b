"""``gem_core.check_env``, ``check_multiagent_env`` and ``gem check``: a well-behaved environment
passes, and each check fails, naming itself and what went wrong, on an environment broken in the
way it looks for. (Every built-in id passing is tested in test_action_sampling.py.)"""

from __future__ import annotations

import copy
import math
import random
import secrets
import warnings

import numpy as np
import pytest
from click.testing import CliRunner

import gem_core
from gem_core import Env, EnvCheckError, GemError, MultiAgentEnv, check_env, check_multiagent_env
from gem_core.cli import cli
from gem_core.core import GlobalRandomWarning
from gem_core.env_checker import CHECKS, EnvCheckWarning
from gem_core.parsing import last_boxed

FAST = dict(steps=12, max_episode_steps=60)
DIGITS = set("123456789")


class Guess(Env):
    """Guess a number from 1 to 9 in \\boxed{}; a hint after each wrong guess, four turns."""

    def __init__(self, max_turns: int = 4):
        self.max_turns = max_turns
        self.turn = None

    def reset(self, seed=None, **options):
        super().reset(seed)
        self.secret = self.draw_secret()
        self.turn = 0
        return "Guess a number from 1 to 9 in \\boxed{}.", {"turn": 0}

    def draw_secret(self) -> int:
        return self.rng.randint(1, 9)

    def step(self, action):
        if self.turn is None:
            raise GemError("Call reset() before step().")
        self.turn += 1
        answer = last_boxed(action)
        if answer is None or answer.strip() not in DIGITS:
            return "No number in \\boxed{}.", -0.1, True, False, {"turn": self.turn, "format_error": True, "success": False}
        guess = int(answer.strip())
        if guess == self.secret:
            return "Right!", 1.0, True, False, {"turn": self.turn, "success": True}
        hint = "higher" if guess < self.secret else "lower"
        truncated = self.turn >= self.max_turns
        return f"{hint} (noise {self.rng.random():.6f})", 0.0, False, truncated, {"turn": self.turn}

    def sample_random_action(self):
        return f"\\boxed{{{self.action_rng.randint(1, 9)}}}"


def results_of(env, **options) -> dict:
    """Each check's result by name, whether the checks passed or not."""
    try:
        results = check_env(env, warn=False, **{**FAST, **options})
    except EnvCheckError as e:
        results = e.results
    return {r.name: r for r in results}


def test_a_well_behaved_env_passes_every_check_given_as_a_factory_an_instance_or_an_id():
    assert [r.status for r in check_env(Guess, **FAST)] == ["passed"] * len(CHECKS)
    assert [r.status for r in check_env(Guess(), **FAST)] == ["passed"] * len(CHECKS)
    results = check_env("game:GuessTheNumber-v0-easy", max_turns=3, **FAST)
    assert [r.name for r in results] == list(CHECKS) and {r.status for r in results} == {"passed"}


def test_a_failure_names_every_failed_check_and_how():
    class Broken(Guess):
        def step(self, action):
            observation, reward, terminated, truncated, info = super().step(action)
            return observation, str(reward), terminated, truncated, info

    with pytest.raises(EnvCheckError) as caught:
        check_env(Broken, **FAST)
    message = str(caught.value)
    assert message.startswith("Broken failed")
    assert "- transitions (reset and step return the documented types" in message
    assert "step's reward is '0.0' (str), not a float" in message
    assert isinstance(caught.value, GemError) and isinstance(caught.value, AssertionError)


# One broken environment per check: (the check that must fail, what its message must say, the env).


class NoGuardBeforeReset(Guess):
    def __init__(self):
        super().__init__()
        self.turn, self.secret = 0, 5  # usable before reset: step answers instead of raising


class NanReward(Guess):
    def step(self, action):
        observation, _, terminated, truncated, info = super().step(action)
        return observation, math.nan, terminated, truncated, info


class IntFlags(Guess):
    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        return observation, reward, int(terminated), truncated, info


class SampledMalformed(Guess):
    def sample_random_action(self):
        return str(self.action_rng.randint(1, 9))  # no \boxed{}


class BadInfo(Guess):
    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        return observation, reward, terminated, truncated, {**info, "success": "maybe"}


class GlobalRandom(Guess):
    def draw_secret(self):
        return random.randint(1, 9)


class GlobalNumpyRandom(Guess):
    def draw_secret(self):
        return int(np.random.randint(1, 10))


class Unseeded(Guess):
    def reset(self, seed=None, **options):
        observation, info = super().reset(seed)
        return f"{observation} (game {secrets.token_hex(4)})", info


class LeakyReset(Guess):
    """Carries the last episode's secret into the next one's observation."""

    def reset(self, seed=None, **options):
        previous = getattr(self, "secret", None)
        observation, info = super().reset(seed)
        return f"{observation} (last time: {previous})", info


class SharedGenerator(Guess):
    """Every instance draws its hints' noise from one class-wide generator."""

    shared = random.Random(0)

    def reset(self, seed=None, **options):
        if seed is not None:
            SharedGenerator.shared.seed(seed)
        return super().reset(seed)

    def step(self, action):
        observation, *rest = super().step(action)
        return (f"{observation} {SharedGenerator.shared.random():.6f}", *rest)


class SamplesFromEpisodeRng(Guess):
    def sample_random_action(self):
        return f"\\boxed{{{self.rng.randint(1, 9)}}}"


class RaisesOnMalformed(Guess):
    def step(self, action):
        if last_boxed(action) is None:
            raise ValueError("no answer")
        return super().step(action)


class HugeActionFails(Guess):
    def step(self, action):
        if len(action) > 100_000:
            return None
        return super().step(action)


class CloneIsSelf(Guess):
    def clone(self):
        return self


class CloneSharesState(Guess):
    """Keeps its turn counter in a dict that a shallow copy shares."""

    def reset(self, seed=None, **options):
        self.state = {"turns": 0}
        return super().reset(seed)

    def step(self, action):
        self.state["turns"] += 1
        observation, *rest = super().step(action)
        return (f"{observation} after {self.state['turns']}", *rest)

    def clone(self):
        twin = copy.copy(self)
        twin._rng, twin._action_rng = copy.deepcopy(self._rng), copy.deepcopy(self._action_rng)
        return twin


class CloneSharesActionGenerator(Guess):
    def clone(self):
        twin = copy.copy(self)
        twin._rng = copy.deepcopy(self._rng)
        return twin


class NeverEnds(Guess):
    def __init__(self):
        super().__init__(max_turns=10**9)

    def draw_secret(self):
        return 10  # never guessed


class CloseOnce(Guess):
    def close(self):
        if getattr(self, "closed", False):
            raise RuntimeError("already closed")
        self.closed = True


BROKEN = [
    ("step_before_reset", "step before reset returned a transition", NoGuardBeforeReset),
    ("transitions", "step's reward is nan, not a finite number", NanReward),
    ("transitions", "step's terminated is 0 \\(int\\), not a bool", IntFlags),
    ("transitions", "the sampled action '[1-9]' got info\\['format_error'\\]: random actions must be well-formed",
     SampledMalformed),
    ("info_keys", "info\\['success'\\] is 'maybe' \\(str\\), documented as bool", BadInfo),
    ("global_random", "changed the global `random` state", GlobalRandom),
    ("global_random", "changed the global `numpy.random` state", GlobalNumpyRandom),
    ("seeded_replay", "reset\\(seed=0\\) on two instances gave two episodes; they differ", Unseeded),
    ("seeded_replay", "on one instance gave another episode after episodes from seed 1", LeakyReset),
    ("independent_instances", "stepping another instance between its steps changed an episode", SharedGenerator),
    ("sampling_apart", "sample from self.action_rng, not self.rng", SamplesFromEpisodeRng),
    ("any_action", "the action '' raised ValueError: no answer at .*test_env_checker.py", RaisesOnMalformed),
    ("any_action", "the action 'xxx.*step returned None, not a tuple", HugeActionFails),
    ("clone", "clone\\(\\) returned the same object", CloneIsSelf),
    ("clone", "a clone continued differently from the original", CloneSharesState),
    ("clone", "a clone samples another action than the original", CloneSharesActionGenerator),
    ("episode_bound", "did not end within 60 steps", NeverEnds),
    ("close_twice", "raised RuntimeError: already closed", CloseOnce),
]


@pytest.mark.parametrize(("check", "message", "env_class"), BROKEN, ids=[b[2].__name__ for b in BROKEN])
def test_each_check_fails_on_an_env_broken_its_way(check, message, env_class):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GlobalRandomWarning)
        results = results_of(env_class, seed=0)
    assert results[check].status == "failed", results[check]
    assert results[check].message and __import__("re").search(message, results[check].message), results[check].message


def test_warnings_for_what_the_contract_recommends():
    class VagueError(Guess):
        def step(self, action):
            if self.turn is None:
                raise AttributeError("'VagueError' object has no attribute 'secret'")
            return super().step(action)

    class IgnoresSeed(Guess):
        def reset(self, seed=None, **options):
            return super().reset(0)

    with pytest.warns(EnvCheckWarning, match="step_before_reset: step before reset raised AttributeError"):
        results = check_env(VagueError, **FAST)
    assert results[0].status == "warning" and "raise a gem_core.GemError" in results[0].message
    with pytest.warns(EnvCheckWarning, match="seeds 0, 1 and 2 gave the same 12 steps: does reset use its seed"):
        check_env(IgnoresSeed, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_env(IgnoresSeed, warn=False, **FAST)[4].status == "warning"


def test_options_and_mistakes():
    assert {r.name: r.status for r in check_env(Guess, skip=["clone"], **FAST)}["clone"] == "skipped"
    with pytest.raises(GemError, match="Unknown check\\(s\\) clones"):
        check_env(Guess, skip=["clones"])
    with pytest.raises(gem_core.UnknownEnvError, match="Did you mean"):
        check_env("game:GuessTheNumbr-v0-easy")
    with pytest.raises(GemError, match="only with an id"):
        check_env(Guess, max_turns=3)
    reset_already = Guess()
    reset_already.reset(seed=3)
    assert results_of(reset_already)["step_before_reset"].status == "skipped"
    with pytest.raises(GemError, match="multi-agent environment.*self_play or versus.*check_multiagent_env"):
        check_env("multiagent:Nim-v0")


# Multi-agent


class Race(MultiAgentEnv):
    """Two agents take turns adding 1 or 2 (in \\boxed{}) to a total; reaching 7 wins."""

    def __init__(self):
        super().__init__()
        self.possible_agents = ["a", "b"]

    def start(self):
        self.total = self.rng.randint(0, 2)

    def observe(self, agent):
        return f"{agent}: the total is {self.total}"

    def _process_actions(self, actions):
        (agent, action), = actions.items()
        step = last_boxed(action)
        rewards = {a: 0.0 for a in self.agents}
        if step not in ("1", "2"):
            rewards[agent] = -1.0
            done = True
        else:
            self.total += int(step)
            done = self.total >= 7
            if done:
                rewards[agent] = 1.0
        flags = {a: done for a in self.agents}
        return ({a: self.observe(a) for a in self.agents}, rewards, flags, {a: False for a in self.agents},
                {a: {} for a in self.agents})

    def random_action(self, agent):
        return f"\\boxed{{{self.action_rng.choice('12')}}}"


def test_a_well_behaved_multiagent_env_passes_and_a_broken_one_fails():
    assert {r.status for r in check_multiagent_env(Race, **FAST)} == {"passed"}

    class NumberObservations(Race):
        def _process_actions(self, actions):
            observations, *rest = super()._process_actions(actions)
            return ({a: self.total for a in observations}, *rest)

    class GlobalBots(Race):
        def random_action(self, agent):
            return f"\\boxed{{{random.choice('12')}}}"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GlobalRandomWarning)
        with pytest.raises(EnvCheckError, match="step \\(agent 'a'\\)'s observation is [0-9]+ \\(int\\), not a str"):
            check_multiagent_env(NumberObservations, **FAST)
        with pytest.raises(EnvCheckError, match="global_random .*changed the global `random` state"):
            check_multiagent_env(GlobalBots, **FAST)
    with pytest.raises(GemError, match="not a MultiAgentEnv"):
        check_multiagent_env(Guess)


# gem check


@pytest.fixture
def registered():
    ids = {"checktest:Guess-v0": Guess, "checktest:Leaky-v0": LeakyReset}
    for env_id, env_class in ids.items():
        gem_core.register(env_id, env_class)
    yield
    for env_id in ids:
        gem_core.registry.deregister(env_id)


def test_gem_check_prints_a_report_and_exits_1_on_a_failure(registered):
    runner = CliRunner()
    passed = runner.invoke(cli, prog_name="gem", args=["check", "checktest:Guess-v0", "--steps", "10", "-o", "max_turns=3"])
    assert passed.exit_code == 0, passed.output
    assert passed.output.count("passed") >= len(CHECKS) and "keeps the environment contract (12 passed)" in passed.output
    failed = runner.invoke(cli, prog_name="gem", args=["check", "checktest:Leaky-v0", "--steps", "10", "--skip", "clone"])
    assert failed.exit_code == 1, failed.output
    assert "seeded_replay" in failed.output and "failed" in failed.output and "skipped" in failed.output
    assert "breaks the environment contract" in failed.output


def test_gem_check_mistakes_are_messages_not_tracebacks():
    runner = CliRunner()
    unknown = runner.invoke(cli, prog_name="gem", args=["check", "game:GuessTheNumbr-v0"])
    assert unknown.exit_code == 1 and "Unknown environment id" in unknown.output and "Traceback" not in unknown.output
    keyword = runner.invoke(cli, prog_name="gem", args=["check", "game:GuessTheNumber-v0", "-o", "turns=3"])
    assert keyword.exit_code == 1 and "does not accept 'turns'" in keyword.output
    option = runner.invoke(cli, prog_name="gem", args=["check", "game:GuessTheNumber-v0", "-o", "turns"])
    assert option.exit_code == 2 and "KEY=VALUE" in option.output
    skip = runner.invoke(cli, prog_name="gem", args=["check", "game:GuessTheNumber-v0", "--skip", "clones"])
    assert skip.exit_code == 2 and "unknown check(s) clones" in skip.output
    help_text = runner.invoke(cli, prog_name="gem", args=["check", "--help"])
    assert help_text.exit_code == 0 and "Usage: gem check" in help_text.output and "--steps" in help_text.output
