#!/bin/bash
jq -r 'group_by(.customer) | map({c: .[0].customer, t: (map(.amount) | add)}) | sort_by(-.t) | .[] | "\(.c) \(.t)"' \
    /app/orders.json > /app/report.txt
