"""Every move a prompt gives as an example ("e.g. \\boxed{5}") is legal where the prompt shows it:
a small model copies examples, and an illegal one would be penalised (or forfeit the game)."""

from __future__ import annotations

import re

import pytest

import gem_core

EXAMPLE = re.compile(r"(?:e\.g\.|for example)\s*\\boxed\{([^{}]*)\}")
TURNS = 12  # prompts along each episode, not only the first
SEEDS = range(4)


def game_ids() -> list[str]:
    ids = []
    for spec in gem_core.list_envs():
        if spec.id.startswith(("game:", "vision:", "multiagent:")) and spec.offline and not spec.missing_extras:
            if not gem_core.is_multiagent(spec) and "WikiGame" not in spec.id:
                ids.append(spec.id)
    return ids


def illegal(info: dict) -> bool:
    return bool(info.get("format_error") or info.get("invalid_move"))


@pytest.mark.parametrize("env_id", game_ids())
def test_every_example_in_a_prompt_is_a_legal_move_there(env_id):
    env = gem_core.make(env_id)
    examples_seen = 0
    for seed in SEEDS:
        observation, _ = env.reset(seed=seed)
        for _ in range(TURNS):
            for example in EXAMPLE.findall(observation):
                examples_seen += 1
                trial = env.clone()
                *_, info = trial.step(f"\\boxed{{{example}}}")
                assert not illegal(info), (seed, example, observation[-400:])
            observation, _, terminated, truncated, _ = env.step(env.sample_random_action())
            if terminated or truncated:
                break
    prompt = env.reset(seed=0)[0]
    if "e.g." in prompt or "for example" in prompt:
        assert examples_seen, f"{env_id}: an example the pattern does not read"
