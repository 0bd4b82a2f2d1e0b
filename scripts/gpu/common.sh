# Sourced by scripts/gpu/<lib>.sh: what every GPU smoke run shares. Settings from the environment:
# MODEL (a hub id or a local folder), STEPS, BATCH (episode starts per step), OUT (the run folder).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

MODEL="${MODEL:-HuggingFaceTB/SmolLM2-135M-Instruct}"
STEPS="${STEPS:-3}"
BATCH="${BATCH:-8}"

# require LIB MODULE...: stop (status 2) unless every module imports, naming the adapter's install page.
require() {
    python - "$@" <<'PY' || exit 2
import importlib.util, sys
lib, modules = sys.argv[1], sys.argv[2:]
missing = [m for m in modules if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f"scripts/gpu/{lib}.sh needs {', '.join(missing)}: install it as docs/adapters/{lib}.md says.")
PY
}

# train LIB [CONFIG_OPTION...] -- [LAUNCH_OPTION...]: `gem LIB config` for a few steps on
# game:GuessTheNumber-v0-easy, then the launch command it prints with the launch options added;
# OUT/command.txt holds the config output and OUT/train.log the training log.
train() {
    local lib="$1" config=()
    shift
    while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do config+=("$1"); shift; done
    [ "$#" -gt 0 ] && shift
    OUT="${OUT:-runs/$lib-gpu}"
    mkdir -p "$OUT"
    gem "$lib" config --env game:GuessTheNumber-v0-easy --model "$MODEL" --out "$OUT" \
        --train-size $((STEPS * BATCH)) --batch-size "$BATCH" --n 2 --prompt-length 512 --response-length 1024 \
        --max-turns 4 --max-tokens-per-turn 256 "${config[@]}" > "$OUT/command.txt"
    local command
    command="$(tail -n 1 "$OUT/command.txt")"
    echo "$command"
    eval "$command $(printf '%q ' "$@")" 2>&1 | tee "$OUT/train.log"
}
