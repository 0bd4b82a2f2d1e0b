import os
from pathlib import Path

import pytest

import gem_core
from tests.vector.envs import RELEASE, register_test_envs

register_test_envs()

#: Every mode of make_vec; the Ray mode runs on the session's simulated cluster.
MODES = ["sync", "async", "ray"]
#: The Ray mode's pool in these tests: two named hosts (spread over the two simulated nodes of
#: ray_cluster) that every test's vector environment leases slots from.
RAY_POOL = {"hosts": 2, "name": "vector-tests", "start_timeout": 60, "call_timeout": 60}
ENV_RESOURCE = {"gem_env": 4}


@pytest.fixture(scope="session", autouse=True)
def release_hung_calls():
    """Let the environment calls that tests leave hanging return at the end of the session."""
    yield
    RELEASE.set()


@pytest.fixture(scope="session")
def ray_cluster():
    """A simulated Ray cluster shared by the session's tests: a head (no environment resource)
    and two nodes offering ``gem_env``, 1 CPU each. Hosts import this repository's test
    environments through PYTHONPATH."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1, resources=ENV_RESOURCE)
        ray.init(address=cluster.address, logging_level="WARNING")
        cluster.wait_for_nodes(timeout=60)
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.fixture(params=MODES)
def mode(request):
    """Each mode of make_vec (the Ray mode on the session's cluster)."""
    if request.param == "ray":
        request.getfixturevalue("ray_cluster")
    return request.param


def make_vec(env, num_envs=None, *, mode, **kwargs):
    """gem_core.make_vec, with the test pool in Ray mode."""
    if mode == "ray":
        kwargs.setdefault("pool", RAY_POOL)
    return gem_core.make_vec(env, num_envs, mode=mode, **kwargs)
