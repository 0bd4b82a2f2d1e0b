"""The docs describe every game and every id it registers."""

import gem_core
from tests.games.helpers import GAMES
from tests.helpers import REPO


def test_games_table_covers_every_game_and_variant():
    text = (REPO / "docs" / "envs.md").read_text()
    section = text.split("## Games", 1)[1]
    rows = {line.split("|")[1].strip(): line for line in section.splitlines() if line.startswith("| ")}
    for game in GAMES:
        assert game in rows, game
        variants = {spec.id.split("-v0", 1)[1] for spec in gem_core.list_envs(f"game:{game}-v0*")}
        for variant in variants - {""}:
            assert f"`{variant}`" in rows[game] or variant in rows[game], (game, variant)
    readme = (REPO / "README.md").read_text()
    assert "docs/envs.md" in readme and "## Environments" in readme
