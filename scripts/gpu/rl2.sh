#!/usr/bin/env bash
# A few RL2 training steps on one GPU with GEM's environment file and ReBN on
# game:GuessTheNumber-v0-easy, through RL2's own trainer (torchrun -m gem_adapters.rl2.train, the
# command that `gem rl2 config` prints), then the mean episode score of every step
# (OUT/rewards.json), read from the metrics RL2 prints.
#
# Needs a CUDA machine with RL2 installed as docs/adapters/rl2.md says (sglang, flash-attn,
# ring-flash-attn, rl-square 0.0.2) and the model (a hub id, or a local folder in MODEL).
#   MODEL=HuggingFaceTB/SmolLM2-135M-Instruct STEPS=3 bash scripts/gpu/rl2.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

MODEL="${MODEL:-HuggingFaceTB/SmolLM2-135M-Instruct}"
OUT="${OUT:-runs/rl2-gpu}"
STEPS="${STEPS:-3}"
BATCH="${BATCH:-8}"

python - <<'PY' || exit 2
import importlib.util, sys
missing = [m for m in ("RL2", "sglang", "sglang_router", "flash_attn", "ring_flash_attn") if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f"scripts/gpu/rl2.sh needs {', '.join(missing)}: install RL2 as docs/adapters/rl2.md says.")
PY

mkdir -p "$OUT"
gem rl2 config --env game:GuessTheNumber-v0-easy --model "$MODEL" --out "$OUT" \
    --train-size $((STEPS * BATCH)) --val-size "$BATCH" --batch-size "$BATCH" --n 2 \
    --prompt-length 512 --response-length 1024 --max-turns 4 --max-tokens-per-turn 256 > "$OUT/command.txt"
command="$(tail -n 1 "$OUT/command.txt")"
echo "$command"
# One GPU: the actor and the sglang server share it; RL2 offloads the actor while it generates.
eval "$command" rollout.server_args.mem_fraction_static=0.4 actor.max_length_per_device=4096 \
    trainer.use_wandb=false 2>&1 | tee "$OUT/train.log"

python - "$OUT" <<'PY'
import json, re, sys

out = sys.argv[1]
rewards = {}
for line in open(f"{out}/train.log", encoding="utf-8", errors="replace"):
    step, score = re.search(r"Step (\d+),", line), re.search(r"scores/train: ([-\d.eE]+)", line)
    if step and score:
        rewards[int(step.group(1))] = float(score.group(1))
for step in sorted(rewards):
    print(f"step {step}: mean episode score {rewards[step]:.4f}")
json.dump({"reward_per_step": [[s, rewards[s]] for s in sorted(rewards)]}, open(f"{out}/rewards.json", "w"))
if not rewards:
    sys.exit("RL2 printed no scores/train metrics; see the training log above")
PY
