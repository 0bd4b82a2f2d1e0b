#!/bin/bash
# Runs the task's tests (Python's standard library only); unittest prints one verdict per test.
cd "${TEST_DIR:-/tests}" && python3 -B -m unittest -v test_outputs 2>&1
