"""What a generation job checks before it runs: every config value (jaxguide.jobs.validation),
config paths relative to their file, `lenient` per request and per config, repeated ids, and
grammar errors found when a line is parsed. No model is loaded here (the tokenizer only)."""

from __future__ import annotations

import json
import os
import pathlib
import re

import pytest

from jaxguide.jobs.config import ConfigError
from jaxguide.jobs.generation_job import load_job_config, read_requests
from jaxguide.models.smollm2 import tokenizer_info

ROOT = pathlib.Path(__file__).resolve().parents[2]
BASE = ROOT / "configs" / "base.yml"
SAMPLING = {"kind": "greedy", "temperature": 1.0, "top_k": 40, "top_p": 0.9, "min_p": 0.05}
# A keyword jaxguide cannot enforce (a count over its budget; lenient ignores it).
UNENFORCEABLE = {"type": "array", "items": {"type": "integer"}, "contains": {"const": 7},
                 "minContains": 5000}


@pytest.mark.parametrize("override,message", [
    ("sampling.kind=nucleus", "sampling.kind must be one of greedy, temperature, top_k, top_p, "
                              "min_p, got 'nucleus'"),
    ("sampling.top_p=1.5", "sampling.top_p must be a number in (0, 1], got 1.5"),
    ("sampling.top_p=0", "sampling.top_p must be a number in (0, 1], got 0"),
    ("sampling.temperature=-1", "sampling.temperature must be a finite number >= 0"),
    ("sampling.top_k=0", "sampling.top_k must be an integer >= 1, got 0"),
    ("sampling.min_p=1.5", "sampling.min_p must be a number in [0, 1], got 1.5"),
    ("json_whitespace=weird", "json_whitespace must be one of flexible, compact or an indent "
                              "0..16, got 'weird'"),
    ("json_whitespace=17", "json_whitespace must be one of"),
    ("max_new_tokens=-3", "max_new_tokens must be an integer >= 1, got -3"),
    ("max_forced_per_step=-1", "max_forced_per_step must be an integer >= 0, got -1"),
    ("batch_size=0", "batch_size must be an integer >= 1, got 0"),
    ("threads=-2", "threads must be an integer >= 0, got -2"),
    ("model=llama", "model must be one of smollm2, got 'llama'"),
    ("dtype=float16", "dtype must be one of float32, bfloat16, got 'float16'"),
    ("input=", "input must be a file path"),
    ("seed=-1", "seed must be an integer in [0, 2**32), got -1"),
    ("resume=null", "resume must be true or false, got None"),
])
def test_each_bad_config_value_is_one_line_naming_key_and_allowed_values(override, message):
    with pytest.raises(ConfigError) as error:
        load_job_config(str(BASE), [override])
    (line,) = str(error.value).splitlines()
    assert message in line


def test_every_bad_value_is_reported_and_good_edge_values_pass():
    with pytest.raises(ConfigError) as error:
        load_job_config(str(BASE), ["sampling.kind=top_p", "sampling.temperature=0",
                                    "sampling.top_k=0", "batch_size=0", "dtype=f16"])
    lines = str(error.value).splitlines()
    assert len(lines) == 4, lines
    for text in ("temperature must be > 0 for kind top_p", "top_k", "batch_size", "dtype"):
        assert sum(text in line for line in lines) == 1, (text, lines)
    for overrides in (["json_whitespace=2"], ["json_whitespace=compact"],
                      ["sampling.temperature=0"], ["sampling.top_p=1", "sampling.min_p=0"],
                      ["max_forced_per_step=0"]):
        load_job_config(str(BASE), overrides)


def test_a_config_file_with_a_bad_value_is_refused_too(tmp_path):
    (tmp_path / "job.yml").write_text(f"base_config: {BASE}\nsampling: {{kind: nucleus}}\n")
    with pytest.raises(ConfigError, match=re.escape("sampling.kind must be one of")):
        load_job_config(str(tmp_path / "job.yml"))


@pytest.mark.parametrize("value", ["2", "compact"])
def test_json_whitespace_of_either_type_in_a_config_file(tmp_path, value):
    # json_whitespace may change type (a mode or an indent): set in a file with a base (not
    # only as key=value), it is checked as a value, never refused as an unknown key.
    (tmp_path / "job.yml").write_text(f"base_config: {BASE}\njson_whitespace: {value}\n")
    config = load_job_config(str(tmp_path / "job.yml"))
    assert config["json_whitespace"] == (2 if value == "2" else value)
    (tmp_path / "bad.yml").write_text(f"base_config: {BASE}\njson_whitespace: weird\n")
    with pytest.raises(ConfigError, match=re.escape("json_whitespace must be one of")):
        load_job_config(str(tmp_path / "bad.yml"))


def test_config_paths_are_relative_to_the_file_that_sets_them(tmp_path, monkeypatch):
    for folder in ("a", "b", "cwd"):
        (tmp_path / folder).mkdir()
    (tmp_path / "b" / "mid.yml").write_text(f"base_config: {BASE}\ninput: req.jsonl\n")
    (tmp_path / "a" / "job.yml").write_text("base_config: ../b/mid.yml\noutput: out/r.jsonl\n")
    monkeypatch.chdir(tmp_path / "cwd")
    config = load_job_config("../a/job.yml")
    assert config["input"] == str(tmp_path / "b" / "req.jsonl")
    assert config["output"] == str(tmp_path / "a" / "out" / "r.jsonl")
    # Command-line overrides: relative to the working directory, as given; absolute paths kept.
    config = load_job_config("../a/job.yml", ["output=here.jsonl", f"input={tmp_path}/x.jsonl"])
    assert (config["output"], config["input"]) == ("here.jsonl", f"{tmp_path}/x.jsonl")
    (tmp_path / "a" / "abs.yml").write_text(f"base_config: {BASE}\ninput: {tmp_path}/y.jsonl\n")
    assert load_job_config(str(tmp_path / "a" / "abs.yml"))["input"] == f"{tmp_path}/y.jsonl"
    # The default config's paths: the bundled requests, outputs/ at the repository's root.
    base = load_job_config(str(BASE))
    assert base["input"] == str(ROOT / "configs" / "examples" / "requests.jsonl")
    assert base["output"] == str(ROOT / "outputs" / "generate_results.jsonl")
    assert os.path.exists(base["input"])


def _read(tmp_path, lines, **kwargs):
    path = tmp_path / "requests.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return read_requests(str(path), SAMPLING, tokenizer_info=tokenizer_info(), **kwargs)


def test_lenient_per_request_and_in_the_config(tmp_path):
    strict, per_request, overruled = _read(tmp_path, [
        {"id": "strict", "prompt": "x", "json_schema": UNENFORCEABLE},
        {"id": "lenient", "prompt": "x", "json_schema": UNENFORCEABLE, "lenient": True},
        {"id": "overruled", "prompt": "x", "json_schema": UNENFORCEABLE, "lenient": False}])
    assert strict.error.startswith("line 1: JsonSchemaError:") and "minContains" in strict.error
    assert ('set "lenient": true in the request line, or lenient=true in the config'
            in strict.error) and "lenient=True" not in strict.error
    assert per_request.error is None and per_request.request is not None
    assert ("line 2: jaxguide JSON Schema: keyword 'minContains' cannot be enforced "
            "(counting the items that match contains needs 5001 states, above 4,096) at #; "
            "ignored (lenient)") in per_request.warnings, per_request.warnings
    assert overruled.error is not None
    default_on, overruled = _read(tmp_path, [
        {"id": "strict", "prompt": "x", "json_schema": UNENFORCEABLE},
        {"id": "overruled", "prompt": "x", "json_schema": UNENFORCEABLE, "lenient": False}],
        lenient=True)
    assert default_on.error is None and default_on.warnings
    assert "minContains" in overruled.error


def test_a_repeated_id_never_gets_a_second_line_under_that_id(tmp_path):
    jobs = _read(tmp_path, [
        {"id": "a", "prompt": "x", "regex": "(unclosed"},     # fails, but holds the id "a"
        {"id": "a", "prompt": "x"},                           # a good request, repeated id
        {"id": "a", "promt": "x"},                            # a bad one, repeated id
        {"id": "b", "prompt": "x"}])
    assert [job.id for job in jobs] == ["a", "line-2", "line-3", "b"]
    assert [job.error is None for job in jobs] == [False, False, False, True]
    assert jobs[1].error == "line 2: duplicate id 'a' (first on line 1); this line is not run"
    assert jobs[2].error.startswith("line 3: duplicate id 'a'")


def test_a_fallback_id_never_takes_an_id_a_request_has(tmp_path):
    """A line with no usable id, or a repeated one, is keyed `line-N`, unless a request of the
    file (before or after it) has that id: then `line-N-2`, `line-N-3`, ..."""
    jobs = _read(tmp_path, [
        {"id": "line-3", "prompt": "x"},          # explicit ids shaped like fallback ids
        {"id": "a", "prompt": "x"},
        {"id": "a", "prompt": "x"},               # repeated: line-3, line-3-2 taken: line-3-3
        "not a request",                          # no id: line-4, line-4-2 taken: line-4-3
        {"id": "line-3-2", "prompt": "x"},        # an id after the line it would clash with
        {"id": "line-4", "prompt": "x"},
        {"id": "line-4-2", "prompt": "x"},
        {"id": "line-3", "prompt": "x"},          # repeated explicit id: line-8
    ])
    assert [job.id for job in jobs] == ["line-3", "a", "line-3-3", "line-4-3", "line-3-2",
                                        "line-4", "line-4-2", "line-8"]
    assert [job.error is None for job in jobs] == [True, True, False, False, True, True, True,
                                                   False]
    assert jobs[2].error == "line 3: duplicate id 'a' (first on line 2); this line is not run"
    assert jobs[3].error.startswith("line 4: a request must be a JSON object")
    assert jobs[7].error.startswith("line 8: duplicate id 'line-3' (first on line 1)")


@pytest.mark.parametrize("line,message", [
    ({"regex": r"\bcat\b"}, "word boundaries"),
    ({"regex": r"a(?=b)"}, "lookahead"),
    ({"lark": 'start: "a" /x(?<=y)/'}, "lookbehind"),
    ({"lark": 'start: "a" <|no_such_token|>'}, "<|no_such_token|>"),
    ({"json_schema": {"type": "string", "pattern": "\\bx"}}, "pattern"),
])
def test_grammar_errors_are_found_when_the_line_is_parsed(tmp_path, line, message):
    (job,) = _read(tmp_path, [{"id": "g", "prompt": "x", **line}])
    assert job.request is None and job.error.startswith("line 1: "), job.error
    assert message in job.error, job.error
