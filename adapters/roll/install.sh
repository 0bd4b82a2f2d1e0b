#!/usr/bin/env bash
# Installs the ROLL adapter on a CPU machine (as the tests do; docs/adapters/roll.md has the GPU lines),
# from the clone's root. docs/adapters/roll.md shows these lines and scripts/adapter_envs.py builds
# the adapter's test stage from them (adding the dev extra).
set -euo pipefail
cd "$(dirname "$0")/../.."
# --8<-- [start:torch]
pip install torch==2.13.0                      # the CPU wheel
# --8<-- [end:torch]
# --8<-- [start:install]
pip install -e ".[roll]"                        # adds gem-llm==0.0.4, omegaconf
pip install hydra-core dacite                   # what ROLL's launcher loads configs with
pip install "ray[default]==2.48.0"              # ROLL's Ray pin, the oldest the ray extra accepts
# --8<-- [end:install]
