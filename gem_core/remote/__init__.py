"""Environments over the network, in OpenEnv's HTTP API.

* :mod:`gem_core.remote.server` (``gem serve``): serves a GEM environment to OpenEnv clients;
  :mod:`gem_core.remote.sessions` holds a session's environment and episode,
  :mod:`gem_core.remote.mcp_endpoint` answers MCP on ``/mcp`` with the functions of
  :mod:`gem_core.remote.actions`, and :mod:`gem_core.remote.export` writes OpenEnv packages.
* :mod:`gem_core.remote.env` (``remote:<url>`` ids): a GEM environment played on a server that
  speaks OpenEnv's protocol, ``gem serve`` or any OpenEnv environment server.
* :mod:`gem_core.remote.protocol`: the WebSocket messages both sides exchange.

Both need the ``openenv`` extra (Starlette, uvicorn, websockets, mcp-types, PyYAML); OpenEnv's
own package is not needed.
"""
