#!/bin/bash
set -e
cd /app
python3 - <<'EOF'
from datetime import datetime, timezone
rows = []
for order, (service, parse) in enumerate([
        ('web', lambda l: (datetime.strptime(l[:19], '%Y-%m-%d %H:%M:%S'), l[20:])),
        ('db', lambda l: (datetime.strptime(l[1:21], '%d/%b/%Y:%H:%M:%S'), l[23:])),
        ('jobs', lambda l: (datetime.fromtimestamp(int(l.split(' ', 1)[0]), timezone.utc).replace(tzinfo=None), l.split(' ', 1)[1]))]):
    for line in open(f'logs/{service}.log'):
        line = line.rstrip('\n')
        if line:
            when, message = parse(line)
            rows.append((when, order, service, message))
with open('merged.log', 'w') as f:
    for when, _, service, message in sorted(rows):
        f.write(f"{when:%Y-%m-%dT%H:%M:%S}Z {service} {message}\n")
EOF
