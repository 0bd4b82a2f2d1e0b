#!/bin/bash
set -e
cd /app
mkdir -p project/src project/tests project/docs
printf '# Project\n' > project/README.md
printf 'print("hello")\n' > project/src/main.py
