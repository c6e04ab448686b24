"""`LruCache`: a small thread-safe least-recently-used map, for the grammar and compile caches
(`Grammar.from_json_schema`, `compile_grammar`)."""

from __future__ import annotations

import collections
import threading
from typing import Any


class LruCache:
    """A map of at most `entries` items; the least recently used goes first. Thread-safe."""

    def __init__(self, entries: int):
        self.entries = entries
        self._lock = threading.Lock()
        self._map: collections.OrderedDict = collections.OrderedDict()

    def get(self, key) -> Any:
        """The value of `key` (now the most recently used), or None."""
        with self._lock:
            found = self._map.get(key)
            if found is not None:
                self._map.move_to_end(key)
            return found

    def put(self, key, value) -> None:
        with self._lock:
            self._map[key] = value
            self._map.move_to_end(key)
            while len(self._map) > self.entries:
                self._map.popitem(last=False)

    def items(self) -> list:
        """A snapshot of the (key, value) pairs, the least recently used first."""
        with self._lock:
            return list(self._map.items())

    def clear(self) -> None:
        with self._lock:
            self._map.clear()
