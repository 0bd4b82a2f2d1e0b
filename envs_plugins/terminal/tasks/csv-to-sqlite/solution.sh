#!/bin/bash
set -e
cd /app
python3 - <<'EOF'
import csv, sqlite3
totals, names = {}, {}
for row in csv.DictReader(open('legacy.csv', newline='')):
    totals[row['sku']] = totals.get(row['sku'], 0) + int(row['qty'])
    names[row['sku']] = row['name']
db = sqlite3.connect('inventory.db')
db.execute('CREATE TABLE items(sku TEXT PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL)')
db.executemany('INSERT INTO items VALUES (?, ?, ?)', [(s, names[s], q) for s, q in totals.items()])
db.execute('CREATE INDEX idx_items_name ON items(name)')
db.execute('CREATE VIEW in_stock AS SELECT sku, qty FROM items WHERE qty > 0')
db.commit()
EOF
