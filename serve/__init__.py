"""GEM's serving wing: environments over the network, in OpenEnv's HTTP API (and ORS's), and the gateway
that records what a model sampled for agent programs GEM does not run.

A plugin like any other (:mod:`gem_serve.plugin`, entry point ``serve``): it registers the
``gem serve`` and ``gem gateway`` commands and the ``remote:{url}`` environments through GEM's
hooks; the core, the packs and the adapters never import it, but for an adapter's loop that plays
agent programs through the gateway (``gem_adapters.verl.harness``).

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

The other protocols (docs/serving.md):

* :mod:`gem_serve.ors_server`: GEM environments over ORS, the Open Reward Standard (``gem serve
  --ors``), on ors-sdk's server classes; :mod:`gem_serve.ors_env`: ``ors:<name>`` environments,
  played on any ORS server through ors-sdk's client;
* :mod:`gem_serve.nemo_gym_server`: GEM environments as a NeMo Gym resources server.

The gateway, :mod:`gem_serve.gateway` (``gem gateway``; docs/gateway.md):

* :mod:`gem_serve.gateway.cli`: the ``gem gateway`` command; :mod:`gem_serve.gateway.serving`
  builds a gateway from its options, and serves applications in a thread;
* :mod:`gem_serve.gateway.server`: sessions, keys, retries and the OpenAI-compatible routes;
* :mod:`gem_serve.gateway.openai_api`: the request fields taken and refused, completions and streams;
* :mod:`gem_serve.gateway.chains`: each call's prompt ids, continued from what was sampled, in segments;
* :mod:`gem_serve.gateway.tool_calls`: tool calls read from the sampled text in the model's format;
* :mod:`gem_serve.gateway.backends`: vLLM's ``/v1/completions`` with token ids, or a local model;
* :mod:`gem_serve.gateway.runs`: episodes of agent programs playing a served environment;
* :mod:`gem_serve.gateway.jsonio`: its JSON, through orjson (a long conversation costs what a short one does).

Serving and ``remote:`` environments need the ``openenv`` extra (Starlette, uvicorn, websockets,
mcp-types, PyYAML); OpenEnv's own package is not needed. The gateway needs the ``gateway`` extra
(and ``local`` for a local model).
"""
