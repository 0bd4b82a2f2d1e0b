#!/bin/bash
set -e
cd /app
python3 - <<'EOF'
import json
orders = sorted(json.load(open('orders.json')), key=lambda o: o['id'])
with open('orders.csv', 'w') as f:
    f.write('id,customer,total\n')
    for o in orders:
        t = sum(i['qty'] * i['price'] for i in o['items'])
        f.write(f"{o['id']},{o['customer']},{t:.2f}\n")
EOF
