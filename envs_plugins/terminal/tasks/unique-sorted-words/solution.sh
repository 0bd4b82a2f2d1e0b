#!/bin/bash
set -e
cd /app
tr 'A-Z' 'a-z' < words.txt | tr -s ' ' '\n' | grep -v '^$' | sort -u > unique.txt
