"""Resets every offline environment for several episodes and reports what the process tried to
write where (run by tests/core/test_no_writes.py in a fresh interpreter).

    python tests/core/reset_sweep.py EPISODES REPORT.json

An environment is offline when its spec says so, its extras are installed and it is not a family
(``remote:{url}``). Each is reset with seed 0, then without a seed, ``EPISODES`` times in all
(a dataset environment shows a different problem each time). :func:`arguments` gives the few that
need arguments to be made; ``EVERY_PROBLEM`` names those reset once per problem instead, because
each problem runs different code. Writes are seen through an audit hook (:pep:`578`): every file
opened for writing, every file or folder created, moved or removed by this process, with the
environment being reset at the time.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
CHANGES = {"os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.symlink", "os.link", "os.truncate",
           "os.chmod", "os.chown", "os.utime", "shutil.move", "shutil.rmtree"}


def offline_ids() -> list[str]:
    from gem_core.registry import list_envs

    return [spec.id for spec in list_envs()
            if spec.offline and not spec.missing_extras and "{" not in spec.id]


def arguments() -> dict[str, dict]:
    """What the ids that cannot be made with their defaults are made with."""
    from gem_envs.terminal.tasks import BUILTIN_DIR

    return {
        "rg:composite": {"datasets": {"codeio": 1, "leg_counting": 1}},
        "terminal:Tasks-v0": {"path": str(BUILTIN_DIR)},
    }


#: Ids reset once per problem: every problem of reasoning-gym's codeio runs a different program.
EVERY_PROBLEM = ("rg:codeio",)


def main(episodes: int, report_path: str) -> int:
    current = ["(importing)"]
    writes: list[dict] = []

    def audit(event: str, args: tuple) -> None:
        if event == "open":
            path, _, flags = args
            if isinstance(path, (str, bytes)) and flags & WRITE_FLAGS:
                writes.append({"env": current[0], "event": "open for writing", "path": _absolute(path)})
        elif event in CHANGES and args and isinstance(args[0], (str, bytes)):
            writes.append({"env": current[0], "event": event, "path": _absolute(args[0])})

    sys.addaudithook(audit)
    import gem_core

    extra = arguments()
    report: dict = {"ids": offline_ids(), "writes": writes, "errors": {}, "resets": {}, "seconds": {}}
    for env_id in report["ids"]:
        current[0] = env_id
        start = time.monotonic()
        try:
            env = gem_core.make(env_id, **extra.get(env_id, {}))
            if env_id in EVERY_PROBLEM:
                count = env.unwrapped.order.size
                for index in range(count):
                    env.reset(index=index)
            else:
                count = episodes
                env.reset(seed=0)
                for _ in range(episodes - 1):
                    env.reset()
            env.close()
            report["resets"][env_id] = count
        except Exception:
            report["errors"][env_id] = traceback.format_exc(limit=-3)
        report["seconds"][env_id] = round(time.monotonic() - start, 3)
    current[0] = "(exiting)"
    with open(report_path, "w") as file:
        json.dump(report, file, indent=1)
    return 0


def _absolute(path: str | bytes) -> str:
    path = os.fsdecode(path)
    try:
        return os.path.abspath(path)
    except OSError:  # the working directory is gone
        return path


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), sys.argv[2]))
