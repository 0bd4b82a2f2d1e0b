"""Registers the WikiGame under the reference's ids, ``game:WikiGame-v0-easy`` and ``-hard``
(see docs/envs.md)."""

from gem_core import hookimpl

_ENV = "gem_envs.wikigame.env:WikiGameEnv"
_NEEDS = "Needs a Wikipedia ZIM file (zim_path=; extra envs) or backend='mw' (live Wikipedia; extra tools)."


@hookimpl
def gem_register_envs(register):
    for variant, turns in (("easy", 30), ("hard", 15)):
        register(f"game:WikiGame-v0-{variant}", _ENV, max_turns=turns, offline=False,
                 requires={"libzim": "envs"},
                 description=f"Reach a target Wikipedia article by following links, {turns} turns. {_NEEDS}")
