#!/bin/bash
set -e
cd /app
find docs -type f -name '*.md' | sort | tar czf backup.tar.gz -T -
