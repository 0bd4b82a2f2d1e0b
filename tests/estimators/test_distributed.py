"""ReBN across real torch.distributed ranks (two gloo processes on this machine)."""

import datetime
import json

import numpy as np
import pytest

from gem_core import GemError
from gem_core.estimators import rebn, reinforce_baseline, torch_all_reduce

torch = pytest.importorskip("torch")
mp = pytest.importorskip("torch.multiprocessing")

BATCH = [[0.0, 1.0], [1.0], [0.0, 0.0, 2.0], [0.5], [1.0, -1.0, 0.0, 3.0]]
SHARDS = [BATCH[:2], BATCH[2:], []]  # the third rank has no episode and still takes part
BAD_SHARDS = [BATCH[:2], [[1.0], [float("nan")]], []]


def rank_main(rank, store, out):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=len(SHARDS),
                            timeout=datetime.timedelta(seconds=60))
    try:
        reduce = torch_all_reduce()
        calls = [("rebn", rebn, SHARDS), ("reinforce_baseline", reinforce_baseline, SHARDS),
                 ("bad", rebn, BAD_SHARDS)]
        result = {}
        for name, estimator, shards in calls:
            try:
                result[name] = [a.tolist() for a in estimator(shards[rank], gamma=0.9, all_reduce=reduce)]
            except GemError as e:
                result[name] = f"{type(e).__name__}: {e}"
        (out / str(rank)).write_text(json.dumps(result))
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def rank_results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ranks")
    mp.spawn(rank_main, args=(tmp / "store", tmp), nprocs=len(SHARDS), join=True)
    return [json.loads((tmp / str(r)).read_text()) for r in range(len(SHARDS))]


def test_rebn_over_ranks_equals_rebn_over_the_whole_batch(rank_results):
    for name, estimator in (("rebn", rebn), ("reinforce_baseline", reinforce_baseline)):
        whole = np.concatenate(estimator(BATCH, gamma=0.9))
        ranks = np.concatenate([np.concatenate(r[name]) for r in rank_results if r[name]])
        assert np.allclose(ranks, whole, rtol=1e-12, atol=1e-12)
        assert rank_results[2][name] == []


def test_bad_input_on_one_rank_stops_every_rank(rank_results):
    assert "episode 1, turn 0 is nan" in rank_results[1]["bad"]
    for rank in (0, 2):
        assert "1 data-parallel rank(s) rejected their input" in rank_results[rank]["bad"]


def test_without_a_process_group_the_error_says_what_to_do():
    with pytest.raises(GemError, match="init_process_group"):
        rebn([[1.0], [0.0]], gamma=1.0, all_reduce=torch_all_reduce())


VALID_SHARDS = [([[0.0, 1.0], [float("nan")]], [True, False]),
                ([[0.0, 0.0, 2.0], [0.5], [1.0, -1.0, 0.0, 3.0]], [True, True, True]),
                ([[1.0]], [False])]  # a rank whose only episode failed


def valid_rank_main(rank, store, out):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=len(VALID_SHARDS),
                            timeout=datetime.timedelta(seconds=60))
    try:
        rewards, valid = VALID_SHARDS[rank]
        advantages = rebn(rewards, gamma=0.9, all_reduce=torch_all_reduce(), valid=valid)
        (out / str(rank)).write_text(json.dumps([a.tolist() for a in advantages]))
    finally:
        dist.destroy_process_group()


def test_rebn_over_ranks_leaves_every_ranks_failed_episodes_out(tmp_path):
    mp.spawn(valid_rank_main, args=(tmp_path / "store", tmp_path), nprocs=len(VALID_SHARDS), join=True)
    results = [json.loads((tmp_path / str(r)).read_text()) for r in range(len(VALID_SHARDS))]
    kept = [r for shard, valid in VALID_SHARDS for r, ok in zip(shard, valid) if ok]
    whole = iter(rebn(kept, gamma=0.9))
    for (shard, valid), got in zip(VALID_SHARDS, results):
        for ok, rewards, advantages in zip(valid, shard, got):
            assert advantages == (pytest.approx(next(whole).tolist(), abs=1e-12) if ok else [0.0] * len(rewards))
