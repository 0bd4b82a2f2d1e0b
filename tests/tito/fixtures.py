"""What the suite's test modules share: the seeds each path plays, the echo environment as a
fixture, and the words of the one-time warning for templates that rewrite history. Import the
fixtures by name into a test module."""

from __future__ import annotations

import pytest

from tests.tito import echo

SEEDS = (0, 1, 2)
#: In the warning a path gives once for a template that renders past answers otherwise.
REWRITES = "renders earlier answers otherwise than the model wrote them"


@pytest.fixture(scope="module")
def echo_env():
    """The echo environment's id, registered for the module's tests."""
    with echo.registered() as env_id:
        yield env_id


@pytest.fixture
def warns_afresh(monkeypatch):
    """Each test sees the one-time warning afresh."""
    monkeypatch.setattr("gem_adapters.common.chat._WARNED", set(), raising=False)
