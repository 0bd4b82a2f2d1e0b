"""Registers ``gem serve``, ``gem gateway`` and the ``remote:{url}`` family: ``make("remote:http://host:8000")``
plays the environment served at that address, by ``gem serve`` or any OpenEnv environment server."""

from gem_core import hookimpl


@hookimpl
def gem_register_envs(register):
    register("remote:{url}", "gem_serve.env:RemoteEnv", offline=False, requires={"websockets": "openenv"},
             description="The environment served at url over OpenEnv's protocol (`gem serve` or any OpenEnv "
                         "server), e.g. remote:http://127.0.0.1:8000.")


@hookimpl
def gem_register_commands(register):
    register("serve", "gem_serve.cli:serve", description="Serve an environment over OpenEnv's protocol.")
    register("gateway", "gem_serve.gateway.cli:gateway",
             description="Serve an OpenAI-compatible endpoint that records every call's token ids, per session.")
