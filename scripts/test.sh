#!/usr/bin/env bash
# Runs every test stage. The core stage uses the current Python environment, which must have
# `pip install -e ".[all,dev]"` (see .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== core, environments, tools, local trainer =="
python -m pytest -q "$@"
