"""Batch generation jobs: a JSONL file of requests in, a JSONL file of results out.

Design note. `run_generation_job(config)` is the body of `tpu_scripts/generate.py` (the config is
`configs/base.yml`'s keys, see there). Each input line is one request:

    {"id": "q1", "prompt": "..." | "messages": [...],
     "json_schema": {...} | "lark": "..." | "regex": "..." | "choice": [...] (or none of them),
     "sampling": {"kind": "temperature", "temperature": 0.7}, "max_new_tokens": 64, "seed": 3}

and each output line one result:

    {"id", "text", "tokens", "finish_reason", "valid", "error", "timings"}

where `valid` is the verdict of an independent checker (`jaxguide.jobs.checks`: `jsonschema`,
`re.fullmatch`, `lark`, membership for a choice; null for unconstrained requests and for errors).

Failures stay per request: a line that is not JSON, a request with unknown or conflicting keys,
a schema / grammar / regex that does not compile gets its result line with `finish_reason`
"error" and the message, and the others run. Requests are grouped by sampling config (one
sampler per batch) and run in batches of `batch_size` rows (the global batch, sharded over the
mesh); the last batch of a group is padded with one-token filler rows.

Output and resume. Results are appended one batch at a time, each batch's lines in one write
followed by fsync, so a killed run leaves whole lines plus at most one torn last line; a run
finds the ids already in the output (dropping a torn tail first) and does only the others.
With several processes, process 0 alone reads and writes the output: it broadcasts which
requests are pending, and the other processes send it their rows' result lines each batch.

The steps of `run_generation_job`: `read_requests`, `_batch_layout` (mesh and processes),
`_pending_jobs` (resume), then `_run_batches` over `plan_batches` (`_generate_batch` per batch,
`_Tally` of the written lines) and the summary.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import time
from collections import OrderedDict
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

from jaxguide.decode import DecodeStats, Request, Result, generate
from jaxguide.device.sampling import (
    Greedy,
    MinP,
    SamplingConfig,
    Temperature,
    TopK,
    TopP,
)
from jaxguide.engine.batch_matcher import BatchMatcher
from jaxguide.errors import JaxguideError
from jaxguide.grammars.grammar import Grammar
from jaxguide.jobs.checks import check_output
from jaxguide.models import smollm2

REQUEST_KEYS = ("id", "prompt", "messages", "json_schema", "lark", "regex", "choice",
                "sampling", "max_new_tokens", "seed")
CONSTRAINT_KEYS = ("json_schema", "lark", "regex", "choice")
SAMPLING_KINDS = ("greedy", "temperature", "top_k", "top_p", "min_p")
_FILLER = Request(prompt=".", max_new_tokens=1)  # pads the last batch of a group


class JobError(ValueError):
    """The job cannot run (bad config, unreadable input); per-request problems never raise."""


@dataclasses.dataclass
class JobRequest:
    """One input line, parsed: either `request` is set or `error` says why not."""

    line: int
    id: str
    kind: str = "none"          # "json_schema" | "lark" | "regex" | "choice" | "none"
    source: Any = None          # the constraint as given (for the validity check)
    request: Request | None = None
    sampling: SamplingConfig | None = None
    error: str | None = None


# --------------------------------------------------------------------------- parsing


def sampling_config(spec: dict[str, Any], where: str = "sampling") -> SamplingConfig:
    """A SamplingConfig from `{"kind": ..., "temperature": ..., "top_k": ..., "top_p": ...,
    "min_p": ...}` (the config's `sampling:` block, with a request's overrides merged in)."""
    kind = spec.get("kind", "greedy")
    if kind not in SAMPLING_KINDS:
        raise ValueError(f"{where}.kind must be one of {', '.join(SAMPLING_KINDS)}, got "
                         f"{kind!r}")
    for name in ("temperature", "top_k", "top_p", "min_p"):
        value = spec.get(name)
        if value is not None and (isinstance(value, bool) or
                                  not isinstance(value, (int, float))):
            raise ValueError(f"{where}.{name} must be a number, got {value!r}")
    temperature = spec.get("temperature", 1.0)
    try:
        if kind == "greedy":
            return Greedy()
        if kind == "temperature":
            return Temperature(temperature)
        if kind == "top_k":
            return TopK(spec.get("top_k", 40), temperature=temperature)
        if kind == "top_p":
            return TopP(spec.get("top_p", 0.9), temperature=temperature)
        return MinP(spec.get("min_p", 0.05), temperature=temperature)
    except (TypeError, ValueError, OverflowError) as e:  # OverflowError: int(inf)
        raise ValueError(f"{where}: {e}") from None


def parse_request_line(text: str, line: int, default_sampling: dict[str, Any],
                       json_whitespace: str | int = "flexible") -> JobRequest:
    """Parses one JSONL line; never raises (a bad line becomes a JobRequest with `error`)."""
    fallback_id = f"line-{line}"
    try:
        data = json.loads(text)
    except ValueError as e:  # a JSONDecodeError, or an integer of over 4300 digits
        return JobRequest(line, fallback_id, error=f"line {line}: not valid JSON: {e}")
    except RecursionError:  # json's decoder recurses per nesting level
        return JobRequest(line, fallback_id,
                          error=f"line {line}: not valid JSON: nested too deeply")
    if not isinstance(data, dict):
        return JobRequest(line, fallback_id,
                          error=f"line {line}: a request must be a JSON object, got "
                                f"{type(data).__name__}")
    raw_id = data.get("id")
    job = JobRequest(line, str(raw_id) if isinstance(raw_id, (str, int)) and
                     not isinstance(raw_id, bool) else fallback_id)
    try:
        _fill_request(job, data, default_sampling, json_whitespace)
    except (ValueError, TypeError, JaxguideError, RecursionError) as e:
        job.error = f"line {line}: {type(e).__name__}: {e}"
        job.request = None
    return job


def _fill_request(job: JobRequest, data: dict[str, Any], default_sampling: dict[str, Any],
                  json_whitespace: str | int) -> None:
    unknown = sorted(set(data) - set(REQUEST_KEYS))
    if unknown:
        raise ValueError(f"unknown request keys {unknown} (known: {', '.join(REQUEST_KEYS)})")
    if "id" not in data:
        raise ValueError("the request has no id")
    if not isinstance(data["id"], (str, int)) or isinstance(data["id"], bool):
        raise ValueError(f"id must be a string or an integer, got {data['id']!r}")
    constraints = [k for k in CONSTRAINT_KEYS if k in data and data[k] is not None]
    if len(constraints) > 1:
        raise ValueError(f"at most one of {', '.join(CONSTRAINT_KEYS)} per request, got "
                         f"{', '.join(constraints)}")
    grammar = None
    if constraints:
        job.kind = constraints[0]
        job.source = data[job.kind]
        if job.kind == "json_schema":
            grammar = Grammar.from_json_schema(job.source, whitespace=json_whitespace)
        elif job.kind == "lark":
            if not isinstance(job.source, str):
                raise TypeError("lark must be a grammar text")
            grammar = Grammar.from_lark(job.source)
        elif job.kind == "regex":
            if not isinstance(job.source, str):
                raise TypeError("regex must be a string")
            try:
                re.compile(job.source)  # the checker's own syntax errors, named here
            except re.error as e:
                raise ValueError(f"invalid regex {job.source!r}: {e}") from None
            grammar = Grammar.from_regex(job.source)
        else:
            if not isinstance(job.source, list) or not all(isinstance(s, str)
                                                           for s in job.source):
                raise TypeError("choice must be a list of strings")
            grammar = Grammar.choice(job.source)
    overrides = data.get("sampling") or {}
    if not isinstance(overrides, dict):
        raise TypeError("sampling must be an object")
    unknown = sorted(set(overrides) - {"kind", "temperature", "top_k", "top_p", "min_p"})
    if unknown:
        raise ValueError(f"unknown sampling keys {unknown}")
    job.sampling = sampling_config({**default_sampling, **overrides})
    job.request = Request(prompt=data.get("prompt"), messages=data.get("messages"),
                          grammar=grammar, max_new_tokens=data.get("max_new_tokens"),
                          seed=data.get("seed"))
    if job.request.messages is not None:
        messages = job.request.messages
        if not isinstance(messages, list) or not all(
                isinstance(m, dict) and isinstance(m.get("role"), str) and
                isinstance(m.get("content"), str) for m in messages):
            raise ValueError("messages must be a list of {\"role\": str, \"content\": str}")


def read_requests(path: str, default_sampling: dict[str, Any],
                  json_whitespace: str | int = "flexible") -> list[JobRequest]:
    """Parses every non-blank line of a JSONL file; a repeated id fails its later lines."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().split("\n")
    except OSError as e:
        raise JobError(f"cannot read the requests file: {e}") from None
    jobs: list[JobRequest] = []
    first_line: dict[str, int] = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        job = parse_request_line(text, number, default_sampling, json_whitespace)
        if job.error is None and job.id in first_line:
            job.error = f"line {number}: duplicate id {job.id!r} (first on line " \
                        f"{first_line[job.id]})"
            job.request = None
        first_line.setdefault(job.id, number)
        jobs.append(job)
    return jobs


# --------------------------------------------------------------------------- output


def read_done_ids(path: str, repair: bool = True) -> set[str]:
    """Ids of the result lines already in `path` (missing file: none). A torn last line (no
    newline: the run died mid-write) is cut off when `repair`."""
    if not os.path.exists(path):
        return set()
    with open(path, "rb") as f:
        data = f.read()
    end = data.rfind(b"\n") + 1
    if end < len(data) and repair:
        with open(path, "r+b") as f:
            f.truncate(end)
            f.flush()
            os.fsync(f.fileno())
    done = set()
    for number, line in enumerate(data[:end].split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            done.add(str(json.loads(line)["id"]))
        except (ValueError, KeyError, TypeError):
            raise JobError(f"{path}:{number}: not a result line; refusing to resume into "
                           "this file (move it away or pick another output)") from None
    return done


class ResultWriter:
    """Appends result lines; each `write(lines)` is one write() + fsync (whole lines)."""

    def __init__(self, path: str):
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, lines: list[bytes]) -> None:
        if not lines:
            return
        data = b"".join(line.rstrip(b"\n") + b"\n" for line in lines)
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def result_line(job: JobRequest, result: Result | None, timings: dict[str, float]) -> bytes:
    if result is None:
        record = {"id": job.id, "text": None, "tokens": [], "finish_reason": "error",
                  "valid": None, "error": job.error, "timings": {}}
    else:
        valid = None
        if result.error is None:
            valid = check_output(job.kind, job.source, result.text)
        record = {"id": job.id, "text": result.text, "tokens": list(result.token_ids),
                  "finish_reason": result.finish_reason, "valid": valid,
                  "error": result.error, "forced_tokens": result.forced_tokens,
                  "timings": timings}
    return json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogateescape")


# --------------------------------------------------------------------------- the job


def _progress(done: int, total: int, tokens: int, seconds: float) -> None:
    rate = tokens / seconds if seconds > 0 else 0.0
    width = 30
    filled = int(width * done / max(total, 1))
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} requests, "
                     f"{tokens} tokens, {rate:.1f} tokens/s")
    sys.stderr.flush()


def plan_batches(jobs: list[JobRequest], batch_size: int) -> list[list[JobRequest]]:
    """Pending runnable jobs grouped by sampling config (first-seen order), in batches."""
    groups: OrderedDict[SamplingConfig, list[JobRequest]] = OrderedDict()
    for job in jobs:
        groups.setdefault(job.sampling, []).append(job)
    return [group[i:i + batch_size] for group in groups.values()
            for i in range(0, len(group), batch_size)]


def run_generation_job(config: dict[str, Any], *, model_and_tokenizer: Any = None,
                       log: Callable[[str], None] = print) -> dict[str, Any]:
    """Runs the job described by `config` (see configs/base.yml); returns the summary.

    Args:
      config: the loaded config.
      model_and_tokenizer: optional (model, tokenizer_info) already loaded (tests).
      log: where progress lines go (process 0 only prints).
    """
    start = time.perf_counter()
    batch_size = int(config["batch_size"])
    if batch_size < 1:
        raise JobError("batch_size must be >= 1")
    jobs = read_requests(config["input"], dict(config["sampling"]), config["json_whitespace"])
    layout = _batch_layout(config, batch_size)
    say = log if layout.is_main else (lambda _: None)
    pending = _pending_jobs(jobs, config, layout)
    writer = ResultWriter(config["output"]) if layout.is_main else None
    errors_now = [job for job in pending if job.error is not None]
    runnable = [job for job in pending if job.error is None]
    if writer is not None:
        writer.write([result_line(job, None, {}) for job in errors_now])
    say(f"{len(jobs)} requests in {config['input']}: {len(jobs) - len(pending)} already done, "
        f"{len(errors_now)} failed to parse, {len(runnable)} to generate in batches of "
        f"{batch_size} over {layout.processes} process(es)")

    if model_and_tokenizer is None and runnable:  # nothing to generate: no model needed
        model_and_tokenizer = load_model(config)
    generation_start = time.perf_counter()
    tally = _run_batches(runnable, config, layout, model_and_tokenizer or (None, None), writer)
    if writer is not None:
        writer.close()
    generation_s = time.perf_counter() - generation_start
    summary = {
        "requests": len(jobs), "already_done": len(jobs) - len(pending),
        "parse_errors": len(errors_now), "generated": len(runnable),
        "finish_reasons": tally.reasons, "valid": tally.valid, "invalid": tally.invalid,
        "invalid_finished": tally.invalid_finished,
        "tokens": tally.tokens, "generation_s": round(generation_s, 3),
        "tokens_per_s": round(tally.tokens / generation_s, 2) if generation_s > 0 else 0.0,
        "total_s": round(time.perf_counter() - start, 3), "processes": layout.processes,
        "devices": len(jax.devices()), "output": config["output"],
        "time_breakdown_s": {k: round(v, 3) for k, v in tally.decode_stats.as_dict().items()
                             if k.endswith("_s")},
    }
    say("summary: " + json.dumps(summary))
    return summary


@dataclasses.dataclass
class _BatchLayout:
    """How each batch of `batch_size` rows spreads: over the devices of `mesh` (None: one
    device), and over `processes` processes of `local_batch` rows each, this one `process`."""

    batch_size: int
    mesh: jax.sharding.Mesh | None
    processes: int
    process: int
    local_batch: int

    @property
    def is_main(self) -> bool:
        return self.process == 0


def _batch_layout(config: dict[str, Any], batch_size: int) -> _BatchLayout:
    mesh = None
    if config["shard_batch"]:
        devices = np.array(jax.devices())
        mesh = jax.sharding.Mesh(devices, ("data",))
        if batch_size % devices.size:
            raise JobError(f"batch_size {batch_size} must be a multiple of the "
                           f"{devices.size} devices it is sharded over")
    elif jax.process_count() > 1:
        raise JobError("shard_batch=false runs on one device: it needs a single process")
    processes = jax.process_count()
    if batch_size % processes:
        raise JobError(f"batch_size {batch_size} must be a multiple of the {processes} "
                       "processes")
    return _BatchLayout(batch_size, mesh, processes, jax.process_index(),
                        batch_size // processes)


def _pending_jobs(jobs: list[JobRequest], config: dict[str, Any],
                  layout: _BatchLayout) -> list[JobRequest]:
    """The jobs without a result in the output: process 0 reads the output (or, without
    `resume`, moves it to `.previous`), every process follows it."""
    output = config["output"]
    pending_flags = np.zeros(len(jobs), np.int32)
    if layout.is_main:
        done = read_done_ids(output) if config["resume"] else set()
        if not config["resume"] and os.path.exists(output):
            os.replace(output, output + ".previous")
        pending_flags[:] = [job.id not in done for job in jobs]
    if layout.processes > 1:
        pending_flags = np.asarray(multihost_utils.broadcast_one_to_all(pending_flags))
    return [job for job, flag in zip(jobs, pending_flags) if flag]


@dataclasses.dataclass
class _Tally:
    """What the written result lines say (process 0 only), and the summed decode stats."""

    reasons: dict[str, int] = dataclasses.field(default_factory=dict)
    valid: int = 0
    invalid: int = 0
    invalid_finished: int = 0  # invalid without having run out of tokens
    tokens: int = 0
    decode_stats: DecodeStats = dataclasses.field(default_factory=DecodeStats)

    def add_stats(self, stats: DecodeStats) -> None:
        for field in dataclasses.fields(DecodeStats):
            setattr(self.decode_stats, field.name,
                    getattr(self.decode_stats, field.name) + getattr(stats, field.name))

    def add_lines(self, lines: list[bytes]) -> None:
        for line in lines:
            record = json.loads(line)
            self.reasons[record["finish_reason"]] = self.reasons.get(record["finish_reason"],
                                                                     0) + 1
            if record["valid"] is not None:
                if record["valid"]:
                    self.valid += 1
                else:
                    self.invalid += 1
                    self.invalid_finished += record["finish_reason"] != "max_tokens"
            self.tokens += len(record["tokens"])


def _run_batches(runnable: list[JobRequest], config: dict[str, Any], layout: _BatchLayout,
                 model_and_tokenizer: Any, writer: ResultWriter | None) -> _Tally:
    """Generates the runnable jobs batch by batch; process 0 writes every batch's lines."""
    threads = int(config["threads"])
    batch_matcher = BatchMatcher(threads if threads > 0 else None)
    tally = _Tally()
    done_count = 0
    start = time.perf_counter()
    progress = layout.is_main and config["progress"]
    for batch in plan_batches(runnable, layout.batch_size):
        lines, stats = _generate_batch(batch, config, layout, model_and_tokenizer,
                                       batch_matcher)
        tally.add_stats(stats)
        if writer is not None:
            writer.write(lines)
            tally.add_lines(lines)
        done_count += len(batch)
        if progress:
            _progress(done_count, len(runnable), tally.tokens, time.perf_counter() - start)
    if progress and runnable:
        sys.stderr.write("\n")
    return tally


def _generate_batch(batch: list[JobRequest], config: dict[str, Any], layout: _BatchLayout,
                    model_and_tokenizer: Any,
                    batch_matcher: BatchMatcher) -> tuple[list[bytes], DecodeStats]:
    """Generates this process's rows of one batch (padded with filler rows to batch_size);
    returns every process's result lines (process order) and this process's stats."""
    model, info = model_and_tokenizer
    rows = batch + [None] * (layout.batch_size - len(batch))
    mine = rows[layout.process * layout.local_batch:(layout.process + 1) * layout.local_batch]
    requests = [job.request if job is not None else _FILLER for job in mine]
    stats = DecodeStats()
    t0 = time.perf_counter()
    results = generate(model, info, requests, sampling=batch[0].sampling,
                       max_new_tokens=int(config["max_new_tokens"]), seed=int(config["seed"]),
                       fast_forward=bool(config["fast_forward"]),
                       max_forced_per_step=int(config["max_forced_per_step"]),
                       batch_matcher=batch_matcher, stats=stats, mesh=layout.mesh)
    batch_s = time.perf_counter() - t0
    timings = {"batch_s": round(batch_s, 4), "prefill_s": round(stats.prefill_s, 4),
               "batch_tokens_per_s": round(stats.tokens / batch_s, 2) if batch_s else 0.0}
    lines = [result_line(job, result, timings)
             for job, result in zip(mine, results) if job is not None]
    return _gather_lines(lines, layout.processes), stats


def _gather_lines(lines: list[bytes], processes: int) -> list[bytes]:
    """Every process's result lines, on every process (process order)."""
    if processes == 1:
        return lines
    payload = np.frombuffer(b"\n".join(lines), np.uint8)
    lengths = np.asarray(multihost_utils.process_allgather(np.array([payload.size], np.int64)))
    padded = np.zeros(max(int(lengths.max()), 1), np.uint8)
    padded[:payload.size] = payload
    gathered = np.asarray(multihost_utils.process_allgather(padded)).reshape(processes, -1)
    out: list[bytes] = []
    for row, length in zip(gathered, lengths.reshape(-1)):
        chunk = row[:int(length)].tobytes()
        out.extend(line for line in chunk.split(b"\n") if line)
    return out


def load_model(config: dict[str, Any]) -> Any:
    """(model, tokenizer_info) for `config["model"]`."""
    name = config["model"]
    if name != "smollm2":
        raise JobError(f"unknown model {name!r} (available: smollm2)")
    dtype = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}.get(config["dtype"])
    if dtype is None:
        raise JobError(f"dtype must be float32 or bfloat16, got {config['dtype']!r}")
    return smollm2.load(dtype=dtype)
