"""JSON Schema -> grammar IR (`Grammar.from_json_schema`): design note and keyword coverage.

Design note. A schema is lowered straight to `GrammarIR` (no Lark text round trip: big schemas
have thousands of rules and lark's loader would dominate the time to first mask). Every JSON
token that has no inner structure is one terminal, with the whitespace folded into it: an
object key *and* the colon after it (`"name"\\s*:\\s*`), `,`, `{`, `[`, `}`, `]`, a string, a
number, `true`/`false`/`null`. Structure (objects, arrays, alternatives, `$ref` recursion) is
rules. Properties come in the schema's order (then names that are only `required`, in that
order), each optional one may be left out, and extra properties (additionalProperties /
patternProperties) may appear between them; the sequence rules are unambiguous (one Earley
derivation per text), O(properties) in size. Other key orders are not generated (like
llguidance and xgrammar; a valid instance whose keys are out of order is rejected).

Modules. `json_schema_to_ir` normalizes, then emits, one subschema at a time:
`normalize.Normalizer` (on `combinators`: `$ref`, allOf merged, anyOf/oneOf distributed; then
the keyword reading; its number keywords in `number_forms`) turns a schema into the typed
normal form of `normal_form` (a union of
conjunctions, each with one typed form per JSON type), and `emit.Emitter` lowers that form to
rules and terminals without reading any keyword. The regex builders are `units` (JSON string
units), `pattern` (ECMA-262 patterns), `automata` (key classes of patternProperties, ECMA
search; its product DFAs are built by the native core once the engine has loaded it,
native/lexer/nfa_product.h), `numbers`, `digit_automata` (multipleOf as explicit automata),
`formats`, `layout` (whitespace); `values` checks concrete values exactly; every budget is in
`limits`. For speed, `leaf_recipes` keeps the rules of leaf schemas seen before (the same IR
without normalizing them again), `any_value` records the any-value rules once per set of options
and replays them (the same IR), and `emit_into` lowers several schemas into one shared emitter
(tool calls; `fragments` splices one into a later grammar). The front-end's own terminals
(`pinned_terminal_regexes`) and the ends of its key terminals (`pinned_key_suffixes`: a key is
then read without the regex parser) are compiled once per process by the core, which the engine
asks for when it loads it (native/lexer/pinned_terminals.h), as it asks for the leaf recipes of
the plain scalar types (`pin_common_leaves`). And the common shapes (objects, arrays, local
`$ref`s, leaves, anyOf of those: about 70% of MaskBench's schemas) are lowered by the core
(`native_lowering`, native/json_schema/schema_lowering.h) to the same IR, rule for rule, asking
this package for the leaves' rules, the key regexes and the any-value group; every other schema
is lowered here.

Strings. A JSON string is a sequence of *units*, each spelling one code point: a raw character
(U+0020 and above except `"` and `\\`, UTF-8), a short escape (`\\" \\\\ \\/ \\b \\f \\n \\r \\t`),
or `\\uXXXX` (any hex case; a surrogate pair for code points above U+FFFF). Where the content
is constrained (pattern, format, enum/const, property names), `\\uXXXX` is accepted only for
code points below U+0020 or from U+007F up, i.e. where `json.dumps` (ensure_ascii on or off)
would write one; `"\\u0041"` is not accepted as a spelling of a constrained `"A"`. Free content
(no constraint, or only min/maxLength) takes any `\\uXXXX`. Lone surrogates are rejected
everywhere. Within that spelling rule every constraint is exact on the *decoded* string:
`pattern`, `format`, `min/maxLength` (code points; an escape counts one), `enum`/`const`
strings, property names. A unit class is lowered to `raw class | short escapes | hex ranges`.
Length-bounded free strings longer than `STRING_CHUNK` (= 256) are lexed as chunks of exactly
256 units plus a last chunk with the closing quote (maximal munch makes the split unique), the
chunk count kept by rules: the lexer stays small whatever maxLength is, and stays exact.

`pattern` (ECMA-262) is parsed (`pattern.EcmaParser`) into code point sets, concatenation,
alternation and repetition, then emitted over units, so it applies to the decoded value. It is
searched (unanchored unless `^`/`$`), as JSON Schema says. Supported: literals and escapes
(`\\d \\w \\s \\D \\W \\S \\n \\t \\r \\f \\v \\0 \\xhh \\uhhhh \\u{h..} \\cX`), classes, `.`, groups
(capturing, `(?:`, `(?<name>`), `|`, `* + ? {m} {m,} {m,n}` and lazy forms, `^` at the start and
`$` at the end of a top-level alternative (an alternation at a branch's edge that holds them is
distributed: `^(?:a|$)`); lookaheads that open a pattern (`^(?!X)(?=Y)R`), close an unanchored
one (`R(?=X)`) or say "no X anywhere" (`^((?!X).)*$`) become the lexer's lookahead product
(`pattern.split_lookaheads`). Other lookaround, backreferences, `\\b`, `\\p{..}`: error.

Numbers. Integer ranges are exact regexes (digit-range construction). Other ranges (non-integer
bounds, `exclusive*`, type `number`) are exact over decimal texts without exponent: a bounded
`number` is written without `e`/`E` (a documented restriction: `1e2` is rejected when a bound
applies; unbounded numbers take any JSON number). `multipleOf`: 1 / an integer k on integers
(k = 2^a 5^b by last digits, other k by enumeration of a finite range of at most 2,000 values),
10^-k on numbers (at most k significant fraction digits, then any zeros: 1.50 is a multiple of
0.1; decimal arithmetic); an integer k on a `number` also takes `N.0`, `N.00`, ... Every other
step (a range too wide to enumerate, 2.5, 0.3, two steps in one allOf: their lcm), and `not
{"multipleOf": k}` (numbers only), is a digit automaton (`digit_automata`: the range regex's DFA
times the residues modulo the steps, exact over texts without exponent) that goes to the lexer
as `TerminalIR.automaton`, within `MAX_DIGIT_AUTOMATON_STATES`. Negative
zero is accepted where 0 is in range. Every regex this module writes uses explicit ASCII
classes (`[0-9]`, never Python's Unicode-wide `\\d`).

Whitespace. "flexible": any of ` \\t\\n\\r` between two tokens, at most `MAX_FLEXIBLE_WS` (= 24)
characters in a row on each side of `{ } [ ] ,` and `MAX_COLON_WS` (= 4) on each side of `:`
(so a model cannot loop on whitespace); none before the value or after it. `json.dumps(x)`
(separators `", "`, `": "`) and `json.dumps(x, indent=2)` for shallow x match. "compact":
none (`json.dumps(x, separators=(",", ":"))`). An int n: exactly `json.dumps(x, indent=n)`'s layout
(empty `{}`/`[]` inline), down to `MAX_INDENT_DEPTH` (= 32) levels of nesting.

Coverage (keyword: what is enforced)

  ======================  ==================================================================
  type                    all six types, and arrays of types; `integer` is canonical `-?[0-9]+`
  enum / const            exact: each value is kept only if it is valid under all of its
                          sibling keywords (checked on the value with `jsonschema` in this
                          module's dialect: `dialect`), so siblings that the
                          grammar could not enforce (`not`, `uniqueItems`, ...) are exact
                          here; numbers compare by value (`-2.0` is also written `-2`,
                          `-2.00`; a fraction takes trailing zeros; float spellings of an
                          integral value only where the schema takes non-integers); strings:
                          any unit spelling; nested values as `json.dumps` writes them
  properties              in the schema's order; each optional unless in `required`;
                          `property_order="any"`: in any order, each key once (the matcher
                          checks the keys: TerminalIR.opens_keyed_object; the grammar counts
                          the required members)
  required                exact
  additionalProperties    true/false/a schema; default `additional_properties_default`; extra
                          keys are exactly the names not declared (trie complement), and may
                          appear between the declared properties
  patternProperties       exact: keys are classed by the set of patterns they match (all their
                          schemas apply) or none (additionalProperties), minus declared names
                          (declared names matching a pattern get both schemas). Intersections
                          and complements are computed on a small product DFA (at most 400
                          states, 4 patterns with different schemas), emitted by state
                          elimination; beyond 400 states or a 60,000-character regex, as the
                          lexer's lookahead product (`products`) when each pattern's own DFA
                          has at most 400 states; beyond that, an error
  propertyNames           exact on declared names (a refused required name: no valid object);
                          `false`: only `{}`; extra keys: `enum`/`const`, or a string schema
                          (pattern, min/maxLength, format) when no property is declared;
                          beside patternProperties or a witness, patterns or an enum (one
                          key class product, `object_witnesses`); otherwise error
  min/maxProperties       exact (counted in the rules; at most 64 x properties states); counts
                          (these, min/maxItems, min/maxLength) may be integral floats (2.0)
  items / prefixItems     exact; draft <= 7 array-form `items` + `additionalItems`
  min/maxItems            exact (counted in the rules; up to 4,096)
  anyOf                   exact (alternatives)
  oneOf                   exact: when the branches are provably disjoint type by type (a
                          type two branches accept entirely is excluded; const/enum, a
                          required property's const/enum/type/pattern, required-vs-closed
                          names, disjoint number intervals), as anyOf; otherwise the union of
                          (branch i and not branch j) over the overlapping pairs (`negation`)
  allOf                   merged keyword by keyword where provable (types intersected, bounds
                          tightened, anyOf distributed, properties in the order of the parts);
                          exact for keywords that interact across parts: array items position
                          by position (each part's prefix schema or rest schema), a name one
                          part declares gets every other part's additionalProperties unless
                          that part's patterns match it, extra names get each part's
                          additionalProperties where that part's own patterns do not match
                          (kept per part), enum/const intersected by value, two patterns
                          by their product automaton (written back as one pattern, or, where
                          that regex would pass 60,000 characters, kept apart as the lexer's
                          lookahead product: `products.string_form_units`), two `not`s as
                          not of their anyOf; an
                          unmergeable pair is an error. Beyond 256 combinations, the product
                          is merged one part at a time, dropping unsatisfiable partial merges
  $ref / $defs            local refs (`#`, JSON pointers, `definitions`, plain names of a
                          `$anchor` or of a `$id` / `id` written `#name`), recursive; draft
                          <= 7: siblings of `$ref` ignored, later drafts: combined with it
  minLength / maxLength   exact, code points, any size (chunked, see Strings); with a `pattern`
                          or `format`: when implied by it, or pushed into the one repetition
                          of an anchored pattern that carries the variable length
                          (`^[A-Z][a-z]*$` + maxLength 8 -> `[A-Z][a-z]{0,7}`); else the
                          lexer's product of the pattern and the length window,
                          `(?=(?:unit{m,n})")(?:pattern)"` (native/lexer/regex_product.h),
                          when pattern DFA states x (bound + 1) <= 4,096; else error
  pattern                 exact on the decoded string (see above); ECMA subset; with a
                          `format`, or with the string exclusions of a `not`: the product
                          automaton of all (at most 2,000 states), one pattern where its regex
                          fits 60,000 characters, else the lexer's lookahead product
                          `(?=(?:P)")(?!(?:N)")...` (native/lexer/regex_product.h); past
                          2,000 states an error
  format                  `formats="assert"` (default): exact regexes for date-time, date,
                          time, duration, email, idn-email, hostname, ipv4, ipv6, uuid, uri,
                          uri-reference, iri, iri-reference, uri-template, json-pointer,
                          relative-json-pointer and draft 3's host-name, ip-address, color;
                          `regex` and `idn-hostname`: error (lenient: ignored); other names are
                          annotations. Semantics and the few places stricter than `jsonschema`
                          (which is looser than the RFCs there): `formats`' design note.
                          `formats="annotation"`: no format is enforced
  minimum / maximum       exact (integers any size; numbers: decimal texts without exponent)
  exclusiveMin/Max        exact; number (draft 6+) or boolean (draft 4) form
  multipleOf              see Numbers
  true / false schemas    exact; `{}` is any JSON value
  annotations             title, description, default, examples, $comment, ... ignored
  not                     exact by complements written as JSON Schema (`negation`): types
                          removed, bounds flipped, string sets subtracted in one product
                          automaton, "a required name absent", "a property present with a
                          value under not S", "an undeclared member fails" (over the declared
                          names of a closed object, or a witness member class of an open
                          one, split by the key classes of patternProperties; up to 4
                          witnesses in one object, one member may meet several; "some key
                          matches P" as not propertyNames not pattern P), "some item
                          fails items" (up to 3 such witness items with `contains`, one item
                          may meet several), an object / array value excluded by a member or
                          item that differs, is missing or is extra; no finite shape: error
                          (see `negation`'s design note)
  if/then/else            exact: (if and then) or (not if and else)
  dependencies,           exact: per name, (absent) or (present and what it needs)
  dependentRequired,
  dependentSchemas
  uniqueItems             exact, beyond the grammar: the array's opening bracket is a
                          terminal flagged `opens_unique_array`; the matcher compares the
                          items as JSON values (native/matcher/unique_items.h) and masks out
                          every token that repeats one or leaves only repeats to write; an
                          item schema with finitely many values (enum, const, booleans, null,
                          bounded integers, closed objects of such) caps maxItems at their
                          count (`finite_values`)
  contains                exact: one item must match (a witness item); with minContains /
                          maxContains the matching items are counted (each item's schema and
                          contains, or and not contains; (positions + 1) x (count + 1) states,
                          at most 4,096)
  unevaluatedProperties,  exact where what is evaluated is static (allOf / $ref parts: their
  unevaluatedItems        properties, patterns, prefixes; `unevaluated`): one more allOf part;
                          beside anyOf / oneOf / if / dependentSchemas (or contains, for
                          items): error
  $dynamicRef,            exact where the root is the only schema resource (the reference is
  $recursiveRef           then static: `refs.References.resolve_dynamic`); beside a subschema
                          with an $id of its own: error naming the keyword
  remote $ref             error naming the keyword and its JSON pointer
  ======================  ==================================================================

Unknown keywords (not part of JSON Schema) are ignored, as validators do.

Limits (clear `JsonSchemaError`; every budget, with the error it gives, is in `limits`):
20,000 rules; counted repetitions in patterns / maxItems beyond 4,096; a length window
times a pattern's states beyond 4,096; allOf distribution beyond 256 combinations; min/max
Properties above 64; `$ref`/allOf nesting deeper than 40 without structure in between.
Duplicate object keys: a declared name appears at most once; an undeclared one may repeat
(JSON keeps the last value), except where that would change the verdict: when two or more of
the members that minProperties counts would be undeclared, few undeclared names (a finite
patternProperties class or propertyNames enum, 64 names in all) become optional declared
properties, each at most once, after the declared ones (so in that order); with more, the
object is keyed: the matcher refuses a repeated key (`TerminalIR.opens_keyed_object`), so
members are distinct keys. After the member that a single complement needs ("some member
fails"), no undeclared member follows, so none can replace it; an object with several such
members is keyed.
"""

from __future__ import annotations

import gc
import json
import threading
import warnings
from typing import Any

from jaxguide.grammars.ir import GrammarIR
from jaxguide.grammars.json_schema import automata, pattern, products, units
from jaxguide.grammars.json_schema.any_value import normalizer_state
from jaxguide.grammars.json_schema.emit import Emitter
from jaxguide.grammars.json_schema.errors import (
    InvalidSchemaError,
    JsonSchemaError,
    SchemaNestingError,
)
from jaxguide.grammars.json_schema.formats import ENFORCED_FORMATS, FORMAT_MODES
from jaxguide.grammars.json_schema.layout import Layout
from jaxguide.grammars.json_schema.leaf_recipes import (
    clear_leaf_recipes,
    pin_leaf_recipes,
)
from jaxguide.grammars.json_schema.native_lowering import lower_natively
from jaxguide.grammars.json_schema.normalize import Normalizer

__all__ = ["ENFORCED_FORMATS", "JsonSchemaError", "clear_json_schema_caches", "emit_into",
           "json_schema_to_ir", "parsed_schema", "pin_common_leaves", "pinned_key_suffixes",
           "pinned_terminal_regexes", "shared_emitter"]

# Schemas whose terminals nearly every grammar of this front-end holds (pinned_terminal_regexes).
_PINNED_PROBES = ({}, {"type": "integer"})


def pinned_terminal_regexes() -> tuple[str, ...]:
    """The terminal regexes of any JSON value and of an integer (punctuation, strings, keys,
    numbers, literals) under the flexible and compact layouts: a fixed set, independent of any
    schema a user gives. The engine pins them in the core (native/lexer/pinned_terminals.h):
    parsed and compiled once per process, copied into each grammar that holds them, kept by
    `clear_caches` like the tokenizers' tables."""
    regexes: dict[str, None] = {}
    for whitespace in ("flexible", "compact"):
        for probe in _PINNED_PROBES:
            for terminal in json_schema_to_ir(probe, whitespace=whitespace).terminals:
                if not terminal.automaton and not terminal.special:
                    regexes[terminal.regex] = None
    return tuple(regexes)


def pin_common_leaves() -> None:
    """Pins the leaf recipes of the plain scalar types under the common dialects
    (`leaf_recipes.pin_leaf_recipes`: a fixed table that `clear_caches` keeps). The engine
    calls it when it loads, with the terminal pins."""
    pin_leaf_recipes(json_schema_to_ir)


def pinned_key_suffixes() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the ends of key terminals: the closing quote and each layout's colon; the string unit
    of "any key but these names", `not_names_units`'s `(?:X)`): fixed, as the pinned terminal
    regexes. The engine pins them in the core (native/lexer/pinned_terminals.h), which then
    reads a key terminal made of a plain name and one of these ends, or of a names lookahead,
    the unit and an end, without its regex parser."""
    suffixes = dict.fromkeys('"' + Layout(whitespace).colon()
                             for whitespace in ("flexible", "compact", 0))
    return tuple(suffixes), (units.CANONICAL_UNIT,)


def clear_json_schema_caches() -> None:
    """Empties the memos of regex pieces (string units, pattern automata) that schemas share."""
    for memo in (units.unit_regex, units.literal_units, units._chain_piece,
                 automata._searcher, automata.pattern_dfa, automata._schema_pattern_nfa,
                 automata._intersection_memo,
                 automata._difference_memo, products._states_memo,
                 pattern._schema_pattern_units):
        memo.cache_clear()
    units.clear_chain_tables()
    automata.PRODUCT_STATES.clear()
    clear_leaf_recipes()


def json_schema_to_ir(schema: Any, *, whitespace="flexible",
                      additional_properties_default: bool = True,
                      lenient: bool = False, formats: str = "assert",
                      property_order: str = "declared") -> GrammarIR:
    """Lowers a JSON Schema (a dict/bool, or its JSON text) to a `GrammarIR`.

    See the module docstring for the semantics and the coverage table. The schema is
    normalized (`normalize.Normalizer`: the typed normal form of `normal_form`) and emitted
    (`emit.Emitter`), each subschema when the emitter first reaches it.

    Raises:
      JsonSchemaError: an invalid schema, a bad `$ref`, or a keyword that cannot be enforced
        (unless `lenient`), naming the keyword and its JSON pointer.
    """
    if not isinstance(formats, str) or formats not in FORMAT_MODES:
        raise JsonSchemaError(f"formats must be one of {', '.join(FORMAT_MODES)}, not "
                              f"{formats!r}")
    with _gc_paused():
        return _lower(schema, whitespace, additional_properties_default, lenient, formats,
                      property_order)


def parsed_schema(schema) -> dict | bool:
    """The schema, parsed when it is JSON text; JsonSchemaError when it is not an object or a
    boolean."""
    if isinstance(schema, (str, bytes)):
        try:
            schema = json.loads(schema)
        except ValueError as e:
            raise JsonSchemaError(f"not valid JSON: {e}") from None
    if not isinstance(schema, (dict, bool)):
        raise JsonSchemaError(f"a schema must be an object or a boolean, not "
                              f"{type(schema).__name__}")
    return schema


def shared_emitter() -> Emitter:
    """An emitter for several schemas lowered into one grammar (`emit_into`), with
    `json_schema_to_ir`'s default options."""
    return Emitter(None, Layout("flexible"))


def emit_into(emitter: Emitter, schema, lower_root=None) -> int:
    """Lowers `schema` (a dict/bool or its JSON text) into a shared emitter as the next of
    its schemas (`Emitter.begin_schema`), with `json_schema_to_ir`'s default options and the
    same rules, errors and budgets as `json_schema_to_ir(schema)`; returns the nonterminal of
    its values. `lower_root(emitter, schema)`, when given, lowers the root instead of
    `emitter.value(schema, "", 0)` (the same language, fewer steps for a known shape)."""
    schema = parsed_schema(schema)
    normalizer = Normalizer(schema, True, False)
    emitter.begin_schema(normalizer)
    try:
        if lower_root is not None:
            return lower_root(emitter, schema)
        return emitter.value(schema, "", 0)
    except RecursionError:  # as in _emit
        depth, pointer = emitter.deepest
        raise SchemaNestingError(f"schema nesting too deep for Python's recursion limit "
                                 f"(values {depth} levels deep)", pointer) from None
    finally:
        vars(normalizer).clear()  # (see _emit)


def _lower(schema, whitespace, additional_properties_default: bool, lenient: bool,
           formats: str, property_order: str) -> GrammarIR:
    schema = parsed_schema(schema)
    try:
        return _emit(schema, whitespace, additional_properties_default, lenient, formats,
                     property_order, True)
    except (InvalidSchemaError, SchemaNestingError):
        raise
    except JsonSchemaError as error:
        if not lenient:
            raise
        # lenient: what complements cost (a budget) never fails a schema that compiled
        # without them: the combinators they serve are then ignored or read as anyOf, warned
        warnings.warn(f"jaxguide JSON Schema: {error}; lenient: not, oneOf, if/then/else and "
                      "dependencies read as before complements", stacklevel=3)
        return _emit(schema, whitespace, additional_properties_default, lenient, formats,
                     property_order, False)


def _emit(schema, whitespace, additional_properties_default: bool, lenient: bool,
          formats: str, property_order: str, complements: bool) -> GrammarIR:
    layout = Layout(whitespace)
    normalizer = Normalizer(schema, additional_properties_default, lenient, formats)
    normalizer.use_complements = complements
    emitter = Emitter(normalizer, layout, property_order)
    if isinstance(schema, dict):  # the common shapes: lowered by the core (native_lowering)
        state = normalizer_state(normalizer)
        ir = lower_natively(schema, emitter)
        if ir is not None:
            vars(normalizer).clear()  # (see below)
            return ir
        if normalizer_state(normalizer) != state:  # budgets spent by leaves the core asked for
            vars(normalizer).clear()
            normalizer = Normalizer(schema, additional_properties_default, lenient, formats)
            normalizer.use_complements = complements
            emitter = Emitter(normalizer, layout, property_order)
    start = emitter.new_nt("start")
    try:
        root = emitter.value(schema, "", 0)
        emitter.rule(start, [root])
        return emitter.finish(start)
    except RecursionError:  # a safety net: the nesting budgets should come first
        depth, pointer = emitter.deepest
        raise SchemaNestingError(f"schema nesting too deep for Python's recursion limit "
                                 f"(values {depth} levels deep)", pointer) from None
    finally:
        # The normalizer's and emitter's memos point back at them (pending forms, bound
        # methods): emptied here, their contents go by reference counting now, not as
        # cyclic garbage for a later collection to sweep (1.5 million objects after a
        # schema that fails its allOf budget: a 1.7 s pause in some later call).
        vars(emitter).clear()
        vars(normalizer).clear()


# Lowering allocates many containers that live until it ends, so Python's cyclic collector ran
# over and over during it (and promoted them, which triggers full collections: pauses of tens of
# milliseconds over the whole process heap, landing on whichever schema was being lowered). It
# makes no reference cycles worth collecting before it returns, so the collector is paused for
# its duration (left as it was if the caller had disabled it; nested and threaded calls share
# one pause).
_gc_lock = threading.Lock()
_gc_pauses = 0
_gc_was_enabled = False


class _GcPause:
    """The pause as a context manager (a class: `contextlib.contextmanager`'s generator costs
    more than the pause itself on a small schema)."""

    def __enter__(self) -> None:
        global _gc_pauses, _gc_was_enabled
        with _gc_lock:
            if _gc_pauses == 0:
                _gc_was_enabled = gc.isenabled()
                gc.disable()
            _gc_pauses += 1

    def __exit__(self, *exc) -> None:
        global _gc_pauses
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


_GC_PAUSE = _GcPause()


def _gc_paused() -> _GcPause:
    return _GC_PAUSE


# For other front-ends that build large grammars from many schemas (tool calls).
gc_paused = _gc_paused
