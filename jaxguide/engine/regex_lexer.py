"""The native lexer on its own: `RegexLexer` compiles N terminal regexes (Python `re` or ECMA-262
dialect) to one lazily built byte-level DFA (native/lexer/lexer_dfa.h), for tests, benchmarks
and the ECMA oracle of `jaxguide.testing`; `RegexError` is what it raises on a bad regex."""

from jaxguide.engine._core import _native

RegexLexer = _native.RegexLexer
RegexError = _native.RegexError
UNICODE_VERSION = _native.UNICODE_VERSION  # of the tables the lexer's classes come from

__all__ = ["UNICODE_VERSION", "RegexError", "RegexLexer"]
