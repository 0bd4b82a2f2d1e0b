"""Registers the ``game`` pack."""

from gem_core import hookimpl

_GUESS = "gem_envs.game.guess_the_number:GuessTheNumberEnv"


@hookimpl
def gem_register_envs(register):
    gtn = "Find a hidden integer from higher/lower hints."
    register("game:GuessTheNumber-v0", _GUESS, description=gtn + " 1-20, 20 turns.")
    register("game:GuessTheNumber-v0-easy", _GUESS, min_number=1, max_number=10, max_turns=4,
             description=gtn + " 1-10, 4 turns.")
    register("game:GuessTheNumber-v0-hard", _GUESS, min_number=1, max_number=50, max_turns=7,
             description=gtn + " 1-50, 7 turns.")
    register("game:GuessTheNumber-v0-random", _GUESS, min_number=None, max_number=None,
             max_turns=None, description=gtn + " A random range per episode.")
