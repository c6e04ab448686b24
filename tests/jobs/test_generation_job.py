"""Batch generation job (tpu_scripts/generate.py, jaxguide.jobs.generation_job, jaxguide.jobs.config).

Configs: inheritance, typed overrides, clear errors. Request lines: every malformed or invalid
request fails alone with a clear error. Output: whole lines, resume without redoing finished
ids, torn tails repaired. Devices and hosts: greedy (and seeded sampled) results are identical
on one device, on 8 fake CPU devices in one process, and on 2 processes on localhost (CI runs
the 2-process test). The model is the real SmolLM2-135M-Instruct on CPU.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import socket
import subprocess
import sys

import pytest

from jaxguide import Matcher, compile_grammar
from jaxguide.device.sampling import Greedy, TopP
from jaxguide.jobs.config import ConfigError, load_config
from jaxguide.jobs.generation_job import (
    JobError,
    ResultWriter,
    check_output,
    parse_request_line,
    plan_batches,
    read_done_ids,
    read_requests,
    run_generation_job,
)
from jaxguide.models.smollm2 import tokenizer_info

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tpu_scripts" / "generate.py"
BASE = ROOT / "configs" / "base.yml"
SAMPLING = {"kind": "greedy", "temperature": 1.0, "top_k": 40, "top_p": 0.9, "min_p": 0.05}

SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
                                           "rank": {"type": "integer", "minimum": 1}},
          "required": ["city", "rank"], "additionalProperties": False}
GOOD_REQUESTS = [
    {"id": "json", "messages": [{"role": "user", "content": "A city and its rank as JSON."}],
     "json_schema": SCHEMA},
    {"id": "date", "messages": [{"role": "user", "content": "When did WW2 end? A date."}],
     "regex": r"(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"},
    {"id": "yes-no", "messages": [{"role": "user", "content": "Is water wet? yes or no"}],
     "choice": ["yes", "no"]},
    {"id": "free", "messages": [{"role": "user", "content": "What is the capital of Italy?"}]},
    {"id": "sampled", "prompt": "Once upon a time", "seed": 11,
     "sampling": {"kind": "top_p", "temperature": 0.9, "top_p": 0.9}},
]
BAD_LINES = [
    ('{"id": "torn", "prompt": "x"', "not valid JSON"),
    ('["not", "an", "object"]', "must be a JSON object"),
    ('{"id": "typo", "promt": "x"}', "unknown request keys ['promt']"),
    ('{"id": "two", "prompt": "x", "regex": "a", "lark": "start: \\"a\\""}', "at most one of"),
    ('{"id": "both", "prompt": "x", "messages": []}', "exactly one of prompt= and messages="),
    ('{"id": "schema", "prompt": "x", "json_schema": {"type": "strin"}}', "strin"),
    ('{"id": "regex", "prompt": "x", "regex": "(a"}', "regex"),
    ('{"id": "lark", "prompt": "x", "lark": "start: missing_rule"}', "missing_rule"),
    ('{"id": "kind", "prompt": "x", "sampling": {"kind": "beam"}}', "sampling.kind"),
    ('{"prompt": "no id"}', "has no id"),
    ('{"id": "vec", "prompt": "x", "sampling": {"kind": "temperature", "temperature": [1, 2]}}',
     "sampling.temperature must be a finite number >= 0"),
    ('{"id": "p", "prompt": "x", "sampling": {"kind": "top_p", "top_p": 1.5}}',
     "sampling.top_p must be a number in (0, 1], got 1.5"),
    ('{"id": "t0", "prompt": "x", "sampling": {"kind": "min_p", "temperature": 0}}',
     "sampling.temperature must be > 0 for kind min_p"),
    ('{"id": "k", "prompt": "x", "sampling": {"top_k": 0}}', "sampling.top_k must be an integer"),
    ('{"id": "m", "prompt": "x", "sampling": {"min_p": -0.5}}', "sampling.min_p must be a number"),
    ('{"id": "sk", "prompt": "x", "sampling": {"kindd": "greedy"}}', "unknown keys ['kindd']"),
    ('{"id": "mnt", "prompt": "x", "max_new_tokens": -3}',
     "max_new_tokens must be an integer >= 1, got -3"),
    ('{"id": "len", "prompt": "x", "regex": "a", "lenient": "yes"}', "lenient must be true or"),
    # Refused by the regex compiler only: found when the line is parsed all the same.
    ('{"id": "wb", "prompt": "x", "regex": "\\\\bcat"}', "word boundaries"),
    ('{"id": "sp", "prompt": "x", "lark": "start: \\"a\\" <|nope|>"}', "<|nope|>"),
    ('{"id": "uneval", "prompt": "x", "json_schema": {"anyOf": [{"required": ["a"]}, {}], '
     '"unevaluatedProperties": false}}',
     'set "lenient": true in the request line, or lenient=true in the config'),
    ('{"id": "json", "prompt": "duplicate of the first"}', "duplicate id 'json'"),
]


def write_requests(path: pathlib.Path, with_bad: bool = True) -> None:
    lines = [json.dumps(r) for r in GOOD_REQUESTS]
    if with_bad:
        lines += [line for line, _ in BAD_LINES]
    path.write_text("\n".join(lines) + "\n")


def read_results(path: pathlib.Path) -> list[dict]:
    data = path.read_bytes()
    assert data.endswith(b"\n"), "torn last line"
    return [json.loads(line) for line in data.decode().splitlines()]


# --------------------------------------------------------------------------- configs


def test_shipped_configs_load_and_every_key_is_commented():
    base = load_config(str(BASE))
    tpu = load_config(str(ROOT / "configs" / "smollm2_tpu.yml"))
    assert set(tpu) == set(base) and tpu["dtype"] == "bfloat16" and base["dtype"] == "float32"
    lines = BASE.read_text().splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and ":" in stripped:
            assert lines[i - 1].strip().startswith("#"), f"base.yml key without a comment: {line}"


def test_config_inheritance_and_overrides(tmp_path):
    (tmp_path / "base.yml").write_text("a: 1\nb: {c: 2.5, d: x}\ne: null\nf: true\n")
    (tmp_path / "mid.yml").write_text("base_config: base.yml\nb: {c: 3}\n")
    (tmp_path / "top.yml").write_text("base_config: mid.yml\na: 5\n")
    config = load_config(str(tmp_path / "top.yml"), ["b.d=y", "e=[1, 2]", "f=false"])
    assert config == {"a": 5, "b": {"c": 3, "d": "y"}, "e": [1, 2], "f": False}
    assert load_config(str(tmp_path / "top.yml"), ["b.c=4"])["b"]["c"] == 4  # int for float


@pytest.mark.parametrize("files,overrides,message", [
    ({"top.yml": "base_config: base.yml\nbatchsize: 3\n"}, [], "unknown config key 'batchsize'"
     " (did you mean batch_size?)"),
    ({"top.yml": "base_config: base.yml\n"}, ["batch_size=eight"], "batch_size must be int"),
    ({"top.yml": "base_config: base.yml\n"}, ["sampling.kindd=greedy"], "sampling.kindd"),
    ({"top.yml": "base_config: base.yml\n"}, ["no_equals"], "must look like key=value"),
    ({"top.yml": "base_config: top.yml\n"}, [], "base_config cycle"),
    ({"top.yml": "base_config: nowhere.yml\n"}, [], "config file not found"),
    ({"top.yml": "a: [1, 2\n"}, [], "invalid YAML"),
    ({"top.yml": "- 1\n- 2\n"}, [], "must be a YAML mapping"),
])
def test_config_errors_name_the_problem(tmp_path, files, overrides, message):
    (tmp_path / "base.yml").write_text("batch_size: 8\nsampling: {kind: greedy}\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(str(tmp_path / "top.yml"), overrides)


# --------------------------------------------------------------------------- requests


def test_bad_request_lines_fail_alone_with_clear_errors(tmp_path):
    path = tmp_path / "requests.jsonl"
    write_requests(path)
    jobs = read_requests(str(path), SAMPLING, tokenizer_info=tokenizer_info())
    assert [j.error for j in jobs[:len(GOOD_REQUESTS)]] == [None] * len(GOOD_REQUESTS)
    bad = jobs[len(GOOD_REQUESTS):]
    assert len(bad) == len(BAD_LINES)
    for job, (line, expected) in zip(bad, BAD_LINES):
        assert job.request is None and job.error is not None, line
        assert expected in job.error, (line, job.error)
        assert job.error.startswith(f"line {job.line}:")
    assert bad[0].id == f"line-{bad[0].line}"  # no parsable id: named after its line
    assert bad[-1].id == f"line-{bad[-1].line}"  # a repeated id: never a second "json"
    assert "(first on line 1)" in bad[-1].error


def test_requests_are_batched_per_sampling_config(tmp_path):
    path = tmp_path / "requests.jsonl"
    write_requests(path, with_bad=False)
    jobs = read_requests(str(path), SAMPLING)
    batches = plan_batches(jobs, 3)
    assert [[j.id for j in b] for b in batches] == [["json", "date", "yes-no"], ["free"],
                                                    ["sampled"]]
    assert batches[0][0].sampling == Greedy()
    assert batches[2][0].sampling == TopP(0.9, temperature=0.9)


def test_output_checker_is_independent_and_strict():
    assert check_output("json_schema", SCHEMA, '{"city": "Rome", "rank": 1}') is True
    assert check_output("json_schema", SCHEMA, '{"city": "Rome", "rank": 0}') is False
    assert check_output("json_schema", SCHEMA, '{"city": "Rome"') is False
    assert check_output("regex", r"a+b", "aab") is True
    assert check_output("regex", r"a+b", "aabb") is False
    assert check_output("lark", 'start: "a" "b"', "ab") is True
    assert check_output("lark", 'start: "a" "b"', "ba") is False
    assert check_output("choice", ["yes", "no"], "no") is True
    assert check_output("none", None, "anything") is None


def test_resume_repairs_a_torn_tail_and_refuses_foreign_files(tmp_path):
    out = tmp_path / "out.jsonl"
    writer = ResultWriter(str(out))
    writer.write([b'{"id": "a"}', b'{"id": "b"}'])
    writer.close()
    with open(out, "ab") as f:
        f.write(b'{"id": "c", "te')  # killed mid-write
    assert read_done_ids(str(out)) == {"a", "b"}
    assert out.read_bytes() == b'{"id": "a"}\n{"id": "b"}\n'
    out.write_text("hello\n")
    with pytest.raises(JobError, match="not a result line"):
        read_done_ids(str(out))


# --------------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def smollm2():
    from jaxguide.models import smollm2 as loader

    return loader.load()


def job_config(tmp_path, **overrides):
    config = load_config(str(BASE))
    config.update(input=str(tmp_path / "requests.jsonl"), output=str(tmp_path / "out.jsonl"),
                  max_new_tokens=12, batch_size=4, progress=False)
    config.update(overrides)
    return config


def last_per_id(results: list[dict]) -> dict[str, dict]:
    return {r["id"]: r for r in results}  # later lines replace earlier ones


def test_job_writes_every_result_and_resumes_without_redoing(tmp_path, smollm2):
    write_requests(tmp_path / "requests.jsonl")
    config = job_config(tmp_path)
    summary = run_generation_job(config, model_and_tokenizer=smollm2, log=lambda _: None)
    results = read_results(tmp_path / "out.jsonl")
    assert summary["parse_errors"] == len(BAD_LINES) and summary["generated"] == 5
    assert summary["errors"] == len(BAD_LINES) == summary["finish_reasons"]["error"]
    assert len({r["id"] for r in results}) == len(results)  # one line per id, duplicates too
    for record in results:
        assert set(record) >= {"id", "text", "tokens", "finish_reason", "valid", "error",
                               "timings"}
    by_id = last_per_id(results)
    for request_id in (r["id"] for r in GOOD_REQUESTS):
        record = by_id[request_id]
        assert record["error"] is None
        assert record["finish_reason"] in ("eos", "grammar_end", "max_tokens")
        assert len(record["tokens"]) <= 12
        assert record["timings"]["batch_s"] > 0
    # Constrained rows that finished are valid; truncated JSON is reported invalid, not hidden.
    for request_id in ("date", "yes-no"):
        assert by_id[request_id]["valid"] is True, by_id[request_id]
    assert by_id["free"]["valid"] is None
    errors = [r for r in results if r["error"] is not None]
    assert len(errors) == len(BAD_LINES)
    assert all(r["finish_reason"] == "error" and r["valid"] is None for r in errors)

    # A second run skips the results and retries the errors (retry_failed, the default): they
    # fail again, and their new lines are appended after the old ones.
    again = run_generation_job(config, model_and_tokenizer=smollm2, log=lambda _: None)
    assert (again["already_done"], again["retried"]) == (len(GOOD_REQUESTS), len(BAD_LINES))
    assert (again["generated"], again["errors"]) == (0, len(BAD_LINES))
    assert read_results(tmp_path / "out.jsonl") == results + errors
    # retry_failed=false: an error line counts as done.
    no_retry = job_config(tmp_path, retry_failed=False)
    third = run_generation_job(no_retry, model_and_tokenizer=smollm2, log=lambda _: None)
    assert (third["already_done"], third["retried"], third["parse_errors"]) == (
        len(GOOD_REQUESTS) + len(BAD_LINES), 0, 0)
    assert third["errors"] == len(BAD_LINES)
    assert read_results(tmp_path / "out.jsonl") == results + errors

    # Interrupted run: the last two results are lost and the third is torn.
    lines = (tmp_path / "out.jsonl").read_bytes().splitlines(keepends=True)
    kept = [line for line in lines if json.loads(line)["id"] not in ("json", "sampled")]
    (tmp_path / "out.jsonl").write_bytes(b"".join(kept) + b'{"id": "fre')
    resumed = run_generation_job(config, model_and_tokenizer=smollm2, log=lambda _: None)
    assert (resumed["generated"], resumed["parse_errors"]) == (2, len(BAD_LINES))
    final = last_per_id(read_results(tmp_path / "out.jsonl"))
    assert set(final) == set(by_id)
    for request_id in ("json", "sampled"):  # greedy; seeded: same tokens in another batch
        assert final[request_id]["tokens"] == by_id[request_id]["tokens"], request_id


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _run_script(tmp_path, name, extra_args=(), env_extra=None, processes=1):
    env = dict(os.environ)
    env.update(env_extra or {})
    out = tmp_path / f"{name}.jsonl"
    args = [sys.executable, str(SCRIPT), f"input={tmp_path / 'requests.jsonl'}",
            f"output={out}", "max_new_tokens=12", "batch_size=4", "progress=false",
            *extra_args]
    if processes == 1:
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    else:
        port = _free_port()
        procs = [subprocess.Popen(args + [f"--coordinator_address=localhost:{port}",
                                          f"--num_processes={processes}",
                                          f"--process_id={i}"],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for i in range(processes)]
        try:
            outputs = [p.communicate(timeout=600) for p in procs]
        finally:
            for p in procs:
                p.kill()
        for p, (_, stderr) in zip(procs, outputs):
            assert p.returncode == 0, stderr[-3000:]
    return {r["id"]: r for r in read_results(out)}


def test_results_are_identical_on_one_device_8_devices_and_2_processes(tmp_path, smollm2):
    write_requests(tmp_path / "requests.jsonl", with_bad=False)
    config = job_config(tmp_path, output=str(tmp_path / "single.jsonl"), shard_batch=False)
    run_generation_job(config, model_and_tokenizer=smollm2, log=lambda _: None)
    single = {r["id"]: r for r in read_results(tmp_path / "single.jsonl")}
    assert set(single) == {r["id"] for r in GOOD_REQUESTS}
    eight = _run_script(tmp_path, "eight", env_extra={
        "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}, extra_args=["batch_size=8"])
    two = _run_script(tmp_path, "two", processes=2)
    for request_id, reference in single.items():
        for name, other in (("8 devices", eight), ("2 processes", two)):
            assert other[request_id]["tokens"] == reference["tokens"], (name, request_id)
            assert other[request_id]["finish_reason"] == reference["finish_reason"]


def test_json_formats_reaches_the_schema():
    line = json.dumps({"id": 1, "prompt": "x", "json_schema": {"type": "string",
                                                               "format": "regex"}})
    refused = parse_request_line(line, 1, {})
    assert refused.error is not None and "regex" in refused.error
    annotated = parse_request_line(line, 1, {}, json_formats="annotation")
    assert annotated.error is None and annotated.request.grammar is not None


def test_json_property_order_reaches_the_schema():
    line = json.dumps({"id": 1, "prompt": "x", "json_schema": {
        "type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"]}})
    info = tokenizer_info()
    for order, ok in (("declared", False), ("any", True)):
        job = parse_request_line(line, 1, {}, json_property_order=order)
        matcher = Matcher(compile_grammar(job.request.grammar, info))
        assert (matcher.accept_bytes(b'{"b": 1, "a": 2}') and matcher.is_accepting()) == ok


@pytest.mark.parametrize("key,bad,allowed", [
    ("json_property_order", "sorted", "declared, any"),
    ("json_formats", "ignore", "assert, annotation"),
])
def test_a_bad_json_option_is_a_config_problem(key, bad, allowed):
    from jaxguide.jobs.validation import config_problems
    config = load_config(str(BASE))
    assert not any(key in p for p in config_problems(config))
    config[key] = bad
    assert any(f"{key} must be one of {allowed}" in p for p in config_problems(config))
