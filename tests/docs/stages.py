"""The tests each stage runs of what it owns: the documented examples and the public names.

Every stage's test folder holds one module, ``test_documented.py``, that makes them::

    from tests.docs.stages import documented_examples_test, public_names_test

    test_documented_examples = documented_examples_test()
    test_public_names = public_names_test()

The stage is the one whose environment runs the tests (:func:`current_stage`), so one module serves
two stages whose folders nest (tests/adapters/trl/factory runs in trl and trl_oldest). Each page's
examples run in a fresh interpreter of that environment (``tests.docs.evaluate``), in a temporary
working directory, offline; the core stage also runs those OpenEnv's environment owns, there.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import asdict
from functools import cache
from pathlib import Path

import pytest

from tests.docs.examples import CORE, OPENENV, owned_by
from tests.docs.public_names import owners, public_modules

REPO = Path(__file__).resolve().parents[2]
#: The stages whose examples the core stage's test runs (tests/docs/test_documented.py).
RUN_FROM_CORE = (CORE, OPENENV)
PAGE_TIMEOUT = 900  # seconds for one page's examples (the TRL page's trains for a step)
#: What keeps the examples offline: the Hugging Face libraries' offline modes, trackers offline.
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "WANDB_MODE": "offline",
           "NO_PROXY": "*", "no_proxy": "*", "HF_HUB_DISABLE_TELEMETRY": "1", "DO_NOT_TRACK": "1",
           "TRL_EXPERIMENTAL_SILENCE": "1"}


@cache
def adapter_envs():
    """scripts/adapter_envs.py, which names the adapter stages."""
    spec = importlib.util.spec_from_file_location("adapter_envs", REPO / "scripts" / "adapter_envs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def current_stage() -> str:
    """The adapter stage whose environment runs this interpreter, else the core stage."""
    return adapter_envs().stage_of(Path(sys.prefix)) or CORE


def adapter_of() -> dict[str, str]:
    """Each adapter stage -> the adapter it tests."""
    envs = adapter_envs()
    return {stage: envs.VARIANTS.get(stage, (stage,))[0] for stage in envs.STAGES}


def stage_python(stage: str) -> str:
    """The interpreter that runs ``stage``'s examples from here: this one, or OpenEnv's environment's."""
    if stage != OPENENV:
        return sys.executable
    found = subprocess.run([sys.executable, str(REPO / "scripts" / "openenv_env.py"), "--find"],
                           capture_output=True, text=True, timeout=60)
    if found.returncode:
        pytest.skip("OpenEnv's environment is not made: run `python scripts/openenv_env.py` "
                    "(scripts/install_test_deps.sh does)")
    return found.stdout.strip()


def run_page(stage: str, page: str, folder: Path) -> subprocess.CompletedProcess:
    """Run the examples of ``page`` that ``stage`` owns in a fresh interpreter, in ``folder``."""
    examples = folder / ".examples.json"
    examples.write_text(json.dumps({"examples": [asdict(e) for e in owned_by(stage)[page]]}))
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return subprocess.run([stage_python(stage), "-m", "tests.docs.evaluate", str(examples)], cwd=folder,
                          capture_output=True, text=True, timeout=PAGE_TIMEOUT, stdin=subprocess.DEVNULL,
                          env={**os.environ, **OFFLINE, "PYTHONPATH": path, "MPLBACKEND": "Agg"})


def documented_examples_test(stages: tuple[str, ...] | None = None):
    """A test of each page's examples that ``stages`` own (default: this environment's stage), or
    None where they own none."""
    stages = stages or (current_stage(),)
    cases = [pytest.param(stage, page, id=page if len(stages) == 1 else f"{stage}:{page}")
             for stage in stages for page in owned_by(stage)]
    if not cases:
        return None

    @pytest.mark.parametrize(("stage", "page"), cases)
    def test_documented_examples(stage, page, tmp_path):
        done = run_page(stage, page, tmp_path)
        assert done.returncode == 0, f"{done.stdout[-12000:]}\n{done.stderr[-6000:]}"
        reported = [line.split(": ")[0] for line in done.stdout.splitlines() if line.startswith(page + ":")]
        assert reported == [e.where for e in owned_by(stage)[page]], f"not every example reported:\n{done.stdout}"

    return test_documented_examples


def modules_owned(stage: str) -> list[str]:
    return [module for module in public_modules() if stage in owners(module, adapter_of())]


def public_names_test(stage: str | None = None):
    """A test that each name of the ``__all__`` of each module ``stage`` owns (default: this
    environment's stage) resolves, all imported in one fresh interpreter; None where it owns none."""
    stage = stage or current_stage()
    owned = modules_owned(stage)
    if not owned:
        return None

    @cache
    def problems() -> dict[str, list[str]]:
        done = subprocess.run([sys.executable, "-m", "tests.docs.public_names", *owned], cwd=REPO,
                              capture_output=True, text=True, timeout=600, env={**os.environ, **OFFLINE})
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    @pytest.mark.parametrize("module", owned)
    def test_public_names(module):
        found = problems()[module]
        assert not found, "\n".join(found)

    return test_public_names
