"""The native path of JSON Schema lowering: the common shapes lowered by the core.

Design note. Most schemas are objects, arrays, local `$ref`s and scalar leaves, and for
them most of the Python front-end's time goes to bookkeeping: normalizing each subschema
(expand, union, conjunction, object_form) and emitting a few rules per property. The core walks
such a schema in C++ (native/json_schema/schema_lowering.h: the shapes, and the contract that
its IR is the one `Emitter` builds, name for name and rule for rule) and asks this module, through
hooks, for what the Python side owns: a leaf's rules (its recipe, `leaf_recipes`, or a lowering of
the leaf alone when it has none yet), key regexes, the any-value group (`any_value`). Whatever
leaves the shapes, or a hook that raises, makes the core answer None and the Python emitter
lowers the schema from scratch, reporting errors with their pointers as before.

Used for non-indented layouts, property order "declared" and strict (not lenient) lowering; the
engine installs the core's function when it loads (`use_native_lowering`: the front-end never
imports the core). `tests/grammars/test_native_lowering.py` compares the two paths' IRs (the
Python emitter is the oracle); `tools/grammar_fingerprints.py` proves a later change keeps every
MaskBench IR.
"""

from __future__ import annotations

from collections.abc import Callable

from jaxguide.grammars.ir import GrammarIR, TerminalIR
from jaxguide.grammars.json_schema.any_value import record_terminal_order, recording_for
from jaxguide.grammars.json_schema.combinators import (
    ANNOTATIONS,
    IMPLEMENTED,
    UNSUPPORTED,
)
from jaxguide.grammars.json_schema.emit import Emitter
from jaxguide.grammars.json_schema.leaf_recipes import (
    LEAF_KEYWORDS,
    leaf_key,
    leaf_recipe,
)
from jaxguide.grammars.json_schema.limits import MAX_RULES, MAX_VALUE_NESTING
from jaxguide.grammars.json_schema.units import CANONICAL_UNIT, literal_units

_lower: Callable | None = None  # _native.lower_json_schema, once the engine installed it


def use_native_lowering(lower: Callable, configure: Callable) -> None:
    """Installs the core's lowering (`lower_json_schema`), after handing it the front-end's
    constants (`configure_json_schema_lowering`)."""
    global _lower
    configure(sorted((IMPLEMENTED | UNSUPPORTED) - ANNOTATIONS), sorted(LEAF_KEYWORDS),
              MAX_RULES, MAX_VALUE_NESTING, CANONICAL_UNIT)
    _lower = lower


def native_lowering_installed() -> bool:
    return _lower is not None


def lower_natively(schema: dict, emitter: Emitter) -> GrammarIR | None:
    """The IR the Python emitter would build for `schema` with `emitter`'s normalizer, layout
    and order, lowered by the core; None where it does not apply (then lower in Python, with a
    fresh normalizer if `normalizer_state` changed: a leaf lowered here may spend budgets)."""
    normalizer, layout = emitter.normalizer, emitter.layout
    if (_lower is None or layout.indented or emitter.property_order != "declared"
            or normalizer.lenient):
        return None
    hooks = _Hooks(emitter)
    punctuation = (layout.comma(0), layout.open("{", 0), layout.close("}", 0),
                   layout.open("[", 0), layout.close("]", 0), layout.colon())
    try:
        lowered = _lower(schema, punctuation, normalizer.additional_default, hooks.leaf_rules,
                         hooks.key_regex, hooks.other_keys_regex, hooks.pattern_members,
                         hooks.any_value_group)
    except Exception:  # noqa: BLE001 - the Python emitter lowers it, and reports what is wrong
        return None
    if lowered is None:
        return None
    terminals, nonterminals, rules = lowered
    return GrammarIR(terminals=tuple(TerminalIR.plain(f"T{i}", regex)
                                     for i, regex in enumerate(terminals)),
                     nonterminals=tuple(nonterminals), rules=rules, start=0)


class _Hooks:
    """What the core asks of the Python side (native/json_schema/schema_lowering.h,
    LoweringHooks), for one schema."""

    def __init__(self, emitter: Emitter):
        self.emitter = emitter
        self.chains: dict[tuple, tuple] = {}  # chunk_chain's groups, by length window

    def leaf_rules(self, leaf: dict):
        """The leaf's rules as terminal regexes (Emitter.value's recipe path), None when it has
        none (its lowering creates nonterminals, or a terminal that is not a plain regex)."""
        normalizer = self.emitter.normalizer
        key = leaf_key(leaf, normalizer)
        recipe = leaf_recipe(key) if key is not None else None
        if recipe is not None:
            if "enum" in leaf or "const" in leaf:  # (as Emitter.value does for a recipe)
                normalizer.literal_checks(leaf, "")
        else:
            scratch = Emitter(normalizer, self.emitter.layout, self.emitter.property_order)
            return _scratch_rules(scratch, scratch.value(leaf, "", 0), self.chains)
        if not all(isinstance(k, str) for rule in recipe for k in rule):
            return None
        return recipe

    def key_regex(self, name: str) -> str:
        """Emitter.key_terminal's regex for a declared name."""
        return self.emitter.key_terminal_regex(literal_units(name))

    def other_keys_regex(self, names: list[str]) -> str | None:
        """The key regex of the undeclared members of an object declaring `names`
        (normalize.key_content without propertyNames)."""
        content = self.emitter.normalizer.not_names(sorted(set(names)))
        return None if content is None else self.emitter.key_terminal_regex(content)

    def pattern_members(self, schema: dict, names: list[str]) -> list[tuple[str, int]] | None:
        """The undeclared member classes of an object with patternProperties whose properties
        are `names` (normalize.undeclared_members, as object_form asks): [(key terminal
        regex, value)], value -1 for any value, i for the i-th patternProperties schema, their
        count for additionalProperties. None where object_form would merge schemas (a declared
        name a pattern matches, a class of several schemas) or needs a witness."""
        normalizer = self.emitter.normalizer
        patterns = schema["patternProperties"]
        if not isinstance(patterns, dict):
            return None
        additional = schema.get("additionalProperties", bool(normalizer.additional_default))
        if any(normalizer.key_matches(p, name, "") for name in names for p in patterns):
            return None
        undeclared = normalizer.undeclared_members(
            schema, "", set(names), [(tuple(patterns), additional)], None, patterns, 0)
        if undeclared is None or undeclared[1] is not None or undeclared[2]:
            return None
        values = [*patterns.values(), additional]
        classes = []
        for content, value, _, _ in undeclared[0]:
            index = -1 if value is True else next(
                (i for i, v in enumerate(values) if v is value), None)
            if index is None:
                return None  # (a merge of several schemas)
            classes.append((self.emitter.key_terminal_regex(content), index))
        return classes

    def any_value_group(self):
        """The any-value group's recording (`any_value.Recording`) as the core reads it: the
        same tuple for the same recording (the core reads each once)."""
        recording = recording_for(self.emitter)
        if recording is None:
            return None
        known = _GROUPS.get(id(recording))
        if known is None or known[0] is not recording:
            group = None if not all(isinstance(k, str) for k in recording.terminal_keys) else (
                list(recording.nonterminals), list(recording.numbered), list(recording.rules),
                list(recording.terminal_keys), list(recording.terminal_order), recording.depth)
            known = _GROUPS[id(recording)] = (recording, group)
        return known[1]


def _scratch_rules(scratch: Emitter, nt: int, chain_memo: dict):
    """The rules of `nt`, a leaf lowered alone in `scratch`, as the core reads them: terminal
    regexes, and for a long free string its chunk chain as (memo key, recorded group, kept in
    `chain_memo` for the schema); None when the lowering made anything else (other
    nonterminals or rules, terminals that are not plain regexes)."""
    chains = {entry[0]: key for key, entry in scratch.memo.items() if key[0] == "chunked"}
    rules, groups = [], {}
    for lhs, rhs in scratch.rules:
        if lhs != nt:
            continue
        symbols = []
        for s in rhs:
            if s < 0:
                if not isinstance(scratch.terminal_keys[~s], str):
                    return None
                symbols.append(scratch.terminal_keys[~s])
            elif s in chains:
                window = chains[s][1:]
                if window not in chain_memo:
                    chain_memo[window] = chunk_chain(scratch, *window)
                groups[s] = chain_memo[window]
                symbols.append((" ".join(map(str, chains[s])), groups[s]))
            else:
                return None
        rules.append(tuple(symbols))
    made = (1 + sum(len(g[0]) for g in groups.values()),
            len(rules) + sum(len(g[2]) for g in groups.values()))
    if made != (len(scratch.nonterminals), len(scratch.rules)):
        return None
    return tuple(rules)


def chunk_chain(emitter: Emitter, min_len: int, max_len: int | None) -> tuple:
    """`Emitter.chunked_string(min_len, max_len)`'s rules as a recorded group (native/
    json_schema/schema_lowering.h, RecordedGroup: names, numbered, rules, terminal keys, the
    order they were asked for, depth), recorded in a scratch emitter like `emitter`: the chain
    reads no option, schema or memo entry."""
    scratch = Emitter(emitter.normalizer, emitter.layout, emitter.property_order)
    asked = record_terminal_order(scratch)
    scratch.chunked_string(min_len, max_len)
    return (list(scratch.nonterminals), [False] * len(scratch.nonterminals),
            list(scratch.rules), list(scratch.terminal_keys), list(asked), 0)


# id(recording) -> (the recording, its tuple for the core): recordings are kept for the process
# (one per set of options, `any_value`), and so are these.
_GROUPS: dict[int, tuple] = {}
