#!/bin/bash
set -e
cd /app
cat > stats.py <<'EOF'
import sys


def main(path):
    with open(path) as f:
        values = sorted(float(line) for line in f if line.strip())
    n = len(values)
    mean = sum(values) / n
    mid = n // 2
    median = values[mid] if n % 2 else (values[mid - 1] + values[mid]) / 2
    print(f"mean={mean:.2f} median={median:.2f}")


main(sys.argv[1])
EOF
