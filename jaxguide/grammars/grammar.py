"""`Grammar`: a language ready to be compiled against a tokenizer, built by one of the front-ends
(Lark text, JSON Schema, a regex, a list of strings)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from jaxguide.errors import GrammarError
from jaxguide.grammars.ir import GrammarIR, TerminalIR
from jaxguide.grammars.json_schema import json_schema_to_ir
from jaxguide.grammars.lark import cached_lark_to_ir, lark_to_ir
from jaxguide.grammars.lru import LruCache
from jaxguide.grammars.triggered import SpecialToken, triggered_ir

# Grammar.from_json_schema keeps the IR of this many recent (schema text, options): lowering a
# large schema costs milliseconds of Python, and servers see the same schemas again and again.
SCHEMA_CACHE_ENTRIES = 256
_schema_cache = LruCache(SCHEMA_CACHE_ENTRIES)


def _schema_key(schema, whitespace, additional_properties_default, formats, property_order):
    """The memo key of a schema (its JSON text: key order matters, it orders properties), or
    None when it has no JSON text."""
    if isinstance(schema, (str, bytes)):
        text = schema if isinstance(schema, str) else schema.decode("utf-8", "replace")
    else:
        try:
            # compact separators: half the time of the default ones on large schemas; a
            # cycle ends in RecursionError (no circular check: it costs a set per container)
            text = json.dumps(schema, allow_nan=False, check_circular=False,
                              separators=(",", ":"))
        except (TypeError, ValueError, RecursionError):
            return None
    return (text, str(whitespace), bool(additional_properties_default), str(formats),
            str(property_order))


def clear_schema_cache() -> None:
    _schema_cache.clear()


class Grammar:
    """A grammar ready to be compiled against a tokenizer (see `jaxguide.compile_grammar`).

    Build one with `Grammar.from_lark`, `from_json_schema`, `from_regex` or `choice`; `ir` holds
    the lowered form.
    """

    def __init__(self, ir: GrammarIR, source: str = ""):
        self.ir = ir
        self.source = source

    @classmethod
    def from_lark(cls, text: str, start: str = "start",
                  import_paths: Sequence[str] = ()) -> Grammar:
        """Loads a Lark grammar.

        Args:
          text: the grammar in Lark's EBNF syntax.
          start: the start rule.
          import_paths: folders searched by relative `%import`s.

        Raises:
          GrammarError: syntax errors, undefined or duplicate names, `%declare`, a missing
            start rule — with line and column where they can be located.
        """
        if not import_paths and isinstance(text, str) and isinstance(start, str):
            # lark's loader costs milliseconds; the same text always lowers to the same
            # (immutable) IR. Relative imports read files that may change: not cached.
            return cls(cached_lark_to_ir(text, start), source=text)
        return cls(lark_to_ir(text, start, list(import_paths)), source=text)

    @classmethod
    def from_json_schema(cls, schema, *, whitespace: str | int = "flexible",
                         additional_properties_default: bool = True,
                         lenient: bool = False, formats: str = "assert",
                         property_order: str = "declared") -> Grammar:
        """The JSON texts that validate against a JSON Schema.

        Args:
          schema: the schema, as a dict / bool or JSON text.
          whitespace: "flexible" (JSON whitespace between tokens: at most 24 characters in a
            row beside `{ } [ ] ,`, 4 beside `:`; `json.dumps(x)` matches), "compact" (none;
            `separators=(",", ":")`), or an indent n (exactly `json.dumps(x, indent=n)`).
          additional_properties_default: whether objects without `additionalProperties`
            allow extra properties (JSON Schema says yes).
          lenient: ignore keywords that cannot be enforced (with a warning) instead of
            raising.
          formats: "assert" (`format` enforced: an exact regex per format, `regex` and
            `idn-hostname` refused, unknown names ignored) or "annotation" (`format` ignored,
            as JSON Schema's default vocabulary reads it).
          property_order: "declared" (object members in the order of `properties`, undeclared
            ones between them) or "any" (members in any order, each key at most once: the
            matcher checks the keys beyond the grammar; within a budget of states per
            object, see the budget table).

        The keyword coverage table and the exact semantics are in `jaxguide.grammars.json_schema`.

        Raises:
          JsonSchemaError (a GrammarError): invalid schema, bad `$ref`, or a keyword that
            cannot be enforced, naming the keyword and its JSON pointer.
        """
        # Lenient lowering warns about what it drops: not memoized, so it warns every time.
        key = None if lenient else _schema_key(schema, whitespace,
                                               additional_properties_default, formats,
                                               property_order)
        ir = _schema_cache.get(key) if key is not None else None
        if ir is None:
            ir = json_schema_to_ir(schema, whitespace=whitespace,
                                   additional_properties_default=additional_properties_default,
                                   lenient=lenient, formats=formats,
                                   property_order=property_order)
            if key is not None:
                _schema_cache.put(key, ir)
        return cls(ir, source=schema if isinstance(schema, str) else "")

    @classmethod
    def from_regex(cls, pattern: str) -> Grammar:
        """The strings that `re.fullmatch(pattern, s)` accepts (Python `re` syntax).

        Lookaround, backreferences and `\\b` are rejected (when compiled) with a GrammarError.
        """
        if not isinstance(pattern, str):
            raise GrammarError(f"pattern must be str, not {type(pattern).__name__}")
        ir = GrammarIR(terminals=(TerminalIR("REGEX", pattern),), nonterminals=("start",),
                       rules=((0, (0,)),), start=0)
        return cls(ir, source=pattern)

    @classmethod
    def choice(cls, strings: Sequence[str]) -> Grammar:
        """Exactly one of the given strings."""
        if isinstance(strings, str):
            raise GrammarError("choice() takes a sequence of strings, not one string")
        strings = list(strings)
        if not strings or not all(isinstance(s, str) for s in strings):
            raise GrammarError("choice() needs a non-empty sequence of str")
        nonempty = sorted({s for s in strings if s})
        rules = []
        terminals = ()
        if nonempty:
            terminals = (TerminalIR("CHOICE", "|".join(re.escape(s) for s in nonempty)),)
            rules.append((0, (0,)))
        if "" in strings:
            rules.append((0, ()))
        ir = GrammarIR(terminals=terminals, nonterminals=("start",), rules=tuple(rules),
                       start=0)
        return cls(ir, source=json.dumps(strings))

    @classmethod
    def triggered(cls, triggers: Sequence[str | SpecialToken] | Mapping[str | SpecialToken,
                                                                          Grammar],
                  body: Grammar | None = None, *, after: str = "free",
                  at_least_one: bool = False) -> Grammar:
        """Free text until a trigger is produced, then `body`, then free text again (or stop).

        Text is unconstrained (any UTF-8, EOS allowed) until the first trigger occurrence
        completes; from there the trigger's body grammar is enforced; after it, text is free
        again and later triggers start later bodies (`after="free"`), or the output ends
        (`after="stop"`). A token may span free text and the trigger's first bytes; one that
        completes a trigger and continues with bytes the body forbids is masked. Bodies are
        best prefix-free (no sentence a proper prefix of another: a JSON value, anything that
        ends with a closing tag): a body's last lexeme is maximal munch, so free text right
        after it never starts with bytes that would extend that lexeme.

        Args:
          triggers: trigger strings (or `SpecialToken`s, matched by token id) that share
            `body`, or a mapping trigger -> its own body Grammar (one per tool, say).
          body: the grammar enforced after a trigger (with a sequence of triggers).
          after: "free" or "stop" (see above).
          at_least_one: the output starts with a trigger (no free text before it), so at
            least one body is produced (`tool_choice="required"`).

        Raises:
          GrammarError: no trigger, an empty or repeated one, a trigger that contains another,
            a body missing or given twice, an unknown `after`, triggers past their budget.
        """
        if isinstance(triggers, Mapping):
            if body is not None:
                raise GrammarError("give body= or a mapping trigger -> body, not both")
            pairs = list(triggers.items())
        else:
            if isinstance(triggers, (str, SpecialToken)):
                raise GrammarError("triggers is a sequence (or a mapping), not one trigger")
            if body is None:
                raise GrammarError("triggered() needs body= (or a mapping trigger -> body)")
            pairs = [(t, body) for t in triggers]
        for _, grammar in pairs:
            if not isinstance(grammar, Grammar):
                raise GrammarError(f"a body must be a Grammar, not {type(grammar).__name__}")
        ir = triggered_ir([(t, g.ir) for t, g in pairs], after=after, at_least_one=at_least_one)
        return cls(ir, source=json.dumps({"triggered": [str(t) for t, _ in pairs],
                                          "after": after, "at_least_one": at_least_one}))

    def __repr__(self) -> str:
        ir = self.ir
        return (f"Grammar(start={ir.nonterminals[ir.start]!r}, {len(ir.rules)} rules, "
                f"{ir.num_terminals} terminals)")
