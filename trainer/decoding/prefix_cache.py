"""Keys and values of token prefixes the model has already read, kept between sampling calls.

A multi-turn episode's prompt only grows: the prompt of turn t+1 is the prompt of turn t, the
response sampled there and the new observation. The episodes of one environment also often open
with the same instructions. :class:`PrefixCache` keeps, for token sequences the model has read,
the keys and values every attention layer computed for them, so that a later prompt starting with
such a sequence only has its new tokens computed.

Entries are only valid for the weights that computed them: clear the cache when the weights
change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(eq=False)
class CachedPrefix:
    """A token sequence and the keys and values of every layer for it: ``kv`` has the shape
    ``layers x 2 x kv_heads x len(ids) x head_dim``."""

    ids: np.ndarray
    kv: Any  # torch.Tensor

    def __len__(self) -> int:
        return len(self.ids)


def common_prefix_length(a: np.ndarray, b: np.ndarray) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if differ.size else n


class PrefixCache:
    """Cached prefixes, looked up by the longest prefix they share with a prompt.

    An entry that another entry extends is dropped (the longer one serves every lookup the
    shorter one would). Past ``max_tokens`` cached tokens, the least recently used entries go.
    """

    def __init__(self, max_tokens: int):
        self.max_tokens = max_tokens
        self._entries: dict[int, CachedPrefix] = {}  # in order of last use
        self._next_key = 0
        self.tokens = 0

    def __len__(self) -> int:
        return len(self._entries)

    def longest_prefix(self, ids: np.ndarray) -> tuple[CachedPrefix | None, int]:
        """The entry sharing the most leading tokens with ``ids``, and how many it shares."""
        best, best_length, best_key = None, 0, None
        for key, entry in self._entries.items():
            length = common_prefix_length(entry.ids, ids)
            if length > best_length:
                best, best_length, best_key = entry, length, key
        if best_key is not None:  # recently used: kept longest
            self._entries[best_key] = self._entries.pop(best_key)
        return best, best_length

    def add(self, entry: CachedPrefix) -> None:
        """Keep ``entry``, dropping the entries it extends and, past the budget, the least
        recently used."""
        if len(entry) == 0 or len(entry) > self.max_tokens:
            return
        for key, old in list(self._entries.items()):
            if len(old) <= len(entry) and common_prefix_length(old.ids, entry.ids) == len(old):
                self._remove(key)
        self._entries[self._next_key] = entry
        self._next_key += 1
        self.tokens += len(entry)
        while self.tokens > self.max_tokens:
            self._remove(next(iter(self._entries)))

    def clear(self) -> None:
        self._entries.clear()
        self.tokens = 0

    def _remove(self, key: int) -> None:
        self.tokens -= len(self._entries.pop(key))
