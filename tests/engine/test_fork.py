"""os.fork() while batch fills run on other threads (issue #22): the child finds every native
lock usable — a new Matcher on the same CompiledGrammar and its masks, fills on the shared pool
(a new BatchMatcher, one made before the fork, an own pool), a new grammar compiled — while a
matcher of a fill in flight at the fork stays busy there. Children run under `signal.alarm`,
so a hang fails the test instead of stalling it."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import traceback

import numpy as np
import pytest
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide import BatchMatcher, Grammar, Matcher, MatcherBusyError, compile_grammar

pytestmark = [pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
              # JAX (imported by other tests) warns on any fork; jaxguide's own state is fine.
              pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")]

# Patterns, enums and nesting: the fills keep building lexer DFA states and mask-cache entries.
SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^[a-f0-9]{4,12}(-[a-z]{2,6}){0,3}$"},
        "kind": {"enum": ["alpha", "beta", "gamma", "delta", "epsilon"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 24}},
        "size": {"type": "number", "minimum": 0},
        "child": {"type": "object", "properties": {"name": {"type": "string"},
                                                   "ok": {"type": "boolean"}}},
    },
    "required": ["id", "kind"],
}
TEXT = '{"id": "beef-ab-cd", "kind": "gamma", "tags": ["x y", "zz"], "size": 12.5}'
ROWS = 48


@pytest.fixture(scope="module")
def setup():
    info = real_tokenizer("llama3_tiktoken")
    return info, compile_grammar(Grammar.from_json_schema(SCHEMA), info)


def _spread(compiled, info) -> list[Matcher]:
    """ROWS matchers at different points of TEXT (so the fills walk different states)."""
    tokens = info.encode(TEXT)
    matchers = []
    for i in range(ROWS):
        matcher = Matcher(compiled)
        assert matcher.accept_tokens(tokens[:i % len(tokens)]) == i % len(tokens)
        matchers.append(matcher)
    return matchers


def _child_checks(compiled, info, in_flight, handle, pre_fork_batches) -> None:
    """Everything a forked child must be able to do; raises AssertionError on a failure."""
    mask = jaxguide.allocate_token_bitmask(1, info.logits_width)
    matcher = Matcher(compiled)
    for token in info.encode(TEXT)[:6]:
        matcher.fill_next_token_bitmask(mask)
        assert matcher.error is None, matcher.error
        assert mask[0, token >> 5] >> (token & 31) & 1
        assert matcher.accept_token(token)
    fresh = [Matcher(compiled) for _ in range(4)]
    rows = jaxguide.allocate_token_bitmask(4, info.logits_width)
    for batch in (BatchMatcher(), BatchMatcher(num_threads=2), *pre_fork_batches):
        assert batch.fill_next_token_bitmask(fresh, rows) == {}
        assert (rows == rows[0]).all() and rows[0].any()
    other = compile_grammar(Grammar.from_regex("[A-Z][a-z]{2,8}( [A-Z][a-z]{2,8}){0,3}"), info)
    Matcher(other).fill_next_token_bitmask(mask)
    assert mask.any()
    if not handle.done():  # the fill in flight at the fork never finishes here
        for probe in in_flight[:3]:
            with pytest.raises(MatcherBusyError):
                probe.is_accepting()
        with pytest.raises(RuntimeError, match="forked"):
            handle.wait()


def _run_child(*args) -> None:
    """The body of a forked child: exits 0 on success, 1 (with a traceback) on failure."""
    signal.alarm(30)
    code = 1
    try:
        _child_checks(*args)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


def test_fork_repeatedly_during_batch_fills(setup):
    info, compiled = setup
    matchers = _spread(compiled, info)
    shared, own = BatchMatcher(), BatchMatcher(num_threads=3)
    bitmask = jaxguide.allocate_token_bitmask(ROWS, info.logits_width)
    busy_children = 0
    for iteration in range(16):
        batch = (shared, own)[iteration % 2]
        handle = batch.fill_next_token_bitmask_async(matchers, bitmask)
        pid = os.fork()
        if pid == 0:
            _run_child(compiled, info, matchers, handle, (shared, own))
        busy_children += not handle.done()
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (
            f"child of iteration {iteration} failed: status {status:#x}")
        assert handle.wait() == {}
        # A new compiled grammar each round: its DFA and mask cache are cold during the fork.
        if iteration % 4 == 3:
            compiled = compile_grammar(Grammar.from_json_schema(SCHEMA), info, cache=False)
            matchers = _spread(compiled, info)
    own.close()
    # The parent's masks still agree with sequential ones.
    expected = jaxguide.allocate_token_bitmask(ROWS, info.logits_width)
    for i, matcher in enumerate(matchers):
        matcher.fill_next_token_bitmask(expected, i)
    shared.fill_next_token_bitmask(matchers, bitmask)
    np.testing.assert_array_equal(bitmask, expected)


def _mp_target(compiled, info, matchers, handle, batches, queue) -> None:
    signal.alarm(30)
    try:
        _child_checks(compiled, info, matchers, handle, batches)
        queue.put("ok")
    except BaseException:
        queue.put(traceback.format_exc())


def test_multiprocessing_fork_start_method(setup):
    info, compiled = setup
    context = multiprocessing.get_context("fork")
    matchers = _spread(compiled, info)
    batch = BatchMatcher()
    bitmask = jaxguide.allocate_token_bitmask(ROWS, info.logits_width)
    for _ in range(3):
        queue = context.Queue()
        handle = batch.fill_next_token_bitmask_async(matchers, bitmask)
        process = context.Process(target=_mp_target,
                                  args=(compiled, info, matchers, handle, (batch,), queue))
        process.start()
        process.join(timeout=60)
        assert process.exitcode == 0, f"exit code {process.exitcode}"
        assert queue.get(timeout=5) == "ok"
        assert handle.wait() == {}
