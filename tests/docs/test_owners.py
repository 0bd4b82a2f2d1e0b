"""Every documented example and every module's ``__all__`` is owned by a stage that checks it, the
directives that say so are followed or refused with the page's line, and a broken example or
public name fails (tests/docs)."""

from __future__ import annotations

import json
import sys
import textwrap
from dataclasses import asdict

import pytest

from tests.docs import evaluate
from tests.docs.examples import CORE, DirectiveError, all_examples, known_stages, owned_by, page_examples
from tests.docs.public_names import check, owners, public_modules
from tests.docs.stages import RUN_FROM_CORE, adapter_envs, adapter_of, current_stage
from tests.helpers import REPO


def test_every_stage_runs_the_examples_and_public_names_it_owns():
    envs = adapter_envs()
    assert set(known_stages()) == set(RUN_FROM_CORE) | set(envs.STAGES)
    for name, stage in envs.STAGES.items():  # one module per stage: none, and its examples would go unrun
        modules = sorted((REPO / stage.tests).rglob("test_documented.py"))
        assert len(modules) == 1, (name, modules)
    assert (REPO / "tests" / "docs" / "test_documented.py").is_file()
    named = {stage for example in all_examples() for stage in example.stages}
    assert named <= set(known_stages())
    assert {"core", "trl", "trl_oldest", "verl", "verl_cpu", "openenv"} <= named


def test_the_trl_pages_example_is_owned_by_both_trl_stages_and_trains():
    [example] = [e for e in page_examples("docs/adapters/trl.md") if e.kind == "python"]
    assert example.stages == ("trl", "trl_oldest") and example.check == "run"
    assert "from gem_adapters.trl import environment_factory, environment_return" in example.source
    assert "trainer.train()" in example.source


def test_the_stage_is_the_environment_that_runs_the_tests(tmp_path):
    envs = adapter_envs()
    assert current_stage() == CORE
    assert envs.stage_of(tmp_path / f"trl_oldest-{'0' * 16}") == "trl_oldest"
    assert envs.stage_of(tmp_path / f"nosuchstage-{'0' * 16}") is None
    assert envs.stage_of(tmp_path / "trl") is None
    assert adapter_of()["verl_cpu"] == "verl" and adapter_of()["oat"] == "oat"


def test_public_modules_are_found_without_importing_them_and_owned_by_their_adapters_stages():
    found = public_modules()
    assert "gem_core" in found and "gem_adapters.trl" in found
    assert owners("gem_adapters.trl", adapter_of()) == ("trl", "trl_oldest")
    assert owners("gem_adapters.common.cli", adapter_of()) == (CORE,)
    assert owners("gem_core.tools", adapter_of()) == (CORE,)


def test_a_name_that_all_lists_and_that_does_not_resolve_is_reported(tmp_path, monkeypatch):
    package = tmp_path / "brokenpack"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent("""
        __all__ = ["present", "lazy", "missing"]
        present = 1

        def __getattr__(name):
            if name == "lazy":
                from brokenpack import renamed_module  # renamed since
                return renamed_module.lazy
            raise AttributeError(name)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    problems = check("brokenpack")
    assert len(problems) == 2
    assert "'lazy'" in problems[0] and "renamed_module" in problems[0]
    assert "'missing'" in problems[1]
    assert check("brokenpack_that_is_not_there")[0].startswith("import brokenpack_that_is_not_there fails")
    sys.modules.pop("brokenpack", None)


def page(tmp_path, text: str) -> str:
    path = tmp_path / "page.md"
    path.write_text(textwrap.dedent(text))
    page_examples.cache_clear()
    return str(path)


@pytest.mark.parametrize(("text", "message"), [
    ("<!-- example: stage=nosuch -->\n```python\npass\n```\n", "unknown stage 'nosuch'"),
    ("<!-- example: chek=imports -->\n```python\npass\n```\n", "not 'chek=imports'"),
    ("<!-- example: check=imports -->\n```python\npass\n```\n", "needs reason="),
    ("<!-- example: check=skip reason=x -->\n```python\npass\n```\n", "check='skip'"),
    ("<!-- example: run=\"gem envs\" -->\n```python\npass\n```\n", "run=... is for the gem lines"),
    ("<!-- example: check=imports reason=x -->\n```bash\ngem envs\n```\n", "always parsed"),
    ("```python\npass\n```\n<!-- examples: stage=trl -->\n", "comes once, before the page's first example"),
    ("<!-- example: stage=trl -->\n\ntext\n", "no example follows"),
    ("<!-- example: stage=trl -->\n<!-- example: stage=oat -->\n```python\npass\n```\n", "followed by another"),
    ("```python3\npass\n```\n", "a ```python3 fence"),
])
def test_a_directive_that_cannot_be_followed_names_the_page_and_line(tmp_path, text, message):
    with pytest.raises(DirectiveError, match=message.replace("(", r"\(").replace("*", r"\*")):
        page_examples(page(tmp_path, text))


def test_directives_give_owners_checks_and_invisible_code(tmp_path):
    examples = page_examples(page(tmp_path, """
        # Title
        <!-- examples: stage=trl,trl_oldest -->

        ```python
        x = 1
        ```

          <!-- example: stage=oat check=imports reason="needs a GPU" absent=flash_attn -->
          ```python
          import flash_attn
          ```

        <!-- invisible-code-block: python
        assert x == 1
        -->

        ```text
        <!-- example: stage=nosuch -->  shown in a fence, not a directive
        ```

        <!-- example: run="gem envs" -->
        ```bash
        gem envs game   # the registered ones
        ```
    """))
    assert [(e.kind, e.stages, e.check, e.invisible) for e in examples] == [
        ("python", ("trl", "trl_oldest"), "run", False),
        ("python", ("oat",), "imports", False),
        ("python", ("trl", "trl_oldest"), "run", True),
        ("commands", ("trl", "trl_oldest"), "run", False),
    ]
    assert examples[1].absent == ("flash_attn",) and examples[1].reason == "needs a GPU"
    assert examples[1].source == "import flash_attn\n" and examples[1].first_line == 11
    assert examples[3].run == ("gem envs",)


def evaluated(tmp_path, capsys, text: str) -> tuple[int, str]:
    examples = page_examples(page(tmp_path, text))
    data = tmp_path / "examples.json"
    data.write_text(json.dumps({"examples": [asdict(e) for e in examples]}))
    status = evaluate.main([str(data)])
    return status, capsys.readouterr().out


def test_examples_run_in_one_namespace_and_a_failure_names_the_pages_line(tmp_path, capsys):
    status, out = evaluated(tmp_path, capsys, """
        ```python
        value = 41
        ```

        ```python
        assert value == 41
        raise ValueError("broken on purpose")
        ```
    """)
    assert status == 1
    assert ": ran (" in out.splitlines()[0]
    assert f'File "{tmp_path / "page.md"}", line 8' in out and "ValueError: broken on purpose" in out
    assert "tests/docs/evaluate.py" not in out


@pytest.mark.parametrize(("fence", "message"), [
    ('<!-- example: check=imports reason=x -->\n```python\nfrom gem_core.no_such_module import x\n```',
     "`from gem_core.no_such_module import x` fails: ModuleNotFoundError"),
    ('<!-- example: check=imports reason=x -->\n```python\nfrom gem_core import no_such_name\n```',
     "`from gem_core import no_such_name` fails"),
    ('<!-- example: check=imports reason=x absent=json -->\n```python\nimport json\n```',
     "json is installed here"),
    ("```bash\ngem envs --no-such-option\n```", "No such option '--no-such-option'"),
    ("```bash\ngem no-such-command\n```", "No such command 'no-such-command'"),
    ("```bash\ngem eval compare --no-such-option a b\n```", "No such option"),
    ("```bash\npython -m gem_core.no_such_module\n```", "no module named 'gem_core.no_such_module'"),
    ('<!-- example: run="gem env" -->\n```bash\ngem envs\n```', "no gem line of the fence starts so"),
    ('<!-- example: run="gem check" -->\n```bash\ngem check no:SuchEnv-v0\n```', "exit status"),
])
def test_a_broken_import_or_command_line_fails(tmp_path, capsys, fence, message):
    status, out = evaluated(tmp_path, capsys, fence)
    assert status == 1 and message in out, out


def test_command_lines_are_parsed_as_the_shell_splits_them(tmp_path, capsys):
    status, out = evaluated(tmp_path, capsys, """
        <!-- example: run="gem envs game" -->
        ```bash
        pip install -e .   # not a gem line
        OPENAI_API_KEY=... gem eval --base-url http://localhost:8000/v1 --model my-model \\
            --env game:Sudoku-v0-easy && gem view gem-runs/train-<time>   # paths the reader's runs make
        gem envs game
        python -c '
        import gem_core
        '
        ```
    """)
    assert status == 0, out
    assert "ran `gem envs game`" in out
    lines = list(evaluate.command_lines('A=1 gem eval --x 1 \\\n  --y "a b" && gem view d; echo hi | gem envs\n', 3))
    assert lines == [(3, ["gem", "eval", "--x", "1", "--y", "a b"]), (3, ["gem", "view", "d"]), (3, ["echo", "hi"]),
                     (3, ["gem", "envs"])]


def test_every_example_owned_by_the_core_stage_is_in_its_test():
    from tests.docs import test_documented

    [mark] = [m for m in test_documented.test_documented_examples.pytestmark if m.name == "parametrize"]
    pages = {tuple(param.values) for param in mark.args[1]}
    assert pages == {(stage, page) for stage in RUN_FROM_CORE for page in owned_by(stage)}
