"""Registers ``gem serve`` and two families of ids: ``remote:{url}`` (``make("remote:http://host:8000")``
plays the environment served at that address, by ``gem serve`` or any OpenEnv environment server) and
``ors:{name}`` (``make("ors:NAME", base_url=...)`` plays an environment of an ORS server)."""

from gem_core import hookimpl


@hookimpl
def gem_register_envs(register):
    register("remote:{url}", "gem_serve.env:RemoteEnv", offline=False, requires={"websockets": "openenv"},
             description="The environment served at url over OpenEnv's protocol (`gem serve` or any OpenEnv "
                         "server), e.g. remote:http://127.0.0.1:8000.")
    register("ors:{name}", "gem_serve.ors_env:OrsEnv", offline=False, requires={"ors": "ors"},
             description="Environment NAME of an ORS (Open Reward Standard) server: make('ors:NAME', "
                         "base_url='http://HOST:PORT'); each seed a task, each action a tool call.")


@hookimpl
def gem_register_commands(register):
    register("serve", "gem_serve.cli:serve", description="Serve an environment over OpenEnv's protocol.")
