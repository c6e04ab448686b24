"""The any-value rules, recorded once per set of options and replayed into each schema.

Design note. Any JSON value (`{}`, `true`: additionalProperties left open, items without a
schema) lowers to the same group of rules in every schema: they depend on the options
(whitespace, formats, complements, property order, the additionalProperties default, lenient)
and on the two dialect flags of the root's `$schema` that the normalizer reads, nothing else.
With a non-indented layout they form one self-recursive group (memo key ("any", 0)). Lowering
them through the normalizer costs about 150 us, a sixth of a typical schema's lowering.

`splice_any_value` emits them once into a scratch emitter (`Recording`: what that added, the
nonterminal names, the rules, the terminal keys in the order they were first asked for, the
memo entries, the depth reached) and replays the recording where the emitter would emit the
group itself: nonterminals numbered on from the emitter's (`v<n>` names renamed to their new
numbers), terminals asked for in the recorded order (new ones get the numbers they would have
got), rules appended through `Emitter.rule` (the rule budget applies), memo entries added. The
IR is the one the emitter would have built: the group's lowering reads no memo entry of the
schema's (a fresh emitter and the schema's emitter reach the same rules; tools/
grammar_fingerprints.py compares every MaskBench IR). Not used, so lowered as before: indented
layouts (one group per depth, sharing deeper groups with the schema), a recording that
changed other emitter or normalizer state (budgets, any-order objects), and a group that would
pass the nesting limit at that depth (the lowering then raises as before); a recording that
raised or warned is not kept either.

Kept across `clear_caches`: the recordings are keyed by options only, never by a schema's
content, like tables built into the front-end (at most a few per process, a few KB each).
"""

from __future__ import annotations

import re
import threading
import warnings
from typing import NamedTuple

from jaxguide.grammars.json_schema.limits import MAX_VALUE_NESTING

_VALUE_NAME = re.compile(r"v(\d+)")
_RECORDINGS: dict[tuple, Recording | None] = {}
_LOCK = threading.Lock()


class Recording(NamedTuple):
    nonterminals: tuple[str, ...]  # names, scratch numbering from 0 (the group's first)
    rules: tuple[tuple[int, tuple[int, ...]], ...]  # scratch symbols (terminal ~i: keys[i])
    terminal_keys: tuple  # by scratch terminal index
    terminal_order: tuple[int, ...]  # scratch terminal indices in the order first asked for
    memo: tuple[tuple, ...]  # (key, scratch nonterminal, schema)
    depth: int  # the deepest value reached below the group
    pointer: str  # where
    # per nonterminal: named for its own number (`v<i>`), so renamed for its place when spliced
    numbered: tuple[bool, ...] = ()


def _options(emitter) -> tuple:
    n = emitter.normalizer
    return (emitter.layout.mode, emitter.property_order, n.additional_default, n.lenient,
            n.formats, n.use_complements, n.old_draft, n.tuple_items)


def normalizer_state(normalizer) -> tuple:
    """What a recording must leave as it was: the normalizer's budgets and flags (its memos
    are pure caches and may fill)."""
    return (normalizer.digit_budget.left, normalizer.literal_context)


def record_terminal_order(scratch) -> dict[int, None]:
    """Makes `scratch` (an emitter) note each terminal it is asked for: the returned dict's
    keys are its terminal indices in the order first asked for (a recording's
    `terminal_order`)."""
    asked: dict[int, None] = {}
    plain_term = scratch.term

    def term(key):
        symbol = plain_term(key)
        asked.setdefault(~symbol)
        return symbol
    scratch.term = term
    return asked


def _record(emitter) -> Recording | None:
    """Lowers the group in a scratch emitter with the same options (None: not replayable)."""
    source = emitter.normalizer
    normalizer = type(source)(source.root if isinstance(source.root, bool) else
                            {k: v for k, v in source.root.items() if k == "$schema"},
                            source.additional_default, source.lenient, source.formats)
    normalizer.use_complements = source.use_complements
    scratch = type(emitter)(normalizer, emitter.layout, emitter.property_order)
    asked = record_terminal_order(scratch)
    before = (normalizer_state(normalizer), scratch.tracked_rules_left)
    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            scratch.emit_any_value(0)
    except Exception:  # noqa: BLE001 - lowered in place instead, which reports it
        return None
    if (warned or before != (normalizer_state(normalizer), scratch.tracked_rules_left)
            or scratch.keyed_objects or _options(scratch) != _options(emitter)):
        return None  # (a warning is due each time: lowered in place)
    return Recording(tuple(scratch.nonterminals), tuple(scratch.rules),
                     tuple(scratch.terminal_keys), tuple(asked),
                     tuple((key, nt, schema) for key, (nt, schema) in scratch.memo.items()),
                     scratch.deepest[0], scratch.deepest[1],
                     tuple(_numbered(name, i) for i, name in enumerate(scratch.nonterminals)))


def _numbered(name: str, index: int) -> bool:
    found = _VALUE_NAME.fullmatch(name)
    return bool(found) and int(found[1]) == index


def recording_for(emitter) -> Recording | None:
    """The group as `emitter`'s options lower it, recorded on first use (None: not
    replayable); not for indented layouts."""
    key = _options(emitter)
    recording = _RECORDINGS.get(key, False)
    if recording is False:
        with _LOCK:
            recording = _RECORDINGS.get(key, False)
            if recording is False:
                recording = _RECORDINGS[key] = _record(emitter)
    return recording


def splice_any_value(emitter, depth: int) -> int | None:
    """The group's nonterminal, replayed into `emitter` (see the design note); None where
    the emitter must lower it itself."""
    if emitter.layout.indented:
        return None
    recording = recording_for(emitter)
    if recording is None or depth + recording.depth > MAX_VALUE_NESTING:
        return None
    base = len(emitter.nonterminals)
    for i, name in enumerate(recording.nonterminals):
        emitter.new_nt(f"v{base + i}" if recording.numbered[i] else name)
    terminal = [0] * len(recording.terminal_keys)
    for i in recording.terminal_order:
        terminal[i] = emitter.term(recording.terminal_keys[i])
    for lhs, rhs in recording.rules:
        emitter.rule(lhs + base, [terminal[~s] if s < 0 else s + base for s in rhs])
    for key, nt, schema in recording.memo:
        emitter.memo[key] = (nt + base, schema)
    if depth + recording.depth > emitter.deepest[0]:
        emitter.deepest = (depth + recording.depth, recording.pointer)
    return base
