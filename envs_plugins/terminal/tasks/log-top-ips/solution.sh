#!/bin/bash
set -e
cd /app
awk '{print $1}' access.log | sort | uniq -c | sort -rn | head -3 | awk '{print $1, $2}' > top_ips.txt
awk '$9 == 404' access.log | wc -l > not_found.txt
