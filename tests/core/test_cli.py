"""The `gem` command: envs, play, plugins, and errors without tracebacks."""

import json

from tests.helpers import gem_command, run_python


def test_help_on_every_command():
    top = gem_command("--help")
    assert top.returncode == 0
    for command in ("envs", "play", "plugins", "check"):
        assert command in top.stdout
        sub = gem_command(command, "--help")
        assert sub.returncode == 0 and "Usage: gem " + command in sub.stdout


def test_envs_json_lists_objects_with_ids():
    result = gem_command("envs", "GuessTheNumber", "--json")
    rows = json.loads(result.stdout)
    assert {r["id"] for r in rows} >= {"game:GuessTheNumber-v0", "game:GuessTheNumber-v0-easy"}
    for row in rows:
        assert row["category"] == "game" and row["entry_point"].endswith(":GuessTheNumberEnv")
        assert row["description"] and row["offline"] is True


def test_envs_table_and_empty_filter():
    table = gem_command("envs", "*-easy")
    assert "game:GuessTheNumber-v0-easy" in table.stdout and "game:GuessTheNumber-v0-hard" not in table.stdout
    empty = gem_command("envs", "zzz-nothing")
    assert empty.returncode == 0 and "No environment matches" in empty.stdout


def test_play_a_whole_episode_from_stdin():
    # seed 0 on the easy game: binary search by hand through the hints
    result = gem_command("play", "game:GuessTheNumber-v0-easy", "--seed", "0",
                         input="not a guess\n/quit\n")
    assert result.returncode == 0, result.stderr
    assert "Guess The Number" in result.stdout
    assert "reward -0.100" in result.stdout and "terminated" in result.stdout


def test_play_random_actions_and_reset():
    result = gem_command("play", "game:GuessTheNumber-v0-hard", "--seed", "3",
                         input="/random\n/reset\n/random\n/quit\n")
    assert result.returncode == 0
    assert result.stdout.count("random action: \\boxed{") == 2
    assert "episode 2" in result.stdout


def test_user_mistakes_give_clear_errors_not_tracebacks():
    cases = {
        ("play", "game:GuessTheNumbr-v0-easy"): "Did you mean: game:GuessTheNumber-v0-easy",
        ("envs", "--jsn"): "No such option",
        ("plya",): "Did you mean: play",
    }
    for args, expected in cases.items():
        result = gem_command(*args)
        assert result.returncode != 0
        assert expected in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_play_survives_end_of_input():
    result = gem_command("play", "game:GuessTheNumber-v0-easy", input="")
    assert result.returncode == 0 and "Traceback" not in result.stderr


def test_play_shows_the_state_environments_keep_in_the_suffix():
    result = gem_command("play", "game:Sudoku-v0-easy", "--seed", "0", input="/random\n/quit\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("Here is the grid") >= 2  # after reset and after the move


def test_play_reads_as_one_story_when_input_is_piped():
    result = gem_command("play", "game:GuessTheNumber-v0-easy", "--seed", "0",
                         input="\\boxed{1}\n" * 4 + "/quit\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Enter your guess." in out and "Make your first guess" not in out  # one call to action
    assert out.count("action> \n") == 5  # each prompt on a line of its own
    last_turn = out[out.index("turn 4"):]
    assert "Game over." in last_turn and "Enter your guess." not in last_turn
    assert "(not solved) with return +0.111" in out and "partial credit" in out


def test_envs_shows_which_extra_an_environment_still_needs():
    hidden = run_python("""
        import sys
        sys.modules["reasoning_gym"] = None  # as if the envs extra were not installed
        from gem_core.cli import main
        main(["envs", "rg:leg_counting"])
    """)
    assert "needs [envs]" in hidden.stdout and 'pip install -e ".[envs]"' in hidden.stdout, hidden.stderr
    listed = gem_command("envs", "rg:leg_counting", "--json")
    assert json.loads(listed.stdout)[0]["missing_extras"] == []  # installed here
