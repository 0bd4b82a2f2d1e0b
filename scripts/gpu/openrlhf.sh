#!/usr/bin/env bash
# A few OpenRLHF training steps on one GPU with GEM's agent and ReBN on game:GuessTheNumber-v0-easy,
# through OpenRLHF's own trainer (python -m gem_adapters.openrlhf.train, the command that
# `gem openrlhf config` prints), then the mean reward of every step (OUT/rewards.json).
#
# Needs a CUDA machine with OpenRLHF installed as docs/adapters/openrlhf.md says, plus vLLM
# (OpenRLHF's rollout engine) and the model (a hub id, or a local folder in MODEL).
#   MODEL=HuggingFaceTB/SmolLM2-135M-Instruct STEPS=3 bash scripts/gpu/openrlhf.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

MODEL="${MODEL:-HuggingFaceTB/SmolLM2-135M-Instruct}"
OUT="${OUT:-runs/openrlhf-gpu}"
STEPS="${STEPS:-3}"
BATCH="${BATCH:-8}"

python - <<'PY' || exit 2
import importlib.util, sys
missing = [m for m in ("vllm", "ray", "openrlhf", "deepspeed") if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f"scripts/gpu/openrlhf.sh needs {', '.join(missing)}: install OpenRLHF as docs/adapters/openrlhf.md says, with vllm.")
PY

mkdir -p "$OUT"
gem openrlhf config --env game:GuessTheNumber-v0-easy --model "$MODEL" --out "$OUT" \
    --train-size $((STEPS * BATCH)) --val-size "$BATCH" --batch-size "$BATCH" --n 2 \
    --prompt-length 512 --response-length 1024 --max-turns 4 --max-tokens-per-turn 256 > "$OUT/command.txt"
command="$(tail -n 1 "$OUT/command.txt")"
echo "$command"
# One GPU: the colocated actor and vLLM engine share it.
eval "$command" --vllm.gpu_memory_utilization 0.4 --vllm.enable_sleep --ds.zero_stage 0 \
    --logger.logging_steps 1 --logger.tensorboard_dir "$OUT/tensorboard" --eval.steps -1 \
    --ckpt.output_dir "$OUT/model" 2>&1 | tee "$OUT/train.log"

python - "$OUT" <<'PY'
import glob, json, os, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

out = sys.argv[1]
rewards = {}
for folder in sorted({os.path.dirname(p) for p in glob.glob(f"{out}/tensorboard/**/events.*", recursive=True)}):
    events = EventAccumulator(folder)
    events.Reload()
    for tag in events.Tags()["scalars"]:
        if tag == "train/reward":
            rewards.update({e.step: e.value for e in events.Scalars(tag)})
for step in sorted(rewards):
    print(f"step {step}: mean reward {rewards[step]:.4f}")
json.dump({"reward_per_step": [[s, rewards[s]] for s in sorted(rewards)]}, open(f"{out}/rewards.json", "w"))
if not rewards:
    sys.exit("no train/reward scalars were logged; see the training log above")
PY
