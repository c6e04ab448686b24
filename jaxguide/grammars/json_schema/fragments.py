"""Fragments: what one schema added to an emitter shared by several, spliced into later ones.

Design note. The tool-call grammars lower every tag schema straight into one shared `Emitter`
(`Emitter.begin_schema`: per schema, its own normalizer, memo and budgets), so each schema's
rules refer to its own nonterminals, created in one contiguous span, and to terminals only. A
`Fragment` keeps that span of rules and nonterminal names with the emitter's terminal keys; a
later grammar with the same schema splices it in (`splice`): nonterminals renumbered by one
offset, terminals found or added by key. Linear in the fragment's size, and much less than
lowering the schema again.
"""

from __future__ import annotations

from typing import NamedTuple


class Fragment(NamedTuple):
    """Rules and nonterminal names one schema added to a shared emitter. Symbols are the
    emitter's: nonterminal s (numbered from `first_nonterminal`), terminal ~i whose key is
    `terminal_keys[i]` (the keys of the emitter it came from)."""

    rules: tuple[tuple[int, tuple[int, ...]], ...]
    nonterminals: tuple[str, ...]
    first_nonterminal: int
    start: int
    terminal_keys: list


def fragment_of(emitter, rule_span: tuple[int, int], nonterminal_span: tuple[int, int],
                start: int) -> Fragment:
    """What one schema added after `begin_schema`: the rules and nonterminals in those spans
    (its own only) and its value nonterminal `start`. Taken once the emitter is complete (its
    `terminal_keys` list is shared, not copied)."""
    return Fragment(tuple(emitter.rules[rule_span[0]:rule_span[1]]),
                    tuple(emitter.nonterminals[nonterminal_span[0]:nonterminal_span[1]]),
                    nonterminal_span[0], start, emitter.terminal_keys)


def splice(emitter, fragment: Fragment) -> int:
    """Copies a fragment into `emitter` (its nonterminals renumbered, its terminals found or
    added by key); returns its start nonterminal."""
    shift = len(emitter.nonterminals) - fragment.first_nonterminal
    keys = fragment.terminal_keys
    mapped: dict[int, int] = {}

    def symbol(s: int) -> int:
        if s >= 0:
            return s + shift
        new = mapped.get(s)
        if new is None:
            new = mapped[s] = emitter.term(keys[~s])
        return new

    emitter.nonterminals.extend(fragment.nonterminals)
    emitter.rules.extend((lhs + shift, tuple([symbol(s) for s in rhs]))
                         for lhs, rhs in fragment.rules)
    return fragment.start + shift
