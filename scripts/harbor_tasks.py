"""Terminal-bench tasks in Harbor's layout, and how many of a set of tasks GEM plays as written.

``python scripts/harbor_tasks.py convert SRC... --into DIR`` rewrites terminal-bench task folders
(``task.yaml``, ``Dockerfile``, ``run-tests.sh``, ``tests/``, ``solution.sh``) into Harbor's layout,
graded the Terminal-Bench 2 way (tasks whose tests are not ``tests/test_outputs.py`` are skipped):

    task.toml                 metadata, [verifier] and [agent] timeouts, [environment] resources
    instruction.md            the task.yaml's instruction
    environment/Dockerfile    the Dockerfile and its build context (the task's other files)
    tests/test.sh             Terminal-Bench 2's standard script: curl, uv, then
                              `uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 pytest ...`,
                              then 1 or 0 into /logs/verifier/reward.txt
    tests/...                 the task's tests
    solution/solve.sh         the solution

``python scripts/harbor_tasks.py measure DIR [--backend podman] [--base-images JSON]`` loads every
task under DIR and plays each twice in GEM: doing nothing, and running its own solution. It prints
one line per task and the counts: loaded, solution 1.0, nothing 0.0 (``--json`` for a report).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
import warnings
from pathlib import Path

CONTEXT_LEFT_OUT = {"task.yaml", "Dockerfile", "docker-compose.yaml", "run-tests.sh", "solution.sh", "tests"}
TEST_SH = """\
#!/bin/bash
# Terminal-Bench 2's standard test script: fetch curl and uv, run the task's pytest tests with
# pinned tools, and write the reward Harbor reads.

apt-get update
apt-get install -y curl

curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh
source $HOME/.local/bin/env

if [ "$PWD" = "/" ]; then
    echo "The image sets no WORKDIR; the tests expect to run in one." >&2
    exit 1
fi

uvx \\
  -p 3.13 \\
  -w pytest==8.4.1 \\
  -w pytest-json-ctrf==0.3.5 \\
  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA

if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def convert(source: Path, target: Path) -> None:
    """Write the terminal-bench task in ``source`` into ``target`` in Harbor's layout."""
    import yaml

    meta = yaml.safe_load((source / "task.yaml").read_text())
    if target.exists():
        shutil.rmtree(target)
    (target / "environment").mkdir(parents=True)
    (target / "solution").mkdir()
    (target / "instruction.md").write_text(meta["instruction"].strip() + "\n")
    (target / "task.toml").write_text(_task_toml(meta))
    shutil.copy2(source / "Dockerfile", target / "environment" / "Dockerfile")
    for path in sorted(source.iterdir()):
        if path.name not in CONTEXT_LEFT_OUT:
            (shutil.copytree if path.is_dir() else shutil.copy2)(path, target / "environment" / path.name)
    shutil.copytree(source / "tests", target / "tests")
    (target / "tests" / "test.sh").write_text(TEST_SH)
    (target / "tests" / "test.sh").chmod(0o755)
    shutil.copy2(source / "solution.sh", target / "solution" / "solve.sh")


def _task_toml(meta: dict) -> str:
    def text(value: object) -> str:
        return json.dumps(str(value))  # a TOML basic string is a JSON string

    tags = ", ".join(text(tag) for tag in meta.get("tags") or ())
    return (f'version = "1.0"\n\n[metadata]\nauthor_name = {text(meta.get("author_name", "unknown"))}\n'
            f'author_email = {text(meta.get("author_email", "unknown"))}\n'
            f'difficulty = {text(meta.get("difficulty", "medium"))}\ncategory = {text(meta.get("category", ""))}\n'
            f'tags = [{tags}]\n\n[verifier]\ntimeout_sec = {float(meta.get("max_test_timeout_sec", 180))}\n\n'
            f'[agent]\ntimeout_sec = {float(meta.get("max_agent_timeout_sec", 900))}\n\n'
            '[environment]\nbuild_timeout_sec = 600.0\ncpus = 1\nmemory_mb = 2048\nstorage_mb = 10240\n')


def measure(folder: Path, backend: str, base_images: dict[str, str]) -> dict:
    """Load the tasks under ``folder`` and play each doing nothing and with its solution."""
    from gem_envs.terminal.env import TerminalEnv
    from gem_envs.terminal.tasks import TaskUnsupportedError, load_task

    rows = []
    for path in sorted(p for p in folder.iterdir() if (p / "task.toml").is_file() or (p / "task.yaml").is_file()):
        start, row = time.monotonic(), {"task": path.name}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                task = load_task(path, backend="auto")
                env = TerminalEnv(tasks=[task], backend=backend, base_images=base_images, max_turns=3)
            row["loaded"] = True
            env.reset()
            row["nothing"] = env.step("<finish>")[1]
            env.reset()
            solved = env.run_solution()
            row["solution"] = env.step("<finish>")[1]
            if row["solution"] != 1.0:
                row["why"] = solved.output[-300:]
            env.close()
        except TaskUnsupportedError as e:
            row.update(loaded=False, why=str(e))
        except Exception as e:  # a failed build or start: counted, said, and the next task goes on
            row.setdefault("loaded", True)
            row["why"] = f"{type(e).__name__}: {str(e)[-300:]}"
        row["seconds"] = round(time.monotonic() - start, 1)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return {"tasks": len(rows), "loaded": sum(r["loaded"] for r in rows),
            "solution_1": sum(r.get("solution") == 1.0 for r in rows),
            "nothing_0": sum(r.get("nothing") == 0.0 for r in rows), "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    to_harbor = commands.add_parser("convert", help="rewrite terminal-bench task folders in Harbor's layout")
    to_harbor.add_argument("sources", nargs="+", type=Path, help="terminal-bench task folders")
    to_harbor.add_argument("--into", type=Path, required=True, help="the folder to write the Harbor tasks in")
    play = commands.add_parser("measure", help="load and play every task of a folder, with and without its solution")
    play.add_argument("folder", type=Path)
    play.add_argument("--backend", default="auto", help="auto, bubblewrap, podman or docker (default: auto)")
    play.add_argument("--base-images", default="{}",
                      help="a JSON object mapping image names or patterns to local images")
    play.add_argument("--json", action="store_true", help="print the whole report as JSON")
    args = parser.parse_args()
    if args.command == "convert":
        written = 0
        for source in args.sources:
            if not (source / "task.yaml").is_file():
                parser.error(f"{source} is not a terminal-bench task folder (it has no task.yaml)")
            if not (source / "tests" / "test_outputs.py").is_file():  # the standard test.sh runs that file
                print(f"skipped {source}: its tests are not tests/test_outputs.py", file=sys.stderr)
                continue
            convert(source, args.into / source.name)
            written += 1
        print(f"wrote {written} task(s) into {args.into}")
        return
    report = measure(args.folder, args.backend, json.loads(args.base_images))
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"{report['tasks']} tasks: {report['loaded']} loaded, {report['solution_1']} solution 1.0, "
              f"{report['nothing_0']} nothing 0.0")


if __name__ == "__main__":
    main()
