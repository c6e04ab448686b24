"""Typed normal form (`normal_form`) -> `GrammarIR` rules and terminals.

Design note. Every JSON token without inner structure is one terminal, with the whitespace of
the layout (`layout.Layout`) folded into it: an object key *and* the colon after it, `,`, `{`,
`[`, `}`, `]`, a string, a number, `true`/`false`/`null`. Structure is rules: a value's
alternatives, the members of an object (declared properties in order, each optional one may be
left out, extra keys between them: unambiguous, O(properties) rules, counted when
min/maxProperties apply), the items of an array (counted by position). Subschemas are lowered
lazily (`value`), memoized by the schema's identity (and depth in the indented layout), so a
recursive schema is a finite grammar. An allOf that a merge writes afresh (a property both
parts declare: `{"allOf": [its schema in each]}`) is keyed by its parts' identities
(`identity_key`): an allOf of recursive schemas then meets itself again (a product of
periods) instead of unrolling to the nesting limit. Free strings longer than `STRING_CHUNK`
units are lexed in chunks (`chunked_string`). An object's witnesses (members one of which
must appear, `object_witnesses`) add the set met to its member states.

The emitter reads typed fields only (no JSON Schema keyword appears here); every check and
error of the schema's keywords is the normalizer's. The order in which terminals,
nonterminals and rules are created is the IR's identity: keep the traversal order. The
recursion `value` -> `conjunction` -> `object`/`array` -> `value` is bounded by
`MAX_VALUE_NESTING` levels; the members of one object and the items of one array are states
of an explicit recursion (`unrolled`), so their number never meets Python's recursion limit;
where an object counts nothing and needs no witness, `member_chain` creates the same states
and rules in the same order by plain loops (most objects: no generator per state).

Speed. A leaf schema seen before is emitted from its recipe (`leaf_recipes`: the same rules,
without normalizing it again). Several schemas can be lowered into one emitter
(`begin_schema`: the tool-call grammars, see `fragments`), each with its own normalizer, memo
and rule budget; `terminal_keys` lists the terminals in order for recipes and fragments.
"""

from __future__ import annotations

import json
import re

from jaxguide.grammars.ir import GrammarIR, TerminalIR
from jaxguide.grammars.json_schema.any_value import splice_any_value
from jaxguide.grammars.json_schema.emit_arrays import ArrayRules, unrolled
from jaxguide.grammars.json_schema.errors import JsonSchemaError, SchemaNestingError
from jaxguide.grammars.json_schema.layout import Layout
from jaxguide.grammars.json_schema.leaf_recipes import (
    leaf_key,
    leaf_recipe,
    record_leaf_recipe,
)
from jaxguide.grammars.json_schema.limits import (
    LITERAL_TRIE_CHARS,
    MANY_LITERALS,
    MAX_ANY_ORDER_STATES,
    MAX_INDENT_DEPTH,
    MAX_LITERAL_REGEX,
    MAX_RULES,
    MAX_TRACKED_REQUIRED,
    MAX_TRACKED_RULES,
    MAX_VALUE_NESTING,
    MIN_COUNTED_CHUNKS,
    STRING_CHUNK,
)
from jaxguide.grammars.json_schema.normal_form import (
    AnyValue,
    ArrayForm,
    BooleanForm,
    NullForm,
    NumberForm,
    ObjectForm,
    Pending,
    Ref,
    StringForm,
    Union,
)
from jaxguide.grammars.json_schema.normalize import Normalizer
from jaxguide.grammars.json_schema.numbers import (
    many_numbers_regex,
    number_literal,
    number_regex,
)
from jaxguide.grammars.json_schema.products import string_form_units
from jaxguide.grammars.json_schema.units import (
    ANY_UNIT,
    key_regex,
    literal_set_units,
    literal_units,
)


def identity_key(schema):
    """The memo key of a schema: its identity, or for a dict that holds only an allOf list
    (what a merge writes for a name both parts declare, a fresh dict each time) the keys of
    its parts, in order (the order of the parts is the order of the merged keys)."""
    if isinstance(schema, dict) and len(schema) == 1 and isinstance(schema.get("allOf"), list):
        return ("allOf",) + tuple(identity_key(part) for part in schema["allOf"])
    return id(schema)


def chunked(form: StringForm) -> bool:
    """Whether a value string is lexed in chunks (free content longer than STRING_CHUNK)."""
    return form.pattern is None and form.format is None and not form.lookaheads and (
        form.min_length > STRING_CHUNK or (form.max_length or 0) > STRING_CHUNK)


# object_in_order's member states by `Emitter.member_chain` where it applies (False: always by
# the recursion; the two give the same IR, which tests compare).
DIRECT_MEMBER_CHAIN = True

UNIQUE = "unique items"  # Emitter.terminals key tags (Emitter.unique_open, keyed_open)
KEYED = "keyed object"
AUTOMATON = "automaton"  # (AUTOMATON, regex, states): a digit automaton (NumberForm.automaton)
PROPERTY_ORDERS = ("declared", "any")


class Emitter(ArrayRules):
    """Builds the IR of one schema: lowers normal forms, normalizing subschemas (with
    `normalizer`) when it first reaches them."""

    def __init__(self, normalizer: Normalizer, layout: Layout,
                 property_order: str = "declared"):
        if property_order not in PROPERTY_ORDERS:
            raise JsonSchemaError(f"property_order must be one of {', '.join(PROPERTY_ORDERS)}, "
                                  f"not {property_order!r}")
        self.normalizer = normalizer
        self.layout = layout
        self.property_order = property_order
        # regex -> terminal index; (UNIQUE, regex) for a bracket that opens a unique array,
        # (KEYED, regex) for a brace that opens an object with members in any order,
        # (AUTOMATON, regex, states) for a terminal given by its automaton
        self.terminals: dict[str | tuple[str, str], int] = {}
        self.terminal_keys: list = []  # the keys of `terminals`, by index
        self.nonterminals: list[str] = []
        self.rules: list[tuple[int, tuple]] = []
        self.memo: dict = {}
        self.deepest = (0, "")  # (depth, pointer) of the deepest value reached (for errors)
        # (nonterminal, its required members' nonterminals) of each any-order object
        self.keyed_objects: list[tuple[int, list[int]]] = []
        self.tracked_rules_left = MAX_TRACKED_RULES  # (object_any_order)
        self.rule_limit = MAX_RULES  # MAX_RULES for the schema being lowered (begin_schema)

    def begin_schema(self, normalizer: Normalizer) -> None:
        """Starts the next of several schemas lowered into this emitter: its own normalizer
        (root), memo and budgets, as if alone; terminals shared. Its rules then refer to its
        own nonterminals and to terminals only (`fragments`)."""
        self.normalizer = normalizer
        self.memo = {}
        self.deepest = (0, "")
        self.tracked_rules_left = MAX_TRACKED_RULES
        self.rule_limit = len(self.rules) + MAX_RULES

    # --- IR building -----------------------------------------------------------------------
    # Symbols while building: a terminal is ~index (negative), a nonterminal its index.
    def term(self, regex: str | tuple[str, str]) -> int:
        index = self.terminals.get(regex)
        if index is None:
            index = self.terminals[regex] = len(self.terminals)
            self.terminal_keys.append(regex)
        return ~index

    def unique_open(self, regex: str) -> int:
        """A terminal of its own for the bracket of an array whose items must differ: the
        matcher checks them (TerminalIR.opens_unique_array)."""
        return self.term((UNIQUE, regex))

    def keyed_open(self, regex: str) -> int:
        """A terminal of its own for the brace of an object whose members come in any order:
        the matcher checks that each key comes once (TerminalIR.opens_keyed_object)."""
        return self.term((KEYED, regex))

    def new_nt(self, name: str) -> int:
        self.nonterminals.append(name)
        return len(self.nonterminals) - 1

    def rule(self, lhs: int, rhs) -> None:
        self.rules.append((lhs, tuple(rhs)))
        if len(self.rules) > self.rule_limit:
            raise JsonSchemaError(f"the grammar exceeds {MAX_RULES} rules")

    def finish(self, start: int) -> GrammarIR:
        """The IR (terminals numbered first). A terminal key is a regex (named T<i>), a
        (UNIQUE / KEYED, regex) pair, an (AUTOMATON, regex, states) triple, or a whole
        `TerminalIR` (other front-ends' terminals in a shared emitter: `EmitterBuilder`)."""
        self.drop_keyed_objects_missing_required()
        n_t = len(self.terminals)
        terminals = tuple(TerminalIR.plain(f"T{i}", rx) if isinstance(rx, str) else
                          rx if isinstance(rx, TerminalIR) else
                          TerminalIR(f"T{i}", rx[1], opens_unique_array=rx[0] == UNIQUE,
                                     opens_keyed_object=rx[0] == KEYED,
                                     automaton=rx[2] if rx[0] == AUTOMATON else ())
                          for i, rx in enumerate(self.terminals))
        # symbol -> IR id as a list read at the symbol (a terminal ~i is a negative index,
        # read from the end): nonterminal s -> n_t + s, terminal ~i -> i
        number = [*range(n_t, n_t + len(self.nonterminals)), *range(n_t - 1, -1, -1)]
        renumber = number.__getitem__
        rules = tuple([(lhs, tuple(map(renumber, rhs))) for lhs, rhs in self.rules])
        return GrammarIR(terminals=terminals, nonterminals=tuple(self.nonterminals),
                         rules=rules, start=start)

    def productive(self) -> list[bool]:
        """Which nonterminals derive some text (linear: each rule waits on its count of
        nonterminals not yet known productive)."""
        ok = [False] * len(self.nonterminals)
        waiting: dict[int, list[int]] = {}
        missing = []
        ready = []
        for i, (lhs, rhs) in enumerate(self.rules):
            nts = {s for s in rhs if s >= 0}
            missing.append(len(nts))
            for s in nts:
                waiting.setdefault(s, []).append(i)
            if not nts:
                ready.append(lhs)
        while ready:
            a = ready.pop()
            if ok[a]:
                continue
            ok[a] = True
            for i in waiting.get(a, ()):
                missing[i] -= 1
                if missing[i] == 0:
                    ready.append(self.rules[i][0])
        return ok

    def drop_keyed_objects_missing_required(self) -> None:
        """An any-order object closes once it counted as many members of required names as
        there are required names, which are those names only because the matcher refuses a
        repeated key; a required member with no value (an unsatisfiable schema, perhaps
        only known once the grammar is whole) would leave only repeats to make up the count:
        a dead end. Such objects lose their rules (none is valid), until none is left."""
        while self.keyed_objects:
            ok = self.productive()
            dead = {obj for obj, required in self.keyed_objects
                    if not all(ok[p] for p in required)}
            if not dead:
                return
            self.rules = [r for r in self.rules if r[0] not in dead]
            self.keyed_objects = [k for k in self.keyed_objects if k[0] not in dead]

    # --- values ----------------------------------------------------------------------------
    def value(self, schema, pointer: str, depth: int):
        """Nonterminal for the values of `schema`: a JSON schema (normalized here, memoized
        by identity) or a normal form (`ANY`, a `Union`)."""
        if depth > MAX_VALUE_NESTING:
            raise SchemaNestingError(f"values nested more than {MAX_VALUE_NESTING} levels deep",
                                     pointer)
        if depth > self.deepest[0]:
            self.deepest = (depth, pointer)
        if depth > MAX_INDENT_DEPTH and self.layout.indented:
            return self.new_nt("too_deep")  # no rules: nesting limit of the indented layout
        is_dict = isinstance(schema, dict)
        if is_dict:
            memo_key = (identity_key(schema), depth if self.layout.indented else 0)
            known = self.memo.get(memo_key)
            if known is not None:
                return known[0]
        nt = self.new_nt(f"v{len(self.nonterminals)}")
        if is_dict:
            self.memo[memo_key] = (nt, schema)
        recipe_key = None
        if isinstance(schema, (AnyValue, Union)):
            form = schema
        else:
            recipe_key = leaf_key(schema, self.normalizer) if is_dict else None
            if recipe_key is not None:
                recipe = leaf_recipe(recipe_key)
                if recipe is not None:
                    if "enum" in schema or "const" in schema:  # (the root's part: see there)
                        self.normalizer.literal_checks(schema, pointer)
                    for terminals in recipe:
                        self.rule(nt, [self.term(key) for key in terminals])
                    return nt
                first_rule, first_nonterminal = len(self.rules), len(self.nonterminals)
            # expand, then read: two calls one deep (the call depth is the single pass's)
            form = self.normalizer.union(self.normalizer.expand(schema, pointer), pointer)
        if isinstance(form, AnyValue):
            self.rule(nt, [self.any_value(depth)])
            return nt
        for alt in form.alternatives:
            if isinstance(alt, Pending):
                alt = alt.make()
                if alt is None:
                    continue
            if isinstance(alt, Ref):
                self.rule(nt, [self.value(alt.schema, alt.pointer, depth)])
            else:
                self.conjunction(nt, alt, depth)
        if recipe_key is not None:
            record_leaf_recipe(self, recipe_key, nt, first_rule, first_nonterminal)
        return nt

    def any_value(self, depth: int):
        key = ("any", depth if self.layout.indented else 0)
        if key in self.memo:
            return self.memo[key][0]
        spliced = splice_any_value(self, depth)  # the same rules, recorded once
        return self.emit_any_value(depth) if spliced is None else spliced

    def emit_any_value(self, depth: int):
        """Lowers the any-value group (`any_value`'s memo entry not yet made)."""
        key = ("any", depth if self.layout.indented else 0)
        nt = self.new_nt("any")
        self.memo[key] = (nt, None)
        self.conjunction(nt, self.normalizer.conjunction({}, ""), depth)
        return nt

    def conjunction(self, nt, conj, depth: int):
        """Adds rules nt -> (a value of the conjunction)."""
        if conj.negated:
            raise NotImplementedError("negated members are folded into the forms")
        if conj.literals is not None:
            self.literals(nt, conj.literals, depth)
            return
        for form in conj.forms:
            if isinstance(form, Pending):
                form = form.make()
                if form is None:
                    continue
            if isinstance(form, NullForm):
                self.rule(nt, [self.term("null")])
            elif isinstance(form, BooleanForm):
                self.rule(nt, [self.term("true|false")])
            elif isinstance(form, StringForm):
                if chunked(form):
                    self.rule(nt, [self.chunked_string(form.min_length, form.max_length)])
                else:
                    content = string_form_units(form)
                    if content is not None:
                        self.rule(nt, [self.term(f'"{content}"')])
            elif isinstance(form, NumberForm):
                if form.automaton:
                    self.rule(nt, [self.term((AUTOMATON, form.automaton_regex, form.automaton))])
                    continue
                rx = number_regex(form)
                if rx is not None:
                    self.rule(nt, [self.term(rx)])
            elif isinstance(form, ObjectForm):
                self.object(nt, form, depth)
            elif isinstance(form, ArrayForm):
                self.array(nt, form, depth)

    def empty_container(self, pair: str, depth: int) -> list[int]:
        """`{}` / `[]`: the open and close tokens (no extra terminal), except in the indented
        layout, where the empty form has no line break."""
        lay = self.layout
        if lay.indented:
            return [self.term(lay.empty(pair))]
        return [self.term(lay.open(pair[0], depth)), self.term(lay.close(pair[1], depth))]

    def literals(self, nt, lit, depth: int) -> None:
        """Rules for a literal set: strings as one terminal, after the others; numbers one
        rule each, or one terminal when there are more than `MANY_LITERALS`. A large string
        set is written as a trie (`literal_set_units`); `MAX_LITERAL_REGEX` bounds both."""
        strings = sorted({v for v in lit.values if isinstance(v, str)})
        numbers = [v for v in lit.values
                   if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(numbers) > MANY_LITERALS:
            regex = many_numbers_regex(numbers, lit.floats)
            self.rule(nt, [self.term(self.literal_regex(regex, len(numbers), lit.pointer))])
            numbers = []
        for v in lit.values:
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                if numbers:
                    self.rule(nt, [self.term(number_literal(v, lit.floats))])
            elif not isinstance(v, str):
                self.rule(nt, [self.literal_value(v, depth)])
        if strings:
            if sum(len(v) + 3 for v in strings) > LITERAL_TRIE_CHARS:  # a lower bound
                regex = '"' + literal_set_units(strings) + '"'
            else:
                regex = "|".join(sorted({'"' + literal_units(v) + '"' for v in strings}))
                if len(regex) > LITERAL_TRIE_CHARS:
                    regex = '"' + literal_set_units(strings) + '"'
            self.rule(nt, [self.term(self.literal_regex(regex, len(strings), lit.pointer))])

    @staticmethod
    def literal_regex(regex: str, count: int, pointer: str) -> str:
        if len(regex) > MAX_LITERAL_REGEX:
            raise JsonSchemaError(f"enum too large: {count:,} values need a regex of "
                                  f"{len(regex):,} characters (limit {MAX_LITERAL_REGEX:,})",
                                  pointer, "enum")
        return regex

    def literal_value(self, v, depth):
        if isinstance(v, str):
            return self.term('"' + literal_units(v) + '"')
        if v is None or isinstance(v, (bool, int, float)):  # nested: the value's own text
            return self.term(re.escape(json.dumps(v)))
        nt = self.new_nt("lit")
        lay = self.layout
        if isinstance(v, list):
            if not v:
                self.rule(nt, self.empty_container("[]", depth))
                return nt
            rhs = [self.term(lay.open("[", depth))]
            for i, x in enumerate(v):
                if i:
                    rhs.append(self.term(lay.comma(depth)))
                rhs.append(self.literal_value(x, depth + 1))
            rhs.append(self.term(lay.close("]", depth)))
        else:
            if not v:
                self.rule(nt, self.empty_container("{}", depth))
                return nt
            rhs = [self.term(lay.open("{", depth))]
            for i, (k, x) in enumerate(v.items()):
                if i:
                    rhs.append(self.term(lay.comma(depth)))
                rhs.append(self.term('"' + literal_units(k) + '"' + lay.colon()))
                rhs.append(self.literal_value(x, depth + 1))
            rhs.append(self.term(lay.close("}", depth)))
        self.rule(nt, rhs)
        return nt

    # --- strings ---------------------------------------------------------------------------
    def chunked_string(self, min_len: int, max_len: int | None):
        """A string of min_len..max_len code points as lexemes of STRING_CHUNK units.

        Maximal munch makes the split unique: every lexeme but the last is a full chunk of
        exactly K units, the last has 0..K-1 units and the closing quote. The chunk count is
        kept by rules, so the lexer holds K counting states whatever the length (a small NFA,
        few fresh DFA states), and the length is exact. A chain of one nonterminal per chunk
        count up to where every tail may be empty (minLength is met); past that, a long run
        of chunks (`MIN_COUNTED_CHUNKS` or more) is counted in binary (`counted_items`:
        O(log) rules, unambiguous), the tail after the last full chunk allowed being short.
        """
        key = ("chunked", min_len, max_len)
        if key in self.memo:
            return self.memo[key][0]
        k = STRING_CHUNK

        def tail(lead: str, lo: int, hi: int):
            reps = f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"
            return self.term(f'{lead}{ANY_UNIT}{reps}"')

        def full(lead: str):
            return self.term(f"{lead}{ANY_UNIT}{{{k}}}")

        if max_len is None:
            last = max(1, -(-min_len // k))  # the chain loops on its last element
        else:
            last = max_len // k
        counted_from = max(1, -(-min_len // k))  # from here on every tail may be empty
        counted = max_len is not None and last - counted_from >= MIN_COUNTED_CHUNKS
        chain = [self.new_nt(f"str{j}") for j in range((counted_from if counted else last) + 1)]
        for j, sym in enumerate(chain[:counted_from] if counted else chain):
            lead = '"' if j == 0 else ""
            if max_len is None or (j + 1) * k <= max_len:
                nxt = chain[min(j + 1, last)]
                self.rule(sym, [full(lead), nxt])
            lo = max(0, min_len - j * k)
            hi = k - 1 if max_len is None else min(k - 1, max_len - j * k)
            if lo <= hi:
                self.rule(sym, [tail(lead, lo, hi)])
        if counted:  # after counted_from chunks: n more at most, a short tail after the n-th
            n, short = last - counted_from, max_len - last * k
            if short == k - 1:
                self.rule(chain[-1], [self.counted_items((full(""),), 0, n), tail("", 0, k - 1)])
            else:
                self.rule(chain[-1], [self.counted_items((full(""),), 0, n - 1),
                                      tail("", 0, k - 1)])
                self.rule(chain[-1], [self.counted_items((full(""),), n, n),
                                      tail("", 0, short)])

        self.memo[key] = (chain[0], None)
        return chain[0]

    # --- objects ---------------------------------------------------------------------------
    def key_terminal(self, content_regex: str):
        return self.term(self.key_terminal_regex(content_regex))

    def key_terminal_regex(self, content_regex: str) -> str:
        """The regex of a key terminal: the quoted key content and the layout's colon."""
        return key_regex(content_regex) + self.layout.colon()

    def object(self, nt, form: ObjectForm, depth: int):
        """Rules for the objects of a form, members in the declared order or in any order
        (`property_order`)."""
        if self.property_order == "any" and form.properties:
            self.object_any_order(nt, form, depth)
        else:
            self.object_in_order(nt, form, depth)

    def members(self, form: ObjectForm, depth: int) -> tuple[list, list]:
        """Nonterminals of a form's declared members and extra members."""
        pair_nt = []
        for prop in form.properties:
            p = self.new_nt("prop")
            self.rule(p, [self.key_terminal(literal_units(prop.name)),
                          self.value(prop.value.schema, prop.value.pointer, depth + 1)])
            pair_nt.append(p)
        extra_nt = []
        for extra in form.extras:
            p = self.new_nt("extra")
            self.rule(p, [self.key_terminal(extra.key_units),
                          self.value(extra.value.schema, extra.value.pointer, depth + 1)])
            extra_nt.append(p)
        return pair_nt, extra_nt

    def witness_members(self, form: ObjectForm, depth: int) -> tuple[list, int]:
        """([(nonterminal of witness members, the witnesses they meet as a bit mask)], the
        mask of all witnesses): a form's members that meet its witnesses (`witness`: one,
        `witnesses`: several, by the sets they meet); ([], 0) when it has none."""
        if form.witness is not None:
            witness_nt = self.new_nt("witness")
            for keys in form.witness if isinstance(form.witness, tuple) else (form.witness,):
                self.rule(witness_nt, [self.key_terminal(keys.key_units),
                                       self.value(keys.value.schema, keys.value.pointer,
                                                  depth + 1)])
            return [(witness_nt, 1)], 1
        by_meets: dict = {}
        for member in form.witnesses:
            keys = member.keys
            if member.meets not in by_meets:
                by_meets[member.meets] = self.new_nt(f"witness{member.meets}")
            self.rule(by_meets[member.meets], [
                self.key_terminal(keys.key_units),
                self.value(keys.value.schema, keys.value.pointer, depth + 1)])
        return [(nt, meets) for meets, nt in by_meets.items()], (1 << form.witness_count) - 1

    @staticmethod
    def witness_suffix(met: int, full: int) -> str:
        """A member state's name suffix: "" once every witness is met (or there is none),
        `_w` before the single witness, `_w<mask>` before several."""
        return "" if met == full else "_w" if full == 1 else f"_w{met}"

    def object_any_order(self, nt, form: ObjectForm, depth: int):
        """Rules for the objects of a form with members in any order: A(r, c, w) is the rest
        after the required members r and c others (clamped as for counting), w whether the
        witness member came. r is the set of required names that came (a bit mask) when
        there are at most MAX_TRACKED_REQUIRED of them and the rules that takes fit what is
        left of MAX_TRACKED_RULES (for the schema): the grammar then knows exactly which are
        still due (and its distance to the end counts them); beyond, r counts them, and
        since the matcher refuses a repeated key (`keyed_open`: it checks each key comes
        once) r members of required names are r of the names, so that the object may close
        once r is their number. Charged to MAX_ANY_ORDER_STATES before it is built."""
        lay = self.layout
        n_req = sum(prop.required for prop in form.properties)
        min_p, max_p = form.min_properties, form.max_properties
        counting = bool(min_p) or max_p is not None
        tracked = self.tracks_required(form, n_req)
        pair_nt, extra_nt = self.members(form, depth)
        comma = self.term(lay.comma(depth))
        witness_nts, full = self.witness_members(form, depth)
        # The members that are not required, one choice shared by every state (a state's
        # rules: one per required member still due, one for these, the witness, the end)
        other_nt = self.choice("other", [p for prop, p in zip(form.properties, pair_nt)
                                         if not prop.required] + extra_nt)
        bits, done = {}, n_req  # tracked: required member index -> its bit; r when all came
        required_nt = None  # counted: one choice of any required member
        if tracked:
            for i, prop in enumerate(form.properties):
                if prop.required:
                    bits[i] = 1 << len(bits)
            done = (1 << n_req) - 1
        else:
            required_nt = self.choice("required", [p for prop, p in zip(form.properties,
                                                                        pair_nt) if prop.required])
        rest = {}

        def can_close(c):
            return not counting or (c + n_req >= min_p and (max_p is None or c + n_req <= max_p))

        def can_add(c):  # one more member that is not required
            return not counting or max_p is None or c + n_req < max_p

        def clamp(c):
            return (c if max_p is not None else min(c, max(min_p - n_req, 0))) if counting else 0

        def get(first, r, c, w):  # a recursion run by `unrolled`: `yield` is the recursive call
            key = (first, r, c, w)  # (w: the witnesses met, a bit mask)
            if key in rest:
                return rest[key]
            sym = rest[key] = self.new_nt(f"A{r}_{c}" + self.witness_suffix(w, full))
            lead = [] if first else [comma]
            if not first and r == done and can_close(c) and w == full:
                self.rule(sym, [])
            for i, p in enumerate(pair_nt):
                if i in bits and not r & bits[i]:
                    self.rule(sym, lead + [p, (yield (False, r | bits[i], c, w))])
            if required_nt is not None and r < n_req:
                self.rule(sym, lead + [required_nt, (yield (False, r + 1, c, w))])
            if can_add(c):
                if other_nt is not None:
                    self.rule(sym, lead + [other_nt, (yield (False, r, clamp(c + 1), w))])
                for witness_nt, meets in witness_nts:  # (one meeting none new: an extra)
                    if w | meets != w or full == 1:
                        self.rule(sym, lead + [witness_nt,
                                               (yield (False, r, clamp(c + 1), w | meets))])
            return sym

        seen = 0 if witness_nts else full
        first = unrolled(get, (True, 0, 0, seen), rest)
        obj = self.new_nt("keyed")  # its own, so that it can be dropped (finish)
        self.rule(nt, [obj])
        self.rule(obj, [self.keyed_open(lay.open("{", depth)), first,
                        self.term(lay.close("}", depth))])
        if n_req == 0 and can_close(0) and seen == full:
            self.rule(obj, self.empty_container("{}", depth))
        if not tracked:  # (tracked: a required member without a value leaves no way to close)
            self.keyed_objects.append(
                (obj, [p for prop, p in zip(form.properties, pair_nt) if prop.required]))

    def tracks_required(self, form: ObjectForm, n_req: int) -> bool:
        """Whether an any-order object's grammar tracks which required members came (else it
        counts them); its states charged to MAX_ANY_ORDER_STATES, its rules to what is left
        of MAX_TRACKED_RULES."""
        min_p, max_p = form.min_properties, form.max_properties
        count_states = ((max_p if max_p is not None else max(min_p - n_req, 0)) + 1
                        if min_p or max_p is not None else 1)
        tracked_states = 2 ** n_req * count_states * (
            2 if form.witness is not None else 2 ** form.witness_count)
        tracked = n_req <= MAX_TRACKED_REQUIRED and tracked_states <= MAX_ANY_ORDER_STATES \
            and tracked_states * (n_req + 3) <= self.tracked_rules_left
        if tracked:
            self.tracked_rules_left -= tracked_states * (n_req + 3)
        states = (2 ** n_req if tracked else n_req + 1) * count_states * 2 ** max(
            form.witness_count, 1)
        if states > MAX_ANY_ORDER_STATES:
            raise JsonSchemaError(
                f"property_order 'any': an object with {n_req} required members and "
                f"min/maxProperties needs {states} states, above {MAX_ANY_ORDER_STATES}")
        return tracked

    def choice(self, name: str, symbols: list[int]) -> int | None:
        """A nonterminal deriving any one of `symbols` (None when there are none)."""
        if not symbols:
            return None
        nt = self.new_nt(name)
        for symbol in symbols:
            self.rule(nt, [symbol])
        return nt

    def object_in_order(self, nt, form: ObjectForm, depth: int):
        """Rules for the objects of a form: R(i, c) is the rest after c members with next
        declared index i (comma-led), NX(i, c) the choice of the next declared >= i
        (comma-led), F(i, c)/FN(i, c) the same for the first member (no comma)."""
        lay = self.layout
        declared = form.properties
        min_p, max_p = form.min_properties, form.max_properties
        counting = bool(min_p) or max_p is not None
        n = len(declared)
        req_after = [False] * (n + 1)
        for i in range(n - 1, -1, -1):
            req_after[i] = req_after[i + 1] or declared[i].required
        members = {}
        pair_nt, extra_nt = self.members(form, depth)
        comma = self.term(lay.comma(depth))

        def count_ok(c):
            return (not counting) or (c >= min_p and (max_p is None or c <= max_p))

        def can_add(c):
            return (not counting) or max_p is None or c < max_p

        def clamp(c):
            return (c if max_p is not None else min(c, min_p)) if counting else 0

        witness_nts, full = self.witness_members(form, depth)  # (w: the witnesses met)
        # No undeclared member after the single witness: one repeating its key would replace
        # it (JSON keeps the last of equal keys); a keyed object has no repeated key.
        extras_after_witness = form.keyed

        def get(kind, i, c, w):  # a recursion run by `unrolled`: `yield` is the recursive call
            key = (kind, i, c, w)
            if key in members:
                return members[key]
            sym = members[key] = self.new_nt(f"{kind}{i}_{c}" + self.witness_suffix(w, full))
            lead = [comma] if kind in ("R", "NX") else []
            if kind in ("R", "F"):
                if kind == "R" and not req_after[i] and count_ok(c) and w == full:
                    self.rule(sym, [])
                if i < n:
                    self.rule(sym, [(yield ("NX" if kind == "R" else "FN", i, c, w))])
                if can_add(c):
                    for e in extra_nt if not witness_nts or not w or extras_after_witness \
                            else ():
                        self.rule(sym, lead + [e, (yield ("R", i, clamp(c + 1), w))])
                    for witness_nt, meets in witness_nts:
                        if w | meets != w or full == 1:
                            self.rule(sym, lead + [witness_nt,
                                                   (yield ("R", i, clamp(c + 1), w | meets))])
            elif i < n:  # NX / FN
                if can_add(c):
                    self.rule(sym, lead + [pair_nt[i], (yield ("R", i + 1, clamp(c + 1), w))])
                if not declared[i].required:
                    self.rule(sym, [(yield (kind, i + 1, c, w))])
            return sym

        seen = 0 if witness_nts else full
        if not counting and not witness_nts and DIRECT_MEMBER_CHAIN:
            first = self.member_chain(declared, req_after, pair_nt, extra_nt, comma)
        else:
            first = unrolled(get, ("F", 0, 0, seen), members)
        brace = lay.open("{", depth)
        self.rule(nt, [self.keyed_open(brace) if form.keyed else self.term(brace), first,
                       self.term(lay.close("}", depth))])
        if not req_after[0] and count_ok(0) and seen == full:
            self.rule(nt, self.empty_container("{}", depth))

    def member_chain(self, declared, req_after: list[bool], pair_nt: list[int],
                     extra_nt: list[int], comma: int) -> int:
        """`object_in_order`'s states when nothing is counted and no witness is needed (c = 0
        and w = 1 throughout): the same nonterminals and rules, created in the order its
        recursion creates them, by a loop down the chain of declared members and back (no
        generator per state: the larger part of a small object's cost). Returns F(0).

        The recursion, for reference: F(0) -> FN(0) | e R(0); FN(i) -> pair_i R(i+1) |
        FN(i+1) (optional i); R(i) -> <empty> (nothing required from i) | NX(i) | , e R(i);
        NX(i) -> , pair_i R(i+1) | NX(i+1) (optional i); a state is created when first
        reached, its rules added when each of their states has returned."""
        n = len(declared)
        new_nt, rule = self.new_nt, self.rule
        first = new_nt("F0_0")
        rest: list = [None] * (n + 1)  # R(i)
        next_: list = [None] * (n + 1)  # NX(i)
        if n:
            first_next = new_nt("FN0_0")
            for i in range(1, n + 1):  # down: FN(0) reaches R(1), R(i) NX(i), NX(i) R(i+1)
                rest[i] = new_nt(f"R{i}_0")
                if not req_after[i]:
                    rule(rest[i], [])
                if i < n:
                    next_[i] = new_nt(f"NX{i}_0")
            for e in extra_nt:
                rule(rest[n], [comma, e, rest[n]])
            for i in range(n - 1, 0, -1):  # back up: NX(i), then R(i)
                rule(next_[i], [comma, pair_nt[i], rest[i + 1]])
                if not declared[i].required:
                    if next_[i + 1] is None:
                        next_[i + 1] = new_nt(f"NX{i + 1}_0")
                    rule(next_[i], [next_[i + 1]])
                rule(rest[i], [next_[i]])
                for e in extra_nt:
                    rule(rest[i], [comma, e, rest[i]])
            rule(first_next, [pair_nt[0], rest[1]])
            if not declared[0].required:  # FN(1), FN(2), ... while optional, then back up
                chain, j = [first_next], 1
                while True:
                    chain.append(new_nt(f"FN{j}_0"))
                    if j < n:
                        rule(chain[-1], [pair_nt[j], rest[j + 1]])
                    if j >= n or declared[j].required:
                        break
                    j += 1
                for k in range(len(chain) - 2, -1, -1):
                    rule(chain[k], [chain[k + 1]])
            rule(first, [first_next])
        if extra_nt:  # F(0) -> e R(0): R(0) and NX(0) are reached here first
            rest[0] = new_nt("R0_0")
            if not req_after[0]:
                rule(rest[0], [])
            if n:
                next_[0] = new_nt("NX0_0")
                rule(next_[0], [comma, pair_nt[0], rest[1]])
                if not declared[0].required:
                    if next_[1] is None:
                        next_[1] = new_nt("NX1_0")
                    rule(next_[0], [next_[1]])
                rule(rest[0], [next_[0]])
            for e in extra_nt:
                rule(rest[0], [comma, e, rest[0]])
            for e in extra_nt:
                rule(first, [e, rest[0]])
        return first

    # --- arrays ----------------------------------------------------------------------------


def normal_form_to_ir(form, *, whitespace="flexible", normalizer: Normalizer | None = None,
                      ) -> GrammarIR:
    """The IR of a normal form built directly (`ANY` or a `Union`); the JSON schemas its
    `Subschema`s hold are normalized by `normalizer` (default: one of the root `{}`). The IR
    is the one `json_schema_to_ir` gives for the equivalent schema."""
    if normalizer is None:
        normalizer = Normalizer({}, True, False)
    emitter = Emitter(normalizer, Layout(whitespace))
    start = emitter.new_nt("start")
    emitter.rule(start, [emitter.value(form, "", 0)])
    return emitter.finish(start)
