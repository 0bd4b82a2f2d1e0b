"""End to end: verl's own launcher trains SmolLM2-135M-Instruct on GEM's GuessTheNumber on this
machine's CPU, from what `gem verl config --device cpu --model smollm2 --agent PROGRAM` writes and
the command it prints, for two steps, with vLLM's CPU build as its rollout engine, per-turn
rewards, and ReBN. Half the rows (every other one, so one start of each step: the data is not
shuffled) are played by GEM's `gem` agent loop, the others by the `gem_agent` loop, which runs an
agent program GEM does not run (a plain `openai` SDK loop, programs/plain_openai.py) through GEM's
gateway in front of verl's vLLM server; one launch tests both, to keep the stage short. Everything asserted is read from verl's own output: its step metrics,
its rollout dumps (`trainer.rollout_data_dir`), and the lines GEM's pieces log inside verl's
processes (the estimator's summary of each batch, the checksum of vLLM's weights after each copy).

Untrained, SmolLM2 seldom writes a guess in the format asked: in a batch of 4 episodes every return
is often the same -0.1, where ReBN's advantages are all 0 and the policy gradient is 0. So that
every step changes the weights (and the test can see each copy land in vLLM), the run adds a small
entropy bonus (`actor_rollout_ref.actor.entropy_coeff`), which verl applies whatever the rewards.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest

import gem_core
from gem_core.wrappers.observation import as_seen
from tests.adapters.verl_cpu.conftest import EASY, gem, launch, printed_command

STEPS = 2
EPISODES_PER_STEP = 4  # --batch-size 2 x --n 2
LAUNCH_TIMEOUT = 1800  # seconds; about 5-8 minutes on a two-core machine, shared
CONFIG = ["--env", EASY, "--model", "smollm2", "--train-size", "16", "--val-size", "2", "--batch-size", "2",
          "--n", "2", "--prompt-length", "256", "--response-length", "192", "--max-tokens-per-turn", "48"]
SYNC = re.compile(r"INFO:(\S+ \S+),\d+:GEM CPU weight sync: (\d+) values copied into vLLM; parameter checksum (\S+)")
ESTIMATOR = re.compile(r"GEM estimator rebn: (\d+) turns in (\d+) episodes \((\d+) failed, left out\); "
                       r"returns (.+?); advantages (.+)$", re.M)
STEP = re.compile(r"\bstep:(\d+) - (.*)$", re.M)
TURN = re.compile(r"\nuser\n(.*?)\nassistant\n", re.S)  # how a ChatML response reads with special tokens skipped
AGENT_EPISODE = re.compile(r"GEM agent episode (\S+) seed (\d+): (\d+) calls, (\d+) trained; (\d+) of (\d+) response "
                           r"ids sampled")
PROGRAMS = Path(__file__).parent / "programs"


def stats(text: str) -> dict[str, float]:
    return {key: float(value) for key, value in re.findall(r"(mean|std|min|max) (-?[\d.]+)", text)}


def metrics(line: str) -> dict[str, str]:
    return dict(item.split(":", 1) for item in line.split(" - ") if ":" in item)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, model_cache):
    """The written run, its launch and the rollout dumps."""
    out = tmp_path_factory.mktemp("verl-cpu") / "run"
    written = gem("verl", "config", "--device", "cpu", "--out", str(out), *CONFIG, "--agent", "plain_openai:play",
                  "--agent-timeout", "300", env={"GEM_CACHE_DIR": str(model_cache)})
    assert written.returncode == 0, written.stderr
    command = printed_command(written.stdout)
    assert command[1:3] == ["-m", "verl.trainer.main_ppo"]
    rows = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert {row["agent_name"] for row in rows} == {"gem_agent"}
    for index, row in enumerate(rows):  # every other row back to GEM's own loop
        row["agent_name"] = "gem" if index % 2 == 0 else "gem_agent"
    (out / "train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    dumps = out / "rollouts"
    overrides = [f"trainer.total_training_steps={STEPS}", "trainer.val_before_train=false", "trainer.test_freq=-1",
                 f"trainer.rollout_data_dir={dumps}", "actor_rollout_ref.actor.entropy_coeff=0.01",
                 "data.shuffle=false"]
    agent_log = out / "agent.jsonl"
    started = datetime.now()
    result = launch([*command, *overrides], out, LAUNCH_TIMEOUT,
                    env={"PYTHONPATH": str(PROGRAMS), "GEM_TEST_AGENT_LOG": str(agent_log),
                         "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    (out / "launch.log").write_text(result.output)  # kept with pytest's temporary folders, to read
    loops = {row["extra_info"]["seed"]: row["agent_name"] for row in rows}
    return out, result, started, dumps, loops, agent_log


def test_the_launcher_reaches_step_2_and_leaves_nothing_running(trained, capsys):
    _, result, started, *_ = trained
    assert result.returncode == 0, result.output[-8000:]
    steps = [int(number) for number, _ in STEP.findall(result.output)]
    assert steps == list(range(1, STEPS + 1))
    assert not result.left_running, f"still running after verl's launcher ended: {result.left_running}"
    first_copy = datetime.strptime(SYNC.search(result.output).group(1), "%Y-%m-%d %H:%M:%S")
    step_seconds = [float(metrics(line)["timing_s/step"]) for _, line in STEP.findall(result.output)]
    gem_lines = [line.strip() for line in result.output.splitlines() if "GEM CPU weight sync" in line
                 or "GEM estimator" in line or "GEM agent episode" in line]
    with capsys.disabled():
        print(f"\n[verl on the CPU] {result.seconds:.0f} s in all; startup to the first weight copy "
              f"{(first_copy - started).total_seconds():.0f} s; steps {', '.join(f'{s:.0f} s' for s in step_seconds)}",
              *gem_lines, sep="\n")


def test_weights_are_copied_into_vllm_after_each_step(trained):
    _, result, *_ = trained
    from gem_adapters.verl.cpu_sizing import model_size
    from gem_trainer.models import default_model_dir

    copies = SYNC.findall(result.output)
    assert len(copies) == 1 + STEPS  # the first copy when the engine starts, then one per step
    parameters = model_size(default_model_dir()).parameters
    assert all(int(values) >= parameters for _, values, _ in copies)
    checksums = [float(checksum) for _, _, checksum in copies]
    assert all(before != after for before, after in zip(checksums, checksums[1:])), checksums


def test_the_advantages_verl_trained_on_are_rebn_of_gem_returns(trained):
    _, result, *_ = trained
    batches = ESTIMATOR.findall(result.output)
    assert len(batches) == STEPS
    for (turns, episodes, failed, returns, advantages), (_, line) in zip(batches, STEP.findall(result.output)):
        returns, advantages, verl = stats(returns), stats(advantages), metrics(line)
        assert int(episodes) == EPISODES_PER_STEP and int(turns) >= EPISODES_PER_STEP and int(failed) == 0
        # verl's own summary of the advantages it trained on is GEM's
        assert float(verl["critic/advantages/min"]) == pytest.approx(advantages["min"], abs=2e-4)
        assert float(verl["critic/advantages/max"]) == pytest.approx(advantages["max"], abs=2e-4)
        if returns["std"] > 0:  # ReBN: (G - mean G) / std G over every turn of the batch
            assert advantages["mean"] == pytest.approx(0, abs=2e-4)
            assert advantages["std"] == pytest.approx(1, abs=2e-4)
            expected = (returns["max"] - returns["mean"]) / returns["std"]
            assert advantages["max"] == pytest.approx(expected, rel=0.01, abs=2e-3)
        else:  # every return alike: no advantage
            assert advantages == {"mean": 0, "std": 0, "min": 0, "max": 0}


def test_the_rewards_are_gem_episodes_replayed(trained):
    _, result, _, dumps, *_ = trained
    step_lines = dict(STEP.findall(result.output))
    for step in range(1, STEPS + 1):
        samples = [json.loads(line) for line in (dumps / f"{step}.jsonl").read_text().splitlines()]
        assert len(samples) == EPISODES_PER_STEP
        for sample in samples:
            env_id, seed = re.fullmatch(r"(\S+) seed (\d+)", sample["gts"]).groups()
            assert env_id == EASY
            pieces = TURN.split(sample["output"])
            actions, observations = pieces[0::2], pieces[1::2]
            env = gem_core.make(env_id)
            env.reset(seed=int(seed))
            total = 0.0
            for turn, action in enumerate(actions):  # the model's answers, through GEM's environment again
                observation, reward, terminated, truncated, info = env.step(action)
                total += reward
                if turn < len(observations):
                    assert observations[turn] == as_seen(observation, info), (turn, sample)
            assert sample["score"] == pytest.approx(total, abs=1e-6), sample
        mean = sum(sample["score"] for sample in samples) / len(samples)
        assert float(metrics(step_lines[str(step)])["critic/score/mean"]) == pytest.approx(mean, abs=1e-5)


def test_the_agent_program_played_half_the_episodes_and_only_its_sampled_ids_are_trained(trained):
    _, result, _, dumps, loops, agent_log = trained
    played = [json.loads(line) for line in agent_log.read_text().splitlines()]
    assert len(played) == STEPS * EPISODES_PER_STEP // 2, played  # the program's runs: one per gem_agent row
    assert all(run["answers"] for run in played)
    reported = AGENT_EPISODE.findall(result.output)  # what the gem_agent loop handed verl, per episode
    assert len(reported) == len(played)
    for step, (_, line) in enumerate(STEP.findall(result.output), start=1):
        samples = [json.loads(line) for line in (dumps / f"{step}.jsonl").read_text().splitlines()]
        by_loop = {}
        for sample in samples:
            seed = int(sample["gts"].rsplit(" ", 1)[1])
            by_loop.setdefault(loops[seed], []).append((seed, sample))
        assert sorted(len(v) for v in by_loop.values()) == [2, 2] and set(by_loop) == {"gem", "gem_agent"}
        for seed, sample in by_loop["gem_agent"]:
            actions = TURN.split(sample["output"])[0::2]
            runs = [run for run in played if run["seed"] == seed and run["answers"][:len(actions)] == actions]
            assert runs, (seed, actions, played)  # verl trained on the program's answers, as the gateway gave them
    for env_id, seed, calls, kept, sampled, length in reported:
        runs = [run for run in played if run["seed"] == int(seed) and len(run["answers"]) == int(calls)]
        assert runs, (seed, calls, played)
        # the loss mask is 1 on exactly the ids the server sampled for the calls trained, 0 elsewhere
        assert int(sampled) in {sum(run["sampled"][:int(kept)]) for run in runs}
        assert 0 < int(kept) <= int(calls) and 0 < int(sampled) <= int(length)
