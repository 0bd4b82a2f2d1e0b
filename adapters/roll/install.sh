#!/usr/bin/env bash
# Installs the ROLL adapter on a CPU machine (as the tests do; docs/adapters/roll.md has the GPU lines),
# from the clone's root. docs/adapters/roll.md shows these lines and scripts/adapter_envs.py builds
# the adapter's test stage from them (adding the dev extra).
set -euo pipefail
cd "$(dirname "$0")/../.."
# --8<-- [start:torch]
pip install -c locks/roll.txt torch==2.13.0                      # the CPU wheel
# --8<-- [end:torch]
# --8<-- [start:install]
# -c locks/roll.txt: the versions the adapter's tests passed with; leave it out for the newest versions
# (and on a GPU machine, where it would replace your torch build)
pip install -c locks/roll.txt -e ".[roll]"                        # adds gem-llm==0.0.4, omegaconf
pip install -c locks/roll.txt hydra-core dacite                   # what ROLL's launcher loads configs with
pip install -c locks/roll.txt "ray[default]==2.48.0"              # ROLL's Ray pin, the oldest the ray extra accepts
# --8<-- [end:install]
