"""An exported package's image, built with podman from the package as written (its Dockerfile and
requirements.txt), offline: the base image and the wheels come from tests/serve/images.py. The
container serves the environment, and OpenEnv 0.10's validator and client find it as they find
``gem serve``."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

import gem_core
from tests.helpers import REPO, free_port, wait_healthy
from tests.serve import images

GAME = "game:GuessTheNumber-v0-easy"
IMAGE = "localhost/gem-test/exported-package"


@pytest.fixture
def built_image(tmp_path):
    if shutil.which(images.ENGINE) is None:
        pytest.skip("podman is installed by scripts/install_test_deps.sh")
    if not images.ready():
        pytest.skip("the base image and wheels are made by `python -m tests.serve.images` "
                    "(scripts/install_test_deps.sh runs it)")
    package = tmp_path / "package"
    exported = subprocess.run([sys.executable, "-m", "gem_core.cli", "serve", GAME, "--export", str(package)],
                              capture_output=True, text=True, timeout=120)
    assert exported.returncode == 0, exported.stderr
    wheels = package / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                            "-w", str(wheels), str(REPO)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    for wheel in images.wheels_dir().glob("*.whl"):
        shutil.copy(wheel, wheels)
    tag = f"{IMAGE}:{tmp_path.name.lower()}"
    build = subprocess.run([images.ENGINE, "build", "--quiet", "--build-arg", f"BASE_IMAGE={images.BASE}",
                            "--build-arg", "PIP_NO_INDEX=1", "--build-arg", "PIP_FIND_LINKS=/app/wheels",
                            "-t", tag, str(package)], capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr[-3000:]
    try:
        yield tag
    finally:
        subprocess.run([images.ENGINE, "rmi", "-f", tag], capture_output=True, timeout=120)


def test_the_image_of_an_exported_package_serves_and_validates(openenv, built_image):
    port = free_port()
    container = subprocess.run([images.ENGINE, "run", "-d", "--rm", "-p", f"127.0.0.1:{port}:8000", built_image],
                               capture_output=True, text=True, timeout=120)
    assert container.returncode == 0, container.stderr
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url)
        run = openenv.validate("--url", url)
        assert run.returncode == 0 and "Verdict: PASS" in run.stdout, run.stdout + run.stderr
        with openenv.open("generic", url) as client:
            first = client.reset(seed=3)["observation"]["prompt"]
            step = client.step({"message": r"\boxed{4}"})
        env = gem_core.make(GAME)
        assert first == env.reset(seed=3)[0]
        observation, reward, terminated, truncated, _ = env.step(r"\boxed{4}")
        assert (step["observation"]["prompt"], step["reward"], step["done"]) == (observation, reward,
                                                                                  terminated or truncated)
    finally:
        subprocess.run([images.ENGINE, "rm", "-f", "-t", "0", container.stdout.strip()], capture_output=True,
                       timeout=120)
