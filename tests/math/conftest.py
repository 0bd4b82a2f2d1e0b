"""Tests never touch the network: Hugging Face libraries run offline (the test of missing data
runs in a fresh interpreter with an empty cache)."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
