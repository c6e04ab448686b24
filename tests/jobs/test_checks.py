"""jaxguide.jobs.checks: the one checker of generated output (the job's `valid`, and the verdicts
of `python -m jaxguide`)."""

from __future__ import annotations

import pytest

from jaxguide.jobs.checks import CHECK_KINDS, check_output, why_invalid

SCHEMA = {"type": "object", "properties": {"rank": {"type": "integer", "minimum": 1}},
          "required": ["city"]}


def test_why_invalid_names_the_problem():
    assert why_invalid("json_schema", SCHEMA, '{"city": "Rome", "rank": 2}') is None
    assert "minimum" in why_invalid("json_schema", SCHEMA, '{"city": "Rome", "rank": 0}')
    assert why_invalid("json_schema", SCHEMA, '{"city"').startswith("not JSON")
    assert "regex" in why_invalid("regex", r"\d+", "12a")
    assert why_invalid("lark", 'start: "a" "b"', "ba").startswith("UnexpectedCharacters")
    assert why_invalid("lark", 'start: "a" "b"', "").startswith("UnexpectedEOF")
    assert why_invalid("choice", ["yes", "no"], "maybe") == "not one of the choices"
    assert why_invalid("none", None, "anything") is None


def test_check_output_is_the_verdict_of_why_invalid():
    assert check_output("regex", r"\d+", "12") is True
    assert check_output("lark", 'start: "a" "b"', "ab") is True
    assert check_output("choice", ["yes"], "no") is False
    assert check_output("none", None, "x") is None
    assert set(CHECK_KINDS) == {"json_schema", "regex", "lark", "choice", "tools", "none"}
    tools = {"tools": [{"name": "f", "parameters": {"type": "object", "required": ["a"]}}],
             "tool_choice": "required", "format": "hermes"}
    assert check_output("tools", tools, '<tool_call>{"name": "f", "arguments": {"a": 1}}'
                                        "</tool_call>") is True
    assert check_output("tools", tools, '<tool_call>{"name": "f", "arguments": {}}'
                                        "</tool_call>") is False
    assert check_output("tools", tools, "no call") is False
    with pytest.raises(ValueError, match="kind must be one of"):
        why_invalid("grammar", None, "x")
