"""The Lark front-end's budgets (jaxguide/grammars/lark_budgets.py): grammars that blow up lark's
compile step (distribution of inline groups, deep nesting, runaway templates, huge `~` counts)
compile to the same language quickly or raise a GrammarError naming the construct."""

from __future__ import annotations

import itertools
import json
import random
import sys
import time

import lark
import pytest
from support.real_tokenizers import real_tokenizer

from jaxguide import BudgetExceededError, GrammarError, Matcher, compile_grammar
from jaxguide.grammars import Grammar, lark_budgets
from jaxguide.grammars.lark import lark_to_ir

ALTERNATION_10 = '("a"|"b"|"c"|"d"|"e"|"f"|"g"|"h"|"i"|"j")'
QUICK = 5.0  # CPU seconds (process_time); each case took 25 s, forever, or crashed first


def _words(count: int) -> list[str]:
    rng = random.Random(7)
    words = {"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 8)))
             for _ in range(count + 100)}
    return sorted(words)[:count]


def _accepts(compiled, text: str) -> bool:
    matcher = Matcher(compiled)
    return matcher.accept_bytes(text.encode()) and matcher.is_accepting()


def _compile(text: str):
    """lark_to_ir (no cache, so monkeypatched budgets apply) -> a compiled grammar."""
    return compile_grammar(Grammar(lark_to_ir(text), source=text),
                           real_tokenizer("llama3_tiktoken"))


def _hoisted(text: str) -> bool:
    return any(name.startswith(lark_budgets.HOIST_PREFIX) for name in lark_to_ir(text).nonterminals)


def test_ten_literals_six_times_compiles_quickly_to_the_right_language():
    start = time.process_time()
    compiled = _compile(f"start: {ALTERNATION_10}~6")
    assert time.process_time() - start < QUICK
    assert _hoisted(f"start: {ALTERNATION_10}~6")
    for text in ("abcdef", "jjjjjj", "aaaaaa", "jihgfe"):
        assert _accepts(compiled, text), text
    for text in ("abcde", "abcdefg", "abcdek", ""):
        assert not _accepts(compiled, text), text


def test_2000_literals_three_times_compiles_quickly_to_the_right_language():
    words = _words(2000)
    text = "start: (" + " | ".join(json.dumps(w) for w in words) + ")~3"
    start = time.process_time()
    compiled = _compile(text)
    assert time.process_time() - start < QUICK
    assert _accepts(compiled, words[0] + words[1999] + words[7])
    assert not _accepts(compiled, words[0] + words[1])
    assert not _accepts(compiled, words[0] * 4)


def test_thirty_optionals_compile_quickly():
    text = "start: " + " ".join(f'"{chr(97 + i % 26)}{i}"?' for i in range(30))
    start = time.process_time()
    compiled = _compile(text)
    assert time.process_time() - start < QUICK
    assert _accepts(compiled, "") and _accepts(compiled, "a0c2z25d29")
    assert not _accepts(compiled, "c2a0")


def test_nested_counted_repetition_compiles_quickly():
    text = 'start: ((("a"~20)~20)~20)~20'  # one row of 20^4 symbols for lark
    start = time.process_time()
    compiled = _compile(text)
    assert time.process_time() - start < QUICK
    assert _hoisted(text) and len(lark_to_ir(text).rules) < 10
    assert _accepts(compiled, "a" * 20 ** 4)
    assert not _accepts(compiled, "a" * (20 ** 4 - 1))


# ---------------------------------------------------------------- the rewrite keeps the language

SMALL_GRAMMARS = {
    "repeat": ('start: ("a"|"b")~3', "ab", 4),
    "optionals": ('start: "a"? "b"? "c"? "d"?', "abcd", 5),
    "mixed": ('start: ("a"|"b") ["c"|"d"] ("a"|"c")* "b"', "abcd", 4),
    "range": ('start: ("a"|"b"|"c")~1..2 ("a" "b"|"c")~0..2', "abc", 5),
    "nested": ('start: (("a"|"b")~2 "c"?)~2', "abc", 6),
    "template": ('start: t{"a"} | t{x}\nt{p}: (p|"b") (p|"c")~2 ("d"|"b")\nx: "x"', "abcdx", 5),
    "keep all tokens": ('!start: ("a"|"b") ("a"|"b") [r]\nr: "c" ("a"|"c")', "abc", 5),
}


@pytest.mark.parametrize("name", SMALL_GRAMMARS)
def test_hoisted_grammar_accepts_exactly_what_lark_accepts(name, monkeypatch):
    """With the budgets forced down, small grammars are rewritten; every string over the
    alphabet up to the length is accepted by jaxguide iff lark's Earley parser accepts it."""
    text, alphabet, max_length = SMALL_GRAMMARS[name]
    oracle = lark.Lark(text, parser="earley", lexer="dynamic")
    monkeypatch.setattr(lark_budgets, "MAX_DISTRIBUTED_SYMBOLS", 0)
    monkeypatch.setattr(lark_budgets, "MAX_SEQUENCE_ALTERNATIVES", 2)
    assert _hoisted(text)
    compiled = _compile(text)
    accepted = 0
    for length in range(max_length + 1):
        for letters in itertools.product(alphabet, repeat=length):
            sentence = "".join(letters)
            try:
                oracle.parse(sentence)
                expected = True
            except lark.exceptions.LarkError:
                expected = False
            assert _accepts(compiled, sentence) == expected, sentence
            accepted += expected
    assert accepted > 0


def test_repeat_of_two_accepts_all_eight_strings_of_length_three(monkeypatch):
    monkeypatch.setattr(lark_budgets, "MAX_DISTRIBUTED_SYMBOLS", 0)
    monkeypatch.setattr(lark_budgets, "MAX_SEQUENCE_ALTERNATIVES", 2)
    ir = lark_to_ir('start: ("a"|"b")~3')
    assert len(ir.rules) < 8  # written out it would be the 8 rows
    compiled = _compile('start: ("a"|"b")~3')
    for length in (2, 3, 4):
        for letters in itertools.product("ab", repeat=length):
            assert _accepts(compiled, "".join(letters)) == (length == 3)


def test_grammar_within_the_budget_keeps_its_ir(monkeypatch):
    """729 rows are within MAX_DISTRIBUTED_SYMBOLS: lark gets the grammar as written."""
    text = 'start: ("a"|"b"|"c")~3 ("d"|"e"|"f")~3 x*\nx: "x" ["y"|"z"]'
    ir = lark_to_ir(text)
    assert len(ir.rules) > 729 and not _hoisted(text)
    monkeypatch.setattr(lark_budgets, "bound_distribution", lambda grammar, instances: 0)
    assert lark_to_ir(text) == ir


# ------------------------------------------------------------------------------------- nesting

def test_500_nested_parentheses_is_a_grammar_error_at_the_bracket():
    text = "start: " + "(" * 500 + '"a"' + ")" * 500
    with pytest.raises(GrammarError, match="nested too deeply") as info:
        Grammar.from_lark(text)
    limit = lark_budgets.MAX_GROUP_NESTING
    assert (info.value.line, info.value.column) == (1, len("start: ") + limit + 1)


def test_brackets_in_strings_regexps_and_comments_do_not_count():
    deep = "(" * 100
    Grammar.from_lark(f'start: "{deep}" /{deep}a/ // {deep}\n# {deep}\n')


def _under_stack(frames: int, function):
    if frames == 0:
        return function()
    return _under_stack(frames - 1, function)


@pytest.mark.parametrize("construct", ["parentheses", "brackets", "optional groups", "template"])
def test_the_deepest_allowed_nesting_compiles_under_a_deep_caller_stack(construct):
    depth = lark_budgets.MAX_GROUP_NESTING
    text = {"parentheses": "start: " + "(" * depth + '"a"' + ")" * depth,
            "brackets": "start: " + "[" * depth + '"a"' + "]" * depth,
            "optional groups": "start: " + "(" * depth + '"a"' + ")?" * depth,
            "template": 'start: t{"a"}\nt{p}: ' + "(" * (depth - 1) + "p" + ")" * (depth - 1),
            }[construct]
    # Whatever the test runner's own stack, leave 300 more frames to callers.
    _under_stack(300, lambda: lark_to_ir(text))


def test_recursion_inside_lark_becomes_a_grammar_error(tmp_path):
    limit = sys.getrecursionlimit()
    # The text check cannot see an %import'ed file; lark's compile recurses out of stack.
    (tmp_path / "deep.lark").write_text("x: " + "[" * 400 + '"a"' + "]" * 400 + "\n")
    with pytest.raises(GrammarError, match="nested too deeply"):
        Grammar.from_lark("%import deep.x\nstart: x", import_paths=[str(tmp_path)])
    (tmp_path / "a.lark").write_text('%import b.Y\nX: "x" Y\n')
    (tmp_path / "b.lark").write_text('%import a.X\nY: "y" X\n')
    with pytest.raises(GrammarError, match="nested too deeply"):
        Grammar.from_lark("%import a.X\nstart: X", import_paths=[str(tmp_path)])
    assert sys.getrecursionlimit() == limit


# ------------------------------------------------------------------- templates and repetition

def test_runaway_template_instantiation_is_a_grammar_error():
    start = time.process_time()
    with pytest.raises(GrammarError, match="templates .* instantiate more than"):
        Grammar.from_lark('start: t{"a"}\nt{x}: x | t{u{x}}\nu{y}: y "b"')
    assert time.process_time() - start < QUICK


def test_many_template_instances_within_the_budget_compile():
    names = [f"r{i}" for i in range(500)]
    text = ("start: " + " | ".join(f"_sep{{{n}}}" for n in names) + '\n_sep{x}: x ("," x)*\n'
            + "".join(f'{n}: "{n}"\n' for n in names))
    compiled = _compile(text)
    assert _accepts(compiled, "r7,r7") and not _accepts(compiled, "r7,r8")


@pytest.mark.parametrize("rule, accepts_abba", [('"a"~100000000', False),
                                                 ('"a"~0..100000000', False),
                                                 ('("a"|"b")~0..4294967294', True)])
def test_huge_counts_in_rules_compile_quickly(rule, accepts_abba):
    start = time.process_time()
    compiled = _compile(f"start: {rule}")
    assert time.process_time() - start < QUICK
    assert _accepts(compiled, "abba") == accepts_abba
    assert _accepts(compiled, "aaaa") == rule.startswith(('"a"~0', "("))


@pytest.mark.parametrize("term", ['"a"~100000000', '"a"~0..100000000'])
def test_huge_counts_in_terminals_exceed_the_nfa_budget(term):
    start = time.process_time()
    with pytest.raises(BudgetExceededError, match="NFA instructions"):
        _compile(f"start: A\nA: {term}")
    assert time.process_time() - start < QUICK


@pytest.mark.parametrize("where", ["start: X\nX: ", "start: "])
def test_counts_beyond_the_bound_are_grammar_errors(where):
    for count in ("4294967295", "9" * 5000):
        with pytest.raises(GrammarError, match="repetition count") as info:
            Grammar.from_lark(where + '"a"~' + count)
        assert info.value.line == where.count("\n") + 1
