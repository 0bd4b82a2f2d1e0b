"""A third-party pack, installed with pip into a fresh virtual environment, is found through its
entry point with no change to this project."""

import json
import subprocess
import sys

import pytest

from tests.helpers import REPO


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    # Dependencies (numpy, pluggy, click, rich, pip, setuptools) come from the running
    # environment, so nothing is downloaded; the two distributions under test are installed for real.
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    parent_dirs = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    with open(f"{purelib}/parent-deps.pth", "w") as f:
        f.write("\n".join(parent_dirs) + "\n")
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         str(REPO), str(REPO / "examples" / "gem-example-pack")],
        capture_output=True, text=True,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    return root


def test_example_env_is_made_through_gem_core(venv):
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import gem_core, json\n"
         "env = gem_core.make('example:ReverseWord-v0')\n"
         "obs, _ = env.reset(seed=0)\n"
         "word = obs.split(\"'\")[1]\n"
         "print(json.dumps([gem_core.__file__, obs, env.step('\\\\boxed{' + word[::-1] + '}')[1]]))"],
        capture_output=True, text=True, cwd=venv,  # not this checkout, whose folders would shadow
    )
    assert result.returncode == 0, result.stderr
    location, observation, reward = json.loads(result.stdout)
    assert str(venv) in location  # the installed copy, not this checkout
    assert "backwards" in observation and reward == 1.0


def test_example_env_is_listed_by_gem_envs(venv):
    result = subprocess.run([str(venv / "bin" / "gem"), "envs", "example", "--json"],
                            capture_output=True, text=True, cwd=venv)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [r["id"] for r in rows] == ["example:ReverseWord-v0"]
    assert rows[0]["source"] == "plugin 'example'"


def test_example_env_passes_check_env_and_gem_check(venv):
    result = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import gem_core\n"
         "results = gem_core.check_env('example:ReverseWord-v0', steps=20)\n"
         "print(sorted({r.status for r in results}), len(results))"],
        capture_output=True, text=True, cwd=venv,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["['passed']", "12"]
    report = subprocess.run([str(venv / "bin" / "gem"), "check", "example:ReverseWord-v0", "--steps", "20"],
                            capture_output=True, text=True, cwd=venv)
    assert report.returncode == 0, report.stdout + report.stderr
    assert "example:ReverseWord-v0 keeps the environment contract (12 passed)" in report.stdout
