#!/usr/bin/env bash
# A few RL2 training steps on one GPU with GEM's environment file and ReBN on
# game:GuessTheNumber-v0-easy, through RL2's own trainer (torchrun -m gem_adapters.rl2.train, the
# command that `gem rl2 config` prints), then the mean episode score of every step
# (OUT/rewards.json), read from the metrics RL2 prints.
#
# Needs a CUDA machine with RL2 installed as docs/adapters/rl2.md says (sglang, flash-attn,
# ring-flash-attn, rl-square 0.0.2) and the model (a hub id, or a local folder in MODEL).
#   MODEL=HuggingFaceTB/SmolLM2-135M-Instruct STEPS=3 bash scripts/gpu/rl2.sh
source "$(dirname "$0")/common.sh"

require rl2 RL2 sglang sglang_router flash_attn ring_flash_attn
# One GPU: the actor and the sglang server share it; RL2 offloads the actor while it generates.
train rl2 --val-size "$BATCH" -- rollout.server_args.mem_fraction_static=0.4 actor.max_length_per_device=4096 \
    trainer.use_wandb=false
python scripts/gpu/rewards.py "$OUT" "mean episode score" --log "scores/train: ([-\d.eE]+)" --step "Step (\d+),"
