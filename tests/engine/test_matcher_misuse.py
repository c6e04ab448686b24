"""A Matcher misused never crashes the interpreter (issue #22): used from several threads at once,
or during a batch operation that owns it, a call raises MatcherBusyError; bad arguments give
clear Python errors or the plain answer (an id outside the vocabulary is never allowed)."""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide import BatchMatcher, Grammar, Matcher, MatcherBusyError, compile_grammar

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"},
                                           "b": {"type": "array", "items": {"type": "integer"}}}}


@pytest.fixture(scope="module")
def compiled():
    return compile_grammar(Grammar.from_json_schema(SCHEMA), real_tokenizer("llama3_tiktoken"))


def test_one_matcher_from_four_threads_raises_busy_never_crashes(compiled):
    info = compiled.tokenizer_info
    matcher = Matcher(compiled)
    tokens = info.encode('{"a": "hello world", "b": [1, 2, 3]}')
    counts = {"ran": 0, "busy": 0}
    lock = threading.Lock()

    def work(seed: int) -> None:
        rng = random.Random(seed)
        mask = jaxguide.allocate_token_bitmask(1, info.logits_width)
        for _ in range(1500):
            op = rng.randrange(7)
            try:
                if op == 0:
                    matcher.accept_token(tokens[min(matcher.native.num_steps, len(tokens) - 1)])
                elif op == 1:
                    matcher.fill_next_token_bitmask(mask)
                elif op == 2:
                    matcher.rollback(1)
                elif op == 3:
                    matcher.reset()
                elif op == 4:
                    matcher.compute_ff_tokens()
                elif op == 5:
                    matcher.fork()
                else:
                    matcher.pending_prefix
                outcome = "ran"
            except MatcherBusyError:
                outcome = "busy"
            with lock:
                counts[outcome] += 1

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counts["ran"] + counts["busy"] == 6000 and counts["ran"] > 0
    # Nothing was left claimed or half-done: the matcher still walks a whole document.
    matcher.reset()
    assert matcher.accept_tokens(tokens) == len(tokens) and matcher.is_accepting()


def test_calls_during_a_batch_fill_raise_busy(compiled):
    info = compiled.tokenizer_info
    matchers = [Matcher(compiled) for _ in range(4)]
    bitmask = jaxguide.allocate_token_bitmask(4, info.logits_width)
    with BatchMatcher(num_threads=1) as batch:
        with batch.native._hold_workers():  # the fill below stays in flight until released
            handle = batch.fill_next_token_bitmask_async(matchers, bitmask)
            for call in ("compute_ff_bytes", "compute_ff_tokens", "pending_prefix",
                         "accept_token", "is_accepting"):
                with pytest.raises(MatcherBusyError):
                    attribute = getattr(matchers[-1], call)  # pending_prefix is a property
                    if callable(attribute):
                        attribute(*([0] if call == "accept_token" else []))
        handle.wait()
    assert matchers[-1].compute_ff_bytes() == b"{"


def test_bad_arguments_get_python_errors_or_the_plain_answer(compiled):
    matcher = Matcher(compiled)
    for token in (-1, 2**40, compiled.tokenizer_info.vocab_size + 5):
        assert matcher.accept_token(token) is False
        assert matcher.is_token_allowed(token) is False
    assert matcher.accept_tokens([-1, 5]) == 0
    with pytest.raises(TypeError):
        matcher.accept_token(97.9)
    with pytest.raises(TypeError):
        matcher.accept_token("97")
    matcher.rollback(2**70)  # more than were accepted: back to the start
    assert matcher.native.num_steps == 0
    with pytest.raises(ValueError):
        matcher.rollback(-1)
    with pytest.raises(TypeError, match="CompiledGrammar"):
        Matcher(None)
    assert matcher.accept_token(np.int64(compiled.tokenizer_info.encode("{")[0]))


def test_endless_forced_bytes_stop_at_the_budget():
    """Found by fuzzing (issue #22): after `a`, every continuation of this grammar starts with
    another `a` (A = a+ munches maximally, B starts with `a`), so the forced bytes never end;
    compute_ff_bytes(2**40) looped for hours. The look-ahead is clamped to MAX_FORCED_BYTES."""
    from jaxguide.engine.matcher import MAX_FORCED_BYTES
    grammar = Grammar.from_lark("start: A B | \nA: /a+/\nB: /ab/\n")
    matcher = Matcher(compile_grammar(grammar, real_tokenizer("llama3_tiktoken")))
    assert matcher.accept_bytes(b"a")
    assert matcher.compute_ff_bytes(2**40) == b"a" * MAX_FORCED_BYTES
    assert matcher.compute_ff_bytes() == b"a" * 256
    tokens = matcher.compute_ff_tokens(max_bytes=10**30)
    # The forced run of `a`s is one pre-token that the next (forced) `a` still extends, so its
    # tokens are held back (`unstable_tail_start`): the call ends, with nothing non-canonical.
    assert len(tokens) <= MAX_FORCED_BYTES
    assert matcher.accept_tokens(tokens) == len(tokens)
