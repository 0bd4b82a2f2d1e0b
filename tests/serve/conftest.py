"""The serve tests' shared OpenEnv clients: one process of OpenEnv's environment for the session
(importing OpenEnv takes seconds)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def openenv():
    """OpenEnv 0.10's clients (:class:`tests.serve.openenv_peer.Clients`)."""
    from tests.serve.openenv_peer import Clients

    clients = Clients()
    yield clients
    clients.close()
