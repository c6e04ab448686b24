"""The Lark front-end: grammar text -> GrammarIR, and GrammarError on bad grammars."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxguide
from jaxguide import GrammarError, Matcher
from jaxguide.grammar import _LOOKAROUND_REWRITES, Grammar
from real_tokenizers import real_tokenizer


def rules_as_text(grammar: Grammar) -> set[str]:
    ir = grammar.ir
    return {f"{ir.nonterminals[lhs]} -> {' '.join(ir.symbol_name(s) for s in rhs)}"
            for lhs, rhs in ir.rules}


def test_lowering_of_ebnf_aliases_and_literals():
    g = Grammar.from_lark(r'''
        ?start: item+
        !item: "select"i NAME -> sel
             | _sep? NUMBER
        _sep: ","
        NAME: /[a-z]+/
        NUMBER: DIGIT+
        DIGIT: "0".."9"
        %ignore " "
    ''')
    ir = g.ir
    regex = {t.name: t.regex for t in ir.terminals}
    assert regex["NAME"] == "[a-z]+"
    assert re.fullmatch(regex["NUMBER"], "0123") and not re.fullmatch(regex["NUMBER"], "")
    select = next(t for t in ir.terminals if "select" in t.regex)
    assert select.regex == "(?i:select)"
    assert re.fullmatch(select.regex, "SeLeCt")
    assert [ir.terminals[i].regex for i in ir.ignore] == ["\\ "]
    assert ir.nonterminals[ir.start] == "start"
    # item+ becomes a left-recursive helper rule; the optional _sep becomes two alternatives.
    text = rules_as_text(g)
    assert "item -> NUMBER" in text
    assert any(r.startswith("item -> ") and "NUMBER" in r and r != "item -> NUMBER" for r in text)
    assert all(0 <= s < ir.num_terminals + len(ir.nonterminals) for _, rhs in ir.rules
               for s in rhs)


def test_imports_from_common_and_templates():
    g = Grammar.from_lark(r'''
        start: _list{NUMBER}
        _list{x}: x ("," x)*
        %import common.NUMBER
        %import common.WS_INLINE
        %ignore WS_INLINE
    ''')
    names = {t.name for t in g.ir.terminals}
    assert {"NUMBER", "WS_INLINE", "COMMA"} <= names


def test_relative_import(tmp_path):
    (tmp_path / "words.lark").write_text('WORD: /[a-z]+/\n')
    g = Grammar.from_lark('start: WORD\n%import .words.WORD\n', import_paths=[str(tmp_path)])
    assert [t.regex for t in g.ir.terminals] == ["[a-z]+"]


def test_escaped_string_rewrite_has_no_lookaround():
    g = Grammar.from_lark('start: ESCAPED_STRING\n%import common.ESCAPED_STRING\n')
    (terminal,) = g.ir.terminals
    assert "(?<" not in terminal.regex
    assert not terminal.lazy


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet='"\\ab\n', max_size=10))
def test_escaped_string_rewrite_matches_lark_lexemes(tail):
    """The rewrite yields exactly the lexeme lark's own regex (first match) yields."""
    ((lark_regex, ours),) = _LOOKAROUND_REWRITES.items()
    text = '"' + tail
    theirs = re.match(lark_regex, text)
    mine = re.match(ours, text)
    assert (theirs and theirs.group(0)) == (mine and mine.group(0))


def test_lazy_detection():
    g = Grammar.from_lark('start: A B C\nA: /<.*?>/\nB: /x{2,5}?/\nC: /[a-z]+/\n')
    lazy = {t.name: t.lazy for t in g.ir.terminals}
    assert lazy == {"A": True, "B": True, "C": False}


@pytest.mark.parametrize("text, message, line, column", [
    ("start: foo\n", "Rule 'foo' used but not defined", 1, 8),
    ('start: "a"\n  | (\n', "Expecting a value", 2, 6),
    ("start: A\nA: \"a\"\nA: \"b\"\n", "Terminal 'A' defined more than once", 3, 1),
    ("start: x\nx: \"a\"\n ?x: \"b\"\n", "Rule 'x' defined more than once", 3, 3),
    ("%declare X\nstart: X\n", "%declare is not supported", 1, 10),
    ("start: B\n", "Rule 'B' used but not defined", 1, 8),
])
def test_errors_carry_line_and_column(text, message, line, column):
    with pytest.raises(GrammarError, match=re.escape(message)) as info:
        Grammar.from_lark(text)
    assert (info.value.line, info.value.column) == (line, column)


def test_missing_start_rule_and_bad_types():
    with pytest.raises(GrammarError, match="start rule 'begin' is not defined"):
        Grammar.from_lark('start: "a"\n', start="begin")
    with pytest.raises(GrammarError, match="must be str"):
        Grammar.from_lark(b'start: "a"')  # type: ignore[arg-type]


def test_ir_json_is_stable():
    text = 'start: "a" start | "b"\n'
    assert Grammar.from_lark(text).ir.to_json() == Grammar.from_lark(text).ir.to_json()
    assert '"version": 1' in Grammar.from_lark(text).ir.to_json()


# ---------------------------------------------------------------------------------------------
# from_regex and choice (compiled against the Llama-3 vocabulary)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab1-_\u00e9", max_size=7))
def test_from_regex_matches_re_fullmatch(text):
    import re

    for pattern in [r"a+b?", r"(ab|ba)*1", r"[a-b]{2,3}", r"\d-?\w*", r"(?i:AB)+|é", r"(ab)*"]:
        comp = _regex_compiled(pattern)
        matcher = Matcher(comp)
        got = matcher.accept_bytes(text.encode()) and matcher.is_accepting()
        assert got == bool(re.fullmatch(pattern, text)), (pattern, text)


_REGEX: dict[str, jaxguide.CompiledGrammar] = {}


def _regex_compiled(pattern: str):
    if pattern not in _REGEX:
        _REGEX[pattern] = jaxguide.compile_grammar(Grammar.from_regex(pattern),
                                                   real_tokenizer("llama3_tiktoken"))
    return _REGEX[pattern]


def test_from_regex_rejects_lookaround():
    with pytest.raises(GrammarError):
        jaxguide.compile_grammar(Grammar.from_regex("a(?=b)"), real_tokenizer("llama3_tiktoken"))
    with pytest.raises(GrammarError):
        Grammar.from_regex(3)


def test_choice():
    comp = jaxguide.compile_grammar(Grammar.choice(["yes", "no", "yes.", "a|b", ""]),
                                    real_tokenizer("llama3_tiktoken"))
    for text, ok in [("yes", True), ("no", True), ("yes.", True), ("a|b", True), ("", True),
                     ("ye", False), ("a", False), ("nope", False)]:
        matcher = Matcher(comp)
        assert (matcher.accept_bytes(text.encode()) and matcher.is_accepting()) == ok, text
    with pytest.raises(GrammarError):
        Grammar.choice([])
    with pytest.raises(GrammarError):
        Grammar.choice("yes")
