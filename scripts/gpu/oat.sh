#!/usr/bin/env bash
# A few oat training steps on one GPU with GEM's actor and learner and ReBN on
# game:GuessTheNumber-v0-easy, through the command `gem oat config` prints, then the mean episode
# return of every step (OUT/rewards.json), read from the metrics oat logs.
#
# Needs a CUDA machine with oat installed as docs/adapters/oat.md says (Python 3.10, vLLM
# 0.8.4, flash-attn, dm-launchpad) and the model (a hub id, or a local folder in MODEL).
#   MODEL=HuggingFaceTB/SmolLM2-135M-Instruct STEPS=3 bash scripts/gpu/oat.sh
source "$(dirname "$0")/common.sh"

require oat oat vllm launchpad deepspeed flash_attn
# One GPU: the actor's vLLM engine and the learner share it (--collocate).
train oat -- --vllm_gpu_ratio 0.3 --zero_stage 2
python scripts/gpu/rewards.py "$OUT" "mean episode return" --key return \
    --log "'actor/mean_episode_return': ([-\d.eE]+)"
