#!/usr/bin/env bash
# Runs every test stage.
#
# The core stage uses the current Python environment, which must have `pip install -e ".[all,dev,docs,ray]"`
# (scripts/install_test_deps.sh installs it, at the versions of locks/core.txt); arguments go to its pytest.
# Each training library's adapter then runs its tests in a virtual environment of its own, installed as
# the docs tell users (at the versions of locks/<lib>.txt) and cached outside the clone
# (scripts/adapter_envs.py; the first run builds it, later runs reuse it until its lock changes). The verl_cpu
# stage runs verl's own launcher for two training steps on the CPU, with vLLM's CPU build (about 5 minutes).
# A full run also checks the packaging (scripts/check_package.sh: the built wheel ships its data),
# beside the adapter stages.
# ADAPTER_STAGES="verl" (or "none") selects adapter stages and skips that check; the default is all.
# Stage environments that are not built yet are built in the background while the core stage runs
# (installing waits on the network, the tests on the CPU); what they printed is shown afterwards.
# The adapter stages then run two at a time: those that start Ray clusters one after another, the
# others beside them (scripts/adapter_envs.py, RAY_STAGES).
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
python -m pytest -q --durations=20 --ignore=tests/adapters --ignore=tests/protocols --ignore=tests/harnesses "$@"  # those run in their stages; the 20 slowest tests listed last

[ "$stages" = "none" ] && exit 0
wait "$builds" || true   # a stage whose build failed is built again below, in the open
cat "$builds_log"
# Every stage's environment is made ready first, one at a time (the project is reinstalled in each).
# Then the stages run in two lanes at once: those whose tests start Ray clusters one after another,
# the others beside them. A stage's output is shown whole when it ends.
logs="$(mktemp -d)"
for stage in $stages; do
    python scripts/adapter_envs.py python "$stage" >"$logs/$stage.python"
done
package_log=""
if [ -z "${ADAPTER_STAGES:-}" ]; then   # a full run: the packaging check runs beside the adapter stages
    package_log="$(mktemp)"
    bash scripts/check_package.sh >"$package_log" 2>&1 &
    package=$!
fi
run_lane() {
    for stage in "$@"; do
        echo "-- adapter: $stage started"
        status=0
        "$(cat "$logs/$stage.python")" -m pytest -q "$(python scripts/adapter_envs.py tests "$stage")" \
            >"$logs/$stage.log" 2>&1 || status=$?
        echo "$status" >"$logs/$stage.status"
        { flock 9; echo "== adapter: $stage =="; cat "$logs/$stage.log"; } 9>"$logs/print.lock"
    done
}
{ read -r ray_lane; read -r other_lane; } < <(python scripts/adapter_envs.py lanes $stages)
# shellcheck disable=SC2086  # the lanes are lists of stage names
run_lane $ray_lane &
ray_lane_pid=$!
# shellcheck disable=SC2086
run_lane $other_lane
wait "$ray_lane_pid"
failed=""
for stage in $stages; do
    [ "$(cat "$logs/$stage.status")" = 0 ] || failed="$failed $stage"
done
if [ -n "$package_log" ]; then
    package_status=0
    wait "$package" || package_status=$?
    echo "== packaging: the built wheel ships its data =="
    cat "$package_log"
    rm -f "$package_log"
    [ "$package_status" = 0 ] || failed="$failed packaging"
fi
rm -rf "$logs"
if [ -n "$failed" ]; then
    echo "== what failed:$failed =="
    exit 1
fi
