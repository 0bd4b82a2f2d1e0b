#!/bin/bash
set -e
cd /app
find config -name '*.conf' -type f -exec sed -i 's/old\.example\.com/new.example.com/g' {} +
