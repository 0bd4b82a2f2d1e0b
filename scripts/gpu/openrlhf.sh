#!/usr/bin/env bash
# A few OpenRLHF training steps on one GPU with GEM's agent and ReBN on game:GuessTheNumber-v0-easy,
# through OpenRLHF's own trainer (python -m gem_adapters.openrlhf.train, the command that
# `gem openrlhf config` prints), then the mean reward of every step (OUT/rewards.json).
#
# Needs a CUDA machine with OpenRLHF installed as docs/adapters/openrlhf.md says, plus vLLM
# (OpenRLHF's rollout engine) and the model (a hub id, or a local folder in MODEL).
#   MODEL=HuggingFaceTB/SmolLM2-135M-Instruct STEPS=3 bash scripts/gpu/openrlhf.sh
source "$(dirname "$0")/common.sh"

require openrlhf vllm ray openrlhf deepspeed
# One GPU: the colocated actor and vLLM engine share it.
OUT="${OUT:-runs/openrlhf-gpu}"
train openrlhf --val-size "$BATCH" -- --vllm.gpu_memory_utilization 0.4 --vllm.enable_sleep --ds.zero_stage 0 \
    --logger.logging_steps 1 --logger.tensorboard_dir "$OUT/tensorboard" --eval.steps -1 --ckpt.output_dir "$OUT/model"
python scripts/gpu/rewards.py "$OUT" "mean reward" --tensorboard train/reward
