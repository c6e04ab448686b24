"""The request lines of a generation job: one JSON object per line, parsed and checked in full
before anything is generated.

Design note. `parse_request_line` never raises: a line that is not JSON, a request with unknown
or conflicting keys, a bad `sampling` / `max_new_tokens` / `seed` / `lenient`, or a schema,
grammar or regex that does not compile becomes a `JobRequest` whose `error` starts with
`line N:`. Given the model's tokenizer, the grammar is compiled right there, so what only the
compiler refuses (a regex's `\\b`, a special token the tokenizer lacks) fails at parse time like
the rest; the request keeps the lowered `Grammar` (the compiled one stays in
`compile_grammar`'s LRU cache, which generation hits for recent grammars), so a large input
file holds no compiled grammar per line. `read_requests` reads a whole file; a line repeating
an earlier line's id is not run and gets the id `line-N` (its line number), as does a line
without a usable id; where a request of the file has the id `line-N` itself, the line gets
`line-N-2` (or `-3`, ...) instead. So no id ever has two requests, and the ids the file gives
are never taken by a fallback.
"""

from __future__ import annotations

import dataclasses
import json
import re
import warnings
from typing import Any

from jaxguide.decode import Request
from jaxguide.decode.tool_requests import request_grammar
from jaxguide.device.sampling import SamplingConfig
from jaxguide.engine.compiled_grammar import compile_grammar
from jaxguide.engine.tokenizer import TokenizerInfo
from jaxguide.errors import JaxguideError
from jaxguide.grammars.grammar import Grammar
from jaxguide.jobs.validation import (
    json_whitespace_problem,
    positive_int_problem,
    sampling_config,
)
from jaxguide.models.smollm2 import (
    TOOL_FORMAT as SMOLLM2_TOOL_FORMAT,  # the jobs' model
)

REQUEST_KEYS = ("id", "prompt", "messages", "json_schema", "lark", "regex", "choice", "tools",
                "tool_choice", "parallel_tool_calls", "tool_format", "sampling",
                "max_new_tokens", "seed", "lenient")
TOOL_KEYS = ("tool_choice", "parallel_tool_calls", "tool_format")
CONSTRAINT_KEYS = ("json_schema", "lark", "regex", "choice", "tools")
# What a JSON Schema error tells a library caller, and what it tells a job's user instead.
_LENIENT_HINT = "pass lenient=True to ignore it"
_JOB_LENIENT_HINT = ('set "lenient": true in the request line, or lenient=true in the config, '
                     "to ignore it")


class JobError(ValueError):
    """The job cannot run (bad config, unreadable input); per-request problems never raise."""


@dataclasses.dataclass
class JobRequest:
    """One input line, parsed: either `request` is set or `error` says why not."""

    line: int
    id: str
    kind: str = "none"          # "json_schema" | "lark" | "regex" | "choice" | "tools" | "none"
    source: Any = None          # the constraint as given (for the validity check)
    request: Request | None = None
    sampling: SamplingConfig | None = None
    error: str | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)  # lenient: what was ignored
    id_given: bool = True       # False: `id` is the line's fallback, not the request's own


def parse_request_line(text: str, line: int, default_sampling: dict[str, Any],
                       json_whitespace: str | int = "flexible", *,
                       tokenizer_info: TokenizerInfo | None = None,
                       lenient: bool = False, json_formats: str = "assert",
                       json_property_order: str = "declared") -> JobRequest:
    """Parses one JSONL line; never raises (a bad line becomes a JobRequest with `error`).

    Args:
      default_sampling: the config's sampling block (a request's `sampling` overrides keys).
      json_whitespace: the config's JSON whitespace mode.
      tokenizer_info: compile the grammar against it now (None: lower it only).
      lenient: the config's default for JSON Schema keywords that cannot be enforced.
      json_formats: the config's JSON Schema `format` mode ("assert" or "annotation").
      json_property_order: the config's JSON Schema object member order ("declared" or
        "any").
    """
    fallback_id = f"line-{line}"
    try:
        data = json.loads(text)
    except ValueError as e:  # a JSONDecodeError, or an integer of over 4300 digits
        return JobRequest(line, fallback_id, error=f"line {line}: not valid JSON: {e}",
                          id_given=False)
    except RecursionError:  # json's decoder recurses per nesting level
        return JobRequest(line, fallback_id, id_given=False,
                          error=f"line {line}: not valid JSON: nested too deeply")
    if not isinstance(data, dict):
        return JobRequest(line, fallback_id, id_given=False,
                          error=f"line {line}: a request must be a JSON object, got "
                                f"{type(data).__name__}")
    raw_id = data.get("id")
    usable = isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool)
    job = JobRequest(line, str(raw_id) if usable else fallback_id, id_given=usable)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _fill_request(job, data, default_sampling, json_whitespace, tokenizer_info, lenient,
                          json_formats, json_property_order)
        job.warnings = [f"line {line}: {w.message}" for w in caught]
    except (ValueError, TypeError, JaxguideError, RecursionError) as e:
        message = str(e).replace(_LENIENT_HINT, _JOB_LENIENT_HINT)
        job.error = f"line {line}: {type(e).__name__}: {message}"
        job.request = None
    return job


def _check_keys(data: dict[str, Any]) -> None:
    unknown = sorted(set(data) - set(REQUEST_KEYS))
    if unknown:
        raise ValueError(f"unknown request keys {unknown} (known: {', '.join(REQUEST_KEYS)})")
    if "id" not in data:
        raise ValueError("the request has no id")
    if not isinstance(data["id"], (str, int)) or isinstance(data["id"], bool):
        raise ValueError(f"id must be a string or an integer, got {data['id']!r}")
    if data.get("max_new_tokens") is not None:
        problem = positive_int_problem(data["max_new_tokens"], "max_new_tokens")
        if problem:
            raise ValueError(problem)
    if data.get("lenient") not in (None, True, False):
        raise ValueError(f"lenient must be true or false, got {data['lenient']!r}")


def _grammar(kind: str, source: Any, json_whitespace: str | int, lenient: bool,
             json_formats: str = "assert", json_property_order: str = "declared") -> Grammar:
    """The grammar of a request's constraint `kind` (one of CONSTRAINT_KEYS)."""
    if kind == "json_schema":
        problem = json_whitespace_problem(json_whitespace)
        if problem:
            raise ValueError(problem)
        return Grammar.from_json_schema(source, whitespace=json_whitespace, lenient=lenient,
                                        formats=json_formats,
                                        property_order=json_property_order)
    if kind == "lark":
        if not isinstance(source, str):
            raise TypeError("lark must be a grammar text")
        return Grammar.from_lark(source)
    if kind == "regex":
        if not isinstance(source, str):
            raise TypeError("regex must be a string")
        try:
            re.compile(source)  # the checker's own syntax errors, named here
        except re.error as e:
            raise ValueError(f"invalid regex {source!r}: {e}") from None
        return Grammar.from_regex(source)
    if not isinstance(source, list) or not all(isinstance(s, str) for s in source):
        raise TypeError("choice must be a list of strings")
    return Grammar.choice(source)


def _fill_request(job: JobRequest, data: dict[str, Any], default_sampling: dict[str, Any],
                  json_whitespace: str | int, tokenizer_info: TokenizerInfo | None,
                  lenient: bool, json_formats: str = "assert",
                  json_property_order: str = "declared") -> None:
    _check_keys(data)
    constraints = [k for k in CONSTRAINT_KEYS if k in data and data[k] is not None]
    if len(constraints) > 1:
        raise ValueError(f"at most one of {', '.join(CONSTRAINT_KEYS)} per request, got "
                         f"{', '.join(constraints)}")
    overrides = data.get("sampling") or {}
    if not isinstance(overrides, dict):
        raise TypeError("sampling must be an object")
    job.sampling = sampling_config({**default_sampling, **overrides})
    grammar = None
    if constraints and constraints[0] == "tools":
        _fill_tools(job, data, tokenizer_info)
        return
    stray = [k for k in TOOL_KEYS if data.get(k) is not None]
    if stray:
        raise ValueError(f"{', '.join(stray)} need tools")
    if constraints:
        job.kind = constraints[0]
        job.source = data[job.kind]
        lenient = data["lenient"] if data.get("lenient") is not None else lenient
        grammar = _grammar(job.kind, job.source, json_whitespace, lenient, json_formats,
                           json_property_order)
        if tokenizer_info is not None:  # what only the compiler refuses fails here too; the
            compile_grammar(grammar, tokenizer_info)  # request keeps the (small) Grammar, the
            # compiled one stays in compile_grammar's cache (no memory held per request)
    job.request = Request(prompt=data.get("prompt"), messages=data.get("messages"),
                          grammar=grammar, max_new_tokens=data.get("max_new_tokens"),
                          seed=data.get("seed"))
    _check_messages(job.request)


def _fill_tools(job: JobRequest, data: dict[str, Any],
                tokenizer_info: TokenizerInfo | None) -> None:
    """A request with `tools` (OpenAI function format) and optional `tool_choice`,
    `parallel_tool_calls`, `tool_format` (default: the job model's, SmolLM2's)."""
    fmt = data.get("tool_format") or SMOLLM2_TOOL_FORMAT
    parallel = data.get("parallel_tool_calls", True)
    job.request = Request(prompt=data.get("prompt"), messages=data.get("messages"),
                          tools=data["tools"], tool_choice=data.get("tool_choice"),
                          parallel_tool_calls=parallel, tool_format=fmt,
                          max_new_tokens=data.get("max_new_tokens"), seed=data.get("seed"))
    job.kind = "tools"
    job.source = {"tools": data["tools"], "tool_choice": data.get("tool_choice"),
                  "parallel_tool_calls": parallel, "format": fmt}
    if tokenizer_info is not None:
        compile_grammar(request_grammar(job.request, None, tokenizer_info), tokenizer_info)
    _check_messages(job.request)


def _check_messages(request: Request) -> None:
    if request.messages is not None:
        messages = request.messages
        if not isinstance(messages, list) or not all(
                isinstance(m, dict) and isinstance(m.get("role"), str) and
                isinstance(m.get("content"), str) for m in messages):
            raise ValueError("messages must be a list of {\"role\": str, \"content\": str}")


def read_requests(path: str, default_sampling: dict[str, Any],
                  json_whitespace: str | int = "flexible", *,
                  tokenizer_info: TokenizerInfo | None = None,
                  lenient: bool = False, json_formats: str = "assert",
                  json_property_order: str = "declared") -> list[JobRequest]:
    """Parses every non-blank line of a JSONL file (arguments as `parse_request_line`'s). A
    line whose id an earlier line has is an error under the id `line-N` (N its line number), or
    `line-N-2`, ... where a request of the file has the id `line-N` (`_fallback_id`); the ids
    of the result are distinct.

    Raises:
      JobError: the file cannot be read.
    """
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().split("\n")
    except OSError as e:
        raise JobError(f"cannot read the requests file: {e}") from None
    jobs = [parse_request_line(text, number, default_sampling, json_whitespace,
                               tokenizer_info=tokenizer_info, lenient=lenient,
                               json_formats=json_formats, json_property_order=json_property_order)
            for number, text in enumerate(lines, start=1) if text.strip()]
    given = {job.id for job in jobs if job.id_given}
    first_line: dict[str, int] = {}
    for k, job in enumerate(jobs):
        if job.id_given and job.id in first_line:
            job = jobs[k] = JobRequest(
                job.line, job.id, id_given=False,
                error=f"line {job.line}: duplicate id {job.id!r} (first on line "
                      f"{first_line[job.id]}); this line is not run")
        if not job.id_given:
            job.id = _fallback_id(job.line, given, first_line)
        first_line[job.id] = job.line
    return jobs


def _fallback_id(line: int, given: set[str], used: dict[str, int]) -> str:
    """`line-N`, or `line-N-2`, `line-N-3`, ... where a request has that id (`given`: every
    id the file's requests give) or an earlier line took it (`used`)."""
    candidate, suffix = f"line-{line}", 1
    while candidate in given or candidate in used:
        suffix += 1
        candidate = f"line-{line}-{suffix}"
    return candidate
