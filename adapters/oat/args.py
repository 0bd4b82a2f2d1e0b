"""The launcher's arguments: oat's PPO arguments (``oat.algorithms.ppo.PPOArgs``) plus GEM's, read
by oat's own tyro command line. Both spellings work: ``--max_turns`` and ``--max-turns``.

Defaults differ from oat's where GEM needs them to: ``--algo PPO``, ``--gamma 0.9`` (GEM's
default discount between turns), no reward oracle (the environments give the rewards), no prompt
dataset (the episode starts come from ``--env``, ``--seed`` and ``--train_size``) and no online
evaluation (``--eval_steps -1``; evaluate saved models with ``gem eval``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

from oat.algorithms.ppo import PPOArgs

#: ``--estimator oat`` keeps oat's own per-episode returns (GAE with ``--critic_type ppo``).
NATIVE = "oat"


@dataclass
class GemOatArgs(PPOArgs):
    """oat's multi-turn PPO on GEM environments."""

    # GEM environment ids to train on; episode starts take them in turn.
    env: tuple[str, ...] = ()
    # GEM advantage estimator (rebn, grpo, ...; `gem plugins` lists them), or "oat" for oat's own.
    estimator: str = "rebn"
    # GEM wrappers, innermost first, as a comma list. oat prompts each turn with its observation
    # alone, so a history wrapper (concat_chat) is how the model sees the episode so far.
    wrappers: str = "concat_chat"
    # Stop an episode after this many model turns (default: the environment's own limit).
    max_turns: Optional[int] = None
    # Seconds of wall clock an episode may take, environment and sampling together; past it the
    # episode fails and is left out of training (default: no deadline).
    episode_deadline: Optional[float] = None
    # Episode starts to train on: seeds --seed, --seed + 1, ...
    train_size: int = 8192

    algo: Literal["PPO"] = "PPO"
    gamma: float = 0.9
    oracle: str = ""
    prompt_data: str = ""
    eval_steps: int = -1
