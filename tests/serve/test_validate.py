"""``openenv validate`` (OpenEnv 0.10's quality bar) passes against ``gem serve``: every runtime
criterion of a running server, for a game, a tool-wrapped environment and a multi-agent view; and
every static check of an exported package, whose own server entry then validates too."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml

import gem_core
from tests.serve.openenv_peer import validate
from tests.serve.servers import gem_serve, package_server

CRITERIA = {"openapi_version_available", "health_endpoint", "metadata_endpoint", "schema_endpoint",
            "mcp_endpoint", "mode_endpoint_consistency"}


def assert_valid(openenv, url: str) -> dict:
    run = openenv.validate("--url", url, "--json")
    report = json.loads(run.stdout)
    failed = [c for c in report["criteria"] if not c["passed"]]
    assert run.returncode == 0 and report["passed"] and not failed, (run.stderr, failed)
    assert {c["id"] for c in report["criteria"]} == CRITERIA and report["mode"] == "simulation"
    return report


@pytest.mark.parametrize("env_id", ["game:GuessTheNumber-v0-hard", "math:Arithmetic-v0+Tool",
                                    "multiagent:TicTacToe-v0-vs-bot"])
def test_a_running_server_passes_every_criterion(openenv, env_id):
    with gem_serve(env_id) as (url, _):
        report = assert_valid(openenv, url)
    assert report["standard_profile"] == "openenv-http/1.x"


def test_an_exported_package_validates_statically_and_its_server_entry_at_runtime(openenv, tmp_path):
    env_id = "math:Arithmetic-v0+Tool"
    package = tmp_path / "package"
    exported = subprocess.run([sys.executable, "-m", "gem_core.cli", "serve", env_id, "--export", str(package)],
                              capture_output=True, text=True, timeout=120)
    assert exported.returncode == 0, exported.stderr
    run = validate(str(package), "--level", "static", "--json")  # the console script, as users run it
    report = json.loads(run.stdout)
    assert run.returncode == 0 and report["verdict"] == "pass", run.stdout + run.stderr
    assert [r["check_id"] for r in report["results"]] == ["static.manifest"]
    assert report["results"][0]["status"] == "pass"

    manifest = yaml.safe_load((package / "openenv.yaml").read_text())
    assert manifest["name"] == "gem-math-arithmetic-v0-tool" and manifest["app"] == "server.app:app"
    assert manifest["validation"]["capabilities"]["declared_tools"] == ["step", "python"]
    front = yaml.safe_load(re.match(r"---\n(.*?)\n---\n", (package / "README.md").read_text(), re.S).group(1))
    assert front["sdk"] == "docker" and front["app_port"] == manifest["port"] == 8000 and "openenv" in front["tags"]
    assert len(front["short_description"]) <= 60
    assert (package / "requirements.txt").read_text().startswith(f"gem-adapters[envs,openenv,tools]=={gem_core.__version__}")
    dockerfile = (package / "Dockerfile").read_text()
    assert "bubblewrap" in dockerfile and 'CMD ["python", "-m", "server.app"' in dockerfile

    with package_server(package) as url:  # the package's server entry, as its image runs it
        assert_valid(openenv, url)


def test_export_refuses_what_it_cannot_package(tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    for env_id, folder, message, *more in [("game:GuessTheNumber-v0", "taken", "exists and is not empty"),
                                           ("multiagent:TicTacToe-v0", "new", "multi-agent environment"),
                                           ("game:NoSuchGame-v0", "new", "Unknown environment id"),
                                           ("game:GuessTheNumber-v0", "new", "--port would be ignored", "--port", "9")]:
        run = subprocess.run([sys.executable, "-m", "gem_core.cli", "serve", env_id, "--export", str(tmp_path / folder),
                              *more], capture_output=True, text=True, timeout=120)
        assert run.returncode != 0 and message in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "new").exists()


def test_the_package_is_written_from_its_templates_with_every_placeholder_filled(tmp_path):
    from gem_serve.export import TEMPLATES, export

    env_id = "game:GuessTheNumber-v0-easy"
    written = {str(path.relative_to(tmp_path)): path.read_text() for path in export(env_id, tmp_path)}
    assert set(TEMPLATES) <= set(written)
    assert [name for name, text in written.items() if "@{" in text] == []
    assert "bubblewrap" not in written["Dockerfile"]  # no Python tool, no sandbox in the image
    assert "FROM ${BASE_IMAGE}" in written["Dockerfile"] and "ENV PATH=/opt/venv/bin:$PATH" in written["Dockerfile"]
    app = compile(written["server/app.py"], "app.py", "exec")
    assert env_id in app.co_consts and "gem_serve.server" in app.co_names + app.co_consts
