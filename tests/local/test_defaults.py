"""The defaults of `gem train` are the documented ones: the settings table of docs/training.md and the help
quote the values a run with no arguments uses."""

from __future__ import annotations

import re

from gem_trainer.config import FULL_LR, LORA_LR, TrainConfig
from gem_trainer.training.memory import CPU_MICRO_BATCH_TOKENS
from tests.helpers import REPO, gem_command

#: Flags whose config key is not the flag's name with underscores.
RENAMED = {"env": "envs", "lr": "learning_rate"}
#: Settings a new user meets first: each must be in the settings table with its default.
CORE = {"envs", "model", "estimator", "gamma", "steps", "episodes_per_step", "group_size", "learning_rate",
        "lora_rank", "lora_alpha", "micro_batch_tokens", "max_new_tokens", "max_prompt_tokens", "temperature",
        "top_p", "wrappers", "seed", "save_every"}


def documented_defaults() -> dict[str, list[str]]:
    """Config key -> the default(s) the settings table of docs/training.md gives for its flag."""
    text = (REPO / "docs" / "training.md").read_text()
    table = text[text.index("**Settings**"):text.index("**Outputs**")]
    documented: dict[str, list[str]] = {}
    for row in table.splitlines():
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`--"):
            continue
        flags = [re.match(r"--([a-z-]+)", flag).group(1) for flag in re.findall(r"`(--[^`]+)`", cells[0])]
        values = re.findall(r"`([^`]+)`", cells[1])
        if flags[0] == "lr":  # "`1e-3` with LoRA, `1e-5` without"
            documented["learning_rate"] = values
            continue
        if flags[0] == "lora":  # "LoRA, `16`, `32`": the switch has no value of its own
            flags = flags[1:]
        if len(flags) == len(values):
            for flag, value in zip(flags, values):
                documented[RENAMED.get(flag, flag.replace("-", "_"))] = [value]
    return documented


def test_the_documented_table_gives_the_defaults_a_run_uses():
    default = TrainConfig()
    documented = documented_defaults()
    assert CORE <= set(documented), f"not in the settings table of docs/training.md: {CORE - set(documented)}"
    assert [float(v) for v in documented.pop("learning_rate")] == [LORA_LR, FULL_LR]
    assert default.lora and default.lr == LORA_LR
    # no fixed default: CPU_MICRO_BATCH_TOKENS on a CPU, sized from the free memory on a GPU
    assert documented.pop("micro_batch_tokens") == [str(CPU_MICRO_BATCH_TOKENS)] and default.micro_batch_tokens is None
    for key, (value,) in documented.items():
        actual = getattr(default, key)
        if key == "envs":
            assert [value] == actual
        elif key == "output_dir":
            assert actual is None and value.startswith("gem-runs/")
        elif key == "report_to":
            assert value == "none" and actual == []  # no tracker
        elif isinstance(actual, (int, float)) and not isinstance(actual, bool):
            assert float(value) == actual, key
        else:
            assert value == actual, key


def test_the_help_quotes_the_defaults():
    default = TrainConfig()
    help_text = " ".join(gem_command("train", "--help").stdout.split())
    for flag, value in (("--steps", default.steps), ("--episodes-per-step", default.episodes_per_step),
                        ("--gamma", default.gamma), ("--max-new-tokens", default.max_new_tokens),
                        ("--temperature", default.temperature), ("--lora-rank", default.lora_rank)):
        assert re.search(rf"{flag} \S+ .*?\(default {value}\b", help_text), flag
    assert f"(default {LORA_LR:g} with LoRA, {FULL_LR:g} without)" in help_text
    assert f"in {default.steps} steps" in help_text
