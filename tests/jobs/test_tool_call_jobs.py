"""Tool-call requests in batch jobs (issue #25): the JSONL keys `tools`, `tool_choice`,
`parallel_tool_calls`, `tool_format`; bad tool lines fail alone at parse time; the output lines
hold `tool_calls` and `valid` (each call checked against its tool's schema by jsonschema). One
run of tpu_scripts/generate.py with SmolLM2 on CPU, a tiny batch and few tokens."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from jaxguide.jobs.checks import why_invalid
from jaxguide.jobs.generation_job import parse_request_line
from jaxguide.models.smollm2 import tokenizer_info

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tpu_scripts" / "generate.py"
SAMPLING = {"kind": "greedy"}
WEATHER = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 16}},
           "required": ["city"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER,
                                           "description": "The weather in a city"}}]
ONE_SHOT = [{"role": "user", "content": "What's the weather in Rome?"},
            {"role": "assistant", "content": '<tool_call>[\n{"name": "get_weather", '
                                             '"arguments": {"city": "Rome"}}\n]</tool_call>'}]


@pytest.mark.parametrize("line, message", [
    ({"id": "a", "prompt": "x", "tools": TOOLS, "tool_choice": "get_time"}, "not one of"),
    ({"id": "b", "prompt": "x", "tools": [{"type": "function"}]}, "name must be"),
    ({"id": "c", "prompt": "x", "tools": TOOLS, "regex": "a"}, "at most one of"),
    ({"id": "d", "prompt": "x", "tool_choice": "auto"}, "need tools"),
    ({"id": "e", "prompt": "x", "tools": TOOLS, "tool_format": "gpt"}, "unknown tool format"),
    ({"id": "f", "prompt": "x", "tools": "get_weather"}, "list of tool objects"),
])
def test_bad_tool_lines_fail_alone(line, message):
    job = parse_request_line(json.dumps(line), 7, SAMPLING, tokenizer_info=tokenizer_info())
    assert job.request is None and job.error.startswith("line 7: ") and message in job.error


def test_a_tool_line_parses_with_the_model_format():
    job = parse_request_line(json.dumps({"id": "t", "prompt": "x", "tools": TOOLS}), 1,
                             SAMPLING, tokenizer_info=tokenizer_info())
    assert job.error is None and job.kind == "tools"
    assert job.request.tool_format == "smollm2" and job.source["format"] == "smollm2"
    call = '<tool_call>[{"name": "get_weather", "arguments": {"city": "Oslo"}}]</tool_call>'
    assert why_invalid("tools", job.source, "Sure. " + call) is None
    assert why_invalid("tools", job.source, call.replace("Oslo", "x" * 20)) is not None


def test_tool_requests_through_the_batch_script(tmp_path):
    lines = [
        {"id": "auto", "messages": [*ONE_SHOT, {"role": "user", "content": "And in Paris?"}],
         "tools": TOOLS},
        {"id": "required", "messages": [{"role": "user", "content": "Weather in Oslo?"}],
         "tools": TOOLS, "tool_choice": "required", "parallel_tool_calls": False},
        {"id": "plain", "prompt": "Hi", "max_new_tokens": 2},
    ]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    done = subprocess.run([sys.executable, str(SCRIPT), "input=in.jsonl", "output=out.jsonl",
                           "max_new_tokens=40", "progress=false"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = {r["id"]: r for r in map(json.loads, (tmp_path / "out.jsonl").read_text().split(
        "\n")[:-1])}
    assert out["auto"]["tool_calls"] == [{"name": "get_weather",
                                          "arguments": {"city": "Paris"}}]
    assert out["auto"]["valid"] is True
    assert out["required"]["tool_calls"] and out["required"]["valid"] is True
    assert "tool_calls" not in out["plain"]
