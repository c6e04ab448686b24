"""Composing grammar IRs: one grammar built from the IRs of others (a JSON Schema inside a Lark
grammar, tool-call bodies inside free text).

Design note. A `GrammarIR` numbers its symbols densely (terminals first), so IRs cannot simply be
concatenated. `IrBuilder` collects terminals and nonterminals under symbolic handles (`Sym`),
copies whole IRs in (`embed`: fresh nonterminal names under a prefix, a terminal replaced by a
given symbol where asked) and numbers everything once at the end (`build`). Identical terminals
(same regex and lexing flags) are shared: same lexemes, one lexer NFA, so N tool schemas that
repeat the same string or number terminals cost one copy of each.

`%ignore` is the one grammar-wide part of an IR: the terminals it lists may occur between any
two terminals of the *whole* grammar. Embedding an IR with ignored terminals would leak them
into the other parts (whitespace inside a JSON string, comments inside free text), so
`localize_ignore` first rewrites them into the rules: each terminal occurrence t becomes
`__ign t` (`__ign -> <empty> | __ign I` for each ignored I) and the start gets a trailing
`__ign`: the same language, with exactly one optional run of ignored lexemes between any two
terminals and at both ends, and no ignore list. Linear in the size of the grammar.
"""

from __future__ import annotations

from typing import NamedTuple

from jaxguide.grammars.ir import GrammarIR, TerminalIR


class Sym(NamedTuple):
    """A symbol of a grammar under construction: terminal or nonterminal `index`."""

    terminal: bool
    index: int


class RuleShorthands:
    """`symbol?` and `symbol*` over a builder's `nonterminal` and `rule` (IrBuilder, and the
    tool-call grammars' builder over a JSON Schema emitter)."""

    def optional(self, symbol, name: str):
        """A nonterminal for `symbol?`."""
        nt = self.nonterminal(name)
        self.rule(nt, [])
        self.rule(nt, [symbol])
        return nt

    def star(self, symbol, name: str):
        """A nonterminal for `symbol*` (left recursive)."""
        nt = self.nonterminal(name)
        self.rule(nt, [])
        self.rule(nt, [nt, symbol])
        return nt


class IrBuilder(RuleShorthands):
    """Builds one `GrammarIR` from terminals, rules and whole embedded IRs."""

    def __init__(self) -> None:
        self.terminals: list[TerminalIR] = []
        self._terminal_index: dict[tuple, int] = {}
        self.nonterminals: list[str] = []
        self.rules: list[tuple[int, tuple[Sym, ...]]] = []

    def terminal(self, terminal: TerminalIR) -> Sym:
        """The symbol of `terminal` (an identical one added before is reused)."""
        key = (terminal.regex, terminal.lazy, terminal.forbidden_next, terminal.may_end_before,
               terminal.special, terminal.opens_unique_array, terminal.opens_keyed_object,
               terminal.automaton)
        index = self._terminal_index.get(key)
        if index is None:
            index = self._terminal_index[key] = len(self.terminals)
            self.terminals.append(terminal)
        return Sym(True, index)

    def nonterminal(self, name: str) -> Sym:
        """A fresh nonterminal (names are for reading only; they need not be unique)."""
        self.nonterminals.append(name)
        return Sym(False, len(self.nonterminals) - 1)

    def rule(self, lhs: Sym, rhs: list[Sym] | tuple[Sym, ...]) -> None:
        assert not lhs.terminal
        self.rules.append((lhs.index, tuple(rhs)))

    def embed(self, ir: GrammarIR, prefix: str,
              substitute: dict[int, Sym] | None = None) -> Sym:
        """Copies `ir` in; returns its start nonterminal.

        Args:
          ir: an IR without `ignore` (see `localize_ignore`).
          prefix: put before each of its nonterminal names.
          substitute: terminal id of `ir` -> the symbol that replaces it in its rules (the
            terminal itself is then not copied).
        """
        if ir.ignore:
            raise ValueError("embed() needs an IR without ignore: call localize_ignore first")
        substitute = substitute or {}
        symbols = [substitute[i] if i in substitute else self.terminal(t)
                   for i, t in enumerate(ir.terminals)]
        symbols += [self.nonterminal(prefix + name) for name in ir.nonterminals]
        for lhs, rhs in ir.rules:
            self.rule(symbols[ir.num_terminals + lhs], [symbols[s] for s in rhs])
        return symbols[ir.num_terminals + ir.start]

    def build(self, start: Sym) -> GrammarIR:
        """The IR, with `start` as its start symbol (a nonterminal)."""
        assert not start.terminal
        n = len(self.terminals)

        def number(s: Sym) -> int:
            return s.index if s.terminal else n + s.index

        return GrammarIR(terminals=tuple(self.terminals),
                         nonterminals=tuple(self.nonterminals),
                         rules=tuple((lhs, tuple(number(s) for s in rhs))
                                     for lhs, rhs in self.rules),
                         start=start.index)


def localize_ignore(ir: GrammarIR) -> GrammarIR:
    """The same language without `ignore`: ignored terminals written into the rules (see the
    module note). Returns `ir` itself when it ignores nothing."""
    if not ir.ignore:
        return ir
    n = ir.num_terminals
    ign = len(ir.nonterminals)  # __ign -> <empty> | __ign I
    padded: dict[int, int] = {}  # terminal -> its nonterminal `__ign t`
    nonterminals = list(ir.nonterminals) + ["__ign"]
    rules = [(ign, ()), *((ign, (n + ign, i)) for i in ir.ignore)]

    def pad(s: int) -> int:
        if s >= n:  # a nonterminal: the new ones come after the old, ids stay
            return s
        if s not in padded:
            padded[s] = len(nonterminals)
            nonterminals.append(f"__ign_{ir.terminals[s].name}")
        return n + padded[s]

    for lhs, rhs in ir.rules:
        rules.append((lhs, tuple(pad(s) for s in rhs)))
    for t, nt in padded.items():
        rules.append((nt, (n + ign, t)))
    start = len(nonterminals)  # start' -> start __ign
    nonterminals.append("__ign_start")
    rules.append((start, (n + ir.start, n + ign)))
    return GrammarIR(terminals=ir.terminals, nonterminals=tuple(nonterminals),
                     rules=tuple(rules), start=start)
