"""An independent, slow reference recognizer for GrammarIR languages (the mask oracle).

It implements the semantics of ../shared/DESIGN.md and jaxguide/grammar.py with different code
and a different regex engine than the native core: a textbook Earley recognizer in Python over
immutable charts, and the `regex` package's partial matching (`partial=True`) for lexemes.

Lexing hypotheses are (chart, current lexeme text). On each character a hypothesis either
continues its lexeme (some allowed terminal can still match the longer text) or ends it first:
a terminal T that fully matches the lexeme ends it if T is lazy and no shorter non-empty prefix
matched T (first match), or if T is greedy and the character cannot continue T (maximal munch);
then T is scanned by the parser (an %ignore terminal leaves the chart as it is) and the
character starts a new lexeme. Text is processed as str; `viable_bytes` handles byte strings
that end inside a UTF-8 sequence by trying candidate completions.
"""

from __future__ import annotations

import functools
import random

import regex

from jaxguide.grammars.ir import GrammarIR

_EXIT_SEARCH_DEPTH = 12  # characters of an ignored terminal's lexemes explored for exits


def greedy_form(pattern: str) -> str:
    """`pattern` with every lazy quantifier (`*?`, `+?`, `??`, `{m,n}?`) made greedy."""
    out = []
    i = 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1:i + 2] == "]" or pattern[i + 1:i + 3] == "^]":
                out.append(pattern[i:i + (2 if pattern[i + 1] == "]" else 3)])
                i += 2 if pattern[i + 1] == "]" else 3
                continue
        elif c == "?" and out and out[-1] in ("*", "+", "?", "}") and \
                not (len(out) >= 2 and out[-1] == "?" and out[-2] == "("):
            i += 1  # drop the laziness marker
            continue
        out.append(c)
        i += 1
    return "".join(out)


class OracleRecognizer:
    def __init__(self, ir: GrammarIR):
        self.ir = ir
        self.t_count = ir.num_terminals
        # Lazy and greedy quantifiers have the same full-match language; the `regex` package's
        # partial matching mishandles lazy ones (`a.*?b` partially matches "a\n"), so the
        # oracle matches with greedy forms and implements first-match semantics itself.
        self.patterns = [regex.compile(greedy_form(t.regex), regex.V0) for t in ir.terminals]
        self.lazy = [t.lazy for t in ir.terminals]
        self.forbidden_next = [t.forbidden_next for t in ir.terminals]
        self.may_end_before = [t.may_end_before for t in ir.terminals]
        self.ignore = frozenset(ir.ignore)
        self.special = [bool(t.special) for t in ir.terminals]
        self.rules_of: dict[int, list[tuple[int, ...]]] = {}
        for lhs, rhs in ir.rules:
            self.rules_of.setdefault(self.t_count + lhs, []).append(rhs)
        self.start_symbol = self.t_count + ir.start
        # Items are (lhs symbol, rhs tuple, dot, origin); the augmented start lhs is -1.
        self.augmented = (-1, (self.start_symbol,), 0, 0)
        self.chars = sorted({c for t in ir.terminals for c in t.regex if ord(c) > 127})
        self._hypotheses_cache: dict[str, frozenset] = {}

    # ------------------------------------------------------------------ Earley
    def _close(self, chart: tuple[frozenset, ...], kernel: set) -> frozenset:
        position = len(chart)
        items = set(kernel)
        work = list(kernel)
        while work:
            lhs, rhs, dot, origin = work.pop()
            if dot < len(rhs):
                symbol = rhs[dot]
                if symbol >= self.t_count:
                    for body in self.rules_of.get(symbol, []):
                        new = (symbol, body, 0, position)
                        if new not in items:
                            items.add(new)
                            work.append(new)
                    # Nullable completion: symbol completed within this set already?
                    for other in list(items):
                        if other[0] == symbol and other[2] == len(other[1]) and \
                                other[3] == position:
                            new = (lhs, rhs, dot + 1, origin)
                            if new not in items:
                                items.add(new)
                                work.append(new)
            else:
                source = items if origin == position else chart[origin]
                for wl, wr, wd, wo in list(source):
                    if wd < len(wr) and wr[wd] == lhs:
                        new = (wl, wr, wd + 1, wo)
                        if new not in items:
                            items.add(new)
                            work.append(new)
        return frozenset(items)

    @functools.lru_cache(maxsize=None)
    def initial_chart(self) -> tuple[frozenset, ...]:
        return (self._close((), {self.augmented}),)

    @functools.lru_cache(maxsize=200_000)
    def scan(self, chart: tuple[frozenset, ...], terminal: int) -> tuple[frozenset, ...] | None:
        kernel = {(l, r, d + 1, o) for (l, r, d, o) in chart[-1] if d < len(r) and r[d] == terminal}
        if not kernel:
            return None
        return chart + (self._close(chart, kernel),)

    def allowed(self, chart) -> set[int]:
        """Terminals a lexeme may be read as here: the parser's, and the %ignore'd ones that
        lead on (all of them where the input may end or a special token may come next)."""
        found = {r[d] for (l, r, d, o) in chart[-1] if d < len(r) and r[d] < self.t_count}
        if (not self.ignore or self.chart_accepts(chart)
                or any(self.special[t] for t in found)):
            return found | self.ignore
        return found | self._ignored_leading_on(frozenset(found - self.ignore),
                                                frozenset(found & self.ignore))

    # ------------------------------------------------------------------ ignored lexemes
    # An %ignore'd lexeme is followed by a character that cannot continue it; if no such
    # character can start a terminal the parser allows here (or another ignored lexeme that
    # leads on), the lexeme is part of no sentence. Exit characters are found by exploring the
    # terminal's lexemes over the alphabet, one text per one-step behaviour (a truncated
    # Myhill-Nerode class: which characters continue it, and which complete it), so the
    # exploration stays finite; the native core computes the same on its lexer DFA.

    @functools.cached_property
    def _alphabet(self) -> list[str]:
        return [chr(c) for c in range(0x20, 0x7F)] + ["\t", "\n", "\r"] + self.chars

    @functools.lru_cache(maxsize=None)
    def _exit_chars(self, t: int) -> frozenset:
        exits: set[str] = set()
        level, seen = [""], set()
        for _ in range(_EXIT_SEARCH_DEPTH):
            following = []
            for text in level:
                for c in self._alphabet:
                    if self._ends(t, text, c):
                        exits.add(c)
                    if self._can_continue(t, text + c):
                        following.append(text + c)
            level = []
            for text in following:
                behaviour = tuple((self._can_continue(t, text + c),
                                   self.patterns[t].fullmatch(text + c) is not None)
                                  for c in self._alphabet)
                if behaviour not in seen:
                    seen.add(behaviour)
                    level.append(text)
            if not level:
                break
        return frozenset(exits)

    @functools.lru_cache(maxsize=None)
    def _ignored_leading_on(self, scanned: frozenset, also_scanned: frozenset) -> frozenset:
        leads = set(also_scanned)
        starts = {c for c in self._alphabet
                  if any(self._can_continue(u, c) for u in scanned | also_scanned)}
        changed = True
        while changed:
            changed = False
            for t in self.ignore - leads:
                if self._exit_chars(t) & starts:
                    leads.add(t)
                    starts |= {c for c in self._alphabet if self._can_continue(t, c)}
                    changed = True
        return frozenset(leads)

    def chart_accepts(self, chart) -> bool:
        return (-1, (self.start_symbol,), 1, 0) in chart[-1]

    # ------------------------------------------------------------------ lexing
    def _can_continue(self, t: int, text: str) -> bool:
        if regex.fullmatch(self.patterns[t], text, partial=True) is None:
            return False
        if self.lazy[t]:  # a lazy lexeme cannot grow past its first match
            return not any(self.patterns[t].fullmatch(text[:i]) for i in range(1, len(text)))
        return True

    def _ends(self, t: int, lexeme: str, next_char: str | None) -> bool:
        if not lexeme or self.patterns[t].fullmatch(lexeme) is None:
            return False
        if next_char is not None and next_char in self.forbidden_next[t]:
            return False  # a trailing negative lookahead
        if self.lazy[t]:
            return not any(self.patterns[t].fullmatch(lexeme[:i]) for i in range(1, len(lexeme)))
        return (next_char is None or next_char in self.may_end_before[t]
                or not self._can_continue(t, lexeme + next_char))

    def _after_end(self, chart, t: int):
        results = []
        if t in self.ignore:
            results.append(chart)
        scanned = self.scan(chart, t)
        if scanned is not None:
            results.append(scanned)
        return results

    def step(self, hypotheses: frozenset, char: str) -> frozenset:
        out = set()
        for chart, lexeme in hypotheses:
            allowed = self.allowed(chart)
            if any(self._can_continue(t, lexeme + char) for t in allowed):
                out.add((chart, lexeme + char))
            for t in allowed:
                if self._ends(t, lexeme, char):
                    for new_chart in self._after_end(chart, t):
                        if any(self._can_continue(u, char) for u in self.allowed(new_chart)):
                            out.add((new_chart, char))
        return frozenset(out)

    def hypotheses(self, text: str) -> frozenset:
        # step() is a pure function of (state, char): extend the longest prefix seen before
        # (walks ask about prefix + token for every token of the vocabulary at every step).
        cache = self._hypotheses_cache
        if text in cache:
            return cache[text]
        known = len(text)
        while known > 0 and text[:known] not in cache:
            known -= 1
        state = cache[text[:known]] if known else frozenset({(self.initial_chart(), "")})
        if len(cache) > 200_000:
            cache.clear()
        for i in range(known, len(text)):
            if state:
                state = self.step(state, text[i])
            cache[text[:i + 1]] = state
        return state

    def accepting_hypotheses(self, state: frozenset) -> bool:
        for chart, lexeme in state:
            if not lexeme and self.chart_accepts(chart):
                return True
            for t in self.allowed(chart):
                if self._ends(t, lexeme, None):
                    if any(self.chart_accepts(c) for c in self._after_end(chart, t)):
                        return True
        return False

    def viable(self, text: str) -> bool:
        return bool(self.hypotheses(text))

    def accepts(self, text: str) -> bool:
        return self.accepting_hypotheses(self.hypotheses(text))

    # ------------------------------------------------------------------ bytes
    def completions_of(self, partial: bytes, rng: random.Random) -> list[str]:
        """Characters whose UTF-8 starts with `partial` (1-3 bytes of a multi-byte sequence)."""
        lead = partial[0]
        length = 2 if lead >> 5 == 0b110 else 3 if lead >> 4 == 0b1110 else 4 \
            if lead >> 3 == 0b11110 else 0
        if length == 0 or len(partial) >= length:
            return []
        candidates = [c for c in self.chars if c.encode().startswith(partial)]
        # Fill the missing continuation bytes: exhaustively when one is missing, else the lowest,
        # the highest and random ones.
        missing = length - len(partial)
        fills = ([bytes([b]) for b in range(0x80, 0xC0)] if missing == 1 else
                 [b"\x80" * missing, b"\xbf" * missing] +
                 [bytes(rng.randrange(0x80, 0xC0) for _ in range(missing)) for _ in range(64)])
        for fill in fills:
            try:
                candidates.append((partial + fill).decode())
            except UnicodeDecodeError:
                pass
        return sorted(set(candidates))

    def viable_bytes(self, data: bytes, rng: random.Random | None = None) -> bool:
        """Is `data` (UTF-8, possibly ending inside a character) a viable prefix?"""
        rng = rng or random.Random(0)
        for cut in range(len(data), max(-1, len(data) - 4), -1):
            try:
                text = data[:cut].decode("utf-8")
            except UnicodeDecodeError:
                continue
            tail = data[cut:]
            if not tail:
                return self.viable(text)
            state = self.hypotheses(text)
            return any(self.step(state, c) for c in self.completions_of(tail, rng)) \
                if state else False
        return False  # not UTF-8
