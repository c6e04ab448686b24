"""Whitespace layouts of the JSON Schema grammar: the punctuation terminals of each policy."""

from __future__ import annotations

import re

from jaxguide.grammars.json_schema.errors import JsonSchemaError
from jaxguide.grammars.json_schema.limits import (
    MAX_COLON_WS,
    MAX_FLEXIBLE_WS,
    MAX_INDENT,
)

_ESCAPED = {ch: re.escape(ch) for ch in "{}[]"}  # the brackets, escaped once (hot: per container)


class Layout:
    """Punctuation terminals for a whitespace policy."""

    def __init__(self, whitespace):
        if isinstance(whitespace, bool) or not (whitespace in ("flexible", "compact")
                                                 or (isinstance(whitespace, int)
                                                     and 0 <= whitespace <= MAX_INDENT)):
            raise JsonSchemaError(f"whitespace must be 'flexible', 'compact' or an indent "
                                  f"0..{MAX_INDENT}, not {whitespace!r}")
        self.mode = whitespace
        ws = f"[ \\t\\n\\r]{{0,{MAX_FLEXIBLE_WS}}}" if whitespace == "flexible" else ""
        self.ws = ws
        self.indented = isinstance(whitespace, int)  # (attributes: read per member and value)
        colon_ws = f"[ \\t\\n\\r]{{0,{MAX_COLON_WS}}}" if whitespace == "flexible" else ""
        self._colon = ": " if self.indented else colon_ws + ":" + colon_ws

    def _nl(self, depth: int) -> str:
        return "\\n" + " " * (self.mode * depth)

    def open(self, ch: str, depth: int) -> str:
        if self.indented:
            return _ESCAPED[ch] + self._nl(depth + 1)
        return _ESCAPED[ch] + self.ws

    def close(self, ch: str, depth: int) -> str:
        if self.indented:
            return self._nl(depth) + _ESCAPED[ch]
        return self.ws + _ESCAPED[ch]

    def empty(self, pair: str) -> str:
        if self.indented or self.mode == "compact":
            return _ESCAPED[pair[0]] + _ESCAPED[pair[1]]
        return _ESCAPED[pair[0]] + self.ws + _ESCAPED[pair[1]]

    def comma(self, depth: int) -> str:
        if self.indented:
            return "," + self._nl(depth + 1)
        return self.ws + "," + self.ws

    def colon(self) -> str:
        return self._colon
