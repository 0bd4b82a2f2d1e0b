"""Every reasoning-gym dataset is an environment that scores its own right answer 1."""

import pytest

import gem_core
from gem_envs.rg.datasets import MIX, dataset_categories, installed_categories
from tests.helpers import make_without, run_python
from tests.rg.solutions import CONFIGS, right_answer, wrong_answer

NAMES = sorted(dataset_categories())


def test_the_shipped_list_matches_the_installed_reasoning_gym():
    assert dataset_categories() == installed_categories(), (
        "reasoning-gym's datasets changed: run `python -m gem_envs.rg.datasets` to rewrite the list"
    )
    assert len(NAMES) == 106


def test_every_dataset_has_an_id():
    assert {s.id for s in gem_core.list_envs("rg:*")} == {f"rg:{name}" for name in NAMES}
    spec = gem_core.spec("rg:leg_counting")
    assert spec.offline and spec.kwargs == {"name": "leg_counting", "size": 500, "seed": 42}


def test_listing_the_ids_does_not_import_reasoning_gym():
    done = run_python("""
        import sys, gem_core
        assert len(gem_core.list_envs("rg:*")) == 106
        print(sorted(m for m in ("reasoning_gym", "sympy", "math_verify", "datasets") if m in sys.modules))
    """)
    assert done.stdout.strip() == "[]", done.stderr


def test_without_the_extra_make_names_the_install_command():
    done = make_without("reasoning_gym", "rg:leg_counting")
    assert "pip install 'gem-adapters[envs]'" in done.stdout, done.stderr


@pytest.mark.parametrize("name", [n for n in NAMES if n != MIX])
def test_each_dataset_scores_its_right_answer_1_and_a_wrong_one_below(name):
    env = gem_core.make(f"rg:{name}", size=20, config=CONFIGS.get(name))
    observation, info = env.reset(seed=0)
    assert observation.startswith(env.entry["question"]) and info == {"index": env.index}
    right = right_answer(name, env.entry)
    _, reward, terminated, truncated, info = env.step(f"Thinking...\n\\boxed{{{right}}}")
    assert (reward, terminated, truncated) == (1.0, True, False), info
    assert info["correct"] and info["score"] == 1.0 and info["dataset"] == name

    env.reset(seed=0)
    _, reward, _, _, info = env.step(f"\\boxed{{{wrong_answer(name, env.entry)}}}")
    assert reward < 1.0 and not info["correct"], info


def test_the_mix_scores_each_of_its_datasets():
    env = gem_core.make("rg:composite", size=50,
                        datasets={"leg_counting": 3, "basic_arithmetic": {"weight": 1, "config": {"min_terms": 2}}})
    seen = set()
    for seed in range(12):
        env.reset(seed=seed)
        source = env.entry["metadata"]["source_dataset"]
        seen.add(source)
        _, reward, _, _, info = env.step(f"\\boxed{{{env.entry['answer']}}}")
        assert reward == 1.0 and info["dataset"] == source
    assert seen == {"leg_counting", "basic_arithmetic"}
