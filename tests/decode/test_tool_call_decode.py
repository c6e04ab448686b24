"""Tool calls end to end with the real SmolLM2-135M-Instruct on CPU (issue #25): requests with
tools through `generate`, including tool_choice="auto" runs that make calls (a one-shot chat
shows the format, as its function-calling prompt does), parsed into `Result.tool_calls` and
validated against the tools' schemas by jsonschema; required and named choices force a call."""

from __future__ import annotations

import json

import pytest

import jaxguide
from jaxguide import GrammarError, Request
from jaxguide.decode.tool_requests import messages_with_tools, text_with_special_names
from jaxguide.jobs.checks import why_tool_calls_invalid

WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 16}},
           "required": ["city"], "additionalProperties": False}
TIME = {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 8}},
        "required": ["zone"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER,
                                           "description": "The weather in a city"}},
         {"type": "function", "function": {"name": "get_time", "parameters": TIME,
                                           "description": "The time in a time zone"}}]
ONE_SHOT = [{"role": "user", "content": "What's the weather in Rome?"},
            {"role": "assistant", "content": '<tool_call>[\n{"name": "get_weather", '
                                             '"arguments": {"city": "Rome"}}\n]</tool_call>'}]


@pytest.fixture(scope="module")
def smollm2():
    from jaxguide.models import smollm2

    return smollm2.load()


def ask(question: str, **kwargs) -> Request:
    return Request(messages=[*ONE_SHOT, {"role": "user", "content": question}], tools=TOOLS,
                   **kwargs)


def test_tool_calls_through_generate(smollm2):
    model, info = smollm2
    requests = [ask("What is the weather in Paris?"),                      # auto: a call
                ask("What time is it in Tokyo?", tool_choice="auto"),      # auto: a call
                ask("Hello!", tool_choice="required", parallel_tool_calls=False),
                ask("Hello!", tool_choice={"type": "function",
                                           "function": {"name": "get_time"}},
                    parallel_tool_calls=False),
                Request(prompt="The capital of France is", max_new_tokens=4)]
    results = jaxguide.generate(model, info, requests, max_new_tokens=36)
    for request, result in zip(requests[:4], results):
        assert result.error is None, result.error
        assert result.tool_calls, (result.text, result.finish_reason)
        source = {"tools": TOOLS, "tool_choice": request.tool_choice,
                  "parallel_tool_calls": request.parallel_tool_calls}
        assert why_tool_calls_invalid(source, result.tool_calls) is None, result.tool_calls
    assert results[0].tool_calls[0] == {"name": "get_weather", "arguments": {"city": "Paris"}}
    assert results[1].tool_calls[0]["name"] == "get_time"
    assert [c["name"] for c in results[3].tool_calls] == ["get_time"]
    assert results[4].tool_calls is None


def test_auto_leaves_answers_without_calls_free(smollm2):
    model, info = smollm2
    plain = jaxguide.generate(model, info, [Request(messages=[*ONE_SHOT, {
        "role": "user", "content": "Say hi."}])], max_new_tokens=6)[0]
    with_tools = jaxguide.generate(model, info, [ask("Say hi.")], max_new_tokens=6)[0]
    assert with_tools.tool_calls == [] and "<tool_call>" not in with_tools.text
    assert with_tools.text  # free text (the tools' system prompt changes what it says)
    assert plain.tool_calls is None


def test_tools_are_listed_in_the_system_prompt(smollm2):
    model, _ = smollm2
    request = Request(messages=[{"role": "system", "content": "Be brief."},
                                {"role": "user", "content": "Hi"}], tools=TOOLS)
    messages = messages_with_tools(request, model)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert json.dumps(WEATHER) in messages[0]["content"]
    assert messages[0]["content"].endswith("Be brief.")
    prompt = model.render_chat(messages)
    assert "<tools>" in prompt and prompt.endswith("<|im_start|>assistant\n")


def test_special_tokens_are_named_in_the_text_parsed(smollm2):
    _, info = smollm2
    ids = info.encode("a") + [2] + info.encode("b")
    assert text_with_special_names(info, ids) == "a<|im_end|>b"


@pytest.mark.parametrize("kwargs, match", [
    ({"tools": TOOLS, "tool_choice": "get_date"}, "not one of the tools"),
    ({"tools": [{"type": "function", "function": {}}]}, "name"),
    ({"tools": TOOLS, "grammar": jaxguide.Grammar.from_regex("x")}, "not both"),
    ({"tool_choice": "auto"}, "need tools"),
    ({"tools": TOOLS, "tool_format": "gpt"}, "unknown tool format"),
])
def test_bad_tool_requests_are_refused(kwargs, match):
    with pytest.raises(GrammarError, match=match):
        Request(prompt="x", **kwargs)


def test_a_tool_schema_that_fails_fails_its_row_only(smollm2):
    model, info = smollm2
    bad = Request(prompt="x", tools=[{"name": "f", "parameters": {"type": "integer",
                                                                  "minimum": "a"}}])
    results = jaxguide.generate(model, info, [bad, Request(prompt="Hi", max_new_tokens=2)],
                                max_new_tokens=2)
    assert results[0].finish_reason == "error" and "minimum" in results[0].error
    assert results[1].error is None


def test_speculative_decoding_makes_the_same_calls(smollm2):
    from jaxguide.decode.speculative import generate_speculative

    model, info = smollm2
    requests = [ask("Hi", tool_choice="get_time", parallel_tool_calls=False)]
    plain = jaxguide.generate(model, info, requests, max_new_tokens=36, fast_forward=False)
    speculated = generate_speculative(model, info, requests, max_new_tokens=36)
    assert speculated[0].text == plain[0].text
    assert speculated[0].tool_calls == plain[0].tool_calls
    assert speculated[0].tool_calls and speculated[0].tool_calls[0]["name"] == "get_time"
