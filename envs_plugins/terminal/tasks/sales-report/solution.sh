#!/bin/bash
set -e
cd /app
awk -F, 'FNR > 1 {r[$1] += $2 * $3} END {for (p in r) printf "%s %.2f\n", p, r[p]}' sales/*.csv |
  sort -k2,2nr -k1,1 | awk '{printf "%-12s%10.2f\n", $1, $2; t += $2} END {printf "%-12s%10.2f\n", "TOTAL", t}' > report.txt
