"""Digit automata: JSON number texts within bounds whose value is a multiple of some decimal
steps and of no step of another list, as an explicit automaton (`TerminalIR.automaton`).

Design note. `multipleOf: k` for a k that is not 10^-j (3, 11 with a range, 2.5, 0.123) is a
residue condition on the digits. Read a number text digit by digit and keep its value scaled
by 10^q (q: the most fraction digits of any step) modulo L (the lcm of the scaled steps):
after the integer part and f <= q fraction digits the scaled value is r * 10^(q - f), so a DFA
over (residue r, fraction digits f) decides every step at the end. A nonzero fraction digit
past q makes the value no multiple of any step; zeros past it change nothing. No regex writes
this compactly (the regex of a mod-k DFA grows exponentially with k), so the automaton goes to
the lexer as it is.

Bounds and syntax come from a range regex of `numbers` (the texts of the interval, without
exponent): its DFA over the number alphabet `-.0-9` (Thompson NFA of `automata`, subset
construction) times the residue tracker, explored breadth first from the start, dead states
pruned, then minimized (Moore's partition refinement). Texts have no exponent: `1e3` is refused
although it is a multiple of 1000, a sound subset like the range regexes.

Budget: `MAX_DIGIT_AUTOMATON_STATES` product states (the residues times the range DFA's
states), and `MAX_DIGIT_AUTOMATON_TOTAL` for all the automata of one schema (`DigitBudget`):
beyond, `DigitAutomatonTooLarge`, which the normalizer reports as "keyword 'multipleOf' cannot
be enforced". Work: O(states x 12) for the product and per refinement round,
at most `MAX_REFINEMENT_ROUNDS` rounds (a residue is told apart within about log10 of the
modulus digits, the range within its bounds' length; past the rounds the DFA stays unminimized).
"""

from __future__ import annotations

import math
from decimal import Decimal

from jaxguide.grammars.json_schema.automata import Nfa, eps_closures, pattern_node
from jaxguide.grammars.json_schema.limits import (
    MAX_DIGIT_AUTOMATON_STATES,
    MAX_DIGIT_AUTOMATON_TOTAL,
)
from jaxguide.grammars.json_schema.pattern import PatternError

ALPHABET = "-.0123456789"
# Exponent-free JSON numbers: the range regex of an unbounded number.
PLAIN_NUMBER_RX = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?"
MAX_REFINEMENT_ROUNDS = 64

States = tuple  # ((accept, ((lo, hi, target), ...)), ...), state 0 the start


class DigitAutomatonTooLarge(PatternError):
    """The product of the range and the residues is over MAX_DIGIT_AUTOMATON_STATES (or over
    what is left of a schema's `DigitBudget`)."""


class DigitBudget:
    """The product states the digit automata of one schema may still build in all
    (`MAX_DIGIT_AUTOMATON_TOTAL`): many alternatives each with its own automaton."""

    def __init__(self, total: int | None = None):
        self.left = MAX_DIGIT_AUTOMATON_TOTAL if total is None else total


def _range_dfa(regex: str) -> tuple[list[dict[str, int]], list[bool]]:
    """The DFA of the whole-text matches of `regex` over ALPHABET (subset construction)."""
    nfa = Nfa()
    start, end = nfa.build(pattern_node(f"^(?:{regex})$"))
    closures = eps_closures(nfa)
    first = closures[start]
    index = {first: 0}
    order = [first]
    moves: list[dict[str, int]] = []
    accept: list[bool] = []
    for subset in order:  # grows while it is read
        row: dict[str, int] = {}
        for char in ALPHABET:
            code, target = ord(char), 0
            states = subset
            while states:
                low = states & -states
                state = low.bit_length() - 1
                states ^= low
                for ranges, to in nfa.edges[state]:
                    if any(lo <= code <= hi for lo, hi in ranges):
                        target |= closures[to]
            if target:
                if target not in index:
                    if len(order) >= MAX_DIGIT_AUTOMATON_STATES:
                        raise DigitAutomatonTooLarge("number range automaton too large")
                    index[target] = len(order)
                    order.append(target)
                row[char] = index[target]
        moves.append(row)
        accept.append(bool(subset >> end & 1))
    return moves, accept


def _scaled(steps) -> tuple[int, list[int]]:
    """(q, the steps times 10^q as integers), q the most fraction digits of any step."""
    q = max((max(0, -Decimal(s).normalize().as_tuple().exponent) for s in steps), default=0)
    return q, [int(Decimal(s).scaleb(q)) for s in steps]


def digit_automaton(range_regex: str, multiples=(), non_multiples=(),
                    budget: DigitBudget | None = None) -> States | None:
    """The texts of `range_regex` (exponent-free JSON numbers) whose value is a multiple of
    every step in `multiples` and of none in `non_multiples` (positive Decimals), as the
    states of a minimal DFA; None when there is no such text. Raises DigitAutomatonTooLarge;
    the product states are charged to `budget` when given."""
    limit = MAX_DIGIT_AUTOMATON_STATES if budget is None else min(
        MAX_DIGIT_AUTOMATON_STATES, budget.left)
    moves, range_accept = _range_dfa(range_regex)
    q, scaled = _scaled(tuple(multiples) + tuple(non_multiples))
    positives, negatives = scaled[:len(multiples)], scaled[len(multiples):]
    modulus = math.lcm(*scaled) if scaled else 1
    over = (-1, -1)  # a nonzero digit past q: no multiple of any step

    def tracker_step(tracked, fraction: bool, char: str):
        residue, digits = tracked
        if char == "-":
            return tracked
        if char == ".":
            return (residue, 0)
        if tracked == over:
            return over
        d = ord(char) - 48
        if not fraction:
            return ((residue * 10 + d) % modulus, -1)
        if digits < q:
            return ((residue * 10 + d) % modulus, digits + 1)
        return tracked if d == 0 else over

    def tracker_accepts(tracked) -> bool:
        if tracked == over:
            return not positives
        residue, digits = tracked
        value = residue * 10 ** (q - max(digits, 0)) % modulus
        return all(value % p == 0 for p in positives) and all(value % n for n in negatives)

    # Product states: (range state, (residue, fraction digits or -1 in the integer part)).
    start = (0, (0, -1))
    index = {start: 0}
    order = [start]
    rows: list[dict[str, int]] = []
    for range_state, tracked in order:
        row = {}
        for char, target_range in moves[range_state].items():
            nxt = (target_range, tracker_step(tracked, tracked[1] >= 0 or tracked == over, char))
            if nxt[1] == over and positives:
                continue  # no multiple can follow
            if nxt not in index:
                if len(order) >= limit:
                    raise DigitAutomatonTooLarge(
                        f"digit automaton over {MAX_DIGIT_AUTOMATON_STATES:,} states"
                        if limit == MAX_DIGIT_AUTOMATON_STATES else "digit automata over "
                        f"{MAX_DIGIT_AUTOMATON_TOTAL:,} states in one schema")
                index[nxt] = len(order)
                order.append(nxt)
            row[char] = index[nxt]
        rows.append(row)
    accept = [range_accept[r] and tracker_accepts(t) for r, t in order]
    if budget is not None:
        budget.left -= len(order)
    return _minimal(rows, accept)


def _minimal(rows: list[dict[str, int]], accept: list[bool]) -> States | None:
    """The trimmed, minimized DFA written as States (BFS order from the start)."""
    live = _live(rows, accept)
    if not live[0]:
        return None
    # Moore: refine the partition {accepting, other} of the live states until it is stable
    # (MAX_REFINEMENT_ROUNDS rounds; past them the trimmed DFA is kept as it is, which is
    # correct, only larger: a partition cut short would merge states that differ).
    cls = [int(a) if ok else -1 for a, ok in zip(accept, live)]
    for _ in range(MAX_REFINEMENT_ROUNDS):
        signatures: dict[tuple, int] = {}
        refined = []
        for s, row in enumerate(rows):
            if not live[s]:
                refined.append(-1)
                continue
            sig = (cls[s],) + tuple(cls[row[c]] if c in row and live[row[c]] else -1
                                    for c in ALPHABET)
            refined.append(signatures.setdefault(sig, len(signatures)))
        if len(signatures) == len(set(c for c in cls if c >= 0)):
            cls = refined
            break
        cls = refined
    else:
        cls = [s if ok else -1 for s, ok in enumerate(live)]
    # Write the classes out, breadth first from the start's class.
    representative: dict[int, int] = {}
    for s in range(len(rows)):
        if cls[s] >= 0:
            representative.setdefault(cls[s], s)
    number = {cls[0]: 0}
    queue = [cls[0]]
    out = []
    for c in queue:
        s = representative[c]
        transitions = []
        for char in ALPHABET:
            t = rows[s].get(char)
            if t is None or cls[t] < 0:
                continue
            if cls[t] not in number:
                number[cls[t]] = len(queue)
                queue.append(cls[t])
            target, code = number[cls[t]], ord(char)
            if transitions and transitions[-1][2] == target and transitions[-1][1] == code - 1:
                transitions[-1] = (transitions[-1][0], code, target)
            else:
                transitions.append((code, code, target))
        out.append((accept[s], tuple(transitions)))
    return tuple(out)


def _live(rows: list[dict[str, int]], accept: list[bool]) -> list[bool]:
    """Whether an accepting state is reachable from each state."""
    sources: list[list[int]] = [[] for _ in rows]
    for s, row in enumerate(rows):
        for t in row.values():
            sources[t].append(s)
    live = list(accept)
    stack = [s for s, a in enumerate(accept) if a]
    while stack:
        for s in sources[stack.pop()]:
            if not live[s]:
                live[s] = True
                stack.append(s)
    return live


def accepts(states: States, text: str) -> bool:
    """Whether the automaton accepts `text` (tests and the oracle's cross-checks)."""
    state = 0
    for char in text:
        code = ord(char)
        for lo, hi, target in states[state][1]:
            if lo <= code <= hi:
                state = target
                break
        else:
            return False
    return states[state][0]
