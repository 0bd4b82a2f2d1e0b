#!/bin/bash
set -e
cd /app
find data -type f -printf '%s %P\n' | sort -n | tail -1 | cut -d' ' -f2- > largest.txt
