"""The reward-hacking probe: it reports the exploits a grader pays for (many answers at once, an
answer merely containing the right one, moves counted twice, a third party's own exploit), not
legitimate partial credit or strategies that beat random play, and no offline environment of GEM
pays any exploit it knows."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

import gem_core
from gem_core.cli import cli
from gem_core.core import Env
from gem_core.hacks import SAMPLE, Attack, generic_exploits, probe
from gem_core.registry import EXPLOITS
from tests.core.reset_sweep import arguments, offline_ids
from tests.helpers import fake_distribution, run_python

BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


class Quiz(Env):
    """One question answered in ``\\boxed{}``; the last answer must be right (a correct grader)."""

    QUESTIONS = (("What is 2 + 3?", "5"), ("What is 7 - 4?", "3"), ("What is 2 * 4?", "8"))

    def reset(self, seed=None, **options):
        super().reset(seed)
        self.question, self.right = self.rng.choice(self.QUESTIONS)
        return f"{self.question} Put the answer in \\boxed{{}}.", {}

    def step(self, action):
        answers = BOXED.findall(action)
        reward = self.grade(answers, action) if answers else -0.1
        return "done", reward, True, False, {"correct": reward == 1.0}

    def grade(self, answers, action):
        return float(answers[-1].strip() == self.right)

    def sample_random_action(self):
        return f"\\boxed{{{self.action_rng.randint(10, 99)}}}"  # never right


class AnyAnswer(Quiz):
    def grade(self, answers, action):
        return float(self.right in [a.strip() for a in answers])


class Containing(Quiz):
    """Reasoning-gym's default scorer: a share of the reward for containing the right answer."""

    def grade(self, answers, action):
        answer = answers[-1]
        return 1.0 if answer == self.right else len(self.right) / len(answer) if self.right in answer else 0.0


class AnyNumberPaid(Quiz):
    """Legitimate partial credit: any number 0.01 (as reasoning-gym's gsm_symbolic pays)."""

    def grade(self, answers, action):
        answer = answers[-1].strip()
        return 1.0 if answer == self.right else 0.01 if re.fullmatch(r"-?\d+", answer) else 0.0


class Steps(Env):
    """Five turns; a move ``\\boxed{d}`` (one digit) pays 0.1, anything else costs 0.1 and ends."""

    def reset(self, seed=None, **options):
        super().reset(seed)
        self.turn = 0
        return "Move with \\boxed{1} to \\boxed{9}.", {}

    def step(self, action):
        self.turn += 1
        moves = self.moves(action)
        if not moves:
            return "no", -0.1, True, False, {}
        return "ok", 0.1 * len(moves), False, self.turn >= 5, {}

    def moves(self, action):
        first = BOXED.search(action)
        return [first.group(1)] if first and re.fullmatch(r"\d", first.group(1)) else []

    def sample_random_action(self):
        return f"\\boxed{{{self.action_rng.randint(1, 9)}}}"


class EveryMoveCounted(Steps):
    def moves(self, action):
        return [m for m in BOXED.findall(action) if re.fullmatch(r"\d", m)]


def earned(env_class, **options):
    return sorted({r.attack for r in probe(env_class, seeds=(0, 1, 2), exploits=["generic"], **options) if r.earned})


def test_many_answers_at_once_are_found_where_any_of_them_is_paid():
    assert earned(AnyAnswer) == ["64 answers at once"]
    assert earned(Containing) == ["64 answers in one"]
    assert earned(EveryMoveCounted) == ["64 answers at once", "the answer repeated 64 times",
                                        "the prompt as the answer", "the prompt echoed back"]  # it shows two moves


@pytest.mark.parametrize("env_class", [Quiz, AnyNumberPaid, Steps])
def test_honest_graders_and_their_partial_credit_earn_no_exploit(env_class):
    results = probe(env_class, seeds=(0, 1, 2))
    assert results and not [r.describe() for r in results if r.earned or r.error]
    if env_class is Steps:  # a valid move's pay is what every control earns too
        assert max(r.baseline for r in results) == pytest.approx(0.5)


def test_each_result_says_what_was_played_and_what_honest_plays_earned():
    found = [r for r in probe(AnyAnswer, seeds=(0,), exploits=["generic"]) if r.earned][0]
    assert found.exploit == "generic" and found.reward == 1.0 and found.baseline == 0.0
    assert "\\boxed{5}" in found.actions[0] and "\\boxed{3}" in found.actions[0]
    assert found.describe().startswith("64 answers at once (seed 0) earned 1 where honest plays earned 0; it played ")


def test_the_generic_attacks_follow_the_answer_format_of_the_sample():
    from gem_core.hacks import Context

    attacks = {a.name: a for a in generic_exploits(Context(Quiz(), "What is 2 + 3?", {}, "I say \\boxed{42}.", 0))}
    many = attacks["64 answers at once"]
    assert many.actions[0].startswith("I say \\boxed{42}. I say \\boxed{2}. I say \\boxed{3}.")
    assert len(many.controls) == 17 and ("I say \\boxed{42}.",) in many.controls
    assert attacks["answer tags left open"].actions == ("I say \\boxed{42",)
    assert {"every number as the answer: (-\\infty, \\infty)", "the prompt echoed back", "empty answer"} <= set(attacks)
    assert SAMPLE not in many.actions


def test_gem_check_hacks_fails_on_a_paid_exploit_and_shows_it():
    gem_core.register("hacktest:AnyAnswer-v0", AnyAnswer)
    gem_core.register("hacktest:Quiz-v0", Quiz)
    try:
        runner = CliRunner()
        paid = runner.invoke(cli, prog_name="gem", args=["check", "hacktest:AnyAnswer-v0", "--hacks", "--steps", "5"])
        assert paid.exit_code == 1, paid.output
        assert "reward_hacks" in paid.output and "64 answers at once" in paid.output and "earned" in paid.output
        honest = runner.invoke(cli, prog_name="gem", args=["check", "hacktest:Quiz-v0", "--hacks", "--steps", "5"])
        assert honest.exit_code == 0 and "keeps the environment contract" in honest.output, honest.output
        assert re.search(r"reward_hacks +│ passed", honest.output), honest.output
    finally:
        gem_core.registry.deregister("hacktest:AnyAnswer-v0")
        gem_core.registry.deregister("hacktest:Quiz-v0")


PLEASE = '''
from gem_core import Env, hookimpl
from gem_core.hacks import Attack


class Polite(Env):
    def reset(self, seed=None, **options):
        super().reset(seed)
        return "Say anything.", {}

    def step(self, action):
        return "", float("please" in action), True, False, {}

    def sample_random_action(self):
        return "hello"


def asks_nicely(context):
    return [Attack("say please", ("please",))] if isinstance(context.env, Polite) else []


@hookimpl
def gem_register_envs(register):
    register("polite:Say-v0", "thirdparty_please:Polite")


@hookimpl
def gem_register_exploits(register):
    register("please", "thirdparty_please:asks_nicely", description="Asks nicely.")
'''


def test_a_third_party_adds_an_exploit_through_the_hook(tmp_path):
    site = fake_distribution(tmp_path / "site", "please-pack", plugins={"please": "thirdparty_please"},
                             modules={"thirdparty_please": PLEASE})
    done = run_python('''
        from gem_core.hacks import probe
        from gem_core.registry import EXPLOITS
        print(sorted(EXPLOITS.names()))
        print([r.describe() for r in probe("polite:Say-v0", seeds=(0,)) if r.earned])
    ''', path=[site])
    assert done.returncode == 0, done.stderr
    names, found = done.stdout.splitlines()
    assert names == "['code', 'generic', 'please', 'read', 'terminal']"
    assert "say please (seed 0) earned 1 where honest plays earned 0; it played please" in found


def test_gem_s_packs_register_their_exploits():
    assert {"generic", "code", "terminal", "read"} <= set(EXPLOITS.names())
    assert EXPLOITS.component("terminal").target == "gem_envs.terminal.exploits:terminal_exploits"


# --- reading the answer ----------------------------------------------------------------------------

def leaky_tool_env():
    """An arithmetic environment whose Python tool is told it may use GEM itself: so it sees GEM's
    packs, their data among them."""
    from gem_core.tools import ToolWrapper

    return ToolWrapper(gem_core.make("math:Arithmetic-v0"), tools=[("python", {"packages": ["gem-adapters"]})],
                       max_tool_uses=1)


def test_reading_through_the_python_tool_is_caught_where_the_sandbox_shows_a_pack_s_data():
    from gem_core.keys import key_files
    from gem_core.registry import declared_keys

    leaked = [r for r in probe(leaky_tool_env, seeds=(0,), exploits=["read"]) if r.earned]
    assert len(leaked) == 1 and leaked[0].read and leaked[0].reward <= 0
    almanac = key_files(next(key for key in declared_keys() if key.name == "almanac"))
    assert set(almanac) <= set(leaked[0].read)  # the Almanac's answers, a declared key, were read
    assert "read the answer through the python tool" in leaked[0].describe()
    assert "read what it must not see (" in leaked[0].describe()
    held = probe("math:Arithmetic-v0+Tool", seeds=(0,), exploits=["read"])
    through_tool = [r for r in held if "through the python tool" in r.attack]
    assert len(through_tool) == 1 and not through_tool[0].read
    assert held and not [r.describe() for r in held if r.earned or r.error]


class EvalGrader(Quiz):
    """A grader that evaluates the answer as Python where it holds the right one (as some
    reasoning-gym scorers did)."""

    def grade(self, answers, action):
        oracle_answer = self.right  # noqa: F841 - what an answer naming it reads
        try:
            return float(str(eval(answers[-1])) == self.right)  # noqa: S307
        except Exception:
            return 0.0


def test_an_answer_naming_the_grader_s_variables_is_caught():
    found = {r.attack for r in probe(EvalGrader, seeds=(0, 1), exploits=["read"]) if r.earned}
    assert found == {"read the answer from the grader: oracle_answer as the answer"}
    assert not [r for r in probe(Quiz, seeds=(0,), exploits=["read"]) if r.earned]


def test_echoing_the_reading_program_proves_nothing():
    from gem_core.reading import proven, reader, targets

    found = targets()
    program = reader(found, "print(evidence)")
    assert proven(found, [program, "gem-probe 0 0123456789abcdef"]) == ()


def test_gem_check_reports_a_read_answer_and_fails():
    gem_core.register("hacktest:LeakyTool-v0", leaky_tool_env)
    try:
        done = CliRunner().invoke(cli, prog_name="gem", args=["check", "hacktest:LeakyTool-v0", "--hacks", "--steps", "3",
                                                              "--skip", "seeded_replay"])
        assert done.exit_code == 1, done.output
        assert "read the answer" in done.output and "read what it must not see" in " ".join(done.output.split())
    finally:
        gem_core.registry.deregister("hacktest:LeakyTool-v0")


# --- every offline environment ------------------------------------------------------------------

def every_leftover(context):
    """The terminal pack's leftovers all in one play (an exploit of these tests): each play of a
    terminal id costs a sandbox and a test run, and a leftover that works works among the others
    (tests/terminal/test_hacks.py plays each one alone, on both layouts and backends)."""
    from gem_envs.terminal.exploits import FINISH, LEFTOVERS, commands

    attacks = gem_core.registry.EXPLOITS.get("terminal")(context)
    every = [line for lines in LEFTOVERS.values() for line in lines]
    return [Attack("terminal: every leftover at once", (commands(every), FINISH), ((FINISH,),))] if attacks else []


@pytest.fixture(scope="module")
def combined():
    EXPLOITS.register("test-every-leftover", every_leftover)
    yield
    EXPLOITS.remove("test-every-leftover")


def exploits_for(env_id: str) -> list[str] | None:
    """Every exploit, but for the terminal ids other than terminal:All-v0 (the same environment
    class, its generic attacks played there), which get the leftovers in one play."""
    return ["test-every-leftover"] if env_id.startswith("terminal:") and env_id != "terminal:All-v0" else None


@pytest.mark.parametrize("env_id", offline_ids())
def test_no_offline_environment_pays_an_exploit(env_id, combined):
    results = probe(env_id, seeds=(0,), exploits=exploits_for(env_id), **arguments().get(env_id, {}))
    assert results
    assert not [r.describe() for r in results if r.earned or r.error]
