"""Structural tags and tool-call formats (issue #25 item 3): tools in the OpenAI format, the
grammar of each format and tool_choice (accept/reject tables), random walks whose calls are
split at the triggers and validated by jsonschema, parsing, and the errors."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest
from support.real_tokenizers import real_tokenizer

from jaxguide import (
    Grammar,
    GrammarError,
    Matcher,
    SpecialToken,
    TokenizerInfo,
    compile_grammar,
)
from jaxguide.grammars.tool_calls import (
    StructuralTag,
    parse_tools,
    structural_tags_grammar,
)
from jaxguide.grammars.tool_formats import (
    FORMATS,
    parse_tool_calls,
    tool_call_grammar,
    tool_system_prompt,
)
from jaxguide.jobs.checks import why_tool_calls_invalid
from jaxguide.testing import SHORT_WALK, json_body, random_walk, tool_call_oracle

WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                            "days": {"type": "integer", "minimum": 1,
                                                     "maximum": 9}},
           "required": ["city"], "additionalProperties": False}
TIME = {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET", "JST"]}},
        "required": ["zone"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                           "parameters": WEATHER}},
         {"type": "function", "function": {"name": "get_time", "parameters": TIME}}]
SPECIALS = ["[TOOL_CALLS]", "<|python_tag|>"]


def byte_tokenizer() -> TokenizerInfo:
    vocab = [bytes([b]) for b in range(256)] + [b""] * 3
    return TokenizerInfo(vocab, eos_token_ids=[256],
                         special_token_names={257: SPECIALS[0], 258: SPECIALS[1]})


def accepts(grammar: Grammar, pieces: list) -> bool:
    """Whether the text (str pieces as bytes, int pieces as token ids) is a sentence."""
    matcher = Matcher(compile_grammar(grammar, byte_tokenizer()))
    for piece in pieces:
        ok = matcher.accept_token(piece) if isinstance(piece, int) else \
            matcher.accept_bytes(piece.encode())
        if not ok:
            return False
    return matcher.is_accepting()


def call(name, arguments, key="arguments"):
    return json.dumps({"name": name, key: arguments})


W, T = call("get_weather", {"city": "Oslo"}), call("get_time", {"zone": "UTC"})
BAD = call("get_weather", {"city": "Oslo", "days": 0})
CASES = {  # format -> [(tool_choice, parallel, pieces, accepted)]
    "hermes": [
        ("auto", True, ["Hi."], True),
        ("auto", True, [f"Sure <tool_call>\n{W}\n</tool_call> and <tool_call>{T}</tool_call>"],
         True),
        ("auto", False, [f"<tool_call>{W}</tool_call><tool_call>{T}</tool_call>"], False),
        ("auto", True, [f"<tool_call>{BAD}</tool_call>"], False),
        ("auto", True, [f"<tool_call>{call('get_weather', {'zone': 'UTC'})}</tool_call>"],
         False),
        ("required", True, ["Hi."], False),
        ("required", True, [f"<tool_call>{W}</tool_call>"], True),
        ("get_time", True, [f"<tool_call>{W}</tool_call>"], False),
        ({"type": "function", "function": {"name": "get_time"}}, True,
         [f"<tool_call>{T}</tool_call>"], True),
        ("none", True, ["Hi <tool_call"], True),
        ("none", True, [f"<tool_call>{T}</tool_call>"], False),
    ],
    "smollm2": [
        ("auto", True, [f"<tool_call>[\n{W},\n{T}\n]</tool_call>"], True),
        ("auto", True, ["Let me see. <tool_call>[]</tool_call>"], True),
        ("auto", False, [f"<tool_call>[{W}, {T}]</tool_call>"], False),
        ("auto", True, [f"<tool_call>[{W}]</tool_call> more"], False),
        ("required", True, ["<tool_call>[]</tool_call>"], False),
        ("required", True, [f"<tool_call>[{T}]</tool_call>"], True),
    ],
    "mistral": [  # [TOOL_CALLS] is a special token of the test tokenizer: matched by id
        ("auto", True, ["ok ", 257, f"[{W}, {T}]"], True),
        ("auto", True, [f"ok [TOOL_CALLS][{W}]"], True),  # text, not the token: free text
        ("required", True, [257, f"[{BAD}]"], False),
        ("required", True, [257, f"[{T}]"], True),
    ],
    "llama3": [
        ("auto", True, [258, call("get_weather", {"city": "Oslo"}, "parameters")], True),
        ("auto", True, [258, W], False),  # "arguments" is not this format's key
        ("required", False, ["x"], False),
    ],
}


@pytest.mark.parametrize("fmt, case", [(f, c) for f, cases in CASES.items() for c in cases],
                         ids=[f"{f}-{i}" for f, cases in CASES.items()
                              for i in range(len(cases))])
def test_formats_accept_and_reject(fmt, case):
    choice, parallel, pieces, ok = case
    grammar = tool_call_grammar(TOOLS, choice, format=fmt, parallel=parallel,
                                special_token_names=SPECIALS)
    assert accepts(grammar, pieces) == ok


# A tool whose parameters refer to their own definitions and to their own properties (MCP
# tools do): the refs must resolve wherever a format puts the call object (in array formats,
# inside the call list).
UNITS = {"type": "object", "$defs": {"unit": {"enum": ["C", "F"]}},
         "properties": {"u": {"$ref": "#/$defs/unit"}, "v": {"$ref": "#/properties/u"}},
         "required": ["u"], "additionalProperties": False}
COUNT = {"type": "object", "definitions": {"n": {"type": "integer"}},
         "properties": {"n": {"$ref": "#/definitions/n"}}}
REF_TOOLS = [{"type": "function", "function": {"name": "units", "parameters": UNITS}},
             {"type": "function", "function": {"name": "count", "parameters": COUNT}}]


@pytest.mark.parametrize("fmt, wrap", [
    ("hermes", "<tool_call>{}</tool_call>"), ("smollm2", "<tool_call>[{}]</tool_call>"),
    ("mistral", "[TOOL_CALLS][{}]"), ("llama3", "<|python_tag|>{}")])
def test_tools_with_definitions_in_every_format(fmt, wrap):
    grammar = tool_call_grammar(REF_TOOLS, "required", format=fmt)
    key = FORMATS[fmt].arguments_key
    for arguments, tool, ok in [({"u": "C", "v": "F"}, "units", True), ({"n": 3}, "count", True),
                                ({"u": "K"}, "units", False), ({"u": "C", "v": "K"}, "units",
                                                               False), ({"n": "3"}, "count", False)]:
        assert accepts(grammar, [wrap.format(call(tool, arguments, key))]) == ok, (arguments, ok)


def test_triggers_are_text_without_the_special_token():
    grammar = tool_call_grammar(TOOLS, "required", format="mistral")  # no special names
    assert accepts(grammar, [f"[TOOL_CALLS][{T}]"])


@pytest.mark.parametrize("fmt, choice, parallel", [
    ("hermes", "auto", True), ("hermes", "required", False), ("smollm2", "auto", True),
    ("smollm2", "get_time", False), ("mistral", "required", True),
])
def test_walks_validate_call_by_call(fmt, choice, parallel):
    """Every finished walk splits into calls that validate; required walks hold a call."""
    info = real_tokenizer("llama3_tiktoken")
    grammar = tool_call_grammar(TOOLS, choice, format=fmt, parallel=parallel)
    compiled = compile_grammar(grammar, info)
    oracle, trigger = tool_call_oracle(TOOLS, choice, fmt, parallel), FORMATS[fmt].trigger
    source = {"tools": TOOLS, "tool_choice": choice, "parallel_tool_calls": parallel}
    finished = calls = 0
    for i in range(24):
        rng = random.Random(f"{fmt}{choice}:{i}")
        prefix = [] if choice != "auto" else info.encode(rng.choice(["", "Ok. "]) + trigger)
        walk = random_walk(compiled, rng, SHORT_WALK, prefix=prefix)
        assert walk is not None and walk.end in ("eos", "max_tokens"), walk
        if walk.end != "eos":
            continue
        text = walk.text.decode()
        assert oracle.check(text) is None, (text, oracle.check(text))
        parsed = parse_tool_calls(text, fmt)
        assert why_tool_calls_invalid(source, parsed) is None, (text, parsed)
        finished += 1
        calls += len(parsed)
    assert finished >= 15 and calls >= 8, (finished, calls)


def test_parallel_walks_make_several_calls():
    info = real_tokenizer("llama3_tiktoken")
    compiled = compile_grammar(tool_call_grammar(TOOLS, "auto", format="hermes"), info)
    oracle = tool_call_oracle(TOOLS, "auto", "hermes")
    most = 0
    for i in range(12):
        rng = random.Random(f"parallel:{i}")
        prefix = info.encode("<tool_call>")
        for _ in range(3):
            walk = random_walk(compiled, rng, SHORT_WALK, prefix=prefix)
            if walk.end != "eos":
                break
            text = walk.text.decode()
            assert oracle.check(text) is None, text
            most = max(most, len(parse_tool_calls(text, "hermes")))
            prefix = walk.tokens + info.encode(" <tool_call>")
    assert most >= 3


def test_special_token_trigger_walks():
    """llama3's trigger is a special token, matched by id only. (The Llama-3.0 vocabulary of
    the tests names id 128010 <|reserved_special_token_5|>; Llama 3.1 renamed it
    <|python_tag|>: the format is used with that name.)"""
    info = real_tokenizer("llama3_tiktoken")
    names = info.special_token_names
    tag = 128010
    fmt = dataclasses.replace(FORMATS["llama3"], trigger=names[tag])
    grammar = tool_call_grammar(TOOLS, "auto", format=fmt, special_token_names=names.values())
    compiled = compile_grammar(grammar, info)
    schema = {"anyOf": [fmt.call_schema(t) for t in parse_tools(TOOLS)]}
    check = json_body(schema)
    finished = 0
    for i in range(10):
        walk = random_walk(compiled, random.Random(i), SHORT_WALK,
                           prefix=info.encode("Calling. ") + [tag])
        assert walk.end in ("eos", "max_tokens")
        if walk.end == "eos":
            body = info.decode_bytes(walk.tokens[walk.tokens.index(tag) + 1:]).decode()
            assert check(body, 0) == [(len(body), None)], body
            finished += 1
    assert finished >= 5
    matcher = Matcher(compiled)
    assert matcher.accept_bytes(names[tag].encode()) and matcher.is_accepting()  # just text


def test_structural_tags_share_a_trigger():
    tags = [StructuralTag("<function=get_weather>", WEATHER, "</function>"),
            StructuralTag("<function=get_time>", TIME, "</function>")]
    grammar = structural_tags_grammar(tags, ["<function="])
    assert accepts(grammar, ['a <function=get_time>{"zone": "CET"}</function> b'])
    assert not accepts(grammar, ['<function=get_time>{"city": "Oslo"}</function>'])
    assert not accepts(grammar, ['<function=get_date>{}</function>'])
    required = structural_tags_grammar(tags, ["<function="], at_least_one=True,
                                       stop_after_first=True)
    assert not accepts(required, ['a <function=get_time>{"zone": "CET"}</function>'])
    assert accepts(required, ['<function=get_time>{"zone": "CET"}</function>'])
    assert not accepts(required, ['<function=get_time>{"zone": "CET"}</function> b'])
    special = structural_tags_grammar([StructuralTag(SpecialToken("<|python_tag|>"), TIME)],
                                      [SpecialToken("<|python_tag|>")])
    assert accepts(special, ["x", 258, '{"zone": "JST"}'])
    with pytest.raises(GrammarError, match="no trigger starts"):
        structural_tags_grammar(tags, ["<tool>"])


def test_parse_tool_calls():
    text = (f"a <tool_call>\n{W}\n</tool_call> b <tool_call>{T}</tool_call> "
            f'<tool_call>{{"name": "get_time", "arg')
    assert parse_tool_calls(text, "hermes") == [
        {"name": "get_weather", "arguments": {"city": "Oslo"}},
        {"name": "get_time", "arguments": {"zone": "UTC"}}]
    assert parse_tool_calls(f"<tool_call>[{W}, {T}]</tool_call>", "smollm2")[1]["name"] == \
        "get_time"
    assert parse_tool_calls(f"[TOOL_CALLS][{W}", "mistral") == []


def test_system_prompt_lists_the_tools():
    prompt = tool_system_prompt(TOOLS, "smollm2")
    assert "<tools>" in prompt and '"get_weather"' in prompt and "<tool_call>[" in prompt
    assert json.dumps(TOOLS[1]["function"]["parameters"]) in prompt
    assert "{{" not in tool_system_prompt(TOOLS, "hermes")


@pytest.mark.parametrize("tools, match", [
    ("get_weather", "list of tool objects"),
    ([], "empty"),
    ([3], "must be an object"),
    ([{"type": "function", "function": {"description": "x"}}], "name"),
    ([{"type": "function", "function": {"name": "bad name"}}], "name"),
    ([{"type": "retrieval"}], "type must be 'function'"),
    ([{"name": "f"}, {"name": "f"}], "repeated"),
    ([{"name": "f", "parameters": "object"}], "parameters"),
])
def test_malformed_tools(tools, match):
    with pytest.raises(GrammarError, match=match):
        tool_call_grammar(tools)


@pytest.mark.parametrize("choice, match", [
    ("get_date", "not one of the tools"), ({"type": "function"}, "tool_choice"),
    ({"type": "function", "function": {"name": 3}}, "name must be a string"), (3, "string"),
])
def test_bad_tool_choice(choice, match):
    with pytest.raises(GrammarError, match=match):
        tool_call_grammar(TOOLS, choice)


def test_unknown_format_and_bad_schema():
    with pytest.raises(GrammarError, match="unknown tool format"):
        tool_call_grammar(TOOLS, format="gpt")
    with pytest.raises(GrammarError, match="minimum"):
        tool_call_grammar([{"name": "f", "parameters": {"type": "integer", "minimum": "a"}}])


def test_the_call_checker_rejects_what_it_must():
    source = {"tools": TOOLS, "tool_choice": "required", "parallel_tool_calls": False}
    good = {"name": "get_time", "arguments": {"zone": "UTC"}}
    assert why_tool_calls_invalid(source, [good]) is None
    assert "requires" in why_tool_calls_invalid(source, [])
    assert "parallel" in why_tool_calls_invalid(source, [good, good])
    assert "zone" in why_tool_calls_invalid(source, [{"name": "get_time", "arguments": {}}])
    assert "not one of" in why_tool_calls_invalid(source, [{"name": "x", "arguments": {}}])


GEMMA_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "required": ["city"],
        "properties": {"city": {"type": "string", "maxLength": 10},
                       "days": {"type": "integer", "minimum": 1, "maximum": 5},
                       "metric": {"type": "boolean"},
                       "hours": {"type": "array", "items": {"type": "integer"}, "maxItems": 2}}}}},
    {"type": "function", "function": {"name": "get_time", "parameters": TIME}}]


@pytest.mark.parametrize("choice, pieces, ok", [
    ("auto", ['[get_weather(city="Oslo", metric=False), get_time(zone="UTC")]'], True),
    ("auto", ["Hello [x]"], True),
    ("auto", ["[get_weather(days=2)]"], False),  # city is required
    ("auto", ['[get_weather(city="Oslo", metric=false)]'], False),  # JSON's false
    ("required", ["Hello"], False),
    ("get_time", ['[get_time(zone="JST")]'], True),
    ("get_time", ['[get_weather(city="Oslo")]'], False),
    ("none", ['[get_time(zone="JST")]'], False),
])
def test_gemma_python_calls(choice, pieces, ok):
    assert accepts(tool_call_grammar(GEMMA_TOOLS, choice, format="gemma"), pieces) == ok


@pytest.mark.parametrize("choice", ["auto", "required"])
def test_gemma_walks_parse_as_python_and_validate(choice):
    info = real_tokenizer("llama3_tiktoken")
    compiled = compile_grammar(tool_call_grammar(GEMMA_TOOLS, choice, format="gemma"), info)
    oracle = tool_call_oracle(GEMMA_TOOLS, choice, "gemma")
    finished = calls = 0
    for i in range(24):
        rng = random.Random(f"gemma{choice}:{i}")
        prefix = info.encode("[") if i % 2 else []
        walk = random_walk(compiled, rng, SHORT_WALK, prefix=prefix)
        assert walk.end in ("eos", "max_tokens"), walk
        if walk.end == "eos":
            text = walk.text.decode()
            assert oracle.check(text) is None, (text, oracle.check(text))
            finished += 1
            calls += len(parse_tool_calls(text, "gemma"))
    assert finished >= 15 and calls >= 8, (finished, calls)


@pytest.mark.parametrize("parameters, match", [
    ({"type": "object", "properties": {"x": {}}}, "no type"),
    ({"type": "object", "properties": {"x": {"type": ["string", "null"]}}}, "null"),
    ({"type": "object", "properties": {"x": {"enum": ["a", True]}}}, "constant"),
    ({"type": "object", "properties": {"x": {"type": "object"}}}, "undeclared"),
    ({"type": "object", "properties": {"x-y": {"type": "string"}}}, "Python name"),
    ({"type": "array"}, "object schema"),
])
def test_gemma_refuses_what_python_literals_cannot_say(parameters, match):
    with pytest.raises(GrammarError, match=match):
        tool_call_grammar([{"name": "f", "parameters": parameters}], format="gemma")


def test_the_oracles_reject_what_they_must():
    gemma = tool_call_oracle(GEMMA_TOOLS, "required", "gemma", parallel=False)
    assert gemma.check('[get_time(zone="UTC")]') is None
    for bad in ["Hi", '[get_time(zone="PST")]', '[get_time("UTC")]', "[get_date()]",
                '[get_time(zone="UTC"), get_time(zone="UTC")]', "[]", "[get_time(zone="]:
        assert gemma.check(bad) is not None, bad
    hermes = tool_call_oracle(TOOLS, "auto", "hermes", parallel=False)
    assert hermes.check(f"a <tool_call>\n{W}\n</tool_call>") is None
    for bad in [f"<tool_call>{BAD}</tool_call>", f"<tool_call>{W}</tool_call> b",
                f"<tool_call>\n\n{W}</tool_call>"]:
        assert hermes.check(bad) is not None, bad
