"""The lexer's one lookahead form, `(?!(?:w1|...|wn)T)(?:X)*T` (native/lexer/except_words.h):
what the JSON Schema compiler writes for "any key but the declared names".

Oracles: Python's `re` on the same regex, and the meaning itself (a JSON key whose spelling is
canonical and whose decoded value is none of the names). Every other lookahead, and forms
whose rewrite would not be exact, are refused with a RegexError."""

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxguide.engine.regex_lexer import RegexError, RegexLexer
from jaxguide.grammars.json_schema.units import (
    key_regex,
    not_names_trie_units,
    not_names_units,
)

# Plain names (one spelling each) from a small alphabet, so that keys often collide with them.
NAMES = st.lists(st.text(alphabet="ab-~ ", max_size=4), max_size=6)
# Units of a key: raw characters, short escapes and \u escapes, canonical or not.
UNITS = st.lists(st.sampled_from(["a", "b", "-", "~", " ", "é", "😀", "\\n", "\\\"", "\\/",
                                  "\\u0061", "\\u00e9", "\\u00E9", "\\ud83d\\ude00", "/"]),
                 max_size=6)
CANONICAL = re.compile(r'"(?:[^"\\\x00-\x1f\ud800-\udfff]|\\["\\/bfnrt]'
                       r"|\\u(?!00[2-7][0-9a-fA-F])[0-9a-fA-F]{4})*\"")


def native_fullmatch(lexer: RegexLexer, text: str) -> bool:
    return lexer.fullmatch(0, text.encode("utf-8"))


@settings(max_examples=300, deadline=None)
@given(NAMES.filter(bool), st.lists(UNITS, min_size=1, max_size=10))
def test_key_language_is_canonical_keys_other_than_the_names(names, keys):
    """(With no names at all, any key in any spelling: `ANY_UNIT*`.)"""
    regex = key_regex(not_names_units(tuple(names)))
    assert regex.startswith('"(?!')  # the lookahead form, not the spelled-out trie
    lexer = RegexLexer([regex])
    for units in keys:
        text = '"' + "".join(units) + '"'
        expected = bool(CANONICAL.fullmatch(text)) and json.loads(text) not in names
        assert (re.fullmatch(regex, text) is not None) == expected, (names, text)
        assert native_fullmatch(lexer, text) == expected, (names, text)


@settings(max_examples=100, deadline=None)
@given(NAMES, st.lists(UNITS, min_size=1, max_size=10))
def test_lookahead_form_is_the_trie_on_canonical_keys(names, keys):
    """Where both spell keys canonically the lookahead and the spelled-out trie agree."""
    trie = RegexLexer([key_regex(not_names_trie_units(sorted(set(names))))]) if names else None
    lookahead = RegexLexer([key_regex(not_names_units(tuple(names)))])
    for units in keys:
        text = '"' + "".join(units) + '"'
        if trie is not None and CANONICAL.fullmatch(text):
            assert native_fullmatch(lookahead, text) == native_fullmatch(trie, text), text


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.text(alphabet="ab-é😀", max_size=3), max_size=5), min_size=2,
                max_size=4),
       st.lists(UNITS, min_size=1, max_size=10))
def test_complements_in_one_lexer_keep_their_own_names(name_sets, keys):
    """Several "any key but" terminals in one lexer share what their unit compiles to (the
    copy of X*'s DFA, its transitions less one child: Nfa::CompileWordsComplement); each still
    excludes its own names only, as `re` and a lexer of that terminal alone say. The names
    share prefixes (trie nodes with several children) and hold non-ASCII code points; the
    last terminal has another unit."""
    regexes = [key_regex(not_names_units(tuple(names))) for names in name_sets]
    regexes.append('"(?!(?:ab|b|é)")(?:[a-c]|é|\\\\)*"')
    lexer = RegexLexer(regexes)
    alone = [RegexLexer([regex]) for regex in regexes]
    for units in keys:
        text = '"' + "".join(units) + '"'
        for t, regex in enumerate(regexes):
            expected = re.fullmatch(regex, text) is not None
            assert lexer.fullmatch(t, text.encode("utf-8")) == expected, (regex, text)
            assert native_fullmatch(alone[t], text) == expected, (regex, text)


def test_many_names_stay_small():
    """The regex grows with the names' total length once (not a trie spelled out with a
    class per node), and the automaton the lexer builds stays near the trie regex's size."""
    names = tuple(f"property_{i}" for i in range(500))
    regex = key_regex(not_names_units(names))
    assert len(regex) < sum(len(n) + 1 for n in names) + 400
    lexer = RegexLexer([regex])
    assert not native_fullmatch(lexer, '"property_7"')
    assert native_fullmatch(lexer, '"property_7x"')
    assert native_fullmatch(lexer, '"property_"')
    trie = RegexLexer([key_regex(not_names_trie_units(sorted(names)))])
    assert len(regex) * 2 < len(key_regex(not_names_trie_units(sorted(names))))
    assert lexer.num_nfa_instructions < 2 * trie.num_nfa_instructions


@pytest.mark.parametrize("pattern", [
    "(?!a)b",                         # not followed by X* T
    '(?!(?:a)")(?:x)*y',              # T is not the last character of the words
    "(?=a)a",                         # no T after the group
    '(?:(?!(?:a)")(?:x)*)"',          # T outside the lookahead's sequence
])
def test_other_lookaheads_are_refused(pattern):
    """(Lookaheads before a group and T that are not literal words before X*, such as
    `(?!a+")(?:x)*"`, are the product form: tests/engine/test_regex_product.py.)"""
    with pytest.raises(RegexError, match="lookahead"):
        RegexLexer([pattern])


def test_inexact_rewrite_is_refused():
    # `a"b` is in X*, so `(?!a")` also excludes the longer `a"b`: not X* minus {a}.
    with pytest.raises(RegexError, match="cannot be rewritten exactly"):
        RegexLexer(['(?!(?:a)")(?:a|"b)*"'])


def test_anchor_in_the_repeated_group_is_refused():
    with pytest.raises(RegexError, match="anchors"):
        RegexLexer(['(?!(?:a)")(?:a|\\Ab)*"'])
