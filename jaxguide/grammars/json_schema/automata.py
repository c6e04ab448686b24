"""Small automata over code points: the key languages of patternProperties, and ECMA search.

Design note. "Matches these patterns, not those, and is no declared name" needs intersection
and complement, which regex syntax lacks. Patterns and names -> NFAs (`Nfa`, Thompson
construction over the `EcmaParser` AST) -> one product DFA (`Dfa`, over a shared partition of
code points into atoms) -> per class of accept vectors, a unit regex by state elimination
(`Dfa.regex`). Sizes are capped (`MAX_NFA_STATES`, `MAX_DFA_STATES`, `MAX_KEY_REGEX` in
`limits`): beyond, `PatternError`. The same product, written back as an anchored ECMA pattern
(`intersection_pattern`), is `format` together with `pattern` (`MAX_INTERSECTION_STATES`).
`ecma_search` walks the DFA of one pattern over a concrete text (JSON Schema's unanchored
search; the NFA is simulated when the DFA passes `MAX_DFA_STATES`), to check values exactly.
"""

from __future__ import annotations

import bisect
import functools

from jaxguide.grammars.json_schema.formats import LIBRARY_PATTERNS
from jaxguide.grammars.json_schema.limits import (
    MAX_DFA_STATES,
    MAX_INTERSECTION_STATES,
    MAX_KEY_REGEX,
    MAX_NFA_STATES,
    MAX_REGEX_STATES,
)
from jaxguide.grammars.json_schema.pattern import (
    EcmaParser,
    PatternError,
    strip_anchors,
)
from jaxguide.grammars.json_schema.units import (
    ALL_CHARS,
    MAX_UNICODE,
    norm_ranges,
    unit_regex,
    wrap,
)


class Nfa:
    def __init__(self):
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple]] = []
        self.start = self.end = 0  # (set by `of`)

    @classmethod
    def of(cls, node) -> Nfa:
        """The NFA of a pattern AST node, with its start and end, read-only from here on."""
        nfa = cls()
        nfa.start, nfa.end = nfa.build(node)
        return nfa

    @functools.cached_property
    def cuts(self) -> set[int]:
        """Where its edges' code point ranges start and end (a range [lo, hi] cuts at lo and
        hi + 1): the atoms of a product are the intervals between its factors' cuts."""
        return {c for edges in self.edges for ranges, _ in edges for lo, hi in ranges
                for c in (lo, hi + 1)}

    def new(self) -> int:
        if len(self.eps) >= MAX_NFA_STATES:
            raise PatternError("pattern automaton too large")
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1

    def build(self, node) -> tuple[int, int]:
        kind = node[0]
        if kind == "set":
            s, e = self.new(), self.new()
            self.edges[s].append((node[1], e))
            return s, e
        if kind == "cat":
            s = cur = self.new()
            for n in node[1]:
                a, b = self.build(n)
                self.eps[cur].append(a)
                cur = b
            return s, cur
        if kind == "alt":
            s, e = self.new(), self.new()
            for n in node[1]:
                a, b = self.build(n)
                self.eps[s].append(a)
                self.eps[b].append(e)
            return s, e
        if kind == "rep":
            _, inner, lo, hi = node
            s = cur = self.new()
            for _ in range(lo):
                a, b = self.build(inner)
                self.eps[cur].append(a)
                cur = b
            if hi is None:
                x = self.new()
                self.eps[cur].append(x)
                a, b = self.build(inner)
                self.eps[x].append(a)
                self.eps[b].append(x)
                cur = x
            else:  # x{0,n} as (x(x(...)?)?)?: every exit goes to one end, so that a
                # state's epsilon closure holds one exit, not every later copy's start
                end = self.new()
                for _ in range(hi - lo):
                    self.eps[cur].append(end)
                    a, b = self.build(inner)
                    self.eps[cur].append(a)
                    cur = b
                self.eps[cur].append(end)
                cur = end
            return s, cur
        raise PatternError("^ or $ inside the pattern")


_ANY_STAR = ("rep", ("set", ALL_CHARS), 0, None)


def pattern_nfa(pattern: str) -> Nfa:
    """The NFA of the pattern as searched (`pattern_node`), built once per pattern: the key
    classes, products and searches of one schema use the same patterns again and again. The
    `format` patterns' NFAs (the largest: uri, email) are built once per process
    (`LIBRARY_PATTERNS`)."""
    if pattern in LIBRARY_PATTERNS:
        nfa = _LIBRARY_NFAS.get(pattern)
        if nfa is None:
            nfa = _LIBRARY_NFAS[pattern] = Nfa.of(pattern_node(pattern))
        return nfa
    return _schema_pattern_nfa(pattern)


_LIBRARY_NFAS: dict[str, Nfa] = {}


@functools.lru_cache(maxsize=256)
def _schema_pattern_nfa(pattern: str) -> Nfa:
    return Nfa.of(pattern_node(pattern))


def pattern_node(pattern: str):
    branches = []
    for node, start, end in strip_anchors(EcmaParser(pattern).parse()):
        items = ([] if start else [_ANY_STAR]) + [node] + ([] if end else [_ANY_STAR])
        branches.append(("cat", items))
    return ("alt", branches)


PRODUCT_TOO_LARGE = "key automaton too large"  # what Dfa raises past its budget

# The native subset construction (native/lexer/nfa_product.h), which the engine registers when
# it loads the core (`use_native_product`): `(nfas, atoms, max_states) -> None | (transitions
# [states, atoms], accepts [states, nfas])`, the same numbering as the Python construction of
# `Dfa`, which the front-end alone uses and the tests compare it with.
_native_product = None


def use_native_product(build) -> None:
    """Makes `Dfa` build its states with `build` (None: in Python)."""
    global _native_product
    _native_product = build


# The native state elimination (native/lexer/state_elimination.h), registered with the product:
# `(transitions, final, piece, max_states, max_chars) -> (status, regex, live states)`.
_native_elimination = None


def use_native_elimination(eliminate) -> None:
    """Makes `Dfa.regex` eliminate states with `eliminate` (None: in Python)."""
    global _native_elimination
    _native_elimination = eliminate


class RegexTooLarge(PatternError):
    """The automaton was within its budget, the regex written back from it was not: the
    language can still go to the lexer as a lookahead product (`products`)."""


def names_node(names):
    return ("alt", [("cat", [("set", ((ord(c), ord(c)),)) for c in name]) for name in names])


def names_nfa(names) -> Nfa:
    """The NFA of a set of names as their trie (a state per prefix, one end): the language of
    `names_node` with one state per prefix instead of two per character of each name, so a
    product with a hundred declared names stays small (and its DFA is the same: a prefix
    leads to one state either way)."""
    nfa = Nfa()
    root, end = nfa.new(), nfa.new()
    children: dict[tuple[int, str], int] = {}
    for name in names:
        node = root
        for c in name:
            child = children.get((node, c))
            if child is None:
                child = children[node, c] = nfa.new()
                nfa.edges[node].append((((ord(c), ord(c)),), child))
            node = child
        if end not in nfa.eps[node]:
            nfa.eps[node].append(end)
    nfa.start, nfa.end = root, end
    return nfa


def eps_closures(nfa: Nfa) -> list[int]:
    """The epsilon closure of each NFA state as a bit set (bit s: state s), by Tarjan's
    strongly connected components of the epsilon edges (each component is finished after
    every component it reaches, so one pass suffices), without recursion."""
    eps = nfa.eps
    n = len(eps)
    index, low, closure = [-1] * n, [0] * n, [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    counter = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        work = [(root, 0)]
        while work:
            v, i = work[-1]
            if i < len(eps[v]):
                work[-1] = (v, i + 1)
                w = eps[v][i]
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
                continue
            work.pop()
            if work and low[v] < low[work[-1][0]]:
                low[work[-1][0]] = low[v]
            if low[v] == index[v]:
                members, mask = [], 0
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    members.append(w)
                    mask |= 1 << w
                    if w == v:
                        break
                for w in members:
                    for x in eps[w]:
                        if not mask >> x & 1:
                            mask |= closure[x]
                for w in members:
                    closure[w] = mask
    return closure


class Dfa:
    """Product DFA of several NFAs over a shared partition of code points into atoms.

    States are numbered in breadth-first order over (state, atom), so `regex` is deterministic.
    A state is a tuple of NFA state sets, as bit sets (ints). A component's successors are
    computed for all atoms in one sweep over its edges' atom intervals (the successor set only
    changes where an interval starts or ends), memoized per (NFA, state set). Steps and
    closures go a byte of the bit set at a time, through tables filled on first use.
    """

    def __init__(self, nodes: list, max_states: int = MAX_DFA_STATES):
        self.max_states = max_states
        self.nfas = []
        bounds = {0, MAX_UNICODE + 1}
        for node in nodes:  # (an AST node, or an Nfa built already: `pattern_nfa`)
            nfa = node if isinstance(node, Nfa) else Nfa.of(node)
            self.nfas.append((nfa, nfa.start, nfa.end))
            bounds |= nfa.cuts
        cuts = sorted(bounds)
        self.atoms = [(cuts[i], cuts[i + 1] - 1) for i in range(len(cuts) - 1)]
        self._prepare_labels(cuts)
        if _native_product is not None:
            self._build_natively()
            return
        self._prepare()
        starts = tuple(self._eps[k][s] for k, (_, s, _) in enumerate(self.nfas))
        self.states = [starts]
        self.index = {starts: 0}
        self.trans: list[list[int]] = []
        i = 0
        while i < len(self.states):
            self.trans.append(self._row(self.states[i]))
            i += 1
        self.accepts = [tuple(bool(comp >> self.nfas[k][2] & 1) for k, comp in enumerate(state))
                        for state in self.states]

    def _build_natively(self) -> None:
        """The same states, transitions and accept vectors from the native construction
        (`use_native_product`). States are numbers here (`states` serves for counting)."""
        tables = [(nfa.eps, self._edges[k], self._labels[k], start, end)
                  for k, (nfa, start, end) in enumerate(self.nfas)]
        built = _native_product(tables, len(self.atoms), self.max_states)
        if built is None:
            raise PatternError(PRODUCT_TOO_LARGE)
        self._transitions, accepts = built
        self.accepts = [tuple(map(bool, row)) for row in accepts.tolist()]
        self.states = range(len(self.accepts))

    @functools.cached_property
    def trans(self) -> list[list[int]]:
        """Per state, the target on each atom (the Python construction sets it as it goes;
        the native one's array is read on first use: a state count needs none)."""
        return self._transitions.tolist()

    def _prepare_labels(self, cuts) -> None:
        """Per NFA: its distinct edge labels as atom-index intervals [first, end), each
        state's edges as (label number, target)."""
        where = {cut: i for i, cut in enumerate(cuts)}  # every range bound is a cut
        self._labels, self._edges = [], []
        for nfa, _, _ in self.nfas:
            numbers: dict = {}
            self._edges.append([[(numbers.setdefault(ranges, len(numbers)), t)
                                 for ranges, t in edges] for edges in nfa.edges])
            self._labels.append([[(where[lo], where[hi + 1]) for lo, hi in ranges]
                                 for ranges in numbers])

    def _prepare(self) -> None:
        """For the Python construction: the epsilon closures; empty tables and memos."""
        self._eps = [eps_closures(nfa) for nfa, _, _ in self.nfas]
        self._bytes = [(len(nfa.eps) + 7) // 8 for nfa, _, _ in self.nfas]
        self._step_tables = [[{} for _ in range(n)] for n in self._bytes]
        self._closure_tables = [[{} for _ in range(n)] for n in self._bytes]
        self._closures: list[dict] = [{} for _ in self.nfas]
        self._sweeps: list[dict] = [{} for _ in self.nfas]

    def _row(self, state) -> list[int]:
        """The transition row of a product state, numbering new states in atom order."""
        sweeps = [self._sweep(k, comp) for k, comp in enumerate(state)]
        if len(sweeps) == 1:
            bounds, values = sweeps[0]
            products = [(v,) for v in values]
        else:
            bounds = sorted(set().union(*(b for b, _ in sweeps)))
            columns = []
            for starts, values in sweeps:
                column, j = [], 0
                for b in bounds:
                    while j + 1 < len(starts) and starts[j + 1] <= b:
                        j += 1
                    column.append(values[j])
                columns.append(column)
            products = list(zip(*columns))
        row: list[int] = []
        ends = bounds[1:] + [len(self.atoms)]
        for nxt, lo, hi in zip(products, bounds, ends):
            target = self.index.get(nxt)
            if target is None:
                if len(self.states) >= self.max_states:
                    raise PatternError(PRODUCT_TOO_LARGE)
                target = self.index[nxt] = len(self.states)
                self.states.append(nxt)
            row.extend([target] * (hi - lo))
        return row

    def _sweep(self, k, comp: int):
        """(segment starts, successor closures): component comp of NFA k steps on an atom in
        [starts[i], starts[i + 1]) to values[i]; starts[0] == 0."""
        memo = self._sweeps[k]
        found = memo.get(comp)
        if found is not None:
            return found
        targets: dict[int, int] = {}  # edge label -> targets (a bit set)
        tables = self._step_tables[k]
        for j, byte in enumerate(comp.to_bytes(self._bytes[k], "little")):
            if byte:
                entry = tables[j].get(byte)
                if entry is None:
                    entry = self._step_entry(k, j, byte)
                for label, mask in entry:
                    targets[label] = targets.get(label, 0) | mask
        events: dict[int, list] = {}
        labels = self._labels[k]
        for label in targets:
            for lo, end in labels[label]:
                events.setdefault(lo, []).append((1, label))
                events.setdefault(end, []).append((-1, label))
        active: dict[int, int] = {}
        starts, values = [0], [0]
        by_labels: dict[frozenset, int] = {}  # active labels -> successor closure
        for at in sorted(events):
            if at >= len(self.atoms):
                break
            for delta, label in events[at]:
                count = active.get(label, 0) + delta
                if count:
                    active[label] = count
                else:
                    del active[label]
            key = frozenset(active)
            value = by_labels.get(key)
            if value is None:
                moved = 0
                for label in active:
                    moved |= targets[label]
                value = by_labels[key] = self._closure(k, moved)
            if value == values[-1]:
                continue
            if starts[-1] == at:
                values[-1] = value
            else:
                starts.append(at)
                values.append(value)
        memo[comp] = found = (starts, values)
        return found

    def _step_entry(self, k, j: int, byte: int) -> list:
        """[(label, targets)] of the edges of the states 8j.. 8j+7 whose bits are in byte."""
        by_label: dict[int, int] = {}
        edges = self._edges[k]
        for b in range(8):
            if byte >> b & 1:
                for label, t in edges[8 * j + b]:
                    by_label[label] = by_label.get(label, 0) | 1 << t
        entry = self._step_tables[k][j][byte] = list(by_label.items())
        return entry

    def _closure(self, k, states: int) -> int:
        memo = self._closures[k]
        found = memo.get(states)
        if found is not None:
            return found
        tables, eps = self._closure_tables[k], self._eps[k]
        found = 0
        for j, byte in enumerate(states.to_bytes(self._bytes[k], "little")):
            if byte:
                part = tables[j].get(byte)
                if part is None:
                    part = 0
                    for b in range(8):
                        if byte >> b & 1:
                            part |= eps[8 * j + b]
                    tables[j][byte] = part
                found |= part
        memo[states] = found
        return found

    def finite_language(self, accept, limit: int) -> list[str] | None:
        """The strings whose accept vector satisfies `accept`, sorted, when there are at most
        `limit` of them and none holds a surrogate code point; else None. Work: O(states x
        atoms) to find the live states, then O(limit x longest string)."""
        live = self._live([accept(a) for a in self.accepts])
        if 0 not in live:
            return []
        successors = {i: sorted({j for j in self.trans[i] if j in live}) for i in live}
        color = dict.fromkeys(live, 0)  # 0 new, 1 on the DFS stack, 2 done
        order: list[int] = []  # each live state after every live state it leads to
        color[0] = 1
        stack = [(0, iter(successors[0]))]
        while stack:
            state, rest = stack[-1]
            nxt = next(rest, None)
            if nxt is None:
                stack.pop()
                color[state] = 2
                order.append(state)
            elif color[nxt] == 1:
                return None  # a cycle among live states: infinitely many strings
            elif color[nxt] == 0:
                color[nxt] = 1
                stack.append((nxt, iter(successors[nxt])))
        words: dict[int, list[str]] = {}  # live state -> the strings it accepts from there
        for state in order:
            found = [""] if accept(self.accepts[state]) else []
            for atom, target in enumerate(self.trans[state]):
                if target not in live:
                    continue
                lo, hi = self.atoms[atom]
                if (lo <= 0xDFFF and hi >= 0xD800) or (
                        len(found) + (hi - lo + 1) * len(words[target]) > limit):
                    return None
                found += [chr(c) + w for c in range(lo, hi + 1) for w in words[target]]
            words[state] = found
        return sorted(words[0])

    def _live(self, final: list[bool]) -> set[int]:
        """The states from which a final state can be reached."""
        rev: list[list[int]] = [[] for _ in self.states]
        for i, row in enumerate(self.trans):
            for j in set(row):  # (a row repeats few targets over many atoms)
                rev[j].append(i)
        live = {i for i, f in enumerate(final) if f}
        stack = list(live)
        while stack:
            for i in rev[stack.pop()]:
                if i not in live:
                    live.add(i)
                    stack.append(i)
        return live

    def regex(self, accept, unit=unit_regex, max_states: int | None = None) -> str | None:
        """Unit regex for the strings whose accept vector satisfies `accept`; None if none.
        `unit` writes a set of code point ranges (default: as JSON string units). Raises
        RegexTooLarge past MAX_KEY_REGEX characters, or at once when there are more than
        `max_states` live states (None: no bound). By the core when it is loaded
        (`use_native_elimination`), else here: the same string."""
        final = [accept(a) for a in self.accepts]
        if _native_elimination is not None and hasattr(self, "_transitions"):
            atoms = self.atoms
            status, regex, live = _native_elimination(
                self._transitions, final, lambda picked: unit(norm_ranges([atoms[a]
                                                                          for a in picked])),
                max_states or 0, MAX_KEY_REGEX)
            if status == "states":
                raise RegexTooLarge(f"key regex too large ({live} states to eliminate)")
            if status == "long":
                raise RegexTooLarge("key regex too large")
            return regex
        return self._eliminate(final, unit, max_states)

    def _eliminate(self, final: list[bool], unit, max_states: int | None) -> str | None:
        """`regex` in Python: the specification of native/lexer/state_elimination.h."""
        n = len(self.states)
        live = self._live(final)
        if 0 not in live:
            return None
        if max_states is not None and len(live) > max_states:
            raise RegexTooLarge(f"key regex too large ({len(live)} states to eliminate)")
        start, end = n, n + 1
        # State elimination over adjacency maps (succ[a][b] == pred[b][a] == regex of a->b), so
        # a state's degree is O(1) and the min-degree pick is O(states): O(states^2) overall.
        succ: dict[int, dict[int, str]] = {i: {} for i in (*live, start, end)}
        pred: dict[int, dict[int, str]] = {i: {} for i in (*live, start, end)}
        degree = dict.fromkeys(succ, 0)  # len(succ[s]) + len(pred[s])

        def put(a: int, b: int, regex: str) -> None:
            if b not in succ[a]:
                degree[a] += 1
                degree[b] += 1
            succ[a][b] = regex
            pred[b][a] = regex

        for i in live:
            by_target: dict[int, list] = {}
            for a, j in enumerate(self.trans[i]):
                if j in live:
                    by_target.setdefault(j, []).append(self.atoms[a])
            for j, atoms in by_target.items():
                piece = unit(norm_ranges(atoms))
                if piece is not None:
                    put(i, j, piece)
            if final[i]:
                put(i, end, "")
        put(start, 0, "")
        remaining = set(live)
        while remaining:
            k = min(remaining, key=lambda s: (degree[s], s))  # (the lowest among equals)
            remaining.discard(k)
            loop = succ[k].pop(k, None)
            pred[k].pop(k, None)
            star = f"(?:{loop})*" if loop else ""
            ins = list(pred.pop(k).items())
            outs = list(succ.pop(k).items())
            for a, _ in ins:
                del succ[a][k]
                degree[a] -= 1
            for b, _ in outs:
                del pred[b][k]
                degree[b] -= 1
            for a, ra in ins:
                for b, rb in outs:
                    piece = f"{wrap(ra)}{star}{wrap(rb)}"
                    old = succ[a].get(b)
                    merged = piece if old is None else f"{old}|{piece}"
                    if len(merged) > MAX_KEY_REGEX:
                        raise RegexTooLarge("key regex too large")
                    put(a, b, merged)
        return succ[start].get(end)


def _ecma_class(ranges) -> str | None:
    """An ECMA class for code point ranges (surrogates left out: no JSON string has one)."""
    parts = [f"\\u{{{lo:x}}}" + ("" if lo == hi else f"-\\u{{{hi:x}}}")
             for lo, hi in ranges if not (0xD800 <= lo and hi <= 0xDFFF)]
    return f"[{''.join(parts)}]" if parts else None


def intersection_pattern(patterns: tuple[str, ...]) -> str | None:
    """An anchored ECMA pattern for the strings every one of `patterns` matches (searched, as
    JSON Schema's `pattern` and the anchored `format` patterns are); None when none does.
    Raises PatternError beyond `MAX_INTERSECTION_STATES` product states, RegexTooLarge (one)
    when only the regex passes `MAX_KEY_REGEX` characters. Memoized, failures too (a schema
    tries the same product again and again: `product_memo`)."""
    return _reraised(_intersection_memo(patterns))


# The state count of the product DFA of a set of patterns (sorted: a product's reachable
# states do not depend on the order of its factors), or TOO_MANY_STATES past
# `MAX_INTERSECTION_STATES`: whoever builds such a product records it, so that the lexer's
# product check (`products.product_states`) does not build the same DFA again after an
# intersection whose regex was too large went to the lexer as lookaheads. Cleared with the
# other memos (`clear_json_schema_caches`).
TOO_MANY_STATES = -1
PRODUCT_STATES: dict[tuple[str, ...], int] = {}


def recorded_product_states(patterns: tuple[str, ...]) -> int | None:
    """The recorded size of the patterns' product (TOO_MANY_STATES: past
    `MAX_INTERSECTION_STATES`), or None when none was built."""
    return PRODUCT_STATES.get(tuple(sorted(patterns)))


def record_product_states(patterns: tuple[str, ...], states: int) -> None:
    if len(PRODUCT_STATES) >= 4096:
        PRODUCT_STATES.clear()
    PRODUCT_STATES[tuple(sorted(patterns))] = states


@functools.lru_cache(maxsize=256)
def _intersection_memo(patterns: tuple[str, ...]):
    try:
        dfa = Dfa([pattern_nfa(p) for p in patterns], MAX_INTERSECTION_STATES)
    except PatternError as e:
        if str(e) == PRODUCT_TOO_LARGE:
            record_product_states(patterns, TOO_MANY_STATES)
        return None, type(e), f"their product is too large ({e})"
    record_product_states(patterns, len(dfa.states))
    try:
        body = dfa.regex(all, _ecma_class, MAX_REGEX_STATES)
    except PatternError as e:
        return None, type(e), f"their product is too large ({e})"
    return (None if body is None else f"^(?:{body})$"), None, ""


def _reraised(memo):
    """The result of a memoized product, or its error raised again."""
    result, error, message = memo
    if error is not None:
        raise error(message)
    return result


def difference_pattern(positive: str | None, negatives: tuple[str, ...],
                       names: tuple[str, ...]) -> str | None:
    """An anchored ECMA pattern for the strings that `positive` matches (None: every string)
    and none of `negatives` (patterns, searched) nor any of `names`; None when none is left.
    Raises PatternError beyond `MAX_INTERSECTION_STATES` product states, RegexTooLarge (one)
    when only the regex passes `MAX_KEY_REGEX` characters. Memoized, failures too."""
    return _reraised(_difference_memo(positive, negatives, names))


@functools.lru_cache(maxsize=256)
def _difference_memo(positive: str | None, negatives: tuple[str, ...], names: tuple[str, ...]):
    nodes = [_ANY_STAR if positive is None else pattern_nfa(positive)]
    nodes += [pattern_nfa(p) for p in negatives]
    if names:
        nodes.append(names_nfa(names))
    try:
        dfa = Dfa(nodes, MAX_INTERSECTION_STATES)
        body = dfa.regex(lambda accepts: accepts[0] and not any(accepts[1:]), _ecma_class,
                         MAX_REGEX_STATES)
    except PatternError as e:
        return None, type(e), f"the product is too large ({e})"
    return (None if body is None else f"^(?:{body})$"), None, ""


@functools.lru_cache(maxsize=1024)
def pattern_dfa(pattern: str) -> Dfa | None:
    """The DFA of one pattern as searched (`pattern_node`), None past `MAX_DFA_STATES`
    states; raises the pattern's own PatternError. Shared by `ecma_search` and the lexer's
    product checks (`products.pattern_states`)."""
    try:
        return Dfa([pattern_nfa(pattern)], MAX_DFA_STATES)
    except PatternError as e:
        if str(e) != PRODUCT_TOO_LARGE:
            raise
        return None


@functools.lru_cache(maxsize=1024)
def _searcher(pattern: str):
    """(atom starts, transitions, accepting states) of `pattern_dfa`, or None when it is too
    large (then `ecma_search` simulates the NFA, whose closures cost O(NFA states) per
    character)."""
    dfa = pattern_dfa(pattern)
    if dfa is None:
        return None
    return [lo for lo, _ in dfa.atoms], dfa.trans, [accepts[0] for accepts in dfa.accepts]


def ecma_search(pattern: str, text: str) -> bool:
    """Whether the ECMA pattern matches somewhere in text: a walk of its DFA, or an NFA
    simulation when the DFA is too large."""
    searcher = _searcher(pattern)
    if searcher is None:
        return _nfa_search(pattern, text)
    starts, trans, accepting = searcher
    state = 0
    for ch in text:
        state = trans[state][bisect.bisect_right(starts, ord(ch)) - 1]
    return accepting[state]


def _nfa_search(pattern: str, text: str) -> bool:
    nfa = pattern_nfa(pattern)
    start, end = nfa.start, nfa.end

    def closure(states):
        stack, seen = list(states), set(states)
        while stack:
            for t in nfa.eps[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return seen

    current = closure({start})
    for ch in text:
        cp = ord(ch)
        current = closure({t for s in current for ranges, t in nfa.edges[s]
                           if any(lo <= cp <= hi for lo, hi in ranges)})
        if not current:
            return False
    return end in current
