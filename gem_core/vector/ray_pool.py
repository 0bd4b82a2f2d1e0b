"""Where the Ray mode's environments run: a pool of host actors on nodes that offer a resource.

Nodes offer environment hosts through a custom resource (``gem_env`` by default): start a CPU
node with ``ray start --address=HEAD:6379 --resources='{"gem_env": 8}'`` and up to 8 hosts run
there. Each host is one process holding many slots, and takes one unit of the resource and no
CPU reservation.

A pool is anonymous (its hosts belong to the process that started them and end with it, or
with :meth:`RayVectorEnv.close`) or named: its hosts are detached actors found by name, so
processes that are Ray actors themselves (verl's agent loop workers, OpenRLHF's engines, ROLL's
env managers) lease slots from one pool that outlives any of them. End a named pool with
:func:`shutdown_pool`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gem_core.errors import GemError, MissingDependencyError

#: The custom resource a node offers to run environment hosts.
DEFAULT_RESOURCE = "gem_env"
NAMESPACE = "gem"

#: The hosts of named pools this process has found, so that a vector environment per episode (the
#: adapters' sessions) does not look them up again; forgotten when one of them is lost.
_found: dict[RayPool, list[tuple[Any, str, str]]] = {}


@dataclass(frozen=True)
class RayPool:
    """Options of the Ray mode (``make_vec(..., mode="ray", pool=RayPool(...))``, or a mapping
    with these keys).

    ``address``: Ray's address (``"auto"``, ``"HOST:6379"``, ``"ray://..."``); None uses the Ray
    this process already joined, or starts a local one offering ``hosts`` units of ``resource``.
    ``hosts``: how many host actors (processes) to run; ``slots_per_host``: the most slots one
    host holds (None: no limit; slots are spread evenly). ``resource``: the custom resource a
    host needs. ``name``: reuse (or create) the named pool of detached hosts. ``start_timeout``:
    seconds to wait for the hosts to start; ``call_timeout``: seconds to wait for a host's
    answer to one batch beyond ``step_timeout`` (a host silent for longer is treated as lost).
    """

    address: str | None = None
    hosts: int = 2
    slots_per_host: int | None = None
    resource: str = DEFAULT_RESOURCE
    name: str | None = None
    start_timeout: float = 60.0
    call_timeout: float = 300.0

    def __post_init__(self) -> None:
        if isinstance(self.hosts, bool) or not isinstance(self.hosts, int) or self.hosts < 1:
            raise GemError(f"hosts must be a positive integer, got {self.hosts!r}.")
        if self.slots_per_host is not None and (isinstance(self.slots_per_host, bool)
                                                or not isinstance(self.slots_per_host, int)
                                                or self.slots_per_host < 1):
            raise GemError(f"slots_per_host must be a positive integer or None, got {self.slots_per_host!r}.")
        for key in ("start_timeout", "call_timeout"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise GemError(f"{key} must be a positive number of seconds, got {value!r}.")
        if not isinstance(self.resource, str) or not self.resource:
            raise GemError(f"resource must be a resource name, got {self.resource!r}.")
        if self.name is not None and (not isinstance(self.name, str) or not self.name):
            raise GemError(f"name must be a non-empty string or None, got {self.name!r}.")

    @classmethod
    def of(cls, options: RayPool | Mapping[str, Any] | None) -> RayPool:
        """``options`` as a :class:`RayPool` (a mapping with unknown keys is an error)."""
        if options is None:
            return cls()
        if isinstance(options, RayPool):
            return options
        if not isinstance(options, Mapping):
            raise GemError(f"pool must be a RayPool or a mapping of its options, got {type(options).__name__}.")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise GemError(f"Unknown Ray pool option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}.")
        return cls(**options)

    def host_name(self, index: int) -> str:
        return f"{self.name}-host-{index}"

    def start(self) -> list[tuple[Any, str, str]]:
        """Join Ray and start (or, for a named pool, find) the hosts; returns
        ``(actor, node id, where)`` per host. Raises :class:`GemError` when no node offers the
        resource or the hosts do not start within ``start_timeout``."""
        ray = import_ray()
        self._join(ray)
        if self.name is not None and self in _found:
            return list(_found[self])
        offered = ray.cluster_resources().get(self.resource, 0)
        if offered < self.hosts:
            raise GemError(
                f"The Ray cluster offers {offered:g} unit(s) of the resource '{self.resource}', and "
                f"{self.hosts} environment host(s) need one each. Start CPU nodes that offer it: "
                f"ray start --address=HEAD:6379 --resources='{{\"{self.resource}\": 8}}'.")
        handles = [self.launch(index) for index in range(self.hosts)]
        try:
            described = ray.get([h.describe.remote() for h in handles], timeout=self.start_timeout)
        except ray.exceptions.GetTimeoutError:
            if self.name is None:
                for handle in handles:
                    ray.kill(handle)
            raise GemError(f"{self.hosts} environment host(s) did not start within {self.start_timeout:g} s "
                           f"(the cluster offers {offered:g} unit(s) of '{self.resource}'; are those nodes "
                           "busy, or short of memory?).") from None
        hosts = [(handle, node_id, where) for handle, (node_id, where) in zip(handles, described)]
        if self.name is not None:
            _found[self] = hosts
        return list(hosts)

    def launch(self, index: int) -> Any:
        """Start host ``index`` without waiting for it (for a named pool: find it by name, or
        start it under that name); returns its actor handle."""
        from gem_core.vector.ray_host import host_actor_class

        options: dict[str, Any] = {"num_cpus": 0, "resources": {self.resource: 1}, "scheduling_strategy": "SPREAD"}
        if self.name is not None:
            options.update(name=self.host_name(index), namespace=NAMESPACE, lifetime="detached", get_if_exists=True)
        return host_actor_class().options(**options).remote(self.slots_per_host)

    def forget(self) -> None:
        """Look the named pool's hosts up again at the next :meth:`start` (one was lost)."""
        _found.pop(self, None)

    def _join(self, ray: Any) -> None:
        if ray.is_initialized():
            return
        if self.address is None:
            ray.init(address="local", resources={self.resource: self.hosts}, include_dashboard=False,
                     logging_level="WARNING")
        else:
            ray.init(address=self.address, logging_level="WARNING")


def shutdown_pool(name: str, hosts: int, timeout: float = 30.0) -> int:
    """End the named pool's hosts (detached actors) and wait, at most ``timeout`` seconds, until
    they are gone; returns how many were running."""
    ray = import_ray()
    pool = RayPool(name=name, hosts=hosts)
    ended = []
    for index in range(hosts):
        try:
            handle = ray.get_actor(pool.host_name(index), namespace=NAMESPACE)
        except ValueError:
            continue
        ray.kill(handle, no_restart=True)
        ended.append(handle)
    for found in [p for p in _found if p.name == name]:
        found.forget()
    deadline = time.monotonic() + timeout
    for handle in ended:
        while time.monotonic() < deadline:
            try:
                ray.get(handle.describe.remote(), timeout=max(0.1, deadline - time.monotonic()))
            except ray.exceptions.RayActorError:
                break
            except ray.exceptions.GetTimeoutError:
                continue
            time.sleep(0.05)
    return len(ended)


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingDependencyError("make_vec(mode='ray')", "ray", "ray") from None
    return ray
