"""Triggered constraints (`Grammar.triggered`, issue #25 item 2): masks equal a brute-force
oracle written from the definition over a small vocabulary (free text untouched, only tokens
that complete a trigger and go on with bytes the body forbids are masked), special-token
triggers, JSON bodies validated by jsonschema on random walks, and the errors."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.call_walks import walk_opened_calls
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide import (
    Grammar,
    GrammarError,
    Matcher,
    SpecialToken,
    TokenizerInfo,
    compile_grammar,
)
from jaxguide.testing import TriggeredOracle, json_body

EOS = b"<eos>"


def _utf8_ok(data: bytes, complete: bool) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError as e:
        return (not complete and e.reason == "unexpected end of data"
                and e.start >= len(data) - 3)


def viable(data: bytes, bodies: dict[bytes, list[bytes]], after: str, at_least_one: bool,
           complete: bool) -> bool:
    """Whether `data` is a prefix (complete: a sentence) of the triggered language, read from
    its definition: free text up to the earliest-ending trigger, then one of its body strings,
    then free text again (after="free") or the end (after="stop")."""
    if at_least_one and not any(data.startswith(t) for t in bodies):
        return not complete and any(t.startswith(data) for t in bodies)

    def scan(pos: int, calls: int) -> bool:
        ends = [(data.find(t, pos) + len(t), t) for t in bodies if data.find(t, pos) >= 0]
        if calls and after == "stop":
            return pos == len(data)
        if not ends:
            return _utf8_ok(data[pos:], complete)
        end, trigger = min(ends)
        if not _utf8_ok(data[pos:end - len(trigger)], True):
            return False
        rest = data[end:]
        for body in bodies[trigger]:
            if rest.startswith(body) and scan(end + len(body), calls + 1):
                return True
            if not complete and len(rest) < len(body) and body.startswith(rest):
                return True
        return False

    return scan(0, 0)


def small_vocabulary(strings: list[str], rng: random.Random) -> list[bytes]:
    singles = [bytes([b]) for b in b"ab<>12x _{}"] + ["é".encode()[:1], "é".encode()[1:]]
    pieces = {s.encode()[i:j] for s in strings for i in range(len(s))
              for j in range(i + 1, len(s) + 1)}
    joined = {rng.choice(singles) + rng.choice(sorted(pieces) or singles) for _ in range(60)}
    joined |= {p + q for p in pieces for q in singles if rng.random() < 0.2}
    return sorted(set(singles) | {"é".encode()} | pieces | joined)


def check_masks(bodies: dict[str, list[str]], seed, after="free", at_least_one=False,
                walks=4, steps=16) -> int:
    """Walks the masks of Grammar.triggered(...) at random; every mask must equal the oracle's.
    Returns how many triggers the walks completed."""
    rng = random.Random(seed)
    grammar = Grammar.triggered({t: Grammar.choice(b) for t, b in bodies.items()},
                                after=after, at_least_one=at_least_one)
    strings = list(bodies) + [s for b in bodies.values() for s in b]
    vocab = small_vocabulary(strings, rng)
    info = TokenizerInfo.from_token_bytes(vocab + [b""], eos_token_ids=[len(vocab)])
    compiled = compile_grammar(grammar, info)
    byte_bodies = {t.encode(): [s.encode() for s in b] for t, b in bodies.items()}
    bitmask = jaxguide.allocate_token_bitmask(1, info.logits_width)
    triggered = 0
    for _ in range(walks):
        matcher, prefix = Matcher(compiled), b""
        for _ in range(steps):
            matcher.fill_next_token_bitmask(bitmask)
            bits = np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")[:len(vocab) + 1]
            expected = [viable(prefix + t, byte_bodies, after, at_least_one, False)
                        for t in vocab]
            expected.append(viable(prefix, byte_bodies, after, at_least_one, True))
            wrong = [(vocab + [EOS])[i] for i in range(len(expected)) if bits[i] != expected[i]]
            assert not wrong, (prefix, [(w, bool(expected[(vocab + [EOS]).index(w)]))
                                        for w in wrong[:8]])
            allowed = [i for i in range(len(vocab)) if bits[i]]
            if not allowed:
                break
            # prefer the tokens that advance a trigger or body, so walks go through them
            useful = [i for i in allowed if any(s.encode().startswith(vocab[i]) or
                                                vocab[i] in s.encode() for s in strings)]
            token = rng.choice(useful if useful and rng.random() < 0.7 else allowed)
            assert matcher.accept_token(token)
            prefix += vocab[token]
        triggered += sum(prefix.count(t.encode()) for t in bodies)
    return triggered


@pytest.mark.parametrize("after", ["free", "stop"])
@pytest.mark.parametrize("at_least_one", [False, True])
def test_masks_match_the_oracle(after, at_least_one):
    bodies = {"<a>": ["1", "22", "x{}"], "b_": ["2>", "1"]}
    triggered = sum(check_masks(bodies, seed=f"{after}{at_least_one}{k}", after=after,
                                at_least_one=at_least_one) for k in range(4))
    assert triggered >= 4


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text("ab<>", min_size=1, max_size=3), min_size=1, max_size=3, unique=True),
       st.lists(st.lists(st.text("ab12>", max_size=3), min_size=1, max_size=3),
                min_size=3, max_size=3),
       st.sampled_from(["free", "stop"]), st.booleans(), st.integers(0, 1000))
def test_masks_match_the_oracle_property(triggers, bodies, after, at_least_one, seed):
    """Random triggers and bodies. Bodies are prefix-free (no string a proper prefix of
    another: a body's last lexeme is maximal munch, see Grammar.triggered)."""
    triggers = [t for t in triggers if not any(o != t and o in t for o in triggers)]
    bodies = [[s for s in b if not any(o != s and o.startswith(s) for o in b)] for b in bodies]
    check_masks({t: b for t, b in zip(triggers, bodies)}, seed, after, at_least_one,
                walks=2, steps=12)


def byte_tokenizer(specials=()) -> TokenizerInfo:
    vocab = [bytes([b]) for b in range(256)] + [b""] * (1 + len(specials))
    names = {257 + k: name for k, name in enumerate(specials)}
    return TokenizerInfo(vocab, eos_token_ids=[256], special_token_names=names)


def test_tokens_across_the_trigger_boundary():
    body = Grammar.from_json_schema({"type": "integer"})
    vocab = [b"hi <to", b"ol>", b"ol>7", b"ol>x", b"ol> 7", b"7", b"x", b"<tool>", b""]
    info = TokenizerInfo.from_token_bytes(vocab, eos_token_ids=[8])
    compiled = compile_grammar(Grammar.triggered(["<tool>"], body), info)
    matcher = Matcher(compiled)
    assert matcher.accept_token(0)  # free text and the start of the trigger in one token
    assert [matcher.is_token_allowed(i) for i in range(4)] == [True, True, True, False]
    assert not matcher.is_token_allowed(4) and matcher.is_token_allowed(8)  # EOS: free text
    assert matcher.accept_token(2) and matcher.is_accepting()  # EOS after a complete body
    assert matcher.accept_token(6) and matcher.is_accepting()  # free text again
    assert matcher.accept_token(7) and not matcher.is_accepting()


def test_special_token_triggers():
    info = byte_tokenizer(["<|python_tag|>"])
    grammar = Grammar.triggered([SpecialToken("<|python_tag|>")],
                                Grammar.from_regex(r"[0-9]+;"), after="stop")
    compiled = compile_grammar(grammar, info)
    matcher = Matcher(compiled)
    assert matcher.accept_bytes(b"free <|python_tag|> text ") and matcher.is_accepting()
    assert matcher.accept_token(257) and not matcher.is_accepting()  # by id, never by bytes
    assert not matcher.is_token_allowed(ord("x")) and not matcher.is_token_allowed(257)
    assert matcher.accept_bytes(b"42;") and matcher.is_accepting()
    assert not matcher.is_token_allowed(ord(" "))  # after="stop": the output ends
    required = compile_grammar(Grammar.triggered([SpecialToken("<[257]>")],
                                                 Grammar.from_regex("x"), at_least_one=True),
                               info)
    matcher = Matcher(required)
    assert not matcher.is_accepting() and not matcher.is_token_allowed(ord("a"))
    assert matcher.accept_token(257) and matcher.accept_bytes(b"x") and matcher.is_accepting()
    with pytest.raises(GrammarError, match="python_tag"):
        compile_grammar(grammar, byte_tokenizer())


def test_body_with_ignore_stays_local():
    body = Grammar.from_lark('start: "f" "(" ")"\n%ignore " "\n')
    compiled = compile_grammar(Grammar.triggered(["@"], body), byte_tokenizer())
    matcher = Matcher(compiled)
    assert matcher.accept_bytes(b"a  b @ f ( ) c  d") and matcher.is_accepting()
    assert not Matcher(compiled).accept_bytes(b"@g")


@pytest.mark.parametrize("kwargs, match", [
    ({"triggers": [], "body": Grammar.from_regex("x")}, "at least one trigger"),
    ({"triggers": [""], "body": Grammar.from_regex("x")}, "empty"),
    ({"triggers": ["<a>", "<a>"], "body": Grammar.from_regex("x")}, "repeated"),
    ({"triggers": ["<ab>", "ab"], "body": Grammar.from_regex("x")}, "contains"),
    ({"triggers": "<a>", "body": Grammar.from_regex("x")}, "sequence"),
    ({"triggers": ["<a>"]}, "needs body"),
    ({"triggers": {"<a>": Grammar.from_regex("x")}, "body": Grammar.from_regex("x")}, "both"),
    ({"triggers": ["<a>"], "body": "x"}, "must be a Grammar"),
    ({"triggers": [3], "body": Grammar.from_regex("x")}, "str or a SpecialToken"),
    ({"triggers": ["<a>"], "body": Grammar.from_regex("x"), "after": "later"}, "after"),
])
def test_errors(kwargs, match):
    with pytest.raises(GrammarError, match=match):
        Grammar.triggered(**kwargs)


WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
                                            "unit": {"enum": ["C", "F"]}},
           "required": ["city"], "additionalProperties": False}
TIME = {"type": "object", "properties": {"zone": {"type": "string", "pattern": "^[A-Z]{3}$"}},
        "required": ["zone"], "additionalProperties": False}


@pytest.mark.parametrize("after", ["free", "stop"])
def test_json_body_walks_validate(after):
    """Two triggers with their own JSON bodies (closed by a tag: `%json` in Lark); walks from
    prefixes that open a call; every finished text split at the triggers validates."""
    info = real_tokenizer("llama3_tiktoken")
    tools = {"<weather>": WEATHER, "<time>": TIME}
    grammar = Grammar.triggered(
        {t: Grammar.from_lark(f'start: %json {json.dumps(s)} "</call>"')
         for t, s in tools.items()}, after=after)
    compiled = compile_grammar(grammar, info)
    oracle = TriggeredOracle({t: json_body(s, end="</call>") for t, s in tools.items()},
                             after=after)
    finished, calls = walk_opened_calls(
        compiled, info, oracle, seed=after, walks=30, rounds=2 if after == "free" else 1,
        first=lambda rng: rng.choice(["", "So ", "a<b "]) + rng.choice(list(tools)),
        again=lambda rng: rng.choice(list(tools)), marker="</call>")
    assert finished >= 25 and calls >= finished, (finished, calls)


def test_the_oracle_rejects_what_it_must():
    oracle = TriggeredOracle({"<t>": json_body(TIME, end="</t>")}, after="stop")
    assert oracle.check('x <t>{"zone": "UTC"}</t>') is None
    assert oracle.check("no call") is None
    assert oracle.check('<t>{"zone": "utc"}</t>') is not None
    assert oracle.check('<t>{"zone": "UTC"}</t> more') is not None
    assert oracle.check('<t>{"zone": "UTC"}') is not None
    assert viable(b"x<a", {b"<a>": [b"1"]}, "free", False, True)
    assert not viable(b"x<a>2", {b"<a>": [b"1"]}, "free", False, False)
    assert not viable(b"x<a>", {b"<a>": [b"1"]}, "free", False, True)
