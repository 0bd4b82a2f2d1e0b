"""The paper-claims script, run small with the tiny model."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

from tests.helpers import REPO


def load_script():
    spec = importlib.util.spec_from_file_location("reproduce_paper", REPO / "scripts" / "reproduce_paper.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reproduce_script_runs_every_arm_once_per_seed_and_writes_table_json_csv_and_plot(
        tiny_model_dir: Path, tmp_path: Path, capsys):
    script = load_script()
    code = script.main(["--model", str(tiny_model_dir), "--preset", "cpu", "--steps", "2", "--episodes-per-step", "2",
                        "--seeds", "0", "1", "--out", str(tmp_path), "--only", "rebn_vs_reinforce", "gamma"])
    assert code == 0
    results = json.loads((tmp_path / "claims.json").read_text())
    assert results["preset"] == "cpu" and results["settings"]["steps"] == 2 and results["seeds"] == [0, 1]
    runs = {name: sorted(e["runs"]) for name, e in results["experiments"].items()}
    assert runs == {"rebn_vs_reinforce": ["REINFORCE", "ReBN"], "gamma": ["gamma 0.9", "gamma 0.999"]}
    for experiment in results["experiments"].values():
        assert experiment["env"] == "game:GuessTheNumber-v0-easy"  # the cpu preset's gamma game too
        for seeds in experiment["runs"].values():
            assert sorted(seeds) == ["0", "1"]
            assert all([r["step"] for r in records] == [1, 2] for records in seeds.values())
    # ReBN with gamma 0.9 serves both experiments: three settings, two seeds, six runs
    played = sorted(folder.name for folder in (tmp_path / "runs").iterdir())
    assert len(played) == 6
    assert "gamma: 0.999" in (tmp_path / "runs" / "game-GuessTheNumber-v0-easy-rebn-gamma0.999-seed1" / "config.yaml").read_text()
    assert results["experiments"]["gamma"]["runs"]["gamma 0.9"] == results["experiments"]["rebn_vs_reinforce"]["runs"]["ReBN"]
    rows = list(csv.DictReader((tmp_path / "claims.csv").open()))
    assert len(rows) == 4 and all(row["separated"] in ("yes", "no") for row in rows)
    assert all(len(row["last_2_per_seed"].split()) == 2 for row in rows)
    assert (tmp_path / "claims.png").read_bytes()[:4] == b"\x89PNG"
    assert "paper claims" in capsys.readouterr().out

    # a third seed plays only its own runs; the finished ones are read back
    again = script.main(["--model", str(tiny_model_dir), "--preset", "cpu", "--steps", "2", "--episodes-per-step", "2",
                         "--seeds", "0", "1", "2", "--out", str(tmp_path), "--only", "rebn_vs_reinforce", "gamma"])
    assert again == 0
    out = capsys.readouterr().out
    assert out.count("finished earlier") == 6 and out.count("seed 2 ->") == 3
    rerun = json.loads((tmp_path / "claims.json").read_text())
    assert rerun["experiments"]["gamma"]["runs"]["gamma 0.999"]["1"] == results["experiments"]["gamma"]["runs"]["gamma 0.999"]["1"]

    # a run saved before gem train gained a setting (here: one at its default) is still read back;
    # one whose saved settings differ is played again
    import yaml

    from gem_trainer.config import build_config

    config_file = tmp_path / "runs" / "game-GuessTheNumber-v0-easy-rebn-gamma0.999-seed1" / "config.yaml"
    saved = yaml.safe_load(config_file.read_text())
    config = build_config(saved)
    older = {key: value for key, value in saved.items() if key != "save_every"}
    config_file.write_text(yaml.safe_dump(older))
    assert script.finished_run(config_file.parent, config) is not None
    config_file.write_text(yaml.safe_dump({**older, "gamma": 0.5}))
    assert script.finished_run(config_file.parent, config) is None


def test_arms_separate_only_when_every_seed_of_the_favoured_arm_is_better():
    script = load_script()

    def results(favoured: list[float], other: list[float], better: str) -> dict:
        def curves(values):
            return {str(k): [{"step": 1, "m": v}] for k, v in enumerate(values)}
        return {"experiments": {"x": {"env": "e", "metric": "m", "better": better,
                                      "runs": {"A": curves(favoured), "B": curves(other)}}}}

    assert script.summarise(results([0.5, 0.6], [0.1, 0.4], "higher"), 1)[0]["separated"] == "yes"
    assert script.summarise(results([0.5, 0.6], [0.1, 0.55], "higher"), 1)[0]["separated"] == "no"
    assert script.summarise(results([2.0, 2.5], [3.0, 3.5], "lower"), 1)[0]["separated"] == "yes"
    row = script.summarise(results([0.5, 0.7], [0.1, 0.4], "higher"), 1)[0]
    assert row["mean"] == 0.6 and row["last_1_per_seed"] == "0.50 0.70"


def test_jobs_play_runs_as_gem_train_processes_and_no_play_lists_the_missing_ones(
        tiny_model_dir: Path, tmp_path: Path, capsys):
    script = load_script()
    common = ["--model", str(tiny_model_dir), "--preset", "cpu", "--steps", "1", "--episodes-per-step", "2",
              "--out", str(tmp_path), "--only", "sparse_rebn_vs_reinforce"]
    assert script.main([*common, "--seeds", "0", "--jobs", "2"]) == 0
    logs = sorted(p.name for p in (tmp_path / "logs").glob("*.log"))
    assert logs == ["game-GuessTheNumber-v0-easy-sparse-rebn-gamma0.9-seed0.log",
                    "game-GuessTheNumber-v0-easy-sparse-reinforce-gamma0.9-seed0.log"]
    results = json.loads((tmp_path / "claims.json").read_text())
    experiment = results["experiments"]["sparse_rebn_vs_reinforce"]
    assert experiment["env"] == "game:GuessTheNumber-v0-easy-sparse" and results["missing"] == []
    assert all(seeds["0"][0]["step"] == 1 for seeds in experiment["runs"].values())
    assert (tmp_path / "claim-sparse_rebn_vs_reinforce.png").read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()

    assert script.main([*common, "--seeds", "0", "1", "--no-play"]) == 0
    out = capsys.readouterr().out
    assert out.count("finished earlier") == 2 and out.count("not played (--no-play)") == 2
    results = json.loads((tmp_path / "claims.json").read_text())
    assert results["missing"] == ["sparse_rebn_vs_reinforce: ReBN, seed 1", "sparse_rebn_vs_reinforce: REINFORCE, seed 1"]
    assert all(sorted(seeds) == ["0"] for seeds in results["experiments"]["sparse_rebn_vs_reinforce"]["runs"].values())


def test_the_cpu_preset_plays_the_three_claims_with_room_for_tool_calls():
    script = load_script()
    assert script.PRESET_EXPERIMENTS["cpu"] == ("sparse_rebn_vs_reinforce", "sparse_gamma", "tool_rebn_vs_reinforce")
    assert script.parse_args([]).seeds == [0, 1, 2, 3, 4]
    preset = script.PRESETS["cpu"]
    tokens = max(preset["max_new_tokens"], script.MIN_NEW_TOKENS["tool_rebn_vs_reinforce"])
    name = script.run_name(script.TOOL_TASK, {**preset, "estimator": "rebn", "gamma": 0.9, "max_new_tokens": tokens},
                           preset, 3)
    assert name == "math-Products-v0-Tool-rebn-gamma0.9-tokens160-seed3"


def test_turns_per_won_episode_is_weighted_by_wins_and_judged_with_the_other_metrics():
    script = load_script()

    def run(*steps):  # (turns_per_success, success_rate) per step
        return [{"step": i + 1, "turns_per_success": t, "success_rate": s} for i, (t, s) in enumerate(steps)]

    assert script.last_mean(run((9.0, 0.5), (2.0, 0.25), (5.0, 0.75)), "turns_per_success", 2) == 4.25
    assert script.last_mean(run((3.0, 0.5), (None, 0.0)), "turns_per_success", 1) is None
    results = {"experiments": {"g": {
        "env": "e", "metric": "turns_per_success", "better": "lower", "also_judged": [["success_rate", "higher"]],
        "runs": {"gamma 0.9": {"0": run((3.0, 0.5)), "1": run((4.0, 0.5))},
                 "gamma 0.999": {"0": run((5.0, 0.25)), "1": run((None, 0.0))}}}}}
    rows = script.summarise(results, 1)
    assert [(r["metric"], r["run"]) for r in rows] == [
        ("turns_per_success", "gamma 0.9"), ("turns_per_success", "gamma 0.999"),
        ("success_rate", "gamma 0.9"), ("success_rate", "gamma 0.999")]
    assert rows[1]["last_1_per_seed"] == "5.00 -" and rows[1]["mean"] == 5.0  # a seed without wins has no value
    assert rows[0]["separated"] == "yes" and rows[2]["separated"] == "yes"


def test_a_time_limit_stops_the_runs_and_judges_each_claim_where_all_its_runs_got_to(
        tiny_model_dir: Path, tmp_path: Path, capsys):
    script = load_script()
    code = script.main(["--model", str(tiny_model_dir), "--preset", "cpu", "--steps", "500", "--episodes-per-step", "2",
                        "--seeds", "0", "--out", str(tmp_path), "--only", "sparse_rebn_vs_reinforce",
                        "--jobs", "2", "--time-limit", "25"])
    assert code == 0
    assert capsys.readouterr().out.count("stopped by --time-limit after") == 2
    results = json.loads((tmp_path / "claims.json").read_text())
    experiment = results["experiments"]["sparse_rebn_vs_reinforce"]
    reached = [len(seeds["0"]) for seeds in experiment["runs"].values()]
    assert results["missing"] == [] and 0 < min(reached) < 500 and experiment["judged_at_step"] == min(reached)
    rows = list(csv.DictReader((tmp_path / "claims.csv").open()))
    assert {row["steps"] for row in rows} == {str(min(reached))}


def test_the_gpu_preset_plays_claims_one_and_two_at_four_times_the_batch():
    script = load_script()
    assert script.PRESET_EXPERIMENTS["gpu"] == ("sparse_rebn_vs_reinforce", "sparse_gamma")
    gpu, cpu = script.PRESETS["gpu"], script.PRESETS["cpu"]
    assert gpu["episodes_per_step"] == 4 * cpu["episodes_per_step"] and gpu["steps"] > cpu["steps"]
    assert gpu["max_new_tokens"] == cpu["max_new_tokens"] and gpu["micro_batch_tokens"] == 2048
    assert script.parse_args(["--time-limit", "480"]).time_limit == 480
