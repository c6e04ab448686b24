"""Triggered (lazy) constraints: free text until a trigger, then a grammar, then free again.

Design note. `triggered_ir` lowers "text is free until a trigger string (or special token) is
produced, then the trigger's body grammar is enforced, then text is free again (or the output
ends)" to one ordinary grammar, so the matcher's masks stay exact with no special machinery:

  start  -> calls FREE?                  (after="free"; after="stop": FREE? | call)
  calls  -> <empty> | calls call         (at_least_one: start -> first calls FREE? / first)
  call   -> PRE_i body_i                 one per trigger i (a special token: FREE? SPECIAL_i)
  first  -> TRIGGER_i body_i             (the output starts with a trigger, no free text)

PRE_i is the terminal of "free text, up to and including the first trigger occurrence, which
is T_i": the strings that end with T_i and in which no trigger occurrence ends earlier. FREE is
the maximal-munch terminal of non-empty text that contains no trigger (so EOS is allowed in free
text). Both are exact complements, computed as automata (`json_schema.automata.Dfa`: the product
of "ends with T_i" and "a trigger occurs before the last character", then state elimination into
a Python regex over code points). PRE_i's language is prefix-free (a longer string would contain
T_i before its end), so its lexeme ends exactly where the trigger completes: a token that spans
free text and the first bytes of a trigger is allowed, one that completes the trigger and goes
on with bytes the body forbids is not, and free text is otherwise untouched. A trigger may not
contain another one (the first trigger to complete would be ambiguous). Special-token triggers
are matched by token id (`TerminalIR.special`), never by bytes.

Cost: the automaton has at most sum(len(T)) + 1 reachable states per component (an Aho-Corasick
automaton); it and the regex written from it are capped (`MAX_TRIGGER_STATES`,
`MAX_TRIGGER_REGEX`): beyond, a GrammarError. Bodies are embedded with `ir_compose` (their
`%ignore` localized to their own rules), or add their rules to the caller's builder (tool
calls: `tool_calls.EmitterBuilder`, the JSON Schema emitter their schemas are lowered into).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence

from jaxguide.errors import GrammarError
from jaxguide.grammars.ir import GrammarIR, TerminalIR
from jaxguide.grammars.ir_compose import IrBuilder, Sym, localize_ignore
from jaxguide.grammars.json_schema.automata import Dfa
from jaxguide.grammars.json_schema.pattern import PatternError
from jaxguide.grammars.json_schema.units import (
    ALL_CHARS,
    SURROGATES,
    char_class,
    complement,
    intersect,
)

# The product automaton of one trigger terminal (states) and the regex written from it
# (characters); see the module note.
MAX_TRIGGER_STATES = 4096
MAX_TRIGGER_REGEX = 200_000
AFTER_MODES = ("free", "stop")
_NOTHING = r"[^\s\S]"  # the regex of a special-token terminal (matched by id only)


@dataclasses.dataclass(frozen=True)
class SpecialToken:
    """A special token named as a trigger (`SpecialToken("<|python_tag|>")`), matched by its
    token id (the tokenizer must have a special token of that name), never by bytes."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise GrammarError("a SpecialToken needs a non-empty name")


Trigger = str | SpecialToken


def _literal(text: str):
    return ("cat", [("set", ((ord(c), ord(c)),)) for c in text])


_ANY = ("set", ALL_CHARS)
_ANY_STAR = ("rep", _ANY, 0, None)


def _unit(ranges) -> str | None:
    ranges = intersect(ranges, complement(SURROGATES))
    return char_class(ranges) if ranges else None


@functools.lru_cache(maxsize=256)
def _automaton_regex(nodes: tuple, accept_index: int) -> str | None:
    """The regex of the strings accepted by component `accept_index` of the product of `nodes`
    and by none of the others (None: no string)."""
    try:
        dfa = Dfa(list(nodes), MAX_TRIGGER_STATES)
        regex = dfa.regex(lambda accepts: accepts[accept_index] and not any(
            a for k, a in enumerate(accepts) if k != accept_index), _unit)
    except PatternError as e:
        raise GrammarError(f"triggers too large for their automaton ({e}; at most "
                           f"{MAX_TRIGGER_STATES} states)") from None
    if regex is not None and len(regex) > MAX_TRIGGER_REGEX:
        raise GrammarError(f"triggers too large: their free-text regex has {len(regex)} "
                           f"characters (at most {MAX_TRIGGER_REGEX})")
    return regex


def _to_node(value):
    """Hashable form of an automaton node (lists -> tuples), for the memo."""
    if isinstance(value, (list, tuple)):
        return tuple(_to_node(v) for v in value)
    return value


def free_text_regex(triggers: Sequence[str]) -> str:
    """Regex of the non-empty strings that contain none of `triggers` (all text if none)."""
    if not triggers:
        return r"(?s:.+)"
    occurs = ("cat", [_ANY_STAR, ("alt", [_literal(t) for t in triggers]), _ANY_STAR])
    nonempty = ("rep", _ANY, 1, None)
    regex = _automaton_regex(_to_node((nonempty, occurs)), 0)
    return regex if regex is not None else _NOTHING


def up_to_trigger_regex(trigger: str, triggers: Sequence[str]) -> str:
    """Regex of the strings that end with `trigger` in which no trigger occurrence ends
    before the last character."""
    ends_with = ("cat", [_ANY_STAR, _literal(trigger)])
    earlier = ("cat", [_ANY_STAR, ("alt", [_literal(t) for t in triggers]), _ANY, _ANY_STAR])
    regex = _automaton_regex(_to_node((ends_with, earlier)), 0)
    assert regex is not None  # the trigger itself is such a string
    return regex


def check_triggers(triggers: Sequence[Trigger]) -> None:
    """Raises GrammarError for an empty, repeated or wrongly typed trigger, or a string
    trigger that contains another."""
    if not triggers:
        raise GrammarError("a triggered grammar needs at least one trigger")
    for t in triggers:
        if not isinstance(t, (str, SpecialToken)):
            raise GrammarError(f"a trigger is a str or a SpecialToken, not {type(t).__name__}")
        if t == "":
            raise GrammarError("a trigger may not be empty")
    if len(set(triggers)) != len(triggers):
        raise GrammarError(f"repeated trigger among {list(triggers)!r}")
    texts = [t for t in triggers if isinstance(t, str)]
    for a in texts:
        for b in texts:
            if a != b and b in a:
                raise GrammarError(f"trigger {a!r} contains trigger {b!r} (which would always "
                                   "complete first)")


def _first_symbols(builder: IrBuilder, trigger: Trigger, texts: list[str]) -> tuple[Sym, Sym]:
    """(the terminal of free text then the trigger, the trigger alone) for one trigger."""
    if isinstance(trigger, SpecialToken):
        special = builder.terminal(TerminalIR(trigger.name, _NOTHING, special=trigger.name))
        free = builder.terminal(TerminalIR("FREE_TEXT", free_text_regex(texts)))
        pre = builder.nonterminal(f"free_then_{trigger.name}")
        builder.rule(pre, [special])
        builder.rule(pre, [free, special])
        return pre, special
    name = re.sub(r"\W", "_", trigger).upper()[:40]
    pre = builder.terminal(TerminalIR(f"UP_TO_{name}", up_to_trigger_regex(trigger, texts),
                                      lazy=True))
    return pre, builder.terminal(TerminalIR(f"TRIGGER_{name}", re.escape(trigger)))


def triggered_ir(bodies: Sequence[tuple[Trigger, GrammarIR | Callable[[IrBuilder], Sym]]], *,
                 after: str = "free",
                 at_least_one: bool = False, builder: IrBuilder | None = None) -> GrammarIR:
    """Lowers triggers and their bodies to one grammar (see the module note).

    Args:
      bodies: (trigger, the IR enforced right after it) pairs; triggers distinct. A body may
        also be a function that adds its rules to the builder and returns its start symbol
        (no copy of a large body IR).
      after: "free" (free text again after a body, more triggers possible) or "stop" (the
        output ends with the first body).
      at_least_one: the output starts with a trigger (no free text before it).
      builder: the builder to add the rules to (default: a new `IrBuilder`); one with the
        same methods (`tool_calls.EmitterBuilder`) takes bodies that are functions only.
    """
    triggers = [t for t, _ in bodies]
    check_triggers(triggers)
    if after not in AFTER_MODES:
        raise GrammarError(f"after must be one of {AFTER_MODES}, not {after!r}")
    texts = [t for t in triggers if isinstance(t, str)]
    builder = IrBuilder() if builder is None else builder
    call, first = builder.nonterminal("call"), builder.nonterminal("first_call")
    for k, (trigger, body) in enumerate(bodies):
        pre, alone = _first_symbols(builder, trigger, texts)
        body_start = body(builder) if callable(body) else builder.embed(localize_ignore(body),
                                                                         f"body{k}:")
        builder.rule(call, [pre, body_start])
        builder.rule(first, [alone, body_start])
    free = builder.optional(builder.terminal(TerminalIR("FREE_TEXT", free_text_regex(texts))),
                            "free_text")
    start = builder.nonterminal("start")
    if after == "stop":
        builder.rule(start, [first] if at_least_one else [free])
        if not at_least_one:
            builder.rule(start, [call])
        return builder.build(start)
    calls = builder.star(call, "calls")
    builder.rule(start, [first, calls, free] if at_least_one else [calls, free])
    return builder.build(start)
