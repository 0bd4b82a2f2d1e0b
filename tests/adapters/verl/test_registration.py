"""GEM registers itself inside verl on ``import verl``: in a fresh process, inside a Ray worker,
through the ``VERL_USE_EXTERNAL_MODULES`` route, and loudly when something fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from gem_adapters.common.estimators import estimator_names

PROBE = textwrap.dedent('''
    def probe():
        import os, sys
        import verl
        from verl.trainer.ppo import core_algos
        light = "verl.experimental.agent_loop.agent_loop" not in sys.modules
        from verl.experimental.agent_loop import agent_loop
        ours = sorted(name for name, fn in core_algos.ADV_ESTIMATOR_REGISTRY.items()
                      if type(fn).__name__ == "VerlEstimator")
        return {"estimators": ours, "agent_loop": agent_loop._agent_loop_registry.get("gem"),
                "light": light, "pid": os.getpid()}
''')


def run_probe(script: str, env: dict[str, str] | None = None, timeout: float = 300) -> tuple[dict, str]:
    full_env = {**os.environ, **(env or {})}
    result = subprocess.run([sys.executable, "-c", PROBE + textwrap.dedent(script)], capture_output=True,
                            text=True, env=full_env, timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1]), result.stderr


EXPECTED_AGENT_LOOP = {"_target_": "gem_adapters.verl.rollout.GemAgentLoop"}


@pytest.fixture(scope="module")
def expected_estimators():
    names = sorted(estimator_names())
    assert "rebn" in names and "gem_rebn" in names and "gem_grpo" in names
    return names


def test_import_verl_registers_everything_in_a_fresh_process(expected_estimators):
    found, _ = run_probe("import json; print(json.dumps(probe()))")
    assert found["estimators"] == expected_estimators
    assert found["agent_loop"] == EXPECTED_AGENT_LOOP
    assert found["light"], "import verl must not import verl's agent loops"


def test_the_entry_point_is_what_registers():
    found, _ = run_probe("import json; print(json.dumps(probe()))", {"VERL_USE_EXTERNAL_PLUGINS": "none"})
    assert found["estimators"] == []
    assert found["agent_loop"] is None


def test_external_modules_route_registers_the_same(expected_estimators):
    found, _ = run_probe("import json; print(json.dumps(probe()))", {
        "VERL_USE_EXTERNAL_PLUGINS": "none",
        "VERL_USE_EXTERNAL_MODULES": "gem_adapters.verl.registration",
    })
    assert found["estimators"] == expected_estimators
    assert found["agent_loop"] == EXPECTED_AGENT_LOOP


def test_a_ray_worker_registers_on_its_own(expected_estimators):
    found, _ = run_probe('''
        import json, os, sys
        import ray
        ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
        try:
            result = ray.get(ray.remote(probe).remote())
        finally:
            ray.shutdown()
        result["driver_pid"] = os.getpid()
        result["driver_imported_verl"] = "verl" in sys.modules
        print(json.dumps(result))
    ''', timeout=600)
    assert found["pid"] != found["driver_pid"]
    assert not found["driver_imported_verl"]  # the worker registered by itself
    assert found["estimators"] == expected_estimators
    assert found["agent_loop"] == EXPECTED_AGENT_LOOP


def test_failures_are_logged_loudly_and_the_rest_still_registers(tmp_path, expected_estimators):
    (tmp_path / "wrapt.py").write_text("raise ImportError('this wrapt is broken')\n")
    found, stderr = run_probe("import json; print(json.dumps(probe()))",
                              {"PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"})
    assert "GEM could not arrange to register its agent loop inside verl" in stderr
    assert "this wrapt is broken" in stderr
    assert found["estimators"] == expected_estimators
    assert found["agent_loop"] is None
