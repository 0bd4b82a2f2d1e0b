"""Training configuration: defaults, a YAML/JSON config file, and validation.

Every key of :class:`TrainConfig` can be set in a config file (``gem train --config run.yaml``) or
with the flag of the same name (``--episodes-per-step`` for ``episodes_per_step``); flags win.
:func:`validate` checks everything cheap to check (types, ranges, environment ids, estimator
names) before any model is loaded.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from gem_core.errors import GemError, UnknownNameError

#: The learning rate when none is set: with LoRA, and when training every weight.
LORA_LR = 1e-3
FULL_LR = 1e-5


class ConfigError(GemError, ValueError):
    """A configuration value that cannot work, with the fix in the message."""


@dataclass
class TrainConfig:
    """Everything a training run needs; the defaults are the embedded ``gem train`` run."""

    envs: list[str] = field(default_factory=lambda: ["game:GuessTheNumber-v0-easy"])
    model: str = "smollm2"  # the built-in SmolLM2-135M-Instruct, or a local model folder
    estimator: str = "rebn"
    gamma: float = 0.9
    steps: int = 14
    episodes_per_step: int = 16
    group_size: int = 1  # episodes per start state (seed); >= 2 for group estimators
    learning_rate: float | None = None  # None: LORA_LR with LoRA, FULL_LR when training every weight
    micro_batch_tokens: int | None = None  # padded tokens per forward/backward pass (gradients accumulate);
    # None: 2048 on a CPU, sized from the free memory on a GPU (gem_trainer.training.memory.micro_batch_tokens)
    max_grad_norm: float = 1.0
    weight_decay: float = 0.0
    max_new_tokens: int = 16  # enough for the default game's "\boxed{7}"; raise it for others
    max_prompt_tokens: int = 1024
    temperature: float = 1.0
    top_p: float = 1.0
    lora: bool = True  # train LoRA adapters (small, fast); False trains every weight
    lora_rank: int = 16
    lora_alpha: float = 32.0
    wrappers: str = "concat_chat"
    chat_template: str | None = None  # a Jinja file replacing the tokenizer's chat template
    device: str = "auto"
    dtype: str = "auto"
    threads: int | None = None  # torch CPU threads; None leaves torch's default
    seed: int = 0
    output_dir: str | None = None  # default: gem-runs/train-<time>
    save_every: int = 0  # steps between checkpoints; 0 saves only at the end
    ray_address: str | None = None  # play the environments on a Ray cluster ("auto", "HOST:6379", "local")
    env_hosts: int | None = None  # environment host processes on the cluster (default 2 with ray_address)
    report_to: list[str] = field(default_factory=list)  # experiment trackers (gem_trainer.trackers); none by default
    max_failed_share: float = 0.5  # a step with a larger share of failed episodes stops the run (1: never)
    episode_deadline: float | None = None  # seconds of wall clock per episode (environment and sampling)
    deadline: float | None = None  # seconds per step's collection of episodes
    carry_over: bool = False  # episodes running at the deadline continue in the next step
    spares: int = 0  # episodes started beyond episodes_per_step; the first whole groups to end are kept
    agent: str | None = None  # an agent program playing the episodes through GEM's gateway: module:function or a command
    agent_timeout: float = 600.0  # seconds an agent program may take per episode (then it fails, kind deadline)

    @property
    def lr(self) -> float:
        """The learning rate in effect (see ``learning_rate``)."""
        if self.learning_rate is not None:
            return self.learning_rate
        return LORA_LR if self.lora else FULL_LR

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


FIELDS = {f.name: f for f in fields(TrainConfig)}


def load_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The mapping in a YAML (or JSON) config file, its keys checked against :class:`TrainConfig`."""
    import yaml

    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigError(f"Config file {str(path)!r} does not exist.")
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ConfigError(f"Config file {str(path)!r} is not valid YAML: {e}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"Config file {str(path)!r} must hold a mapping of keys to values, got {type(data).__name__}.")
    for key in data:
        if key not in FIELDS:
            raise UnknownNameError("config key", str(key), FIELDS)
    return data


def save_config(config: TrainConfig, path: Path) -> None:
    import yaml

    path.write_text(yaml.safe_dump(config.to_dict(), sort_keys=False), encoding="utf-8")


def build_config(values: dict[str, Any]) -> TrainConfig:
    """A :class:`TrainConfig` from ``values`` (unknown keys rejected), validated."""
    for key in values:
        if key not in FIELDS:
            raise UnknownNameError("config key", str(key), FIELDS)
    values = dict(values)
    if isinstance(values.get("envs"), str):
        values["envs"] = [e.strip() for e in values["envs"].split(",") if e.strip()]
    if "report_to" in values and isinstance(values["report_to"], (str, list, type(None))):
        from gem_trainer.trackers import parse_report_to  # "wandb,mlflow", a list, or none

        values["report_to"] = parse_report_to(values["report_to"])
    config = TrainConfig(**values)
    validate(config)
    return config


def validate(config: TrainConfig) -> None:
    """Raise :class:`ConfigError` (or an unknown-name error) for anything that cannot work."""
    _check_types(config)
    positive = ("steps", "episodes_per_step", "group_size", "micro_batch_tokens", "max_new_tokens",
                "max_prompt_tokens", "lora_rank")
    for name in positive:
        if getattr(config, name) is not None and getattr(config, name) < 1:
            raise ConfigError(f"{name} must be at least 1, got {getattr(config, name)}.")
    if config.env_hosts is not None and config.env_hosts < 1:
        raise ConfigError(f"env_hosts must be at least 1, got {config.env_hosts}.")
    if config.threads is not None and config.threads < 1:
        raise ConfigError(f"threads must be at least 1, got {config.threads}.")
    if config.save_every < 0:
        raise ConfigError(f"save_every must be 0 (save at the end only) or a number of steps, got {config.save_every}.")
    if not 0.0 < config.gamma <= 1.0:
        raise ConfigError(f"gamma must be in (0, 1], got {config.gamma}.")
    if config.learning_rate is not None and config.learning_rate <= 0:
        raise ConfigError(f"learning_rate must be positive, got {config.learning_rate}.")
    if config.temperature < 0:
        raise ConfigError(f"temperature must be >= 0 (0 is greedy), got {config.temperature}.")
    if not 0.0 < config.top_p <= 1.0:
        raise ConfigError(f"top_p must be in (0, 1], got {config.top_p}.")
    if not 0.0 <= config.max_failed_share <= 1.0:
        raise ConfigError(f"max_failed_share must be in [0, 1] (1 never stops the run), got {config.max_failed_share}.")
    if config.max_grad_norm <= 0:
        raise ConfigError(f"max_grad_norm must be positive, got {config.max_grad_norm}.")
    for name in ("episode_deadline", "deadline"):
        value = getattr(config, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ConfigError(f"{name} must be a positive number of seconds, got {value}.")
    if config.carry_over and config.deadline is None and not config.spares:
        raise ConfigError("carry_over keeps the episodes still running at the deadline or beyond the spares: "
                          "give a deadline (or spares) with it, or drop it.")
    if config.spares < 0 or config.spares % config.group_size:
        raise ConfigError(f"spares must be 0 or more whole groups of group_size ({config.group_size}) episodes, "
                          f"got {config.spares}.")
    if not config.agent_timeout > 0:
        raise ConfigError(f"agent_timeout must be a positive number of seconds, got {config.agent_timeout}.")
    if config.agent is not None and not config.agent.strip():
        raise ConfigError("agent is empty: give module:function or a command (or leave it unset).")
    if config.agent is not None and (config.ray_address is not None or config.env_hosts is not None):
        raise ConfigError("agent programs play their environments through the gateway, in this process: "
                          "drop ray_address and env_hosts.")
    if config.agent is not None and (config.episode_deadline is not None or config.deadline is not None
                                     or config.carry_over or config.spares):
        raise ConfigError("agent programs are bounded by agent_timeout: drop episode_deadline, deadline, carry_over "
                          "and spares.")
    if config.episodes_per_step % config.group_size:
        raise ConfigError(
            f"episodes_per_step ({config.episodes_per_step}) must be a multiple of group_size "
            f"({config.group_size})."
        )
    if not config.envs:
        raise ConfigError("Give at least one environment id (--env).")
    check_env_ids(config.envs)
    from gem_core.registry import ESTIMATORS

    if config.estimator not in ESTIMATORS:
        raise UnknownNameError("estimator", config.estimator, ESTIMATORS.names())
    from gem_trainer.trackers import check_installed, parse_report_to

    check_installed(parse_report_to(config.report_to))


def vector_mode(ray_address: str | None, env_hosts: int | None, here: str = "async") -> dict[str, Any]:
    """``make_vec`` keywords for where the environments run: in this process (mode ``here``), or
    on ``env_hosts`` hosts of the Ray cluster at ``ray_address`` ("local" starts one on this machine)."""
    if ray_address is None and env_hosts is None:
        return {"mode": here}
    address = None if ray_address in (None, "local") else ray_address
    return {"mode": "ray", "pool": {"address": address, "hosts": env_hosts or 2}}


def check_env_ids(env_ids: list[str], command: str = "gem train") -> None:
    """Every id must be registered (a typo names the closest ids) and single-agent, before a
    model is loaded."""
    import gem_core
    from gem_core.core import single_agent_required

    for env_id in env_ids:
        if gem_core.is_multiagent(env_id):
            raise single_agent_required(env_id, command)


def _check_types(config: TrainConfig) -> None:
    expected: dict[str, tuple[type, ...]] = {
        "envs": (list,), "model": (str,), "estimator": (str,), "gamma": (int, float),
        "steps": (int,), "episodes_per_step": (int,), "group_size": (int,),
        "learning_rate": (int, float, type(None)), "micro_batch_tokens": (int, type(None)), "max_grad_norm": (int, float),
        "weight_decay": (int, float), "max_new_tokens": (int,), "max_prompt_tokens": (int,),
        "temperature": (int, float), "top_p": (int, float), "lora": (bool,), "lora_rank": (int,),
        "lora_alpha": (int, float), "wrappers": (str,), "chat_template": (str, type(None)),
        "device": (str,), "dtype": (str,), "threads": (int, type(None)), "seed": (int,),
        "output_dir": (str, type(None)), "save_every": (int,), "ray_address": (str, type(None)),
        "env_hosts": (int, type(None)), "report_to": (list,), "max_failed_share": (int, float),
        "episode_deadline": (int, float, type(None)), "deadline": (int, float, type(None)), "carry_over": (bool,),
        "spares": (int,), "agent": (str, type(None)), "agent_timeout": (int, float),
    }
    for name, types in expected.items():
        value = getattr(config, name)
        wrong_bool = isinstance(value, bool) and bool not in types
        if wrong_bool or not isinstance(value, types):
            want = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise ConfigError(f"{name} must be {want}, got {value!r}.")
    if not all(isinstance(e, str) for e in config.envs):
        raise ConfigError(f"envs must be a list of environment ids, got {config.envs!r}.")
