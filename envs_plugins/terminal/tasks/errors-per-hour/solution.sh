#!/bin/bash
set -e
cd /app
{ echo hour,errors; grep -E '^\[[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:' app.log | grep 'level=ERROR' | cut -c13-14 | sort | uniq -c | awk '{print $2 "," $1}'; } > errors_per_hour.csv
