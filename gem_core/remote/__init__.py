"""Environments over the network, in OpenEnv's wire protocol.

* :mod:`gem_core.remote.server` (``gem serve``): serves a GEM environment to OpenEnv clients,
  one environment per WebSocket session.
* :mod:`gem_core.remote.env` (``remote:<url>`` ids): a GEM environment played on a server that
  speaks OpenEnv's protocol, ``gem serve`` or any OpenEnv environment server.
* :mod:`gem_core.remote.protocol`: the messages both sides exchange.

Both need the ``openenv`` extra (Starlette, uvicorn and websockets); OpenEnv's own package is not
needed.
"""
