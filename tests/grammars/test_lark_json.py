"""`%json { schema }` rule bodies in Lark grammars (issue #25, item 1): accept/reject tables, the
errors with their lines, %ignore kept out of the JSON, and random walks validated by jsonschema."""

from __future__ import annotations

import json
import re

import pytest
from support.call_walks import walk_opened_calls
from support.real_tokenizers import real_tokenizer

from jaxguide import Grammar, GrammarError, Matcher, TokenizerInfo, compile_grammar
from jaxguide.testing import JsonSchemaOracle

WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                            "days": {"type": "integer", "minimum": 1}},
           "required": ["city"], "additionalProperties": False}
TOOL_CALL = f"""
start: TEXT? call*
call: "<tool_call>" %json {json.dumps(WEATHER)} "</tool_call>" TEXT?
TEXT: /[^<]+/
"""


def byte_tokenizer() -> TokenizerInfo:
    return TokenizerInfo.from_token_bytes([bytes([b]) for b in range(256)] + [b""],
                                          eos_token_ids=[256])


def accepts(grammar: Grammar, text: str) -> bool:
    matcher = Matcher(compile_grammar(grammar, byte_tokenizer()))
    return matcher.accept_bytes(text.encode()) and matcher.is_accepting()


@pytest.mark.parametrize("text, ok", [
    ("", True),
    ("hello", True),
    ('<tool_call>{"city": "Paris"}</tool_call>', True),
    ('hi <tool_call>{"city": "Paris", "days": 3}</tool_call> bye', True),
    ('<tool_call>{"city":"A"}</tool_call><tool_call>{"city":"B"}</tool_call>', True),
    ('<tool_call>{"city": "Paris", "days": 0}</tool_call>', False),  # minimum
    ('<tool_call>{"days": 3}</tool_call>', False),  # required
    ('<tool_call>{"city": "Paris", "x": 1}</tool_call>', False),  # additionalProperties
    ('<tool_call>{"city": "a very long city"}</tool_call>', False),  # maxLength
    ('<tool_call>{"city": "Paris"}', False),  # unclosed
    ('<tool_call> {"city": "Paris"}</tool_call>', False),  # no %ignore: nothing between
])
def test_accept_reject(text, ok):
    assert accepts(Grammar.from_lark(TOOL_CALL), text) == ok


def test_ignore_stays_out_of_the_json():
    text = f'start: "f" "(" %json {json.dumps(WEATHER)} ")"\n%ignore " "\n'
    grammar = Grammar.from_lark(text)
    assert not grammar.ir.ignore
    assert accepts(grammar, 'f ( {"city": "Paris"} ) ')
    assert accepts(grammar, 'f({"city":"Paris"})')
    # JSON whitespace is the schema's (flexible: between tokens), never the Lark %ignore
    assert accepts(grammar, 'f({ "city" : "Paris" })')
    assert not accepts(grammar, 'f({"city": "Par is"x})')
    assert accepts(grammar, 'f({"city": " Paris "})')


def test_json_brace_in_strings_and_several_schemas():
    text = ('start: a | b\na: "a" %json {"const": "}{"}\n'
            'b: "b" %json {"type": "array", "items": {"enum": ["{", "}"]}, "maxItems": 2}\n')
    grammar = Grammar.from_lark(text)
    assert accepts(grammar, 'a"}{"')
    assert accepts(grammar, 'b["{", "}"]')
    assert not accepts(grammar, 'b["{", "}", "{"]')
    assert not accepts(grammar, 'a"{}"')


def test_percent_json_in_strings_and_comments_is_text():
    grammar = Grammar.from_lark('start: "%json {" X // %json {\nX: /[0-9]/\n')
    assert accepts(grammar, "%json {7")


@pytest.mark.parametrize("text, line, match", [
    ('start: "a"\n  | "b" %json {"type": "object",\n "x": ]}\n', 3, "invalid JSON"),
    ('start: "a" %json "x"\n', 1, "followed by a JSON object"),
    ('\nstart: "a" %json {"type": "object"\n', 2, "unbalanced"),
    ('start: %json {\n"type":\n"string"}\n  | undefined_rule\n', 4, "undefined_rule"),
])
def test_errors_name_the_line(text, line, match):
    with pytest.raises(GrammarError, match=match) as info:
        Grammar.from_lark(text)
    assert info.value.line == line


def test_errors_of_the_schema_and_misuse():
    with pytest.raises(GrammarError, match="minimum"):
        Grammar.from_lark('start: %json {"type": "integer", "minimum": "x"}\n')
    with pytest.raises(GrammarError, match="rule bodies"):
        Grammar.from_lark('start: A\nA: "x" %json {"type": "integer"}\n')
    with pytest.raises(GrammarError, match="reserved"):
        Grammar.from_lark('start: %json {"type": "integer"} JAXGUIDE_JSON_7\n')


class _TaggedCallsOracle:
    """Independent check of TOOL_CALL's language: split at the tags, each call's JSON
    validated by jsonschema, text elsewhere without '<'."""

    kind = "tool_calls"
    source = TOOL_CALL
    note = None

    def __init__(self):
        self.schema = JsonSchemaOracle(WEATHER)

    def check(self, text: str) -> str | None:
        pos = 0
        while True:
            start = text.find("<tool_call>", pos)
            free = text[pos:] if start < 0 else text[pos:start]
            if "<" in free:
                return f"stray '<' in text {free!r}"
            if start < 0:
                return None
            body = start + len("<tool_call>")
            # The call ends at a closing tag after which its JSON is whole (a JSON string may
            # hold the tag itself: '{"city": "</tool_call>"}')
            ends = [m.start() for m in re.finditer("</tool_call>", text[body:])]
            first_reason = None
            for end in ends:
                reason = self.schema.check(text[body:body + end])
                if reason is None:
                    break
                first_reason = first_reason or f"call {text[body:body + end]!r}: {reason}"
            else:
                return first_reason or f"call not closed in {text[body:]!r}"
            pos = body + end + len("</tool_call>")


def test_walks_are_valid():
    """Walks from prefixes that open a call (free text is rarely walked into a tag by chance),
    a second call opened after the first one's text: every finished text validates."""
    info = real_tokenizer("llama3_tiktoken")
    compiled = compile_grammar(Grammar.from_lark(TOOL_CALL), info)
    finished, calls = walk_opened_calls(
        compiled, info, _TaggedCallsOracle(), seed="lark_json", walks=40, rounds=2,
        first=lambda rng: rng.choice(["", "Sure: ", "x\n"]) + "<tool_call>",
        again=lambda rng: "<tool_call>", marker="<tool_call>")
    assert finished >= 40 and calls >= 60, (finished, calls)


def test_the_oracle_catches_an_invalid_call():
    oracle = _TaggedCallsOracle()
    assert oracle.check('x<tool_call>{"city": "Paris"}</tool_call>y') is None
    assert oracle.check('<tool_call>{"city": 3}</tool_call>') is not None
    assert oracle.check("a < b") is not None


def test_special_tokens_trigger_in_lark():
    """In Lark, a special token after free text is a trigger: free text (maximal munch) ends
    where the token comes, and the JSON must follow it."""
    info = TokenizerInfo([bytes([b]) for b in range(256)] + [b"", b""], eos_token_ids=[256],
                         special_token_names={257: "<|python_tag|>"})
    text = f'start: FREE? (<|python_tag|> %json {json.dumps(WEATHER)})?\nFREE: /(?s:.+)/\n'
    matcher = Matcher(compile_grammar(Grammar.from_lark(text), info))
    assert matcher.accept_bytes(b"Let me check <|python_tag|> as text") and matcher.is_accepting()
    assert matcher.accept_token(257) and not matcher.is_accepting()
    assert not matcher.accept_bytes(b"x")
    assert matcher.accept_bytes(b'{"city": "Oslo"}') and matcher.is_accepting()
    assert not matcher.is_token_allowed(257) and not matcher.accept_bytes(b" ")
