#!/usr/bin/env bash
# A few training steps of ROLL's agentic pipeline on one GPU, with ROLL's own launcher, on
# game:GuessTheNumber-v0-easy with a small model and GEM's ReBN; prints the reward of every step.
#
# Needs a ROLL checkout installed as ROLL's README says (vllm, Ray, mcore_adapter) and
# pip install "gem-adapters[roll]". Usage: ROLL_SOURCE=path/to/ROLL bash scripts/gpu/roll.sh [MODEL]
set -euo pipefail
ROLL_SOURCE="${ROLL_SOURCE:?set ROLL_SOURCE to the ROLL checkout}"
MODEL="${1:-Qwen/Qwen2.5-0.5B-Instruct}"
OUT="$(mktemp -d)/gtn"

gem roll config --env game:GuessTheNumber-v0-easy --model "$MODEL" --out "$OUT" --roll-dir "$ROLL_SOURCE" \
    --gpus 1 --batch-size 8 --n 1 --train-size 32 --val-size 8 --max-turns 6 --max-tokens-per-turn 256 \
    --prompt-length 1024 --response-length 1024 > "$OUT.command"
cd "$ROLL_SOURCE"
eval "$(tail -n 1 "$OUT.command")" 2>&1 | tee "$OUT/train.log"
echo "reward per step (ROLL's critic/score/mean, the mean episode score of the step's batch):"
grep -o "'critic/score/mean': [-0-9.e]*" "$OUT/train.log" | nl
