#!/bin/bash
set -e
cd /app
python3 - <<'EOF'
import csv, json
rows = list(csv.DictReader(open('people.csv', newline='')))
for r in rows:
    r['age'] = int(r['age'])
json.dump(rows, open('people.json', 'w'), indent=2)
EOF
