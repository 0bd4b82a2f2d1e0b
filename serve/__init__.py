"""GEM's serving wing: environments over the network, in OpenEnv's HTTP API.

A plugin like any other (:mod:`gem_serve.plugin`, entry point ``serve``): it registers the
``gem serve`` command and the ``remote:{url}`` environments through GEM's hooks; the core never
imports it.

* :mod:`gem_serve.cli`: the ``gem serve`` command (serve, or ``--export`` a package).
* :mod:`gem_serve.server`: serves a GEM environment to OpenEnv clients (``/ws``, ``/mcp``, HTTP).
* :mod:`gem_serve.sessions`: a session's environment and episode.
* :mod:`gem_serve.mcp_endpoint`: MCP on ``/mcp``, whose tools are the functions of
  :mod:`gem_core.tools.actions`.
* :mod:`gem_serve.export`: OpenEnv environment packages (``gem serve --export``), written from
  the templates in ``gem_serve/templates``.
* :mod:`gem_serve.env`: ``remote:<url>`` environments, played on a server that speaks OpenEnv's
  protocol (``gem serve`` or any OpenEnv environment server).
* :mod:`gem_serve.protocol`: the WebSocket messages both sides exchange.
* :mod:`gem_serve.plugin`: the registrations.

Serving and ``remote:`` environments need the ``openenv`` extra (Starlette, uvicorn, websockets,
mcp-types, PyYAML); OpenEnv's own package is not needed.
"""
