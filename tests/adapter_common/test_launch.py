"""GEM's estimator option taken out of a library launcher's arguments, in both spellings a
launcher reads: argparse flags (OpenRLHF) and Hydra overrides (RL2)."""

from __future__ import annotations

import pytest

from gem_adapters.common.launch import estimator_arguments, option_key
from gem_core import GemError

FLAGS = {"option": "--gem.estimator", "library": "Flagged",
         "conflicts": {"--algo.estimator": "drop --algo.estimator"}, "native": ["--algo.estimator", "reinforce"]}
OVERRIDES = {"option": "gem.estimator", "library": "Hydrated",
             "conflicts": {"adv.estimator": "drop adv.estimator"}, "native": ["adv.estimator=reinforce"]}


@pytest.mark.parametrize("arg, key", [
    ("--a.b=1", "--a.b"), ("--a.b", "--a.b"), ("a.b=1", "a.b"), ("+a.b=1", "a.b"), ("~a.b", "a.b"), ("++a.b=1", "a.b"),
])
def test_option_key(arg, key):
    assert option_key(arg) == key


@pytest.mark.parametrize("argv", [
    ["--lr", "1", "--gem.estimator", "grpo", "--x"],
    ["--lr", "1", "--gem.estimator=grpo", "--x"],
])
def test_a_flag_takes_its_value_after_equals_or_as_the_next_argument(argv):
    assert estimator_arguments(argv, **FLAGS) == ("grpo", ["--lr", "1", "--x", "--algo.estimator", "reinforce"])


def test_an_override_takes_its_value_after_equals():
    argv = ["lr=1", "gem.estimator=rebn", "+extra=2"]
    assert estimator_arguments(argv, **OVERRIDES) == ("rebn", ["lr=1", "+extra=2", "adv.estimator=reinforce"])


@pytest.mark.parametrize("spelling, argv", [(FLAGS, ["--lr", "1"]), (OVERRIDES, ["lr=1"])])
def test_without_the_option_the_library_keeps_its_own(spelling, argv):
    assert estimator_arguments(argv, **spelling) == (None, argv)


def test_the_estimator_is_given_by_its_gem_name():
    assert estimator_arguments(["gem.estimator=gem_grpo"], **OVERRIDES)[0] == "grpo"


@pytest.mark.parametrize("spelling, argv, message", [
    (FLAGS, ["--gem.estimator"], "--gem.estimator needs a value"),
    (FLAGS, ["--gem.estimator", "--lr", "1"], "--gem.estimator needs a value"),
    (FLAGS, ["--gem.estimator="], "--gem.estimator needs a value"),
    (OVERRIDES, ["gem.estimator="], "gem.estimator needs a value"),
    (OVERRIDES, ["~gem.estimator"], "gem.estimator needs a value"),
    (FLAGS, ["--gem.gamma", "0.5"], "Unknown option --gem.gamma: the only GEM option is --gem.estimator NAME; "
                                    "the other arguments are Flagged's"),
    (OVERRIDES, ["+gem.gamma=0.5"], "Unknown option gem.gamma: the only GEM option is gem.estimator=NAME; "
                                    "the other arguments are Hydrated's"),
    (OVERRIDES, ["gem={}"], "Unknown option gem:"),
    (FLAGS, ["--gem.estimator", "rebm"], "rebn"),
    (FLAGS, ["--algo.estimator=gae", "--gem.estimator", "rebn"], "--algo.estimator=gae cannot go with "
                                                                  "--gem.estimator: drop --algo.estimator"),
    (OVERRIDES, ["gem.estimator=rebn", "+adv.estimator=gae"], "drop adv.estimator"),
])
def test_bad_arguments_name_the_fix(spelling, argv, message):
    with pytest.raises(GemError) as error:
        estimator_arguments(argv, **spelling)
    assert message in str(error.value)
