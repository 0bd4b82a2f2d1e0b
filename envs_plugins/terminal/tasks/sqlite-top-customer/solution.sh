#!/bin/bash
set -e
cd /app
sqlite3 shop.db "SELECT c.name || ',' || printf('%.2f', SUM(o.amount)) FROM customers c JOIN orders o ON o.customer_id = c.id WHERE o.status = 'paid' GROUP BY c.id ORDER BY SUM(o.amount) DESC" > totals.csv
head -1 totals.csv | cut -d, -f1 > best.txt
