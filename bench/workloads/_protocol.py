"""What every workload script shares: its command line, the no-counterpart exit and the metrics line.

The protocol itself is in ``bench/runner.py``. This module uses the standard library only, since
workloads also run in the reference's environment (``--impl reference``); its leading underscore
keeps it out of workload discovery.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import NoReturn

NO_COUNTERPART_EXIT = 3  # the exit code for "the reference has nothing to measure here"


def parser(description: str, quick: str) -> argparse.ArgumentParser:
    """A workload's argument parser with the two flags every workload takes."""
    parsed = argparse.ArgumentParser(description=description.splitlines()[0])
    parsed.add_argument("--impl", choices=("ours", "reference"), default="ours")
    parsed.add_argument("--quick", action="store_true", help=quick)
    return parsed


def no_counterpart(reason: str) -> NoReturn:
    """Exit saying why the implementation asked for has no counterpart of this workload."""
    print(reason, file=sys.stderr)
    sys.exit(NO_COUNTERPART_EXIT)


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0-1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Metrics(dict):
    """The metrics a workload reports, printed as the protocol's last stdout line by :meth:`emit`."""

    def add(self, name: str, value: float, unit: str, better: str = "higher") -> None:
        """Report ``value`` (rounded to 4 decimals) in ``unit``; ``better`` is "higher" or "lower"."""
        self[name] = {"value": round(value, 4), "unit": unit, "better": better}

    def emit(self) -> None:
        print(json.dumps({"metrics": self}))
