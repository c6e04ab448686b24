"""The typed normal form of a JSON Schema: what `normalize` produces and `emit` lowers.

Design note. A schema normalizes to `ANY` (every JSON value) or a `Union` of alternatives (no
alternative: no value). An alternative is a `Ref` (a `$ref` target, lowered lazily by emit, so
recursive schemas stay finite) or a `Conjunction`: `$ref`s resolved, allOf intersected,
anyOf/oneOf distributed, and the keywords read into one typed form per JSON type it admits
(`NullForm`, `BooleanForm`, `NumberForm` for integer and number, `StringForm`, `ArrayForm`,
`ObjectForm`), or a literal set (enum/const values, each already valid under every sibling
keyword). `negated` leaves room for negated members (`not`); today the normalizer folds the one
supported form, `{"not": {"type": ...}}`, into the forms, and the list stays empty. Nothing
here is a JSON Schema keyword: emit reads typed fields only.

Subschemas inside a form (property values, items) are `Subschema`s: a JSON schema normalized
when emit first reaches it (memoized by the schema's identity and depth, as references are),
or a normal form built directly (tests build whole trees this way).

Laziness. An item of `Union.alternatives` or `Conjunction.forms` may be `Pending`: emit calls
`make()` when it reaches it (None: no value), so each alternative's and each type's keywords
are read right before they are lowered, the first error a schema reports is the one the
single-pass compiler reported, and the call depth (a very deep schema ends in "schema nesting
too deep") is the same too. `make` is a `functools.partial` of a normalizer method, which adds
no Python frame.

Construction. The classes built once per value or member (`Pending`, `Union`, `Subschema`,
`Ref`, `Property`, `Conjunction`) define their own `__init__`, which stores the fields straight
into the instance dict: the frozen dataclass constructor sets each field through
`object.__setattr__`, a third of a large schema's object reading. They stay frozen (equality,
hash, repr and `dataclasses.replace` as generated; assignment raises).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from typing import Union as _TypingUnion

# The order in which a conjunction's forms are emitted (type names, sorted).
TYPE_ORDER = ("array", "boolean", "integer", "null", "number", "object", "string")


@dataclass(frozen=True)
class Pending:
    """An alternative or a form read when emit reaches it: `make()` returns it (or None)."""
    make: Callable[[], Any]

    def __init__(self, make: Callable[[], Any]):
        self.__dict__["make"] = make


@dataclass(frozen=True)
class AnyValue:
    """Every JSON value."""


ANY = AnyValue()


@dataclass(frozen=True)
class Union:
    """The values of any alternative (none: no value)."""
    alternatives: Iterable[Ref | Conjunction | Pending] = ()

    def __init__(self, alternatives: Iterable[Ref | Conjunction | Pending] = ()):
        self.__dict__["alternatives"] = alternatives


NONE = Union(())


@dataclass(frozen=True)
class Subschema:
    """A value's schema inside a form: a JSON schema (normalized lazily) or a normal form."""
    schema: Any
    pointer: str = ""

    def __init__(self, schema: Any, pointer: str = ""):
        fields = self.__dict__
        fields["schema"] = schema
        fields["pointer"] = pointer


@dataclass(frozen=True)
class Ref:
    """An alternative that is a `$ref`: its resolved target, lowered lazily."""
    schema: Any
    pointer: str

    def __init__(self, schema: Any, pointer: str):
        fields = self.__dict__
        fields["schema"] = schema
        fields["pointer"] = pointer


@dataclass(frozen=True)
class NullForm:
    """`null`."""


@dataclass(frozen=True)
class BooleanForm:
    """`true` and `false`."""


@dataclass(frozen=True)
class NumberForm:
    """Numbers (`integer`: canonical integers) within bounds.

    Integer forms: `minimum`/`maximum` are inclusive ints (rounded), `multiple_of` an integer
    step > 1 (None: any), `zero_fraction`: an integral text may end in `.0`, `.00`, ... (an
    integer multipleOf on a `number`). Number forms: Decimal bounds with their strictness,
    `fraction_digits` k for multipleOf 10^-k (None: any); `non_integer`: only numbers that are
    not integers (written without exponent, a sound subset: `not {"type": "integer"}`).
    `automaton`: when set, the numbers are the states' language (`digit_automata`: multiples of
    steps the regexes cannot write, within the bounds above), `automaton_regex` the range
    regex it was built from (the terminal's name)."""
    integer: bool = False
    minimum: Decimal | int | None = None
    exclusive_minimum: bool = False
    maximum: Decimal | int | None = None
    exclusive_maximum: bool = False
    multiple_of: int | None = None
    fraction_digits: int | None = None
    zero_fraction: bool = False
    non_integer: bool = False
    automaton: tuple = ()
    automaton_regex: str = ""


@dataclass(frozen=True)
class StringForm:
    """Strings of min..max code points that match `pattern` (an ECMA source, searched) or the
    enforced `format` (a name in `formats.FORMATS`), when given; with both, `pattern` is
    already the format's share too (their product, or the format's `formats.BOUNDED`
    variant). With a pattern or format, the lengths are implied by it or pushed into it (the
    normalizer checked that they can be). `lookaheads`: (must match, ECMA pattern) pairs that
    apply too, where their product with `pattern` is too large to write back as one pattern:
    the lexer's lookahead product (`products.string_form_units`)."""
    min_length: int = 0
    max_length: int | None = None
    pattern: str | None = None
    format: str | None = None
    lookaheads: tuple[tuple[bool, str], ...] = ()


@dataclass(frozen=True)
class Property:
    """A declared property, in the order the object's members are generated."""
    name: str
    value: Subschema
    required: bool = False

    def __init__(self, name: str, value: Subschema, required: bool = False):
        fields = self.__dict__
        fields["name"] = name
        fields["value"] = value
        fields["required"] = required


@dataclass(frozen=True)
class ExtraKeys:
    """A class of undeclared keys: `key_units` is the unit regex of the names (the key
    languages of patternProperties, minus declared names, and propertyNames are computed by
    the normalizer: their limits are errors), `value` their schema."""
    key_units: str
    value: Subschema


@dataclass(frozen=True)
class WitnessKeys:
    """Undeclared members (a key class and the value schema) that meet the witnesses in
    `meets` (bit i: witness i) of an object form."""
    keys: ExtraKeys
    meets: int


@dataclass(frozen=True)
class ObjectForm:
    """Objects: declared properties in order (each optional unless `required`), extra keys
    that may appear between them, and a count of members (max None: unbounded); `witness`:
    a class of undeclared members at least one of which must appear (an object that "has
    some member failing ...", from a complement), or a tuple of such classes (next to
    patternProperties: one per key class). `witnesses`: instead of `witness`, where several
    must each be met (or one beside propertyNames): classes of undeclared members, each
    meeting a set of the `witness_count` witnesses (a bit mask); one member may meet
    several. `keyed`: the matcher refuses a repeated key (then an undeclared key cannot come
    twice and replace a member that was counted or met a witness)."""
    properties: tuple[Property, ...] = ()
    extras: tuple[ExtraKeys, ...] = ()
    min_properties: int = 0
    max_properties: int | None = None
    witness: ExtraKeys | tuple[ExtraKeys, ...] | None = None
    witnesses: tuple[WitnessKeys, ...] = ()
    witness_count: int = 0
    keyed: bool = False


@dataclass(frozen=True)
class ContainsCount:
    """`contains` with minContains / maxContains: the items that match its schema are
    counted, from `low` up to `high` (None: unbounded). Each position's item is one of two
    schemas, (matching, not matching): `prefix` per prefix position, `rest` after them
    (None: no item there)."""
    prefix: tuple[tuple[Subschema, Subschema], ...]
    rest: tuple[Subschema, Subschema] | None
    low: int
    high: int | None


@dataclass(frozen=True)
class ArrayForm:
    """Arrays: `prefix_items` position by position, then `items` (None: nothing after the
    prefix), with min..max items; `witness`: (from, schema): some item at a position >= from
    (and after the prefix) must match schema (`contains`, or "some item fails items");
    `unique`: no two items equal (`uniqueItems`, checked by the matcher beyond the grammar);
    `witnesses`: two or more such (from, schema) pairs, each met by some item (one item may
    meet several), instead of `witness`; `contains_count`: a counted `contains`, instead of
    all three."""
    prefix_items: tuple[Subschema, ...] = ()
    items: Subschema | None = Subschema(ANY)
    min_items: int = 0
    max_items: int | None = None
    witness: tuple[int, Subschema] | None = None
    unique: bool = False
    witnesses: tuple[tuple[int, Subschema], ...] = ()
    contains_count: ContainsCount | None = None


Form = _TypingUnion[NullForm, BooleanForm, NumberForm, StringForm, ArrayForm, ObjectForm]


@dataclass(frozen=True)
class Literals:
    """An enum/const set: `values` each valid under every sibling keyword, no two equal;
    `floats`: the schema takes non-integer numbers (an integral value is also `N.0`);
    `pointer`: where the enum/const is (for errors)."""
    values: Iterable[Any] = ()
    floats: bool = True
    pointer: str = field(default="", compare=False)


@dataclass(frozen=True)
class Conjunction:
    """One alternative: `literals` when it is an enum/const set (then `forms` is empty), else
    one form per admitted type, in `TYPE_ORDER`; `negated`: see the design note."""
    forms: Iterable[Form | Pending] = ()
    literals: Literals | None = None
    negated: tuple = ()

    def __init__(self, forms: Iterable[Form | Pending] = (), literals: Literals | None = None,
                 negated: tuple = ()):
        fields = self.__dict__
        fields["forms"] = forms
        fields["literals"] = literals
        fields["negated"] = negated


NormalForm = _TypingUnion[AnyValue, Union]
