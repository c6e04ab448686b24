"""Batch generation jobs: a JSONL file of requests in, a JSONL file of results out.

Design note. `run_generation_job(config)` is the body of `tpu_scripts/generate.py` (the config is
`configs/base.yml`'s keys, see there; `load_job_config` reads one and `check_config` refuses a
bad value before any request is read). Each input line is one request (`jaxguide.jobs.requests`):

    {"id": "q1", "prompt": "..." | "messages": [...],
     "json_schema": {...} | "lark": "..." | "regex": "..." | "choice": [...] (or none of them),
     "sampling": {"kind": "temperature", "temperature": 0.7}, "max_new_tokens": 64, "seed": 3,
     "lenient": true}

and each output line one result (`jaxguide.jobs.output`):

    {"id", "text", "tokens", "finish_reason", "valid", "error", "timings"}

where `valid` is the verdict of an independent checker (`jaxguide.jobs.checks`: `jsonschema`,
`re.fullmatch`, `lark`, membership for a choice; null for unconstrained requests and for errors).

Failures stay per request: a line that is not JSON, a request with unknown or conflicting keys
or bad values, a schema / grammar / regex that does not compile (each grammar is compiled
against the model's tokenizer when its line is parsed), a repeated id, gets its result line
with `finish_reason` "error" and the message, and the others run. Requests are grouped by
sampling config (one sampler per batch) and run in batches of `batch_size` rows (the global
batch, sharded over the mesh); the last batch of a group is padded with one-token filler rows.

Output and resume. Results are appended one batch at a time (whole lines, fsync'd); a run
skips the ids whose last line in the output is a result, and runs again those whose last line
is an error when `retry_failed` (their new line is appended after the old one). The summary
counts the last line of every id of the input, whichever run wrote it; `stop()` (a signal
handler's flag) ends the run after the batch being generated has been written. With several
processes, process 0 alone reads and writes the output: it broadcasts which requests are
pending, and the other processes send it their rows' result lines each batch.

The steps of `run_generation_job`: `read_requests`, `_batch_layout` (mesh and processes),
`_pending_jobs` (resume), then `_run_batches` over `plan_batches` (`_generate_batch` per batch,
`_Tally` of the written lines) and `_summary` (the last line per id).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from collections import OrderedDict
from typing import Any, Callable, Iterable

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

from jaxguide.decode import DecodeStats, Request, generate
from jaxguide.device.sampling import SamplingConfig
from jaxguide.engine.batch_matcher import BatchMatcher
from jaxguide.jobs.checks import check_output
from jaxguide.jobs.config import ConfigError, load_config
from jaxguide.jobs.output import (
    ResultWriter,
    read_done_ids,
    read_last_results,
    result_line,
)
from jaxguide.jobs.requests import (
    CONSTRAINT_KEYS,
    REQUEST_KEYS,
    JobError,
    JobRequest,
    parse_request_line,
    read_requests,
)
from jaxguide.jobs.validation import SAMPLING_KINDS, config_problems, sampling_config
from jaxguide.models import smollm2

__all__ = ["CONSTRAINT_KEYS", "REQUEST_KEYS", "SAMPLING_KINDS", "JobError", "JobRequest",
           "ResultWriter", "check_config", "check_output", "load_job_config", "load_model",
           "parse_request_line", "plan_batches", "read_done_ids", "read_requests",
           "run_generation_job", "sampling_config"]

PATH_KEYS = ("input", "output")  # relative to the config file that sets them
_FILLER = Request(prompt=".", max_new_tokens=1)  # pads the last batch of a group


def check_config(config: dict[str, Any]) -> None:
    """Raises ConfigError with one line per bad value of a job config (`validation`)."""
    problems = config_problems(config)
    if problems:
        raise ConfigError("\n".join(problems))


def load_job_config(path: str, overrides: Iterable[str] = ()) -> dict[str, Any]:
    """A job config read by `load_config` (input / output relative to the file that sets
    them; json_whitespace may be a mode or an int indent), checked by `check_config`."""
    config = load_config(path, overrides, path_keys=PATH_KEYS, any_type_keys=("json_whitespace",))
    check_config(config)
    return config


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
                       log: Callable[[str], None] = print,
                       stop: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Runs the job described by `config` (see configs/base.yml); returns the summary.

    Args:
      config: the loaded config (checked here first: ConfigError on a bad value).
      model_and_tokenizer: optional (model, tokenizer_info) already loaded (tests).
      log: where progress lines go (process 0 only prints).
      stop: polled before and after loading the model and after each batch: True ends the
        run once the lines generated so far are written; the summary then has `interrupted`
        true.

    Raises:
      ConfigError: a bad config value. JobError: unreadable input, a foreign output file, a
        batch size the devices cannot split.
    """
    start = time.perf_counter()
    check_config(config)
    layout = _batch_layout(config, config["batch_size"])
    info = model_and_tokenizer[1] if model_and_tokenizer is not None else tokenizer_for(config)
    jobs = read_requests(config["input"], dict(config["sampling"]), config["json_whitespace"],
                         tokenizer_info=info, lenient=config["lenient"],
                         json_formats=config["json_formats"],
                         json_property_order=config["json_property_order"])
    say = log if layout.is_main else (lambda _: None)
    for job in jobs:
        for warning in job.warnings:
            say(f"warning: {warning}")
    pending, retried = _pending_jobs(jobs, config, layout)
    writer = ResultWriter(config["output"]) if layout.is_main else None
    errors_now = [job for job in pending if job.error is not None]
    runnable = [job for job in pending if job.error is None]
    if writer is not None:
        writer.write([result_line(job, None, {}) for job in errors_now])
    say(f"{len(jobs)} requests in {config['input']}: {len(jobs) - len(pending)} already done, "
        f"{retried} failed before and retried, {len(errors_now)} failed to parse, "
        f"{len(runnable)} to generate in batches of {config['batch_size']} over "
        f"{layout.processes} process(es)")

    interrupted = _should_stop(stop, layout)
    if model_and_tokenizer is None and runnable and not interrupted:
        model_and_tokenizer = load_model(config)  # nothing to generate: no model needed
        interrupted = _should_stop(stop, layout)  # a signal while loading: no batch started
    generation_start = time.perf_counter()
    tally = _Tally()
    if not interrupted:
        interrupted = _run_batches(runnable, config, layout, model_and_tokenizer, writer, tally,
                                   stop)
    if writer is not None:
        writer.close()
    generation_s = time.perf_counter() - generation_start
    summary = {
        "requests": len(jobs), "already_done": len(jobs) - len(pending), "retried": retried,
        "parse_errors": len(errors_now), "generated": tally.generated,
        **_final_counts(jobs, config, layout),
        "tokens": tally.tokens, "generation_s": round(generation_s, 3),
        "tokens_per_s": round(tally.tokens / generation_s, 2) if generation_s > 0 else 0.0,
        "total_s": round(time.perf_counter() - start, 3), "processes": layout.processes,
        "devices": len(jax.devices()), "output": config["output"], "interrupted": interrupted,
        "time_breakdown_s": {k: round(v, 3) for k, v in tally.decode_stats.as_dict().items()
                             if k.endswith("_s")},
    }
    say("summary: " + json.dumps(summary))
    return summary


def _final_counts(jobs: list[JobRequest], config: dict[str, Any],
                  layout: _BatchLayout) -> dict[str, Any]:
    """The counts of the summary and exit status over the LAST output line of every input id
    (process 0 reads them; `errors` and `invalid_finished` reach every process)."""
    reasons: dict[str, int] = {}
    counts = np.zeros(4, np.int32)  # errors, invalid_finished, valid, invalid
    if layout.is_main:
        last = read_last_results(config["output"], repair=False)
        for request_id in dict.fromkeys(job.id for job in jobs):
            result = last.get(request_id)
            if result is None:
                continue  # not run (an interrupted run)
            reason = "error" if result.failed else str(result.finish_reason)
            reasons[reason] = reasons.get(reason, 0) + 1
            counts += (result.failed, result.invalid_finished, result.valid is True,
                       result.valid is False)
    if layout.processes > 1:
        counts = np.asarray(multihost_utils.broadcast_one_to_all(counts))
    errors, invalid_finished, valid, invalid = (int(c) for c in counts)
    return {"errors": errors, "finish_reasons": reasons, "valid": valid, "invalid": invalid,
            "invalid_finished": invalid_finished}


def _should_stop(stop: Callable[[], bool] | None, layout: _BatchLayout) -> bool:
    """Whether any process was asked to stop (a collective when there are several)."""
    flag = bool(stop()) if stop is not None else False
    if layout.processes > 1:
        flags = multihost_utils.process_allgather(np.array([flag], np.int32))
        flag = bool(np.asarray(flags).any())
    return flag


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
                  layout: _BatchLayout) -> tuple[list[JobRequest], int]:
    """The jobs to run, and how many of them failed in an earlier run: process 0 reads the
    output (or, without `resume`, moves it to `.previous`), every process follows it."""
    output = config["output"]
    flags = np.zeros((2, len(jobs)), np.int32)  # pending, failed before
    if layout.is_main:
        if os.path.isdir(output):
            raise JobError(f"cannot write the output file {output}: it is a folder")
        last = read_last_results(output) if config["resume"] else {}
        if not config["resume"] and os.path.exists(output):
            try:
                os.replace(output, output + ".previous")
            except OSError as e:
                raise JobError(f"cannot move the output file aside: {e}") from None
        for i, job in enumerate(jobs):
            before = last.get(job.id)
            flags[1, i] = before is not None and before.failed
            flags[0, i] = before is None or (flags[1, i] and config["retry_failed"])
    if layout.processes > 1:
        flags = np.asarray(multihost_utils.broadcast_one_to_all(flags))
    pending = [job for job, flag in zip(jobs, flags[0]) if flag]
    return pending, int((flags[0] & flags[1]).sum())


@dataclasses.dataclass
class _Tally:
    """This run's generated rows and tokens, and the summed decode stats."""

    generated: int = 0
    tokens: int = 0
    decode_stats: DecodeStats = dataclasses.field(default_factory=DecodeStats)

    def add_stats(self, stats: DecodeStats) -> None:
        for field in dataclasses.fields(DecodeStats):
            setattr(self.decode_stats, field.name,
                    getattr(self.decode_stats, field.name) + getattr(stats, field.name))

    def add_lines(self, lines: list[bytes]) -> None:
        self.tokens += sum(len(json.loads(line)["tokens"]) for line in lines)


def _run_batches(runnable: list[JobRequest], config: dict[str, Any], layout: _BatchLayout,
                 model_and_tokenizer: Any, writer: ResultWriter | None, tally: _Tally,
                 stop: Callable[[], bool] | None) -> bool:
    """Generates the runnable jobs batch by batch; process 0 writes every batch's lines.
    Returns whether `stop` ended the run early (after writing the batch it was in)."""
    threads = int(config["threads"])
    batch_matcher = BatchMatcher(threads if threads > 0 else None)
    start = time.perf_counter()
    progress = layout.is_main and config["progress"]
    interrupted = False
    for batch in plan_batches(runnable, layout.batch_size):
        lines, stats = _generate_batch(batch, config, layout, model_and_tokenizer,
                                       batch_matcher)
        tally.add_stats(stats)
        if writer is not None:
            writer.write(lines)
            tally.add_lines(lines)
        tally.generated += len(batch)
        if progress:
            _progress(tally.generated, len(runnable), tally.tokens, time.perf_counter() - start)
        if _should_stop(stop, layout):
            interrupted = True
            break
    if progress and runnable:
        sys.stderr.write("\n")
    return interrupted


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


def tokenizer_for(config: dict[str, Any]) -> Any:
    """The TokenizerInfo of `config["model"]` (without loading the model's weights)."""
    if config["model"] != "smollm2":
        raise ConfigError(f"model must be one of smollm2, got {config['model']!r}")
    return smollm2.tokenizer_info()


def load_model(config: dict[str, Any]) -> Any:
    """(model, tokenizer_info) for `config["model"]` (the same TokenizerInfo object as
    `tokenizer_for`'s, which the requests' grammars were compiled against)."""
    tokenizer_for(config)
    dtype = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}.get(config["dtype"])
    if dtype is None:
        raise ConfigError(f"dtype must be one of float32, bfloat16, got {config['dtype']!r}")
    return smollm2.load(dtype=dtype)
