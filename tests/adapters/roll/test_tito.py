"""The token-faithfulness suite's share for ROLL: ROLL's env managers tokenize (ROLL cannot be
installed here, see conftest.py), so what GEM owns is the text. Played as ROLL's env managers
call it (test_rollout.py's ``play_as_roll``), the echo environment gets every answer exactly as
ROLL hands it over, whatever it ends in (check 4), and gives one reward per turn (check 7)."""

from __future__ import annotations

from gem_adapters.roll.rollout import roll_env_id
from tests.adapters.roll.test_rollout import play_as_roll
from tests.tito import echo

#: Answers as text, as the suite's scripted sampler's answer kinds decode (tests/tito/script.py).
ANSWERS = ("I guess 1.", "is 2 <", "is 3 <|", "I guess 4 and", "is 5 ", "is 6\n", "", "I stop at 7.",
           "<think>\nround 8\n</think>\n\nI guess 8.")


def test_every_answer_reaches_the_environment_as_roll_hands_it_over(gem):
    with echo.registered() as env_id:
        from gem_adapters.roll.rollout import register_envs

        register_envs()
        env = gem.make(env_id=roll_env_id(env_id))
        actions = [ANSWERS[turn % len(ANSWERS)] for turn in range(echo.TURNS)]
        history, terminated, _ = play_as_roll(env, 3, actions)
        env.close()
    assert terminated and len(history) == echo.TURNS + 1
    assert history[0]["observation"] == echo.first_observation(3)
    for turn, (action, record) in enumerate(zip(actions, history[1:]), start=1):
        assert record["observation"] == echo.observation(3, turn, action)
        assert history[turn - 1]["reward"] == echo.reward(turn)
