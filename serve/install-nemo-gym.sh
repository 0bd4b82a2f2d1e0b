#!/usr/bin/env bash
# Installs GEM's NeMo Gym resources server (gem_serve.nemo_gym_server) beside NeMo Gym 0.4 on a CPU machine,
# as its tests do, from the clone's root, in an environment of Python 3.12 (NeMo Gym 0.4 needs 3.12 or newer,
# 0.5 and newer 3.13.14; it pins mcp<2, which the core's tools extra excludes). docs/serving.md shows these
# lines and scripts/adapter_envs.py builds the nemo_gym test stage from them.
set -euo pipefail
cd "$(dirname "$0")/.."
# --8<-- [start:install]
pip install -c locks/nemo_gym.txt -e ".[nemo-gym]"
# --8<-- [end:install]
# --8<-- [start:tests]
pip install -c locks/nemo_gym.txt httpx pyyaml pytest pytest-timeout sybil   # for the tests
# --8<-- [end:tests]
