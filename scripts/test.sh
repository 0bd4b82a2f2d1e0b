#!/usr/bin/env bash
# Runs every test stage.
#
# The core stage uses the current Python environment, which must have `pip install -e ".[all,dev,docs,ray]"`
# (scripts/install_test_deps.sh installs it, at the versions of locks/core.txt); arguments go to its pytest.
# Each training library's adapter then runs its tests in a virtual environment of its own, installed as
# the docs tell users (at the versions of locks/<lib>.txt) and cached outside the clone
# (scripts/adapter_envs.py; the first run builds it, later runs reuse it until its lock changes). The verl_cpu
# stage runs verl's own launcher for two training steps on the CPU, with vLLM's CPU build (about 10 minutes).
# A full run also checks the packaging (scripts/check_package.sh: the built wheel ships its data).
# ADAPTER_STAGES="verl" (or "none") selects adapter stages and skips that check; the default is all.
# Stage environments that are not built yet are built in the background while the core stage runs
# (installing waits on the network, the tests on the CPU); what they printed is shown afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

stages="${ADAPTER_STAGES:-$(python scripts/adapter_envs.py list)}"
if [ "$stages" != "none" ]; then
    builds_log="$(mktemp)"
    # its own process group, so that an early exit stops it and every pip it started
    setsid bash -c 'for stage in "$@"; do python scripts/adapter_envs.py python "$stage" >/dev/null || true; done' \
        builds $stages >"$builds_log" 2>&1 &
    builds=$!
    trap 'kill -- -"$builds" 2>/dev/null || true; rm -f "$builds_log"' EXIT
fi

echo "== core, environments, tools, local trainer =="
python -m pytest -q --ignore=tests/adapters "$@"

if [ -z "${ADAPTER_STAGES:-}" ]; then   # a full run
    echo "== packaging: the built wheel ships its data =="
    bash scripts/check_package.sh
fi

[ "$stages" = "none" ] && exit 0
wait "$builds" || true   # a stage whose build failed is built again below, in the open
cat "$builds_log"
for stage in $stages; do
    echo "== adapter: $stage =="
    stage_python="$(python scripts/adapter_envs.py python "$stage")"
    "$stage_python" -m pytest -q "$(python scripts/adapter_envs.py tests "$stage")"
done
