#!/bin/bash
set -e
cd /app
python3 -c 'import json; c = json.load(open("config.json")); print(c["database"]["port"])' > port.txt
python3 -c 'import json; c = json.load(open("config.json"))
for f in c["features"]:
    if f["enabled"]: print(f["name"])' > enabled.txt
