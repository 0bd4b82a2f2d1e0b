"""GEM's cache folder: what GEM builds once and reuses, for every pack, the trainer and the bench
(converted models, terminal tasks' wheels and test kits, WebShop's indexes, ...).

``$GEM_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/gem-adapters``, else
``~/.cache/gem-adapters``. Anything in it may be deleted: it is built again when needed.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable: GEM's cache folder.
CACHE_ENV_VAR = "GEM_CACHE_DIR"
#: The folder's name under ``$XDG_CACHE_HOME`` (or ``~/.cache``): the distribution's (a bare
#: ``gem`` is RubyGems' name too).
FOLDER_NAME = "gem-adapters"


def cache_dir(*parts: str) -> Path:
    """GEM's cache folder, or the folder ``parts`` below it (neither is created)."""
    configured = os.environ.get(CACHE_ENV_VAR)
    if configured:
        root = Path(configured).expanduser()
    else:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / FOLDER_NAME
    return root.joinpath(*parts)
