"""The thread pool in which blocking calls (sandboxed programs, tools) run for async callers."""

import functools
import os
from concurrent.futures import ThreadPoolExecutor


@functools.lru_cache(maxsize=1)
def tool_threads() -> ThreadPoolExecutor:
    """The thread pool in which blocking tools run for async callers (shared, 64 threads)."""
    return ThreadPoolExecutor(max_workers=64, thread_name_prefix="gem-tool")


os.register_at_fork(after_in_child=tool_threads.cache_clear)  # a forked child has none of its threads
