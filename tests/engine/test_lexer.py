"""Differential and property tests of the native regex lexer (native/lexer/) against Python `re`.

The oracle is Python's `re` on str patterns (`re.fullmatch`), which is what Lark terminals mean;
prefix viability is checked against a brute-force enumeration over a small alphabet. The
generated Unicode tables come from this same Python (see tools/gen_unicode_tables.py), so the
tests agree with it exactly, including IGNORECASE special cases (KELVIN SIGN, long s, ...).
"""

from __future__ import annotations

import itertools
import os
import random
import re

import lark
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from lark.load_grammar import load_grammar

import jaxguide
from jaxguide.engine.regex_lexer import RegexError, RegexLexer

SETTINGS = settings(max_examples=250, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

# Characters that exercise the interesting parts: ASCII, 2/3/4-byte UTF-8, case pairs Python
# treats specially (K / KELVIN SIGN, s / long s, sharp s and its capital, mu / micro), a
# non-ASCII decimal digit (Python's \d is Unicode), whitespace including \n and \x1c.
ALPHABET = ["a", "b", "k", "K", "\u212a", "s", "S", "\u017f", "\u00df", "\u1e9e", "\u00b5",
            "\u03bc", "\u00e9", "\u00c9", "\u20ac", "\U0001F600", "1", "\u0663", "_", " ", "\n",
            "\t", "\x1c", ".", "-", "x", "\u0130", "i"]
CLASS_ITEMS = ["a", "k", "a-f", "x-z", "\\d", "\\w", "\\s", "\\D", "\\W", "\u00e9-\u00fc",
               "\u00df", "\u212a", "0-9", "\U0001F600", "A-Z", "\\-", "\\n", "\u0100-\u017f",
               "\u20ac-\U0001F600", "s", "\\.", "_"]


def _literal(ch: str) -> str:
    return re.escape(ch)


atoms = st.one_of(
    st.sampled_from(ALPHABET).map(_literal),
    st.sampled_from([".", "\\d", "\\w", "\\s", "\\D", "\\W", "\\S"]),
    st.tuples(st.booleans(), st.lists(st.sampled_from(CLASS_ITEMS), min_size=1, max_size=3))
    .map(lambda t: "[" + ("^" if t[0] else "") + "".join(t[1]) + "]"),
)

QUANTIFIERS = ["*", "+", "?", "{2}", "{1,3}", "{0,2}", "{2,}", "*?", "+?", "??", "{1,2}?"]


def _extend(children):
    return st.one_of(
        st.lists(children, min_size=2, max_size=3).map("".join),
        st.lists(children, min_size=2, max_size=3).map("|".join).map(lambda s: f"(?:{s})"),
        st.tuples(children, st.sampled_from(QUANTIFIERS)).map(lambda t: f"(?:{t[0]}){t[1]}"),
        children.map(lambda s: f"({s})"),
        st.tuples(st.sampled_from(["i", "s", "-i"]), children).map(lambda t: f"(?{t[0]}:{t[1]})"),
    )


patterns = st.tuples(st.sampled_from(["", "(?i)", "(?s)", "(?is)"]),
                     st.recursive(atoms, _extend, max_leaves=6)).map("".join)
texts = st.lists(st.sampled_from(ALPHABET), max_size=7).map("".join)


def native_fullmatch(lexer: RegexLexer, text: str) -> bool:
    return lexer.fullmatch(0, text.encode("utf-8"))


@SETTINGS
@given(patterns, st.lists(texts, min_size=1, max_size=12))
def test_fullmatch_agrees_with_python_re(pattern, samples):
    try:
        compiled = re.compile(pattern)
    except re.error:
        assume(False)
    lexer = RegexLexer([pattern])
    # Also test strings Python itself says match, which random texts rarely hit.
    for text in samples:
        assert native_fullmatch(lexer, text) == (compiled.fullmatch(text) is not None), (
            pattern, text)


@SETTINGS
@given(patterns, st.data())
def test_strings_generated_from_pattern_match(pattern, data):
    try:
        re.compile(pattern)
    except re.error:
        assume(False)
    lexer = RegexLexer([pattern])
    try:
        # A bounded alphabet keeps hypothesis from testing every code point against each
        # class of the pattern (minutes for `\w`-like classes under (?i)).
        text = data.draw(st.from_regex(pattern, fullmatch=True,
                                       alphabet=st.characters(max_codepoint=0x3000)),
                         label="text")
    except Exception as e:  # noqa: BLE001 (narrowed below)
        # hypothesis refuses (InvalidArgument), trips on its own internal assertion
        # (AssertionError, e.g. for `K[^a\w\D]`) or, in newer versions, reports
        # IncompatibleWithAlphabet for patterns whose character class is empty such as
        # [^\d\D] or holds no character of the alphabet: no string to check.
        if not isinstance(e, (InvalidArgument, AssertionError)) and (
                type(e).__name__ != "IncompatibleWithAlphabet"):
            raise
        assume(False)
    assert native_fullmatch(lexer, text), (pattern, text)


# Prefix viability: patterns over {a, b, é} with bounded repetition only, so every match is at
# most max-width long and brute force over the alphabet is an exact oracle.
SMALL = ["a", "b", "\u00e9"]
small_atoms = st.one_of(
    st.sampled_from(SMALL),
    st.lists(st.sampled_from(SMALL), min_size=1, max_size=2).map(lambda c: "[" + "".join(c) + "]"),
)


def _extend_small(children):
    return st.one_of(
        st.lists(children, min_size=2, max_size=3).map("".join),
        st.lists(children, min_size=2, max_size=3).map("|".join).map(lambda s: f"(?:{s})"),
        st.tuples(children, st.sampled_from(["?", "{2}", "{0,2}", "{1,3}", "??"]))
        .map(lambda t: f"(?:{t[0]}){t[1]}"),
    )


small_patterns = st.recursive(small_atoms, _extend_small, max_leaves=5)


def _byte_prefixes(strings):
    out = set()
    for s in strings:
        encoded = s.encode("utf-8")
        for i in range(len(encoded) + 1):
            out.add(encoded[:i])
    return out


@SETTINGS
@given(small_patterns)
def test_prefix_viability_matches_brute_force(pattern):
    compiled = re.compile(pattern)
    max_width = re._parser.parse(pattern).getwidth()[1]
    assume(max_width <= 7)
    matches = [
        "".join(chars)
        for n in range(max_width + 1)
        for chars in itertools.product(SMALL, repeat=n)
        if compiled.fullmatch("".join(chars))
    ]
    viable = _byte_prefixes(matches)
    lexer = RegexLexer([pattern])
    candidates = _byte_prefixes(
        "".join(chars) for n in range(min(max_width, 4) + 2)
        for chars in itertools.product(SMALL, repeat=n))
    for prefix in candidates:
        assert lexer.is_viable_prefix(prefix) == (prefix in viable), (pattern, prefix)


@SETTINGS
@given(patterns, st.lists(st.binary(max_size=8), min_size=1, max_size=10))
def test_never_accepts_invalid_utf8(pattern, blobs):
    try:
        compiled = re.compile(pattern)
    except re.error:
        assume(False)
    lexer = RegexLexer([pattern])
    for blob in blobs + [b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80"]:
        state = lexer.feed(lexer.start_state(), blob)
        if lexer.is_match(state):
            assert compiled.fullmatch(blob.decode("utf-8")), (pattern, blob)
        if not lexer.is_dead(state):
            _check_valid_prefix(blob)


def _check_valid_prefix(blob: bytes) -> None:
    """A live state implies valid UTF-8 so far (possibly cut inside the last character)."""
    try:
        blob.decode("utf-8")
    except UnicodeDecodeError as e:
        assert e.reason == "unexpected end of data" and e.end == len(blob), blob


def test_any_star_accepts_exactly_valid_utf8():
    lexer = RegexLexer(["(?s).*"])
    samples = [bytes([a, b]) for a in range(0x70, 0x100, 3) for b in range(0x70, 0x100, 5)]
    samples += [b"\xe0\xa0\x80", b"\xe0\x9f\xbf", b"\xed\x9f\xbf", b"\xed\xa0\x80",
                b"\xf0\x90\x80\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80"]
    for blob in samples:
        assert lexer.fullmatch(0, blob) == _complete_valid(blob), blob


def _complete_valid(blob: bytes) -> bool:
    try:
        blob.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def test_case_insensitive_special_cases():
    cases = {
        "(?i)k": ["k", "K", "\u212a"],
        "(?i)s": ["s", "S", "\u017f"],
        "(?i)\u00df": ["\u00df", "\u1e9e"],
        "(?i)\u00b5": ["\u00b5", "\u03bc", "\u039c"],
        "(?i)[a-z]+": ["\u212a\u017f", "Hello"],
        "(?i)\u0130": ["\u0130", "i"],
    }
    for pattern, accepted in cases.items():
        lexer = RegexLexer([pattern])
        for text in accepted:
            assert native_fullmatch(lexer, text) == bool(re.fullmatch(pattern, text)), (
                pattern, text)
    assert not native_fullmatch(RegexLexer(["(?i)ss"]), "\u00df")


def test_multi_terminal_and_start_subsets():
    lexer = RegexLexer(["if", "[a-z]+", "[0-9]+"])
    state = lexer.feed(lexer.start_state(), b"if")
    assert lexer.matched_terminals(state) == [0, 1]
    assert lexer.possible_terminals(lexer.feed(lexer.start_state(), b"i")) == [0, 1]
    numbers = lexer.start_state([2])
    assert lexer.is_dead(lexer.next(numbers, ord("a")))
    assert lexer.matched_terminals(lexer.feed(numbers, b"42")) == [2]
    assert lexer.start_state([2, 2]) == numbers
    assert lexer.is_dead(lexer.start_state([]))
    with pytest.raises(IndexError):
        lexer.start_state([3])
    with pytest.raises(IndexError):
        lexer.next(10**6, 0)


def test_ecma_dialect():
    lexer = RegexLexer(["^[a-z]+$", "\\d{3}", "^\\p{Lu}", "colou?r"], "ecma")
    assert lexer.fullmatch(0, b"abc") and not lexer.fullmatch(0, b"ab1")
    assert lexer.fullmatch(1, b"x123y") and not lexer.fullmatch(1, "\u0661\u0662\u0663".encode())
    assert lexer.fullmatch(2, "\u00c9t\u00e9".encode()) and not lexer.fullmatch(2, b"e")
    assert lexer.fullmatch(3, b"my color!")
    full = RegexLexer(["\\d{3}"], "ecma", ecma_search=False)
    assert not full.fullmatch(0, b"x123")


COMMENT_PATTERNS = [
    "a(?#x){2}", "a(?#x)*", "a(?#x)+", "a(?#x)?", "a(?#x)*?", "a(?#x){,2}", "ab(?#x){2}",
    "(a)(?#x){2}", "a(?#x)(?#y){2}", "(?x)a (?#x) {2}", "(?#x)(?i)a", "(?i)(?#c)(?s)a.",
    "(?#x)*", "a*(?#x)*", "a*(?#x)?", "a{2}(?#x)?", "a|(?#x)*", "^(?#x)*", "a(?#x",
]


@pytest.mark.parametrize("pattern", COMMENT_PATTERNS)
def test_comment_groups_are_skipped_as_in_python_re(pattern):
    """A comment group is no atom: a quantifier after it repeats the item before it
    (`a(?#x){2}` is `aa`), or there is nothing to repeat (issue #18)."""
    try:
        compiled = re.compile(pattern)
    except re.error as e:
        with pytest.raises(RegexError) as info:
            RegexLexer([pattern])
        assert info.value.pos == e.pos, (pattern, str(info.value), e)
        return
    lexer = RegexLexer([pattern])
    for text in ["", "a", "aa", "aaa", "A", "ab", "abb", "abab", "a\n", "aA"]:
        assert native_fullmatch(lexer, text) == (compiled.fullmatch(text) is not None), (
            pattern, text)


@pytest.mark.parametrize("pattern,dialect,position,fragment", [
    ("ab(?=c)", "python", 2, "lookahead"),
    ("a(?<!b)", "python", 1, "lookbehind"),
    ("(a)\\1", "python", 3, "backreference"),
    ("(?P<x>a)(?P=x)", "python", 8, "backreference"),
    ("(a)?(?(1)b)", "python", 4, "conditional"),
    ("(?>a)", "python", 0, "atomic"),
    ("a++", "python", 2, "possessive"),
    ("a\\b", "python", 1, "word boundar"),
    ("\\Ba", "python", 0, "word boundar"),
    ("a$b", "python", 1, "'$'"),
    ("[z-a]", "python", 1, "bad character range"),
    ("(ab", "python", 0, "missing )"),
    ("\\k<n>", "ecma", 0, "backreference"),
    ("\\p{Script=Greek}", "ecma", 0, "Script"),
])
def test_unsupported_features_raise_clear_errors(pattern, dialect, position, fragment):
    with pytest.raises(RegexError) as info:
        RegexLexer(["ok", pattern], dialect)
    assert isinstance(info.value, ValueError)
    assert info.value.pos == position
    assert info.value.pattern_index == 1
    assert fragment in str(info.value)


def test_budgets_raise_instead_of_hanging():
    with pytest.raises(jaxguide.BudgetExceededError):
        RegexLexer(["(?:a{1000}){2000}"])
    lexer = RegexLexer(["(?:a|b)*a(?:a|b){16}"], max_states=500)  # needs 2^17 states
    rng = random.Random(0)
    with pytest.raises(jaxguide.BudgetExceededError):
        lexer.feed(lexer.start_state(), bytes(rng.choice(b"ab") for _ in range(20000)))
    assert lexer.budget_exceeded and lexer.num_states <= 500
    # Bounded repetition stays small: only visited states are built.
    lexer = RegexLexer(["[a-z]{0,1000}", ".{5,200}"])
    assert lexer.fullmatch(0, b"q" * 1000) and not lexer.fullmatch(0, b"q" * 1001)
    assert lexer.num_states < 2100


# Lark's bundled grammars: every terminal compiles, or fails with a clear lookaround error.
LARK_GRAMMARS = ["common.lark", "python.lark", "lark.lark", "unicode.lark"]
EXPECTED_LARK_ERRORS = {
    "_STRING_ESC_INNER", "ESCAPED_STRING", "STRING", "LONG_STRING", "DEC_NUMBER", "_STRING",
    "OP", "REGEXP",
}


def _lark_terminals(name: str):
    path = os.path.join(os.path.dirname(lark.__file__), "grammars", name)
    with open(path, encoding="utf-8") as f:
        grammar, _ = load_grammar(f.read(), name, [], False)
    terminals, _, _ = grammar.compile([], {n for n, _ in grammar.term_defs})
    return terminals


@pytest.mark.parametrize("name", LARK_GRAMMARS)
def test_lark_grammar_terminals(name):
    compiled, failed = [], []
    for terminal in _lark_terminals(name):
        regexp = terminal.pattern.to_regexp()
        try:
            RegexLexer([regexp])
            compiled.append((terminal.name, regexp))
        except RegexError as e:
            assert "lookahead" in e.msg or "lookbehind" in e.msg, (terminal.name, e.msg)
            failed.append(terminal.name)
    assert set(failed) <= EXPECTED_LARK_ERRORS
    assert compiled
    # All compiled terminals of the grammar together in one lexer; strings generated from each
    # terminal's regex must match that terminal.
    lexer = RegexLexer([regexp for _, regexp in compiled])
    for index, (_, regexp) in enumerate(compiled):
        for text in _examples(regexp):
            assert index in lexer.matched_terminals(lexer.feed(lexer.start_state(),
                                                              text.encode("utf-8"))), (regexp, text)


def _examples(regexp: str, count: int = 8) -> list[str]:
    out: list[str] = []

    @settings(max_examples=count, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.from_regex(regexp, fullmatch=True))
    def collect(text):
        out.append(text)

    collect()
    return out
