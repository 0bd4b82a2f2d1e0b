#!/bin/bash
set -e
cd /app
mkdir -p extracted
tar xzf bundle.tar.gz -C extracted
find extracted -type f | wc -l > count.txt
