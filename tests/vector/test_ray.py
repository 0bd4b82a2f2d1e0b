"""The Ray mode on a simulated cluster (a head and two nodes offering ``gem_env``): placement
across nodes, a node lost mid-collection, a lost host replaced, a pool with no host left, named
pools, clear errors.

The contract tests of the other files run on the Ray mode too (their ``mode`` fixture)."""

import asyncio
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

import gem_core
from gem_core import GemError
from gem_core.vector import FAULT
from gem_core.vector.ray_env import is_host_lost
from tests.conftest import ENV_RESOURCE
from tests.helpers import kill_ray_actor, kill_ray_host
from tests.vector.conftest import RAY_POOL, make_vec
from tests.vector.envs import Countdown

SLEEPY = "vector-test:Sleepy-v0"
COUNTDOWN = "vector-test:Countdown-v0"


def echo_tail(observations):
    """A deterministic policy: the action depends on the observation only."""
    return [o[-3:] for o in observations]


def replayed_return(episode):
    """The episode's return when its actions are played again on a standalone environment."""
    env = Countdown(None)
    observation, _ = env.reset(seed=episode.seed)
    total = 0.0
    for turn in episode.turns:
        assert turn.observation == observation
        observation, reward, terminated, truncated, _ = env.step(turn.action)
        assert reward == turn.reward and terminated == turn.terminated and truncated == turn.truncated
        total += reward
    assert episode.final_observation == observation
    return total


def test_import_leaves_ray_alone():
    code = "import sys, gem_core, gem_core.vector, gem_core.rollout; print('ray' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_factories_and_wrapper_callables_are_refused_with_a_clear_error():
    with pytest.raises(GemError, match="registered id"):
        gem_core.make_vec(Countdown, 2, mode="ray")
    with pytest.raises(GemError, match="registered id"):
        gem_core.make_vec(COUNTDOWN, 2, mode="ray", wrappers=[lambda env: env])
    with pytest.raises(GemError, match="Unknown Ray pool option.*hostz"):
        gem_core.make_vec(COUNTDOWN, 2, mode="ray", pool={"hostz": 2})
    with pytest.raises(GemError, match="pool= configures mode='ray' only"):
        gem_core.make_vec(COUNTDOWN, 2, pool={"hosts": 2})


def test_slots_spread_over_the_nodes_and_episodes_match_the_sync_mode(ray_cluster):
    with make_vec(COUNTDOWN, 6, mode="ray", pool={"hosts": 2}, seed=3, length=None) as vec:
        assert len(set(vec.hosts)) == 2  # one host per node offering the resource
        episodes = gem_core.collect_episodes(vec, echo_tail, 14)
        again = asyncio.run(gem_core.acollect_episodes(vec, echo_tail, 5, seed=3))
    with gem_core.make_vec(COUNTDOWN, 6, seed=3, length=None) as local:
        expected = gem_core.collect_episodes(local, echo_tail, 14)
        expected_again = gem_core.collect_episodes(local, echo_tail, 5, seed=3)
    assert [e.to_dict() for e in episodes] == [e.to_dict() for e in expected]
    assert [e.to_dict() for e in again] == [e.to_dict() for e in expected_again]


def test_a_node_lost_mid_collection_loses_no_episode(ray_cluster):
    import ray

    driver_node = ray.get_runtime_context().get_node_id()
    rows = []
    with make_vec(SLEEPY, 8, mode="ray", pool={"hosts": 2, "call_timeout": 60}, seed=100, delay=0.05,
                  length=None) as vec:
        by_node = {node.node_id: node for node in ray_cluster.worker_nodes}
        host_nodes = {vec._hosts[h].node_id for h in set(vec._host_of)}
        victims = [by_node[n] for n in host_nodes if n in by_node and n != driver_node]
        assert len(host_nodes) == 2 and victims
        step = vec.step

        def recording_step(*args, **kwargs):
            result = step(*args, **kwargs)
            rows.extend(result[4])
            return result

        vec.step = recording_step
        calls = 0

        def policy(observations):
            nonlocal calls
            calls += 1
            if calls == 4:  # the node goes while the next batch runs there
                threading.Timer(0.02, ray_cluster.remove_node, [victims[0]]).start()
            return echo_tail(observations)

        started = time.monotonic()
        try:
            episodes = gem_core.collect_episodes(vec, policy, 30)
            elapsed = time.monotonic() - started
            survivors = set(vec.hosts)
        finally:
            ray_cluster.add_node(num_cpus=1, resources=ENV_RESOURCE)  # the session's other tests need two nodes
            ray_cluster.wait_for_nodes(timeout=60)
    lost = [info[FAULT] for info in rows if info.get(FAULT, {}).get("kind") == "host_lost"]
    assert lost and all(f["phase"] == "step" and "node" in f["host"] for f in lost)
    assert survivors and all(victims[0].node_id[:12] not in where for where in survivors)
    assert len(episodes) == 30 and len({e.seed for e in episodes}) == 30  # each seed once
    assert all(e.done and FAULT not in e.turns[-1].info for e in episodes)  # complete, no fault rows
    assert sum(replayed_return(e) for e in episodes) == sum(e.total_reward for e in episodes)
    assert elapsed < 60
    print(f"node loss: {len(lost)} episode(s) lost in flight and played again; 30 of 30 returned "
          f"once, in {elapsed:.1f} s")


def test_a_lost_host_is_replaced_and_slots_move_to_it_as_their_episodes_start(ray_cluster):
    with make_vec(COUNTDOWN, 6, mode="ray", pool={"hosts": 2}, seed=5, length=None) as vec:
        vec.reset()
        victim = vec._host_of[0]
        kill_ray_actor(vec._hosts[victim].actor)
        infos = vec.step(["a"] * 6)[4]
        assert sum(is_host_lost(info) for info in infos) == 3  # the calls that ran there
        assert victim not in vec._host_of and len(set(vec._host_of)) == 1  # its slots moved
        deadline = time.monotonic() + 60
        while len(set(vec._host_of)) < 2:  # a host started in its place joins; episodes that start move there
            assert time.monotonic() < deadline, "no host replaced the lost one"
            time.sleep(0.2)
            vec.reset()
        assert victim not in vec._host_of and sorted(Counter(vec._host_of).values()) == [3, 3]
        episodes = gem_core.collect_episodes(vec, echo_tail, 9, seed=3)
    with gem_core.make_vec(COUNTDOWN, 6, seed=5, length=None) as local:
        expected = gem_core.collect_episodes(local, echo_tail, 9, seed=3)
    assert [e.to_dict() for e in episodes] == [e.to_dict() for e in expected]


def test_a_pool_with_no_live_host_fails_clearly_in_bounded_time(ray_cluster):
    from gem_core.vector.ray_pool import shutdown_pool

    with make_vec(COUNTDOWN, 4, mode="ray", pool={"hosts": 2, "name": "doomed"}) as vec:
        vec.reset()
        assert shutdown_pool("doomed", 2) == 2
        started = time.monotonic()
        with pytest.raises(GemError, match="Every environment host of this vector environment is lost"):
            vec.step(["a"] * 4)
        assert time.monotonic() - started < 30


def test_a_named_pool_is_shared_and_outlives_its_users(ray_cluster):
    from gem_core.vector.ray_pool import shutdown_pool

    pool = {"hosts": 2, "name": "shared"}
    first = make_vec(COUNTDOWN, 3, mode="ray", pool=pool, seed=0)
    second = make_vec(COUNTDOWN, 5, mode="ray", pool=pool, seed=0)
    try:
        assert set(first.hosts) == set(second.hosts)
        first.reset(), second.reset()
        first.close()
        obs, *_ = second.step(["x"] * 5)
        assert all(o.endswith("t1 got x") for o in obs)
        third = make_vec(COUNTDOWN, 2, mode="ray", pool=pool)  # a later user finds the same hosts
        assert set(third.hosts) <= set(second.hosts)
        third.close()
    finally:
        second.close()
        assert shutdown_pool("shared", 2) == 2


def test_an_environment_missing_on_the_node_is_named_with_the_node(ray_cluster):
    gem_core.register("vector-test:Missing-v0", "gem_pack_not_installed.envs:Nope")
    try:
        with pytest.raises(GemError, match=r"host on node .* cannot make vector-test:Missing-v0.*gem_pack_not_installed"):
            make_vec("vector-test:Missing-v0", 2, mode="ray")
    finally:
        gem_core.registry.deregister("vector-test:Missing-v0")


def test_a_cluster_without_the_resource_is_a_clear_error(ray_cluster):
    with pytest.raises(GemError, match=r"offers 0 unit\(s\) of the resource 'gem_nowhere'.*ray start"):
        make_vec(COUNTDOWN, 2, mode="ray", pool={**RAY_POOL, "name": None, "resource": "gem_nowhere"})


@pytest.mark.parametrize("asynchronous", [False, True])
def test_one_environment_on_a_pool_survives_its_host(ray_cluster, asynchronous):
    from gem_core.vector.ray_pool import shutdown_pool
    from gem_core.vector.ray_slot import RaySlotEnv, RemoteEnvError

    name = f"slot-{int(asynchronous)}"
    env = RaySlotEnv("game:GuessTheNumber-v0-hard", pool={"hosts": 2, "name": name})
    local = gem_core.make("game:GuessTheNumber-v0-hard")
    actions = ["\\boxed{10}", "\\boxed{20}", "\\boxed{15}", "no answer here"]
    try:
        first_host = env.where
        if asynchronous:
            async def play():
                results = [await env.areset(seed=7)]
                for k, action in enumerate(actions):
                    if k == 2:
                        kill_ray_host(name, 0)  # the slot's host: its episode so far is played again elsewhere
                    results.append(await env.astep(action))
                return results
            got = asyncio.run(play())
        else:
            got = [env.reset(seed=7)]
            for k, action in enumerate(actions):
                if k == 2:
                    kill_ray_host(name, 0)
                got.append(env.step(action))
        expected = [local.reset(seed=7)] + [local.step(action) for action in actions]
        assert got == expected and env.where != first_host
        assert "boxed" in env.sample_random_action()  # drawn on the host
        gem_core.register("vector-test:Broken-v0", "tests.vector.envs:Faulty", faults={2: "raise"})
        broken = RaySlotEnv("vector-test:Broken-v0", pool={"hosts": 2, "name": name})
        broken.reset(seed=0)
        with pytest.raises(RemoteEnvError, match="injected failure at call 2"):
            broken.step("a")
        broken.close()
    finally:
        gem_core.registry.deregister("vector-test:Broken-v0")
        env.close()
        shutdown_pool(name, 2)
