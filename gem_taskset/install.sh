#!/usr/bin/env bash
# Installs GEM's verifiers taskset (gem_taskset) beside verifiers 0.4 on a CPU machine, as its tests do,
# from the clone's root: docs/serving.md shows these lines and scripts/adapter_envs.py builds the verifiers
# test stage from them. verifiers pins mcp==2.0.0 and openai<3, which the core's tools and openai extras
# exclude, so it gets an environment of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
# --8<-- [start:install]
pip install -c locks/verifiers.txt -e ".[verifiers]"
# --8<-- [end:install]
# --8<-- [start:tests]
pip install -c locks/verifiers.txt "verifiers[openenv]==0.4.0" starlette uvicorn websockets pyyaml   # for the tests: verifiers' openenv taskset against gem serve
pip install -c locks/verifiers.txt pytest pytest-timeout sybil   # for the tests (sybil: the documented examples)
# --8<-- [end:tests]
