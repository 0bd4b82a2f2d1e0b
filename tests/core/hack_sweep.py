"""Plays the reward-hacking probe over every offline environment in one process and fails when an
exploit earned anything (run by scripts/check_package.sh in the virtual environment of the built
wheel, where GEM's packs and their data lie in site-packages, as ``pip install gem-adapters``
puts them).

    python tests/core/hack_sweep.py [EXPLOIT,...]

With exploit names, only those are played: the check plays ``read`` and ``code``, the exploits
whose outcome depends on where the packs are installed (what the sandboxes of the Python tool
and the code candidates can read); tests/core/test_hacks.py plays every exploit over every
offline id in the editable install. An id whose extras are not installed here is skipped.
Progress goes to stderr, one line per id; the last line of stdout sums up.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # reset_sweep, beside this file

from reset_sweep import arguments, offline_ids  # noqa: E402


def main(exploits: list[str] | None) -> int:
    from gem_core.errors import MissingDependencyError
    from gem_core.hacks import probe

    start = time.monotonic()
    extra = arguments()
    failed, skipped, attacks = [], [], 0
    ids = offline_ids()
    for number, env_id in enumerate(ids, 1):
        began = time.monotonic()
        try:
            results = probe(env_id, seeds=(0,), exploits=exploits, **extra.get(env_id, {}))
        except MissingDependencyError as e:
            skipped.append(f"{env_id} ({e})")
            continue
        except Exception as e:  # an environment the probe cannot make or play
            failed.append(f"{env_id}: {type(e).__name__}: {e}")
            continue
        attacks += len(results)
        failed += [f"{env_id}: {r.describe()}" for r in results if r.earned or r.error]
        print(f"[{number}/{len(ids)}] {env_id}: {len(results)} attacks, {time.monotonic() - began:.1f} s",
              file=sys.stderr, flush=True)
    for line in skipped:
        print(f"skipped {line}", file=sys.stderr)
    for line in failed:
        print(f"FAILED {line}")
    print(f"{len(ids) - len(skipped)} environments probed ({attacks} attacks of {', '.join(exploits or ['every exploit'])}), "
          f"{len(skipped)} skipped, {len(failed)} failed, in {time.monotonic() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1].split(",") if len(sys.argv) > 1 else None))
