"""``python -m gem_adapters.oat.train <oat flags> <GEM flags>``: oat's multi-turn PPO on GEM
environments, launched with launchpad as oat's own scripts do.

The flags are oat's (``--pretrain``, ``--gpus``, ``--rollout_batch_size``, ...; see
:mod:`gem_adapters.oat.args` for the defaults GEM changes) plus GEM's: ``--env ID [ID ...]``,
``--estimator``, ``--wrappers``, ``--max_turns``, ``--episode_deadline`` and ``--train_size``.
Settings GEM or oat cannot serve are refused before anything starts, with the fix named.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from gem_core.errors import GemError


def check(args: Any, *, visible_gpus: int | None = None) -> None:
    """Raise a :class:`GemError` naming the fix for arguments that cannot train.
    ``visible_gpus`` defaults to what torch sees."""
    from gem_adapters.common.estimators import gem_estimator, needs_groups
    from gem_adapters.common.options import EpisodeOptions
    from gem_adapters.oat.args import NATIVE
    from gem_core import spec

    if not args.env:
        raise GemError("Name at least one environment: --env ENV_ID [ENV_ID ...]; `gem envs` lists them.")
    for env_id in args.env:
        spec(env_id)  # an unknown id raises, naming the closest ones
    EpisodeOptions.from_config({"wrappers": args.wrappers, "max_turns": args.max_turns,
                                "episode_deadline": args.episode_deadline},
                               where="the GEM options (--wrappers, --max_turns, --episode_deadline)",
                               history_in_context=False)

    if args.estimator != NATIVE:
        gem_estimator(args.estimator)  # an unknown name raises, naming the closest ones
        if args.critic_type == "ppo":
            raise GemError(f"--estimator {args.estimator} needs no critic, but --critic_type ppo trains one: "
                           "use --critic_type grpo or drgrpo, or --estimator oat for oat's GAE.")
        if args.whiten_adv:
            raise GemError(f"--whiten_adv would whiten the advantages of --estimator {args.estimator} again: "
                           "drop --whiten_adv (ReBN normalises already), or use --estimator oat.")
        if args.num_samples < 2 and needs_groups(args.estimator):
            raise GemError(f"{args.estimator} compares episodes from one start: set --num_samples 2 or more.")
    if not 0.0 <= args.gamma <= 1.0:
        raise GemError(f"--gamma must be within [0, 1], not {args.gamma}.")
    if args.train_size < 1:
        raise GemError("--train_size must be at least 1.")
    if args.num_gpus_per_actor != 1 or args.train_batch_size_per_device != 1:
        raise GemError("oat's multi-turn learner needs --num_gpus_per_actor 1 and --train_batch_size_per_device 1.")
    if args.gpus < 1:
        raise GemError(f"--gpus must be at least 1, not {args.gpus}.")
    # oat's get_program: collocated, every GPU runs a learner; otherwise the second half does
    learners = (args.gpus if args.collocate else args.gpus - args.gpus // 2) * args.num_groups
    if args.rollout_batch_size % (learners * args.rollout_batch_size_per_device):
        raise GemError(f"--rollout_batch_size ({args.rollout_batch_size}) must be a multiple of the learner "
                       f"GPUs ({learners}) times --rollout_batch_size_per_device "
                       f"({args.rollout_batch_size_per_device}).")
    if args.train_size < args.rollout_batch_size_per_device * learners:
        raise GemError(f"--train_size ({args.train_size}) is less than one step's episode starts "
                       f"({args.rollout_batch_size_per_device} on each of {learners} learner GPUs).")
    if visible_gpus is None:
        import torch

        visible_gpus = torch.cuda.device_count()
    if visible_gpus < args.gpus:
        raise GemError(f"--gpus {args.gpus} asks for more GPUs than this machine shows ({visible_gpus}); "
                       "lower --gpus or set CUDA_VISIBLE_DEVICES.")


def parse(argv: Sequence[str]) -> Any:
    """oat's tyro command line over :class:`~gem_adapters.oat.args.GemOatArgs`."""
    import warnings

    import tyro

    from gem_adapters.oat.args import GemOatArgs

    with warnings.catch_warnings():  # tyro's notes on oat's own fields (`str` fields defaulting to None)
        warnings.filterwarnings("ignore", message="The field .* is annotated with type", category=UserWarning)
        return tyro.cli(GemOatArgs, args=list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    try:
        check(args)
    except GemError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    import launchpad as lp
    from oat.args import default_args_validation
    from oat.interface import get_program

    from gem_adapters.oat.rollout import GemOatActor
    from gem_adapters.oat.advantages import GemOatLearner

    args = default_args_validation(args)
    program, local_resources = get_program(args, learner_cls=GemOatLearner, actor_cls=GemOatActor)
    lp.launch(program, launch_type=args.launch_type, local_resources=local_resources, terminal="current_terminal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
