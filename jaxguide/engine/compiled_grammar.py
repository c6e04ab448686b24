"""CompiledGrammar: a grammar compiled against a tokenizer (immutable, thread-safe, shared by
any number of matchers), and `compile_grammar`, which builds one.

Caching. Compiling costs milliseconds (lexer automata, the grammar's tables), and a server sees
the same schema again and again, so `compile_grammar` keeps the last COMPILED_CACHE_ENTRIES
compiled grammars keyed by (grammar IR, tokenizer): a repeated grammar is a dictionary lookup,
and its lexer states and lexer-only masks, built lazily by earlier matchers, are warm. A
compiled grammar is immutable, so sharing it is safe. `clear_caches()` empties this cache and
the front-ends' (for cold-start measurements, or to return memory).
"""

from __future__ import annotations

from jaxguide.engine._core import _native
from jaxguide.engine.tokenizer import TokenizerInfo
from jaxguide.errors import GrammarError
from jaxguide.grammars import clear_front_end_caches
from jaxguide.grammars.grammar import Grammar
from jaxguide.grammars.lru import LruCache

# Compiled grammars kept by compile_grammar (least recently used dropped first). Each holds its
# lexer DFA and lexer-only mask cache (bounded by their budgets, typically a few MB).
COMPILED_CACHE_ENTRIES = 32


def _special_token_id(reference: str, tokenizer_info: TokenizerInfo) -> int:
    """The id of a special token named in a grammar: `<|name|>` (any special-token name) or
    `<[id]>`. It must be a special token (no bytes) of the tokenizer."""
    if reference.startswith("<[") and reference.endswith("]>"):
        token_id = int(reference[2:-2])
        if not 0 <= token_id < tokenizer_info.vocab_size or tokenizer_info.token_bytes(token_id):
            raise GrammarError(f"{reference}: token id {token_id} is not a special token of the "
                               "tokenizer (only tokens without bytes can be named by id)")
        return token_id
    ids = [i for i, name in tokenizer_info.special_token_names.items() if name == reference]
    if not ids:
        raise GrammarError(f"the grammar names the special token {reference}, which the "
                           "tokenizer does not have")
    return min(ids)


def _check_utf8(terminal) -> None:
    """A terminal's regex must be text that UTF-8 can carry: a lone surrogate (`"\\ud800"` in
    a Python string) is no character and no bytes can match it."""
    try:
        terminal.regex.encode("utf-8")
    except UnicodeEncodeError as e:
        raise GrammarError(f"terminal {terminal.name}: its pattern has a lone surrogate "
                           f"(U+{ord(terminal.regex[e.start]):04X} at position {e.start}), which "
                           "is no character; write the pair's character instead") from None


class CompiledGrammar:
    """A grammar compiled against a tokenizer: immutable, thread-safe, shared by matchers."""

    def __init__(self, grammar: Grammar, tokenizer_info: TokenizerInfo):
        ir = grammar.ir
        self.grammar = grammar
        self.tokenizer_info = tokenizer_info
        special_tokens = [(i, _special_token_id(t.special, tokenizer_info))
                          for i, t in enumerate(ir.terminals) if t.special]
        for terminal in ir.terminals:
            _check_utf8(terminal)
        self.native = _native.CompiledGrammar(
            [(t.name, t.regex, t.lazy, t.forbidden_next.encode("ascii"),
              t.may_end_before.encode("ascii")) for t in ir.terminals],
            ir.nonterminals,
            ir.rules,  # tuples as they are: no per-rule Python objects (nor GC work) here
            ir.start,
            ir.ignore,
            tokenizer_info.native,
            special_tokens,
            [i for i, t in enumerate(ir.terminals) if t.opens_unique_array],
            [i for i, t in enumerate(ir.terminals) if t.opens_keyed_object],
            [(i, t.automaton) for i, t in enumerate(ir.terminals) if t.automaton],
        )

    def __repr__(self) -> str:
        return f"CompiledGrammar({self.grammar!r}, {self.tokenizer_info!r})"


_compiled_cache = LruCache(COMPILED_CACHE_ENTRIES)


def clear_caches() -> None:
    """Empties every cache keyed by a grammar or schema: compiled grammars, the front-ends'
    memos (JSON Schema and Lark lowering, regex pieces) and the native core's shared character
    classes. Tokenizers are kept; grammars already compiled keep working."""
    _compiled_cache.clear()
    clear_front_end_caches()
    _native.clear_shared_caches()


def compile_grammar(grammar: Grammar | str, tokenizer_info: TokenizerInfo, *,
                    cache: bool = True) -> CompiledGrammar:
    """Compiles a grammar (a `Grammar`, or Lark text) against a tokenizer.

    With `cache` (the default), a grammar compiled recently against the same tokenizer is
    returned as it was (see the module docstring); `cache=False` always compiles anew.

    Raises:
      GrammarError: the grammar is invalid, uses an unsupported regex feature, or generates no
        string.
    """
    if isinstance(grammar, str):
        grammar = Grammar.from_lark(grammar)
    if not isinstance(grammar, Grammar):
        raise GrammarError("expected a jaxguide.Grammar or Lark text, got "
                           f"{type(grammar).__name__}")
    if not cache:
        return CompiledGrammar(grammar, tokenizer_info)
    # The tokenizer by identity: the cached CompiledGrammar holds it, so its id stays unique.
    key = (grammar.ir, id(tokenizer_info))
    compiled = _compiled_cache.get(key)
    if compiled is None:
        compiled = CompiledGrammar(grammar, tokenizer_info)
        _compiled_cache.put(key, compiled)
    return compiled
