#!/usr/bin/env bash
# A few oat training steps on one GPU with GEM's actor and learner and ReBN on
# game:GuessTheNumber-v0-easy, through the command `gem oat config` prints, then the mean episode
# return of every step (OUT/rewards.json), read from the metrics oat logs.
#
# Needs a CUDA machine with oat installed as docs/adapters/oat.md says (Python 3.10, vLLM
# 0.8.4, flash-attn, dm-launchpad) and the model (a hub id, or a local folder in MODEL).
#   MODEL=HuggingFaceTB/SmolLM2-135M-Instruct STEPS=3 bash scripts/gpu/oat.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

MODEL="${MODEL:-HuggingFaceTB/SmolLM2-135M-Instruct}"
OUT="${OUT:-runs/oat-gpu}"
STEPS="${STEPS:-3}"
BATCH="${BATCH:-8}"

python - <<'PY' || exit 2
import importlib.util, sys
missing = [m for m in ("oat", "vllm", "launchpad", "deepspeed", "flash_attn") if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f"scripts/gpu/oat.sh needs {', '.join(missing)}: install oat as docs/adapters/oat.md says.")
PY

mkdir -p "$OUT"
gem oat config --env game:GuessTheNumber-v0-easy --model "$MODEL" --out "$OUT" --train-size $((STEPS * BATCH)) \
    --batch-size "$BATCH" --n 2 --prompt-length 512 --response-length 1024 --max-turns 4 \
    --max-tokens-per-turn 256 > "$OUT/command.txt"
command="$(tail -n 1 "$OUT/command.txt")"
echo "$command"
# One GPU: the actor's vLLM engine and the learner share it (--collocate).
eval "$command" --vllm_gpu_ratio 0.3 --zero_stage 2 2>&1 | tee "$OUT/train.log"

python - "$OUT" <<'PY'
import json, re, sys

out = sys.argv[1]
returns = [float(m.group(1)) for line in open(f"{out}/train.log", encoding="utf-8", errors="replace")
           for m in [re.search(r"'actor/mean_episode_return': ([-\d.eE]+)", line)] if m]
for step, value in enumerate(returns, 1):
    print(f"step {step}: mean episode return {value:.4f}")
json.dump({"return_per_step": list(enumerate(returns, 1))}, open(f"{out}/rewards.json", "w"))
if not returns:
    sys.exit("oat logged no actor/mean_episode_return; see the training log above")
PY
