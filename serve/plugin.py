"""Registers ``gem serve``, ``gem gateway`` and three families of ids: ``remote:{url}``
(``make("remote:http://host:8000")`` plays the environment served at that address, by ``gem serve`` or any
OpenEnv environment server), ``ors:{name}`` (``make("ors:NAME", base_url=...)`` plays an environment of an
ORS server) and ``verifiers:{taskset}`` (a verifiers environment, played with the control inverted)."""

from gem_core import hookimpl


@hookimpl
def gem_register_envs(register):
    register("remote:{url}", "gem_serve.env:RemoteEnv", offline=False, requires={"websockets": "openenv"},
             description="The environment served at url over OpenEnv's protocol (`gem serve` or any OpenEnv "
                         "server), e.g. remote:http://127.0.0.1:8000.")
    register("ors:{name}", "gem_serve.ors_env:OrsEnv", offline=False, requires={"ors": "ors"},
             description="Environment NAME of an ORS (Open Reward Standard) server: make('ors:NAME', "
                         "base_url='http://HOST:PORT'); each seed a task, each action a tool call.")
    register("verifiers:{taskset}", "gem_taskset.play:VerifiersEnv", offline=False,
             requires={"verifiers": "verifiers"},
             description="A verifiers 0.4 environment, by taskset id, its model calls as observations and the "
                         "actions as their replies (the control inverted): make('verifiers:ID', taskset_config={...}).")


@hookimpl
def gem_register_commands(register):
    register("serve", "gem_serve.cli:serve", description="Serve an environment over OpenEnv's protocol.")
    register("gateway", "gem_serve.gateway.cli:gateway",
             description="Serve an OpenAI-compatible endpoint that records every call's token ids, per session.")
