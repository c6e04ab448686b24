"""The result file of a generation job: append-only JSONL, read back as the last line per id.

Design note. `ResultWriter.write(lines)` appends whole lines in one write() followed by fsync,
so a killed run leaves whole lines plus at most one torn last line, which `read_last_results`
cuts off before a run appends to the file. Lines are never rewritten: a request run again (its
earlier line was an error and `retry_failed` is on) gets a new line after the old one, so an id
may have several lines, and every reader (resume, the summary and exit status, and anyone
reading the file afterwards) takes the LAST line of each id as its result.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from jaxguide.decode import Result
from jaxguide.jobs.checks import check_output, why_tool_calls_invalid
from jaxguide.jobs.requests import JobError, JobRequest


@dataclasses.dataclass(frozen=True)
class LastResult:
    """What the last result line of an id says."""

    finish_reason: str | None
    valid: bool | None
    error: str | None

    @property
    def failed(self) -> bool:
        """The request ended in an error (it is retried when `retry_failed`)."""
        return self.finish_reason == "error" or self.error is not None

    @property
    def invalid_finished(self) -> bool:
        """A constrained result that finished (not cut off by max_new_tokens) and fails its
        independent check."""
        return self.valid is False and self.finish_reason != "max_tokens"


def read_last_results(path: str, repair: bool = True) -> dict[str, LastResult]:
    """The last result line of every id in `path` (missing file: none). A torn last line (no
    newline: the run died mid-write) is cut off when `repair`.

    Raises:
      JobError: a line is not a result line (the file is not a job's output).
    """
    if not os.path.exists(path):
        return {}
    try:
        with open(path, "rb") as f:
            data = f.read()
        end = data.rfind(b"\n") + 1
        if end < len(data) and repair:
            with open(path, "r+b") as f:
                f.truncate(end)
                f.flush()
                os.fsync(f.fileno())
    except OSError as e:
        raise JobError(f"cannot read the output file: {e}") from None
    last: dict[str, LastResult] = {}
    for number, line in enumerate(data[:end].split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            last[str(record["id"])] = LastResult(record.get("finish_reason"),
                                                 record.get("valid"), record.get("error"))
        except (ValueError, KeyError, TypeError):
            raise JobError(f"{path}:{number}: not a result line; refusing to resume into "
                           "this file (move it away or pick another output)") from None
    return last


def read_done_ids(path: str, repair: bool = True, retry_failed: bool = True) -> set[str]:
    """Ids that a resumed run skips: those whose last line is a result, and with
    `retry_failed=False` also those whose last line is an error."""
    return {request_id for request_id, last in read_last_results(path, repair).items()
            if not (retry_failed and last.failed)}


class ResultWriter:
    """Appends result lines; each `write(lines)` is one write() + fsync (whole lines)."""

    def __init__(self, path: str):
        """Opens `path` for appending (its folder made if missing); JobError if it cannot."""
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as e:
            raise JobError(f"cannot open the output file for appending: {e}") from None

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
    """The output line of `job`: its error (`result` None) or its result, with the verdict of
    the independent check in `valid`."""
    record: dict[str, Any]
    if result is None:
        record = {"id": job.id, "text": None, "tokens": [], "finish_reason": "error",
                  "valid": None, "error": job.error, "timings": {}}
    else:
        valid = None
        if result.error is None and job.kind == "tools":
            valid = why_tool_calls_invalid(job.source, result.tool_calls) is None
        elif result.error is None:
            valid = check_output(job.kind, job.source, result.text)
        record = {"id": job.id, "text": result.text, "tokens": list(result.token_ids),
                  "finish_reason": result.finish_reason, "valid": valid,
                  "error": result.error, "forced_tokens": result.forced_tokens,
                  "timings": timings}
        if job.kind == "tools":
            record["tool_calls"] = result.tool_calls
    return json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogateescape")
