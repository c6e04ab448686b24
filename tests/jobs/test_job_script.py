"""tpu_scripts/generate.py as its users run it, in a subprocess: exit statuses, the lines it
prints for bad configs and inputs, Ctrl-C / SIGTERM, and config paths from another folder.

Exit statuses (tpu_scripts/generate.py's docstring, README "Batch generation"): 2 for a bad
config value or an unusable input file (nothing runs) and for a request that ended in error,
else 1 for a finished constrained result that fails its check, else 0; 130 when stopped by a
signal after the current batch's lines were written. Runs use SmolLM2 on CPU with a few tokens
per request, as tests/jobs/test_generation_job.py does.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tpu_scripts" / "generate.py"
BASE = ROOT / "configs" / "base.yml"
FAST = ["max_new_tokens=8", "progress=false"]
# jaxguide ignores a minContains over its budget with lenient, the independent jsonschema check
# does not: the only output the grammar allows, ["a", "a"], finishes at the grammar's end and
# fails its check.
TWICE_A = {"id": "twice", "prompt": "Say a twice", "lenient": True,
           "json_schema": {"type": "array", "items": {"const": "a"}, "minItems": 2,
                           "maxItems": 2, "contains": {"const": "a"}, "minContains": 5000}}


def run_script(args, cwd, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def write_lines(path: pathlib.Path, lines) -> None:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n"
                            for line in lines))


def read_output(path: pathlib.Path) -> list[dict]:
    data = path.read_bytes()
    assert data.endswith(b"\n"), "torn last line"
    return [json.loads(line) for line in data.decode().splitlines()]


def test_bad_config_values_exit_2_with_one_line_each_before_any_request(tmp_path):
    bad = ["sampling.kind=nucleus", "sampling.top_p=1.5", "sampling.temperature=-1",
           "sampling.top_k=0", "json_whitespace=weird", "max_new_tokens=-3", "dtype=f16",
           "model=gpt", "batch_size=0"]
    # The input does not exist: the config is refused before the input is read.
    done = run_script([*bad, "input=missing.jsonl", "output=out.jsonl"], cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == len(bad), lines
    for override in bad:
        key = override.split("=")[0]
        assert sum(line.startswith(f"error: {key} must be") for line in lines) == 1, (key, lines)
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("args,message", [
    (["--bogus=1"], "error: Unknown command line flag 'bogus'"),
    (["notes.txt"], "error: unexpected argument 'notes.txt'"),
    (["--num_processes=2"], "error: --coordinator_address, --num_processes and --process_id"),
])
def test_a_bad_command_line_exits_2(tmp_path, args, message):
    done = run_script(args, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith(message), done.stderr
    assert "Traceback" not in done.stderr


def test_an_unusable_input_file_exits_2(tmp_path):
    done = run_script(["input=missing.jsonl", "output=out.jsonl", *FAST], cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().startswith("error: cannot read the requests file")
    (tmp_path / "out.jsonl").write_text("not a result file\n")
    write_lines(tmp_path / "in.jsonl", [{"id": "a", "prompt": "x"}])
    done = run_script(["input=in.jsonl", "output=out.jsonl", *FAST], cwd=tmp_path)
    assert done.returncode == 2 and "not a result line" in done.stderr
    (tmp_path / "folder").mkdir()  # an output that cannot be written
    for resume in ("true", "false"):
        done = run_script(["input=in.jsonl", "output=folder", f"resume={resume}", *FAST],
                          cwd=tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.startswith("error: cannot "), done.stderr


def test_status_2_for_a_failed_request_over_1_for_a_failed_check(tmp_path):
    write_lines(tmp_path / "in.jsonl", [
        TWICE_A, '{"id": "wb", "prompt": "x", "regex": "\\\\bcat"}', {"id": "ok", "prompt": "Hi"}])
    args = ["input=in.jsonl", "output=out.jsonl", "batch_size=2", "json_whitespace=compact",
            *FAST]
    done = run_script(args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "1 request(s) ended in error" in done.stderr and "Traceback" not in done.stderr
    assert "warning: line 1:" in done.stdout and "minContains" in done.stdout
    by_id = {r["id"]: r for r in read_output(tmp_path / "out.jsonl")}
    assert by_id["wb"]["error"].startswith("line 2: GrammarError:")
    assert json.loads(by_id["twice"]["text"]) == ["a", "a"]
    assert by_id["twice"]["valid"] is False and by_id["twice"]["finish_reason"] != "max_tokens"
    # Without the failing line, the next run has nothing to generate (no model is loaded):
    # its status comes from the last line of each id, "twice" failing its check.
    write_lines(tmp_path / "in.jsonl", [TWICE_A, {"id": "ok", "prompt": "Hi"}])
    done = run_script(args, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "1 finished constrained result(s) fail their check" in done.stderr
    summary = json.loads(done.stdout.split("summary: ", 1)[1])
    assert (summary["generated"], summary["already_done"], summary["errors"]) == (0, 2, 0)


def test_runs_from_another_folder_with_paths_relative_to_the_config(tmp_path):
    (tmp_path / "job").mkdir()
    (tmp_path / "elsewhere").mkdir()
    write_lines(tmp_path / "job" / "requests.jsonl", [
        {"id": "digits", "prompt": "Count: ", "regex": "[0-9]{1,3}"},
        {"id": "free", "prompt": "Hello"}])
    (tmp_path / "job" / "job.yml").write_text(
        f"base_config: {BASE}\ninput: requests.jsonl\noutput: out/results.jsonl\n"
        "batch_size: 2\n")
    done = run_script(["../job/job.yml", *FAST], cwd=tmp_path / "elsewhere")
    assert done.returncode == 0, done.stderr
    results = read_output(tmp_path / "job" / "out" / "results.jsonl")
    assert [r["id"] for r in results] == ["digits", "free"]
    assert results[0]["valid"] is True
    assert not (tmp_path / "elsewhere" / "out").exists()


def _wait_for_lines(path: pathlib.Path, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= 1:
            return
        if process.poll() is not None:
            pytest.fail(f"the script ended first: {process.communicate()[1][-3000:]}")
        time.sleep(0.05)
    process.kill()
    pytest.fail("no result line in time")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_run_after_the_current_batch_with_status_130(tmp_path, signum):
    requests = [{"id": f"r{i}", "prompt": f"Tell me about the number {i}."} for i in range(12)]
    write_lines(tmp_path / "in.jsonl", requests)
    out = tmp_path / "out.jsonl"
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), "input=in.jsonl", "output=out.jsonl", "batch_size=1",
         *FAST], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_lines(out, process, timeout=300)
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    (line,) = [line for line in stderr.splitlines() if line.strip()]
    assert line.startswith(f"interrupted by {signal.Signals(signum).name}: stopped after "
                           "writing") and "run the same command again to resume" in line
    results = read_output(out)  # whole lines only
    assert 1 <= len(results) < len(requests)
    assert [r["id"] for r in results] == [r["id"] for r in requests[:len(results)]]
    summary = json.loads(stdout.split("summary: ", 1)[1])
    assert summary["interrupted"] is True and summary["generated"] == len(results)


def test_a_signal_before_the_first_batch_generates_nothing(tmp_path):
    write_lines(tmp_path / "in.jsonl", [{"id": "a", "prompt": "Hello"}])
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), "input=in.jsonl", "output=out.jsonl", *FAST],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        first = process.stdout.readline()  # printed once the requests are read, before the
        assert "1 requests in" in first, first  # model is loaded
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=300)
    finally:
        process.kill()
    assert process.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr and "writing this run's 0 generated results" in stderr
    assert (tmp_path / "out.jsonl").read_bytes() == b""


def test_a_second_signal_exits_at_once(tmp_path):
    """The first SIGINT lets the batch being generated finish; a second one exits 130 at once,
    mid-batch, with one line: no summary, no traceback, only whole lines in the output."""
    # Each request is its own batch of 80 digit tokens, seconds of decoding on CPU.
    write_lines(tmp_path / "in.jsonl", [{"id": f"r{i}", "prompt": "Digits:",
                                         "regex": "[0-9]{80}"} for i in range(6)])
    out = tmp_path / "out.jsonl"
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), "input=in.jsonl", "output=out.jsonl", "batch_size=1",
         "max_new_tokens=100", "progress=false"], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_lines(out, process, timeout=300)  # batch 2 has just started
        written = out.read_bytes().count(b"\n")
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, stderr[-3000:]
    (line,) = [line for line in stderr.splitlines() if line.strip()]
    assert line == ("interrupted again (SIGINT): exiting now; run the same command again to "
                    "resume"), stderr[-3000:]
    assert "summary:" not in stdout  # the run did not go on to its end
    results = read_output(out)
    assert len(results) == written and results[0]["valid"] is True

