"""Registration, look-up and make."""

import pytest

import gem_core
from gem_core import (
    DuplicateRegistrationError,
    EnvArgumentError,
    GemError,
    InvalidRegistrationError,
    UnknownEnvError,
)
from gem_core.registry import deregister


def test_list_envs_returns_specs_with_ids_and_filters():
    ids = [s.id for s in gem_core.list_envs()]
    assert "game:GuessTheNumber-v0-easy" in ids and ids == sorted(ids)
    assert [s.id for s in gem_core.list_envs("*-v0-easy")] == [i for i in ids if i.endswith("-v0-easy")]
    assert {s.category for s in gem_core.list_envs("guessthenumber")} == {"game"}
    assert gem_core.list_envs("no-such-thing") == []


def test_unknown_id_names_the_closest_ids():
    with pytest.raises(UnknownEnvError) as e:
        gem_core.make("game:GuessTheNumbr-v0-easy")
    assert "game:GuessTheNumber-v0-easy" in str(e.value)
    assert "game:GuessTheNumber-v0-easy" in e.value.suggestions
    with pytest.raises(UnknownEnvError) as e:
        gem_core.make("GuessTheNumber")
    assert any(s.startswith("game:GuessTheNumber") for s in e.value.suggestions)
    assert isinstance(e.value, KeyError) and isinstance(e.value, GemError)


def test_unknown_keyword_lists_accepted_parameters():
    with pytest.raises(EnvArgumentError) as e:
        gem_core.make("game:GuessTheNumber-v0-easy", max_turn=3)
    message = str(e.value)
    assert "'max_turn'" in message
    for name in ("min_number", "max_number", "max_turns"):
        assert name in message


def test_duplicate_registration_names_both_sources():
    gem_core.register("test:Dup-v0", "gem_envs.game.guess_the_number:GuessTheNumberEnv", source="first-pack")
    try:
        with pytest.raises(DuplicateRegistrationError) as e:
            gem_core.register("test:Dup-v0", "gem_envs.game.guess_the_number:GuessTheNumberEnv", source="second-pack")
        assert "first-pack" in str(e.value) and "second-pack" in str(e.value)
        with pytest.raises(DuplicateRegistrationError) as e:
            gem_core.register("game:GuessTheNumber-v0-easy", "x.y:Z")
        assert "plugin 'game'" in str(e.value) and __name__ in str(e.value)
    finally:
        deregister("test:Dup-v0")


@pytest.mark.parametrize("bad_id", ["two words:x", "", "a:b c", ":Name-v0", "a:b:c", "no colon"])
def test_malformed_ids_are_refused(bad_id):
    with pytest.raises(InvalidRegistrationError):
        gem_core.register(bad_id, "m:C")


def test_malformed_entry_point_is_refused():
    with pytest.raises(InvalidRegistrationError):
        gem_core.register("test:Bad-v0", "module_without_colon")


def test_register_callable_and_kwargs_defaults():
    from gem_envs.game.guess_the_number import GuessTheNumberEnv

    gem_core.register("test:Callable-v0", GuessTheNumberEnv, max_number=30, description="d")
    try:
        env = gem_core.make("test:Callable-v0")
        assert env.max_number == 30 and env.spec.source == __name__
        assert gem_core.spec("test:Callable-v0").description == "d"
    finally:
        deregister("test:Callable-v0")


def test_entry_point_that_cannot_be_imported_is_a_clear_error():
    gem_core.register("test:Missing-v0", "no_such_module_xyz:Env")
    try:
        with pytest.raises(GemError, match="no_such_module_xyz"):
            gem_core.make("test:Missing-v0")
    finally:
        deregister("test:Missing-v0")


def test_entry_point_returning_a_non_env_is_a_clear_error():
    gem_core.register("test:NotEnv-v0", dict)
    try:
        with pytest.raises(GemError, match="not a gem_core.Env"):
            gem_core.make("test:NotEnv-v0")
    finally:
        deregister("test:NotEnv-v0")


def test_spec_wrappers_are_applied_by_make():
    from gem_core.registry import WRAPPERS
    from gem_core import Wrapper

    class Upper(Wrapper):
        def __init__(self, env, suffix=""):
            super().__init__(env)
            self.suffix = suffix

        def reset(self, seed=None, **options):
            obs, info = self.env.reset(seed)
            return obs.upper() + self.suffix, info

    WRAPPERS.register("test_upper", Upper)
    gem_core.register("test:Wrapped-v0", "gem_envs.game.guess_the_number:GuessTheNumberEnv",
                      wrappers=["test_upper", ("test_upper", {"suffix": "!"})])
    try:
        env = gem_core.make("test:Wrapped-v0")
        obs, _ = env.reset(seed=0)
        assert obs == obs.upper() and obs.endswith("!")
        assert env.unwrapped.spec.id == "test:Wrapped-v0"
    finally:
        deregister("test:Wrapped-v0")
        WRAPPERS.remove("test_upper")


def test_unknown_component_names_the_closest():
    from gem_core.registry import ESTIMATORS
    from gem_core import UnknownNameError

    ESTIMATORS.register("test_rebn_like", lambda rewards, *, gamma, group_ids=None: rewards)
    try:
        with pytest.raises(UnknownNameError, match="test_rebn_like"):
            gem_core.get_estimator("test_rebn_lik")
    finally:
        ESTIMATORS.remove("test_rebn_like")


def test_a_family_id_makes_every_id_of_its_category_with_the_rest_as_a_keyword():
    from gem_core.registry import register

    class Echo(gem_core.Env):
        def __init__(self, where=None, loud=False):
            self.where, self.loud = where, loud

    register("famtest:{where}", Echo, loud=True)
    try:
        env = gem_core.make("famtest:http://host:1/a")
        assert (env.where, env.loud, env.spec.id) == ("http://host:1/a", True, "famtest:http://host:1/a")
        assert gem_core.make("famtest:x", loud=False).loud is False
        with pytest.raises(UnknownEnvError):
            gem_core.make("famtest:")
        with pytest.raises(UnknownEnvError):
            gem_core.make("otherfam:x")
    finally:
        deregister("famtest:{where}")
