"""The Lark front-end: grammar text -> GrammarIR, and GrammarError on bad grammars."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide import GrammarError, Matcher, TokenizerInfo, compile_grammar
from jaxguide.grammars import Grammar
from jaxguide.grammars.ir import TerminalIR
from jaxguide.grammars.lark import LOOKAROUND_REWRITES


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


def _our_lexemes(variants: list[tuple[str, str, str]], text: str) -> set[str]:
    """The lexemes jaxguide's semantics give at the start of `text`: per variant, a prefix the
    regex matches whose end is not followed by a byte that continues it (maximal munch; unless
    the byte is in may_end_before) or by a forbidden byte; for lazy variants, the first match."""
    import regex as partial_regex

    from jaxguide.grammars.lark import has_lazy_quantifier

    out = set()
    for pattern, forbidden, may_end_before in variants:
        lazy = has_lazy_quantifier(pattern)
        for i in range(1, len(text) + 1):
            if re.fullmatch(pattern, text[:i]) is None:
                continue
            following = text[i] if i < len(text) else None
            if lazy:
                if following is None or following not in forbidden:
                    out.add(text[:i])
                break
            if (following is not None and following not in may_end_before
                    and partial_regex.fullmatch(pattern, text[:i + 1], partial=True) is not None):
                continue
            if following is None or following not in forbidden:
                out.add(text[:i])
    return out


# (lark regex, an alphabet that exercises it, a prefix every sample starts with)
_LOOKAROUND_CASES = {
    "ESCAPED_STRING": ('".*?(?<!\\\\)(\\\\\\\\)*?"', '"\\ab\n', '"'),
    "lark STRING": ('".*?(?<!\\\\)(\\\\\\\\)*?"(?:i)?', '"\\ai\n', '"'),
    "lark REGEXP": (r"\/(?!\/)(\\\/|\\\\|[^\/])*?\/[imslux]*", "/\\ai\n", "/"),
    "sqlpp LINE_COMMENT": ("--(?!\\+)[^\n]*", "-+a\n", "--"),
    "sqlpp BLOCK_COMMENT": (r"(?s:\/\*(?!\+).*?\*\/)", "/*+a\n", "/*"),
    "hcl2 EQ": ("[ \t]*=(?!=|>)", " =>a", ""),
    "lark OP": ("[+*]|[?](?![a-z])", "+*?a=", ""),
}


@pytest.mark.parametrize("case", sorted(_LOOKAROUND_CASES))
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_lookaround_lowering_matches_python_re(case, data):
    """Lowered lookaround terminals give exactly the lexeme Python's `re.match` gives with the
    original regex (what lark's lexer does), including what may follow it."""
    from jaxguide.grammars.lark import lower_lookaround

    lark_regex, alphabet, prefix = _LOOKAROUND_CASES[case]
    text = prefix + data.draw(st.text(alphabet=alphabet, max_size=9))
    theirs = re.match(lark_regex, text)
    expected = {theirs.group(0)} if theirs and theirs.group(0) else set()
    if case == "lark REGEXP" and theirs and re.search(r"(?<!\\)(\\\\)*\\/[imslux]*$",
                                                      theirs.group(0)):
        # Documented difference: re.match backtracks to read `\/` as a backslash and the
        # closing slash when no later slash closes the regexp; jaxguide reads it as an escape.
        return
    assert _our_lexemes(lower_lookaround(lark_regex), text) == expected


def test_hcl2_string_chars_lowering():
    """hcl2's STRING_CHARS stops before `${`, `$${`, `%{`, `%%{` by lookahead. Lowered, a
    lexeme may end before any `$` / `%` and not before `{`: the lexeme Python's `re.match`
    gives is always one of ours, and our extra ones end before a `$` / `%` (hcl2 allows
    consecutive string parts, so they spell the same strings)."""
    from jaxguide.grammars.lark import lower_lookaround

    (lark_regex,) = [k for k in LOOKAROUND_REWRITES if k.startswith("(?:(?!")]
    variants = lower_lookaround(lark_regex)
    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice('ab$%{"\\') for _ in range(rng.randrange(1, 9)))
        if re.search(r"(?<!\\)(\\\\)*\\$", text):
            continue  # a sample cut inside an escape (`\` at the end), not a complete text
        theirs = re.match(lark_regex, text)
        ours = _our_lexemes(variants, text)
        if theirs and theirs.group(0):
            assert theirs.group(0) in ours, text
        for lexeme in ours - {theirs.group(0) if theirs else None}:
            assert text[len(lexeme):len(lexeme) + 1] in ("$", "%"), (text, lexeme)
    assert _our_lexemes(variants, "ab${x") == {"ab"}
    assert _our_lexemes(variants, "a$b") == {"a", "a$b"}


@pytest.mark.parametrize("package, path", [
    ("lark_sqlpp", "sqlpp.lark"), ("hcl2", "hcl2.lark"), ("lark", "grammars/lark.lark")])
def test_bundled_grammars_lower_without_lookaround(package, path):
    """The lookaround terminals of the real grammars we test against are all lowered: the IR
    has no lookaround left (so the native lexer accepts every terminal)."""
    from jaxguide.grammars.lark import LOOKAROUND
    from jaxguide.models.assets import package_file

    with open(package_file(package, *path.split("/"))) as f:
        grammar = Grammar.from_lark(f.read())
    assert not [t.name for t in grammar.ir.terminals if LOOKAROUND.search(t.regex)]
    restricted = {t.name: t.forbidden_next for t in grammar.ir.terminals if t.forbidden_next}
    expected = {"sqlpp.lark": {"LINE_COMMENT": "+"},
                "hcl2.lark": {"STRING_CHARS": "{", "EQ": "=>", "COLON": ":"},
                "grammars/lark.lark": {"OP__1": "abcdefghijklmnopqrstuvwxyz"}}[path]
    assert restricted == expected


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
    assert '"version": 5' in Grammar.from_lark(text).ir.to_json()


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


def test_lone_surrogates_and_missing_imports_are_grammar_errors():
    """Issue #22: a lone surrogate reached pybind ("incompatible constructor arguments"), an
    unknown %import a FileNotFoundError from lark's loader."""
    info = TokenizerInfo.from_token_bytes([b"a", b"b", b""], eos_token_ids=[2])
    for grammar in (Grammar.from_regex("a\ud800"), Grammar.choice(["x\udc00"])):
        with pytest.raises(GrammarError, match="lone surrogate .U\\+D[8C]00"):
            compile_grammar(grammar, info)
    with pytest.raises(GrammarError, match="%import .*nosuchmodule"):
        Grammar.from_lark("start: x\n%import nosuchmodule.x\n")


def test_native_core_reads_rules_as_tuples_or_lists_and_refuses_other_shapes():
    """The IR's rules cross into C++ through the CPython API (bindings.cc, ReadRules): tuples
    or lists at both levels; any other shape is a TypeError that says what a rule must be."""
    from jaxguide import _native

    info = TokenizerInfo.from_token_bytes([b"a", b"b", b""], eos_token_ids=[2])

    def make(rules):
        return _native.CompiledGrammar([("A", "a", False, b"", b"")], ["start"], rules, 0, [],
                                       info.native)

    for rules in (((0, (0,)),), [[0, [0]]], [(0, [0, 0])], ((0, ()), (0, (0,)))):
        assert make(rules).num_lexer_states > 0
    for rules, message in [((0, (0,)), "list of .lhs"), ([(0,)], "pairs"), ({(0, (0,))}, "list"),
                           ([(0, (0.5,))], "symbol must be an int, not float"),
                           ([("0", (0,))], "lhs must be an int, not str"),
                           ([(0, (2**40,))], "symbol is out of the int32 range"),
                           ([(-2**40, (0,))], "lhs is out of the int32 range"),
                           ([(0, "a")], "list of")]:
        with pytest.raises(TypeError, match=message):
            make(rules)


def test_plain_terminal_is_the_dataclass_terminal():
    fast, slow = TerminalIR.plain("T3", "[ab]+"), TerminalIR("T3", "[ab]+")
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    assert dataclasses.asdict(fast) == dataclasses.asdict(slow)
    assert pickle.loads(pickle.dumps(fast)) == slow == copy.deepcopy(fast)
    assert dataclasses.replace(fast, lazy=True) == TerminalIR("T3", "[ab]+", lazy=True)
    assert fast != TerminalIR("T3", "[ab]+", special="<|x|>")
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.regex = "c"  # type: ignore[misc]
