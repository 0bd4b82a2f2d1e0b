"""The ``rg`` pack: reasoning-gym's procedural tasks as single-turn environments (offline)."""
