"""Dataset fixtures for the QA tests; the Hugging Face libraries are kept offline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Set before `datasets` is first imported: tests never touch the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def _offline_hub(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
