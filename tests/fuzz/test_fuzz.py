"""The fuzzer on a fixed budget (issue #22): mutated regexes, Lark grammars, JSON Schemas and
JSONL request lines through the public API (`jaxguide.testing.fuzzing`), on two forked
workers, each case under a 10 s / 1 GiB limit.

The run is reproducible (case i is `make_case(seeds, SEED, i)`) and must find nothing: no
crash, hang, memory overrun, unclean error (an exception other than a JaxguideError escaping
the API) or broken walk invariant; at least 30% of the inputs of each grammar front end must
compile and be walked. A failure lists each finding's signature and an example case; rerun it
with `python benchmarks/fuzz.py --replay FILE` after saving the case as JSON (or rebuild it
with `--seed SEED --first ID --cases 1`). Known bugs owned elsewhere are pinned apart, in
test_fuzz_regressions.py. The long run is benchmarks/fuzz.py.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from jaxguide.testing.fuzz_inputs import FRONT_ENDS, load_seeds, make_case
from jaxguide.testing.fuzzing import Environment, run_fuzz

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEED = "ci-1"
CASES = 2000  # about 100 s on 2 cores
JOBS = 2
GRAMMAR_FRONT_ENDS = ("regex", "lark", "json_schema")


@pytest.fixture(scope="module")
def env() -> Environment:
    return Environment.load()


@pytest.fixture(scope="module")
def fuzz_result(env) -> dict:
    seeds = load_seeds(ROOT)
    cases = (make_case(seeds, SEED, i, mild=True) for i in range(CASES))
    return run_fuzz(cases, jobs=JOBS, env=env)


def _describe(result: dict) -> str:
    lines = []
    for finding in result["findings"]:
        example = finding["examples"][0]
        lines.append(f"{finding['count']} x {finding['signature']}\n  case: "
                     f"{json.dumps(example['case'], default=repr)[:1500]}\n  result: "
                     f"{json.dumps(example['result'], default=repr)[:800]}")
    return "\n".join(lines)


def test_fuzz_finds_nothing(fuzz_result):
    totals = fuzz_result["totals"]
    assert totals["inputs"] == CASES
    assert not fuzz_result["findings"], _describe(fuzz_result)
    for outcome in ("crash", "hang", "memory", "unclean", "invariant"):
        assert totals[outcome] == 0, outcome


def test_fuzz_compiles_and_walks_each_front_end(fuzz_result):
    front_ends = fuzz_result["front_ends"]
    assert set(front_ends) == set(FRONT_ENDS)
    for kind in GRAMMAR_FRONT_ENDS:
        stats = front_ends[kind]
        assert stats["compiled_share"] >= 0.3, (kind, stats)
        assert stats["steps"] > 4 * stats["compiled"] // 2, (kind, stats)
        assert stats["clean_errors"], kind  # the mutations reach the error paths too
    assert front_ends["request"]["inputs"] > 0


@pytest.mark.parametrize("what,outcome", [("crash", "crash"), ("hang", "hang"),
                                          ("memory", "memory"), ("unclean", "unclean"),
                                          ("fine", "walked")])
def test_harness_classifies_misbehaving_cases(env, what, outcome):
    """A worker that dies, hangs, overruns its memory or raises is reported and replaced: the
    next case still runs."""
    cases = [{"id": 0, "kind": "selftest", "input": what},
             {"id": 1, "kind": "selftest", "input": "fine"}]
    result = run_fuzz(cases, jobs=1, env=env, case_seconds=2.0)
    assert result["totals"][outcome] == 1 + (outcome == "walked"), result
    assert result["totals"]["walked"] >= 1
    if outcome != "walked":
        [finding] = result["findings"]
        assert finding["examples"][0]["case"]["input"] == what
