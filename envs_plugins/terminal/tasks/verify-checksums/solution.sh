#!/bin/bash
set -e
cd /app
sha256sum -c SHA256SUMS 2>/dev/null | grep ': FAILED$' | sed 's/: FAILED$//' | sort > corrupt.txt
