"""Whitespace layouts of the JSON Schema grammar: the punctuation terminals of each policy."""

from __future__ import annotations

import re

from jaxguide.grammars.json_schema.errors import JsonSchemaError
from jaxguide.grammars.json_schema.limits import (
    MAX_COLON_WS,
    MAX_FLEXIBLE_WS,
    MAX_INDENT,
)


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

    @property
    def indented(self) -> bool:
        return isinstance(self.mode, int)

    def _nl(self, depth: int) -> str:
        return "\\n" + " " * (self.mode * depth)

    def open(self, ch: str, depth: int) -> str:
        if self.indented:
            return re.escape(ch) + self._nl(depth + 1)
        return re.escape(ch) + self.ws

    def close(self, ch: str, depth: int) -> str:
        if self.indented:
            return self._nl(depth) + re.escape(ch)
        return self.ws + re.escape(ch)

    def empty(self, pair: str) -> str:
        if self.indented or self.mode == "compact":
            return re.escape(pair)
        return re.escape(pair[0]) + self.ws + re.escape(pair[1])

    def comma(self, depth: int) -> str:
        if self.indented:
            return "," + self._nl(depth + 1)
        return self.ws + "," + self.ws

    def colon(self) -> str:
        if self.indented:
            return ": "
        if self.mode == "flexible":
            ws = f"[ \\t\\n\\r]{{0,{MAX_COLON_WS}}}"
            return ws + ":" + ws
        return ":"
