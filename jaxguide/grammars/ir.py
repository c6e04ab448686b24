"""The grammar IR: what every front-end (Lark, JSON Schema, regex, choice) lowers to, and what
the native core compiles.

Terminals are regexes in Python `re` syntax with their lexing flavour (lazy / maximal munch,
follow restrictions, special tokens); rules are `lhs -> rhs` over ints (`s < num_terminals` is
terminal `s`, otherwise nonterminal `s - num_terminals`); `ignore` lists the terminals that may
appear between any two terminals (and at both ends). `IR_VERSION` is bumped when the native
reader must change with it.
"""

from __future__ import annotations

import dataclasses
import json

IR_VERSION = 5  # 2: TerminalIR.forbidden_next, may_end_before; 3: opens_unique_array;
# 4: opens_keyed_object; 5: automaton


@dataclasses.dataclass(frozen=True)
class TerminalIR:
    """One terminal of the grammar IR.

    Attributes:
      name: the Lark name (anonymous literals get lark's generated names, e.g. LBRACE).
      regex: Python `re` syntax, flags folded in.
      lazy: first-match lexemes (the regex has a lazy quantifier), else maximal munch.
      forbidden_next: ASCII characters that may not come right after a lexeme of this terminal
        (a trailing negative lookahead such as `=(?!=)`); nothing restricts the end of input.
      may_end_before: ASCII characters before which a lexeme may also end although the
        character could continue it (both lexings are kept): a lookahead that stops a lexeme
        early, e.g. hcl2's string characters before `${`.
      special: for a special-token terminal, the token as the grammar names it (`<|im_end|>`,
        `<[128009]>`); it is matched by that token id, not by bytes (regex never matches).
      opens_unique_array: the opening bracket of a JSON array whose items must differ
        (`uniqueItems`): the matcher checks the items beyond the grammar
        (native/matcher/unique_items.h).
      opens_keyed_object: the opening brace of a JSON object whose members come in any order
        (`property_order="any"`): the matcher checks beyond the grammar that each key appears
        once (the grammar counts the required members).
      automaton: when non-empty, the terminal's language is this automaton's and `regex` is
        only a wider regex that names it (for display and messages): languages no regex
        writes compactly, such as JSON Schema's multipleOf digit automata
        (`json_schema/digit_automata.py`). States as `(accept, ((lo, hi, target), ...))`, state 0
        the start, code points lo..hi inclusive, the ranges of one state disjoint.
    """

    name: str
    regex: str
    lazy: bool = False
    forbidden_next: str = ""
    may_end_before: str = ""
    special: str = ""
    opens_unique_array: bool = False
    opens_keyed_object: bool = False
    automaton: tuple = ()

    @classmethod
    def plain(cls, name: str, regex: str) -> TerminalIR:
        """`TerminalIR(name, regex)` (every other field its default), built without the
        dataclass constructor: a front-end makes one per terminal of every grammar, and the
        frozen constructor's field-by-field setattr is most of that cost."""
        terminal = object.__new__(cls)
        fields = terminal.__dict__  # the defaults are read from the class, as the fields' own
        fields["name"] = name
        fields["regex"] = regex
        return terminal


@dataclasses.dataclass(frozen=True)
class GrammarIR:
    """The grammar handed to the native core (versioned; see the module docstring)."""

    terminals: tuple[TerminalIR, ...]
    nonterminals: tuple[str, ...]
    rules: tuple[tuple[int, tuple[int, ...]], ...]
    start: int
    ignore: tuple[int, ...] = ()
    version: int = IR_VERSION

    def __hash__(self) -> int:
        # Computed once: hashing walks every rule and terminal (tens of microseconds for a
        # schema's grammar) and `compile_grammar`'s cache hashes the IR on each call.
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.terminals, self.nonterminals, self.rules, self.start,
                           self.ignore, self.version))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __getstate__(self) -> dict:
        # Without the cached hash: string hashes differ between processes.
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    @property
    def num_terminals(self) -> int:
        return len(self.terminals)

    def symbol_name(self, symbol: int) -> str:
        if symbol < self.num_terminals:
            return self.terminals[symbol].name
        return self.nonterminals[symbol - self.num_terminals]

    def to_json(self) -> str:
        """A stable JSON form (for caching, debugging and tests); `opens_unique_array`,
        `opens_keyed_object` and `automaton` only where set, so IRs without them read as
        before versions 3 to 5."""
        out = dataclasses.asdict(self)
        for terminal in out["terminals"]:
            for optional in ("opens_unique_array", "opens_keyed_object", "automaton"):
                if not terminal[optional]:
                    del terminal[optional]
        return json.dumps(out, sort_keys=True)

    def __str__(self) -> str:
        lines = [f"start: {self.nonterminals[self.start]}"]
        for lhs, rhs in self.rules:
            body = " ".join(self.symbol_name(s) for s in rhs) or "<empty>"
            lines.append(f"{self.nonterminals[lhs]} -> {body}")
        for t in self.terminals:
            shape = f" (automaton of {len(t.automaton)} states)" if t.automaton else ""
            lines.append(f"{t.name}: /{t.regex}/{' (lazy)' if t.lazy else ''}{shape}")
        if self.ignore:
            lines.append("%ignore " + " ".join(self.terminals[i].name for i in self.ignore))
        return "\n".join(lines)
