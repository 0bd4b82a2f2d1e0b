#!/bin/bash
echo "hello from run.sh" > /app/output.txt
