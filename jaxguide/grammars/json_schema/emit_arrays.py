"""Array rules of the JSON Schema emitter (a mixin of `emit.Emitter`), and `unrolled`.

Design note. An array form is a chain of states A(c): the rest after c items (prefix items by
position, then `items`), closed when min..max allows; past the positions that differ the tail
loops. A witness (an item one of which must match: `contains`, "some item fails items") adds a
flag w to the state; several witnesses add a bit mask m of those met, an item meeting any
subset of the ones due at its position (`array_witnesses`: 2^k states per position and
2^k - 1 alternatives, k <= MAX_ARRAY_WITNESSES). A counted `contains` (minContains /
maxContains) adds the count k of the items that matched, each item being its matching or
its other schema (`array_counted`). The recursions run through `unrolled`, so maxItems 4,096
needs no Python stack.
"""

from __future__ import annotations

from jaxguide.grammars.json_schema.normal_form import ArrayForm

# A bounded run of at least this many plain items is counted in binary (`counted_items`):
# fewer rules, but each item completes up to log2(run) nested counters in the parser, which
# costs masks more than a chain of one state per position does for short runs.
MIN_COUNTED_ITEMS = 256


def unrolled(step, arguments: tuple, memo: dict | None = None):
    """Runs the recursion `step(*arguments)` without Python's call stack: `step` is a
    generator function in which `(yield args)` stands for the recursive call `step(*args)`
    and evaluates to its result; the calls happen in the same order as the plain recursion
    (so the IR is the same), however deep it goes (an object of 500 properties, maxItems
    4096). `memo`: the dict in which `step` keeps its results by its arguments (it returns
    `memo[args]` at once when present, before any other effect); a call found there is
    answered without starting a generator."""
    stack = [step(*arguments)]
    result = None
    while True:
        try:
            call = stack[-1].send(result)
        except StopIteration as returned:
            stack.pop()
            result = returned.value
            if not stack:
                return result
            continue
        if memo is not None and call in memo:
            result = memo[call]
            continue
        stack.append(step(*call))
        result = None


class ArrayRules:
    """`array`, `array_witnesses` and `array_counted`; the host provides layout, value, term,
    rule, new_nt, unique_open and empty_container."""

    def array(self, nt, form: ArrayForm, depth: int):
        """Rules for the arrays of a form: A(c) is the rest after c items."""
        lay = self.layout
        min_i, max_i = form.min_items, form.max_items
        if max_i is not None and max_i < min_i:
            return
        if form.witnesses:
            self.array_witnesses(nt, form, depth)
            return
        if form.contains_count is not None:
            self.array_counted(nt, form, depth)
            return
        item_syms = [self.value(p.schema, p.pointer, depth + 1) for p in form.prefix_items]
        rest = form.items
        rest_sym = None if rest is None else self.value(rest.schema, rest.pointer, depth + 1)
        comma = self.term(lay.comma(depth))
        counted = max(len(item_syms), min_i) if max_i is None else max_i
        states = {}
        start, witness_sym = 0, None  # witness: an item one of which must appear (w: seen)
        if form.witness is not None:
            start = max(form.witness[0], len(item_syms))
            witness_sym = self.value(form.witness[1].schema, form.witness[1].pointer, depth + 1)
            counted = max(counted, start) if max_i is None else counted

        def item(c):
            return item_syms[c] if c < len(item_syms) else rest_sym

        def witness(c):
            return witness_sym if witness_sym is not None and c >= start else None

        # Past the prefix items, a long bounded tail of plain items is counted in binary
        # (`counted_items`) instead of one state per position.
        long_tail = (witness_sym is None and rest_sym is not None and max_i is not None
                     and not form.unique)

        # S(c): after c items; S(c) -> eps if c >= min; -> , item(c) S(c+1)
        def get(c, w):  # a recursion run by `unrolled`: `yield` is the recursive call
            if c > counted:
                c = counted  # unbounded tail: loop
            if (c, w) in states:
                return states[c, w]
            if long_tail and c >= len(item_syms) and max_i - c >= MIN_COUNTED_ITEMS:
                states[c, w] = self.counted_items((comma, rest_sym), max(min_i - c, 0),
                                                  max_i - c)
                return states[c, w]
            sym = self.new_nt(f"A{c}" + ("" if w else "_w"))
            states[c, w] = sym
            if c >= min_i and (max_i is None or c <= max_i) and w:
                self.rule(sym, [])
            if (max_i is None or c < max_i) and item(c) is not None:
                self.rule(sym, [comma, item(c), (yield (c + 1, w))])
            if (max_i is None or c < max_i) and witness(c) is not None:
                self.rule(sym, [comma, witness(c), (yield (c + 1, 1))])
            return sym

        seen = int(witness_sym is None)
        # (An array whose items must differ opens with a terminal of its own.)
        opening = self.unique_open if form.unique and (max_i is None or max_i > 1) else self.term
        for first, w in ((item(0), seen), (witness(0), 1)):
            if (max_i is None or max_i >= 1) and first is not None:
                self.rule(nt, [opening(lay.open("[", depth)), first, unrolled(get, (1, w)),
                               self.term(lay.close("]", depth))])
        if min_i == 0 and seen:
            self.rule(nt, self.empty_container("[]", depth))

    def counted_items(self, unit: tuple, low: int, high: int) -> int:
        """A nonterminal for `low` to `high` repetitions of the symbols `unit`, in
        O(log high) rules: E(k), exactly 2^k units, is E(k-1) E(k-1); M(k), 0 to 2^k - 1
        units, is M(k-1) or E(k-1) M(k-1); `low` is the E(k) of its binary digits, the rest
        of the span M(b) or E(b) then the span less 2^b (b: the largest with 2^b <= span +
        1). Each derivation is unique, so the parser keeps one item per level."""
        exact = [self.new_nt("E0")]
        self.rule(exact[0], unit)

        def exactly(k: int) -> int:
            while len(exact) <= k:
                sym = self.new_nt(f"E{len(exact)}")
                self.rule(sym, [exact[-1], exact[-1]])
                exact.append(sym)
            return exact[k]

        fewer = [self.new_nt("M0")]  # fewer[k]: 0 to 2^k - 1 units
        self.rule(fewer[0], [])

        def below(k: int) -> int:
            while len(fewer) <= k:
                j = len(fewer) - 1
                sym = self.new_nt(f"M{j + 1}")
                self.rule(sym, [fewer[j]])
                self.rule(sym, [exactly(j), fewer[j]])
                fewer.append(sym)
            return fewer[k]

        def up_to(span: int) -> int:  # 0 to span units
            if span == 0:
                return below(0)
            b = (span + 1).bit_length() - 1
            if span + 1 == 1 << b:
                return below(b)
            sym = self.new_nt(f"U{span}")
            self.rule(sym, [below(b)])
            self.rule(sym, [exactly(b), up_to(span - (1 << b))])
            return sym

        head = [exactly(k) for k in range(low.bit_length()) if low >> k & 1]
        sym = self.new_nt(f"C{low}_{high}")
        self.rule(sym, [*head, up_to(high - low)])
        return sym

    def array_witnesses(self, nt, form: ArrayForm, depth: int):
        """Rules for arrays with several witnesses (each (from, schema) met by some item at a
        position >= from): A(c, m) is the rest after c items, m the set of witnesses met (a
        bit mask); an item meets a subset T of the witnesses due at its position (its schema
        all of theirs, with the items' own) or none. At most MAX_ARRAY_WITNESSES: 2^k states
        per position and 2^k - 1 witness alternatives."""
        lay = self.layout
        min_i, max_i = form.min_items, form.max_items
        item_syms = [self.value(p.schema, p.pointer, depth + 1) for p in form.prefix_items]
        rest_sym = None if form.items is None else self.value(
            form.items.schema, form.items.pointer, depth + 1)
        k = len(form.witnesses)
        full = (1 << k) - 1
        subset_syms = {}
        for subset in range(1, full + 1):
            parts = [form.witnesses[i][1] for i in range(k) if subset >> i & 1]
            schema = parts[0].schema if len(parts) == 1 else {"allOf": [
                p.schema for p in parts]}
            subset_syms[subset] = self.value(schema, parts[0].pointer, depth + 1)
        starts = [max(w[0], len(item_syms)) for w in form.witnesses]
        counted = max([len(item_syms), min_i, *starts]) if max_i is None else max_i
        comma = self.term(lay.comma(depth))

        def choices(c):
            """(item symbol, witnesses it meets) for position c."""
            plain = item_syms[c] if c < len(item_syms) else rest_sym
            out = [] if plain is None else [(plain, 0)]
            due = sum(1 << i for i in range(k) if c >= starts[i])
            out += [(sym, subset) for subset, sym in subset_syms.items() if subset & due == subset]
            return out

        states = {}

        def get(c, m):  # a recursion run by `unrolled`: `yield` is the recursive call
            c = min(c, counted)  # unbounded tail: loop
            if (c, m) in states:
                return states[c, m]
            sym = states[c, m] = self.new_nt(f"A{c}_m{m}")
            if c >= min_i and (max_i is None or c <= max_i) and m == full:
                self.rule(sym, [])
            if max_i is None or c < max_i:
                for item, met in choices(c):
                    self.rule(sym, [comma, item, (yield (c + 1, m | met))])
            return sym

        if max_i is None or max_i >= 1:
            for first, met in choices(0):
                self.rule(nt, [self.term(lay.open("[", depth)), first, unrolled(get, (1, met)),
                               self.term(lay.close("]", depth))])

    def array_counted(self, nt, form: ArrayForm, depth: int):
        """Rules for arrays with a counted `contains` (`ContainsCount`): A(c, k) is the rest
        after c items of which k matched (k clamped at the lower count when there is no
        upper one); each position's item is its matching schema (k + 1, while under the
        upper count) or its other one."""
        lay = self.layout
        min_i, max_i = form.min_items, form.max_items
        counts = form.contains_count
        low, high = counts.low, counts.high
        pairs = [(self.value(m.schema, m.pointer, depth + 1),
                  self.value(o.schema, o.pointer, depth + 1)) for m, o in counts.prefix]
        rest = None if counts.rest is None else tuple(
            self.value(x.schema, x.pointer, depth + 1) for x in counts.rest)
        counted = max(len(pairs), min_i) if max_i is None else max_i
        comma = self.term(lay.comma(depth))
        states = {}

        def choices(c, k):
            """(item symbol, the count after it) for position c after k matches."""
            pair = pairs[c] if c < len(pairs) else rest
            if pair is None:
                return []
            out = [(pair[1], k)]
            if high is None or k < high:
                out.insert(0, (pair[0], k + 1 if high is not None else min(k + 1, low)))
            return out

        def get(c, k):  # a recursion run by `unrolled`: `yield` is the recursive call
            c = min(c, counted)  # unbounded tail: loop
            if (c, k) in states:
                return states[c, k]
            sym = states[c, k] = self.new_nt(f"A{c}_k{k}")
            if c >= min_i and (max_i is None or c <= max_i) and k >= low:
                self.rule(sym, [])
            if max_i is None or c < max_i:
                for item, after in choices(c, k):
                    self.rule(sym, [comma, item, (yield (c + 1, after))])
            return sym

        opening = self.unique_open if form.unique and (max_i is None or max_i > 1) else self.term
        if max_i is None or max_i >= 1:
            for first, after in choices(0, 0):
                self.rule(nt, [opening(lay.open("[", depth)), first, unrolled(get, (1, after)),
                               self.term(lay.close("]", depth))])
        if min_i == 0 and low == 0:
            self.rule(nt, self.empty_container("[]", depth))
