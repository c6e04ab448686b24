"""JSON Schema `format` (asserted by default): each enforced format against the oracle's own
checker (`jsonschema` with the format-nongpl extra, through `JsonSchemaOracle`), through a real
`Matcher`: hand-written strings, strings generated from the format's pattern and mutations of
them, walks through the masks; the refused formats; `formats="annotation"` and the cache.
"""

from __future__ import annotations

import json
import random
import re
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide import Grammar, Matcher
from jaxguide.grammars.json_schema import JsonSchemaError, automata
from jaxguide.grammars.json_schema.formats import (
    _NON_ASCII,
    _PRIVATE_ALL,
    _UCS_ALL,
    _UCS_BMP,
    FORMATS,
    REFUSED,
)
from jaxguide.testing import JsonSchemaOracle, check_soundness

_COMPILED: dict[str, jaxguide.CompiledGrammar] = {}
_ORACLES: dict[str, JsonSchemaOracle] = {}


def schema_of(name: str) -> dict:
    return {"type": "string", "format": name}


def compiled(name: str, **options) -> jaxguide.CompiledGrammar:
    key = json.dumps([name, options])
    if key not in _COMPILED:
        grammar = Grammar.from_json_schema(schema_of(name), **options)
        _COMPILED[key] = jaxguide.compile_grammar(grammar, real_tokenizer("llama3_tiktoken"))
    return _COMPILED[key]


def accepts(name: str, value: str, ensure_ascii: bool = True, **options) -> bool:
    matcher = Matcher(compiled(name, **options))
    text = json.dumps(value, ensure_ascii=ensure_ascii)
    return matcher.accept_bytes(text.encode()) and matcher.is_accepting()


def oracle_valid(name: str, value: str) -> bool:
    if name not in _ORACLES:
        _ORACLES[name] = JsonSchemaOracle(schema_of(name))
    return _ORACLES[name].check(json.dumps(value)) is None


# name: (valid strings, accepted; invalid strings, rejected). The MaskBench negatives that
# were accepted while formats were annotations are among the invalid ones.
CASES = {
    "date": (["2024-02-29", "0001-01-01", "9999-12-31", "2000-02-29"],
             ["2023-02-29", "2024-13-01", "0000-01-01", "2024-1-01", "2024-02-30", "1900-02-29"]),
    "time": (["23:59:59Z", "00:00:00.123+05:30", "10:20:30z", "12:00:00-23:59"],
             ["23:59:60Z", "23:59:60+00:00", "24:00:00Z", "10:20:30", "12:00:00", "1:20:30Z",
              "10:20:30+24:00"]),
    "date-time": (["2024-05-01T10:20:30Z", "2024-05-01t10:20:30.5-01:00"],
                  ["2024-05-01 10:20:30Z", "2016-12-31T23:59:60Z", "2024-05-01T10:20:30",
                   "2022-01-01T12:00:00"]),
    "duration": (["P1Y2M3DT4H5M6S", "P3W", "PT0S", "P1D", "PT36H", "P1M"],
                 ["P", "PT", "P1YT", "1Y", "P1H", "PT1D", ""]),
    "email": (["a.b@example.com", "x+y@h", '"john doe"@example.com', "a@[192.168.0.1]",
               "o'hara@example.co.uk", "a" * 64 + "@b.c", "a." * 63 + "a@b"],
              ["no-at-sign", ""]),
    "idn-email": (["用户@例子.广告", "a@b", "josé@exämple.com"], ["plain"]),
    "hostname": (["example.com", "a-b.c", "example.com.", "1.2.3.4", "x" * 63, "xn--bcher-kva.ch",
                  "a.b.c.d.e.f.g.h", ("a" * 63 + ".") * 3, ".".join(["ab"] * 84)],
                 ["-a.com", "a-.com", "a..b", "", ".", "a" * 64, "exa_mple.com", "a b",
                  ".".join(["a" * 63] * 4), ".".join(["ab"] * 85)]),
    "host-name": (["example.com"], ["-a.com"]),
    "ipv4": (["192.168.0.1", "0.0.0.0", "255.255.255.255"],
             ["256.1.1.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", " 1.2.3.4"]),
    "ip-address": (["10.0.0.1"], ["10.0.0.01"]),
    "ipv6": (["::1", "::", "2001:db8::ff00:42:8329", "::ffff:1.2.3.4", "1:2:3:4:5:6:7::",
              "1:2:3:4:5:6:7:8", "1::"],
             ["1:2:3:4:5:6:7:8:9", ":::", "1::2::3", "::1.2.3.04", "fe80::1%eth0", "12345::",
              "1:2:3:4:5:6:7::8", ""]),
    "uuid": (["123e4567-e89b-12d3-a456-426614174000", "00000000-0000-0000-0000-000000000000"],
             ["123e4567e89b12d3a456426614174000", "g23e4567-e89b-12d3-a456-426614174000"]),
    "uri": (["https://example.com/a?b=c", "urn:isbn:1", "mailto:a@b", "http://[::1]:80/",
             "file:///x", "http://[v1.x]/"],
            ["//example.com", "://", "a b:c", "http://exa mple.com", "invalid-uri", "1a:b",
             "http://%zz/"]),
    "uri-reference": (["//example.com/x", "../a/b", "#frag", "", "?q", "http://x", "a/b:c"],
                      ["://", "a b", ":a", "%zz", "Invalid URI Reference :", " invalid_uri",
                       "!not a uri-reference!", "invalid Id"]),
    "iri": (["http://例子.测试/路径?q=值#f", "urn:x", "http://[1:2:3:4:5:6:7::]/"],
            ["http://[::1]/", "a b", "//x", "not-an-iri", "http://a/\U0001F600"]),
    "iri-reference": (["//例子/x", "路径/a", "#f", "", "?\ue000"],
                      [":x", "a b", "#\ue000"]),
    "uri-template": (["http://example.com/{user}/{+path:6}{?q,lang*}", "{#x}", "plain",
                      "{a.b,c%41}", "{x:999}", "{;x,y}{&z}{.d}{/p*}", "%41{x}"],
                     ["http://example.com/{", "{}", "{=x}", "{x:0}", "{x:1000}", "}{", "{%41}",
                      "{x:3*}", "{x y}"]),
    "json-pointer": (["", "/", "/a~0b/c~1d", "/ü/0", "//"], ["a", "/~", "/~2", "#/a", "/a~"]),
    "relative-json-pointer": (["0", "1/a", "0#", "10/b~0", "0/", "1230#"],
                              ["", "/a", "01", "-1", "0##", "#", "1#/a", "00", "100", "101/a"]),
    "color": (["#fff", "#A0B1C2", "Red", "aliceBlue", "YELLOWGREEN"],
              ["#ffff", "rgb(0,0,0)", "reddish", "fff", ""]),
}

# Valid for the oracle, rejected by design: where the checker is looser than the RFC (see
# `formats`' design note), or hostnames beyond every length tier.
STRICTER = {
    "duration": ["P1.5D", "P1,5D"],
    "email": ["@", "a@", "a b@c", ".a@b.c", "a@[IPv6:::1]"],
    "idn-email": ["@"],
    "hostname": ["a" * 63 + ".b.c.d", "a" * 60 + "\n"],
    "uuid": ["123e4567-e89b-12d3-a456-4266-14174000"],
    "uri": ["http://[::1.2.3.04]/", "http://x\n"],
    "uri-template": ["{x=1}", "a b", "{,x}", "{x:01}", "{x/y}", "{x,}"],
    "relative-json-pointer": ["\u0663"],
    "color": ["blac\u212a"],
    "time": ["10:20:30Z\n"],
}


def test_every_enforced_format_is_tested():
    assert set(CASES) == set(FORMATS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_hand_written_strings(name):
    good, bad = CASES[name]
    for value in good:
        assert oracle_valid(name, value), value  # the table itself is right
        assert accepts(name, value), value
        assert accepts(name, value, ensure_ascii=False), value
    for value in bad:
        assert not oracle_valid(name, value), value
        assert not accepts(name, value), value
    for value in STRICTER.get(name, ()):
        assert oracle_valid(name, value), value
        assert not accepts(name, value), value


def _ends_and_middles(ranges: str) -> str:
    """A class of `lo-hi` ranges narrowed to each range's two ends and middle."""
    assert len(ranges) % 3 == 0 and ranges[1::3] == "-" * (len(ranges) // 3), ranges
    return "".join(lo + chr((ord(lo) + ord(hi)) // 2) + hi
                   for lo, hi in zip(ranges[0::3], ranges[2::3]))


def _body(name: str) -> str:
    """The format's pattern, unanchored for `st.from_regex`, with its classes of non-ASCII code
    points narrowed (hypothesis takes minutes over the whole range): idn-email's to a few, the
    IRI and URI-template ones to the ends and middle of each range."""
    pattern = FORMATS[name]
    assert pattern.startswith("^") and pattern.endswith("$")
    body = pattern[1:-1].replace(_NON_ASCII, "\u00e9\u4f8b")
    for ranges in (_UCS_ALL, _PRIVATE_ALL, _UCS_BMP):  # _UCS_BMP begins _UCS_ALL: longest first
        body = body.replace(ranges, _ends_and_middles(ranges))
    return body


# Where the oracle admits more than the RFC (`formats`' design note): only soundness is
# asserted for random strings (`oracle_only` says which strings are known to differ).
_LOOSER = {"duration", "email", "idn-email", "uuid", "uri-template"}


def _documented_gap(name: str, value: str) -> bool:
    if value.endswith("\n"):  # Python's `$` before a final newline in the checkers' regexes
        return True
    if name in ("hostname", "host-name"):
        return value.rstrip(".").count(".") >= 3  # beyond 3 labels: the length tiers
    if name in ("uri", "uri-reference"):
        return "[" in value  # dotted quads with leading zeros in an IPv6 literal
    if name == "relative-json-pointer":
        return not value[:1].isascii()
    if name == "color":
        return "\u212a" in value
    return False


_ALPHABET = "aZ09-._~:/?#[]@!$&'()*+,;=%{}\"\\ \nTZ+é例\U0001F600\ue000^|`<>"


def _mutate(rng: random.Random, value: str) -> str:
    chars = list(value)
    for _ in range(rng.randint(1, 3)):
        op = rng.random()
        at = rng.randint(0, len(chars))
        if op < 0.4 or not chars:
            chars.insert(at, rng.choice(_ALPHABET))
        elif op < 0.7:
            del chars[min(at, len(chars) - 1)]
        else:
            chars[min(at, len(chars) - 1)] = rng.choice(_ALPHABET)
    return "".join(chars)


@pytest.mark.parametrize("name", sorted(FORMATS))
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_generated_and_mutated_strings_agree_with_the_oracle(name, data):
    value = data.draw(st.from_regex(re.compile(_body(name)), fullmatch=True))
    assert oracle_valid(name, value), value
    assert accepts(name, value), value
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    for _ in range(8):
        mutant = _mutate(rng, value)
        ours, theirs = accepts(name, mutant), oracle_valid(name, mutant)
        if ours:
            assert theirs, mutant  # soundness, always
        elif theirs and name not in _LOOSER:
            assert _documented_gap(name, mutant), mutant


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_walks_through_the_masks_are_valid(name):
    schema = {"type": "array", "items": schema_of(name), "maxItems": 3}
    grammar = Grammar.from_json_schema(schema)
    compiled_grammar = jaxguide.compile_grammar(grammar, real_tokenizer("llama3_tiktoken"))
    report = check_soundness(compiled_grammar, JsonSchemaOracle(schema), walks=24, seed=name)
    assert not report.invalid, report.invalid[0].describe(compiled_grammar)
    assert not report.dead_ends and not report.blocked
    assert not report.notes  # every format the oracle checks is enforced
    assert report.eos_walks >= 6


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_formats_are_errors_naming_the_format(name):
    with pytest.raises(JsonSchemaError, match=f"format.*{name}") as e:
        Grammar.from_json_schema({"type": "object", "properties": {"x": schema_of(name)}})
    assert e.value.pointer == "/properties/x" and e.value.keyword == "format"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Grammar.from_json_schema(schema_of(name), lenient=True)
    assert any(name in str(w.message) for w in caught)


def test_refused_formats_check_enum_values_exactly():
    grammar = Grammar.from_json_schema({"enum": ["a+", "[", "(x)"], "format": "regex"})
    compiled_grammar = jaxguide.compile_grammar(grammar, real_tokenizer("llama3_tiktoken"))
    for text, valid in (('"a+"', True), ('"["', False), ('"(x)"', True)):
        matcher = Matcher(compiled_grammar)
        assert (matcher.accept_bytes(text.encode()) and matcher.is_accepting()) == valid


def test_unknown_formats_are_annotations():
    for name in ("int32", "utc-millisec", "x-custom"):
        assert accepts(name, "anything at all")


def test_annotation_mode_enforces_no_format():
    assert not accepts("date", "2023-02-29")
    assert accepts("date", "2023-02-29", formats="annotation")
    assert accepts("ipv4", "not an address", formats="annotation")
    for name in REFUSED:  # not refused either
        assert accepts(name, "[", formats="annotation")
    enum = {"enum": ["2024-01-01", "soon"], "format": "date"}
    for mode, kept in (("assert", 1), ("annotation", 2)):
        grammar = Grammar.from_json_schema(enum, formats=mode)
        compiled_grammar = jaxguide.compile_grammar(grammar, real_tokenizer("llama3_tiktoken"))
        matcher = Matcher(compiled_grammar)
        ok = matcher.accept_bytes(b'"soon"') and matcher.is_accepting()
        assert ok == (kept == 2)


def test_the_schema_cache_tells_the_modes_apart():
    schema = {"type": "string", "format": "uuid"}
    asserted = Grammar.from_json_schema(schema)
    annotated = Grammar.from_json_schema(schema, formats="annotation")
    assert asserted.ir != annotated.ir
    assert Grammar.from_json_schema(schema).ir is asserted.ir
    assert Grammar.from_json_schema(schema, formats="annotation").ir is annotated.ir
    assert Grammar.from_json_schema(schema, formats="assert").ir is asserted.ir


@pytest.mark.parametrize("bad", ["Assert", "ignore", None, 1])
def test_bad_formats_option(bad):
    with pytest.raises(JsonSchemaError, match="formats must be one of assert, annotation"):
        Grammar.from_json_schema({"type": "string"}, formats=bad)


@pytest.mark.parametrize("name", ["email", "idn-email"])
def test_email_with_a_long_max_length_compiles(name):
    schema = {"type": "string", "format": name, "maxLength": 1024}
    grammar = Grammar.from_json_schema(schema)
    compiled_grammar = jaxguide.compile_grammar(grammar, real_tokenizer("llama3_tiktoken"))
    for value, valid in (("a@b.c", True), ("a" * 64 + "@b.c", True), ("a" * 65 + "@b.c", False),
                         ("a." * 63 + "a@b", True), ("a@" + ".".join(["a" * 63] * 4), False)):
        matcher = Matcher(compiled_grammar)
        text = json.dumps(value).encode()
        assert (matcher.accept_bytes(text) and matcher.is_accepting()) == valid, value
        assert accepts(name, value)  # no maxLength: the plain pattern
    report = check_soundness(compiled_grammar, JsonSchemaOracle(schema), walks=24, seed=name)
    assert not report.invalid and report.eos_walks >= 6
    with pytest.raises(JsonSchemaError, match="maxLength"):
        Grammar.from_json_schema({"type": "string", "format": "email", "maxLength": 100})


# format together with pattern: the product automaton, written back as one pattern.
INTERSECTIONS = [
    ({"format": "date", "pattern": "^2024-"}, ["2024-02-29", "2024-12-31"],
     ["2023-01-01", "2024-02-30", "2024-"]),
    ({"format": "uuid", "pattern": "^[0-9a-f-]+$"}, ["123e4567-e89b-12d3-a456-426614174000"],
     ["123E4567-E89B-12D3-A456-426614174000", "123e4567"]),
    ({"format": "date-time", "pattern": "Z$"}, ["2024-05-01T10:20:30Z"],
     ["2024-05-01T10:20:30z", "2024-05-01T10:20:30+01:00", "Z"]),
    ({"format": "ipv4", "pattern": "^10\\."}, ["10.0.0.1", "10.255.3.4"],
     ["11.0.0.1", "10.0.0.01", "10."]),
    # their product's regex is too large to write: the lexer's lookahead product
    ({"format": "uri", "pattern": "^https:"}, ["https://example.com/a?b=1#c", "https:x"],
     ["http://example.com", "https://exa mple.com", "https"]),
]


@pytest.mark.parametrize("schema,good,bad", INTERSECTIONS)
def test_format_together_with_pattern(schema, good, bad):
    schema = {"type": "string", **schema}
    grammar = Grammar.from_json_schema(schema)
    compiled_grammar = jaxguide.compile_grammar(grammar, real_tokenizer("llama3_tiktoken"))
    oracle = JsonSchemaOracle(schema)
    for value, valid in [(v, True) for v in good] + [(v, False) for v in bad]:
        matcher = Matcher(compiled_grammar)
        text = json.dumps(value)
        assert (oracle.check(text) is None) == valid, value
        assert (matcher.accept_bytes(text.encode()) and matcher.is_accepting()) == valid, value
    report = check_soundness(compiled_grammar, oracle, walks=24, seed=json.dumps(schema))
    assert not report.invalid, report.invalid[0].describe(compiled_grammar)
    assert report.eos_walks >= 6


def test_format_and_pattern_without_common_strings_admit_no_string():
    schema = {"type": ["string", "null"], "format": "uri", "pattern": "^git@heroku"}
    compiled_grammar = jaxguide.compile_grammar(Grammar.from_json_schema(schema),
                                                real_tokenizer("llama3_tiktoken"))
    for text, valid in (('"git@heroku.com:x.git"', False), ("null", True)):
        matcher = Matcher(compiled_grammar)
        assert (matcher.accept_bytes(text.encode()) and matcher.is_accepting()) == valid


def test_a_product_too_large_is_refused_naming_format(monkeypatch):
    monkeypatch.setattr(automata, "MAX_INTERSECTION_STATES", 8)
    jaxguide.clear_caches()
    try:
        with pytest.raises(JsonSchemaError, match="together with pattern: their product") as e:
            Grammar.from_json_schema({"type": "string", "format": "uri", "pattern": "^https:"})
        assert e.value.keyword == "format"
    finally:
        jaxguide.clear_caches()
