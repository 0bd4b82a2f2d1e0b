"""The benchmark suite: every workload under ``bench/workloads/``, run with this project and with
the reference implementation (PyPI ``gem-llm``) on the same machine in the same run.

Run it with ``python -m bench --help``.
"""

from gem_core.errors import GemError


class BenchError(GemError):
    """A benchmark run that cannot go ahead; the message says what to do."""
