import pytest

import gem_core
from tests.vector.envs import RELEASE, register_test_envs

register_test_envs()

#: Every mode of make_vec; the Ray mode runs on the session's simulated cluster (tests/conftest.py).
MODES = ["sync", "async", "ray"]
#: The Ray mode's pool in these tests: two named hosts (spread over the two simulated nodes of
#: ray_cluster) that every test's vector environment leases slots from.
RAY_POOL = {"hosts": 2, "name": "vector-tests", "start_timeout": 60, "call_timeout": 60}


@pytest.fixture(scope="session", autouse=True)
def release_hung_calls():
    """Let the environment calls that tests leave hanging return at the end of the session."""
    yield
    RELEASE.set()


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
