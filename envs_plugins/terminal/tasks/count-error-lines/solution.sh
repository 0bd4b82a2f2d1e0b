#!/bin/bash
set -e
cd /app
awk '$3 == "ERROR"' server.log | wc -l > error_count.txt
