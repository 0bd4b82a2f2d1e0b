"""Workload: the Ray mode of make_vec on a simulated cluster, beside the in-process async mode.

A simulated cluster (``ray.cluster_utils.Cluster``: a head and two nodes offering ``gem_env``,
all processes of this machine) is started once (10-20 s, not timed). Metrics:

* ``ray_step_p50_ms`` and ``async_step_p50_ms``: the median time of one batched step of 64
  GuessTheNumber-hard slots (same-step autoreset, random guesses), over 2 hosts (one per node)
  and in this process; ``ray_step_overhead_p50_ms`` is their difference, what the Ray mode adds
  to a step (one batch per host, out and back);
* ``code_episodes_per_s_async``, ``code_episodes_per_s_ray_1_node`` and
  ``code_episodes_per_s_ray_2_nodes``: episodes of the code environment (each a correct program
  run against its tests in the sandbox) collected with ``collect_episodes`` on 16 slots, in this
  process and on 1 or 2 hosts (one per node).

The simulated nodes share this machine's cores, so a second node adds no CPU here: on a real
cluster each node brings its own. Run as ``python bench/workloads/ray_cluster.py --impl ours
[--quick]``; the reference has no Ray mode (``--impl reference`` exits with code 3). The last
stdout line is the metrics JSON.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from code_tests import action_for, rows  # noqa: E402  (the code workload's problems and answers)
from _protocol import Metrics, no_counterpart, parser as workload_parser  # noqa: E402

SLOTS = 64
CODE_SLOTS = 16
GUESS = "game:GuessTheNumber-v0-hard"


def step_times(vec, steps: int, rng: random.Random) -> list[float]:
    vec.reset(seed=0)
    times = []
    for k in range(steps + 10):
        actions = [f"\\boxed{{{rng.randint(1, 50)}}}" for _ in range(SLOTS)]
        start = time.perf_counter()
        vec.step(actions)
        if k >= 10:  # warm-up steps left out
            times.append(time.perf_counter() - start)
    return times


def code_rate(gem_core, episodes: int, **vec_options) -> float:
    with gem_core.make_vec("code:CodeContest", CODE_SLOTS, dataset=rows(), **vec_options) as vec:
        policy = lambda observations: [action_for(o) for o in observations]  # noqa: E731
        gem_core.collect_episodes(vec, policy, 4 * CODE_SLOTS)  # warm-up: every slot's sandbox, imports
        start = time.perf_counter()
        played = gem_core.collect_episodes(vec, policy, episodes)
        elapsed = time.perf_counter() - start
    if any(e.total_reward != 1.0 for e in played):
        raise SystemExit("A correct program was not rewarded 1: the benchmark is not measuring passing tests.")
    return episodes / elapsed


def main() -> None:
    parser = workload_parser(__doc__, "fewer steps and episodes (noisier)")
    args = parser.parse_args()
    if args.impl == "reference":
        no_counterpart("The reference implementation has no Ray mode.")
    import ray
    from ray.cluster_utils import Cluster

    import gem_core

    steps, episodes = (60, 64) if args.quick else (300, 192)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    metrics = Metrics()

    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1, resources={"gem_env": 2})
        ray.init(address=cluster.address, logging_level="WARNING", log_to_driver=False)
        cluster.wait_for_nodes(timeout=60)
        print("cluster up", file=sys.stderr)

        p50 = {}
        with gem_core.make_vec(GUESS, SLOTS, mode="ray", pool={"hosts": 2}, autoreset="same_step") as on_ray, \
                gem_core.make_vec(GUESS, SLOTS, mode="async", autoreset="same_step") as here:
            samples: dict[str, list[float]] = {"ray": [], "async": []}
            for repeat in range(3):  # alternated, so that the machine's load weighs on both alike
                for name, vec in (("ray", on_ray), ("async", here))[:: 1 if repeat % 2 == 0 else -1]:
                    samples[name] += step_times(vec, steps, random.Random(repeat))
            for name, times in samples.items():
                p50[name] = 1e3 * statistics.median(times)
                metrics.add(f"{name}_step_p50_ms", p50[name], "ms", "lower")
        metrics.add("ray_step_overhead_p50_ms", p50["ray"] - p50["async"], "ms", "lower")
        print("step latency measured", file=sys.stderr)

        metrics.add("code_episodes_per_s_async", code_rate(gem_core, episodes, mode="async"), "episodes/s")
        for hosts, name in ((1, "1_node"), (2, "2_nodes")):
            rate = code_rate(gem_core, episodes, mode="ray", pool={"hosts": hosts})
            metrics.add(f"code_episodes_per_s_ray_{name}", rate, "episodes/s")
    finally:
        ray.shutdown()
        cluster.shutdown()
    metrics.emit()


if __name__ == "__main__":
    main()
