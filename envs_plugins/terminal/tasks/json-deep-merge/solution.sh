#!/bin/bash
set -e
cd /app
python3 - <<'EOF'
import glob, json


def merge(base, override):
    for key, value in override.items():
        if value is None:
            base.pop(key, None)
        elif isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value
    return base


result = json.load(open('defaults.json'))
for path in sorted(glob.glob('overrides/*.json')):
    merge(result, json.load(open(path)))
json.dump(result, open('final.json', 'w'), indent=2)
EOF
