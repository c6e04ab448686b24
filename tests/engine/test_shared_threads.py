"""Shared objects used from several Python threads at once (issue #22): one CompiledGrammar and
its TokenizerInfo by threads that create matchers, fill masks and compile grammars, and one
BatchMatcher (shared pool or its own) by threads that fill, accept and roll back disjoint
matchers. Every mask must equal the one a single thread computes; a matcher passed to two
threads' operations at once gets MatcherBusyError, never a wrong mask."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide import BatchMatcher, Grammar, Matcher, MatcherBusyError, compile_grammar

SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "pattern": "^[A-Z][a-z]{1,12}$"},
    "kind": {"enum": ["red", "green", "blue"]},
    "n": {"type": "array", "items": {"type": "integer"}}}, "required": ["name"]}
TEXT = '{"name": "Alice", "kind": "green", "n": [1, 22, 333]}'


@pytest.fixture(scope="module")
def info():
    return real_tokenizer("llama3_tiktoken")


def _run_threads(target, count: int) -> None:
    errors: list[BaseException] = []

    def wrapped(index: int) -> None:
        try:
            target(index)
        except BaseException as error:  # re-raised in the main thread
            errors.append(error)

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def _reference_masks(compiled, info, tokens) -> np.ndarray:
    masks = jaxguide.allocate_token_bitmask(len(tokens) + 1, info.logits_width)
    matcher = Matcher(compiled)
    for step, token in enumerate(tokens):
        matcher.fill_next_token_bitmask(masks, step)
        assert matcher.accept_token(token)
    matcher.fill_next_token_bitmask(masks, len(tokens))
    return masks


def test_threads_share_a_compiled_grammar_and_tokenizer(info):
    compiled = compile_grammar(Grammar.from_json_schema(SCHEMA), info)
    tokens = info.encode(TEXT)
    expected = _reference_masks(compile_grammar(Grammar.from_json_schema(SCHEMA), info), info,
                                tokens)

    def work(index: int) -> None:
        for _ in range(3):
            got = _reference_masks(compiled, info, tokens)  # new matchers, one shared grammar
            np.testing.assert_array_equal(got, expected)
            # Compiling on the same tokenizer meanwhile (shared UTF-8 class cache, trie reads).
            other = compile_grammar(Grammar.from_regex(f"[a-z]{{{index + 1},9}}"), info)
            assert Matcher(other).accept_token(info.encode("abcdefghi")[0])

    _run_threads(work, 4)


@pytest.mark.parametrize("num_threads", [None, 2])
def test_threads_share_a_batch_matcher_with_disjoint_matchers(info, num_threads):
    compiled = compile_grammar(Grammar.from_json_schema(SCHEMA), info)
    tokens = info.encode(TEXT)
    expected = _reference_masks(compiled, info, tokens)
    batch = BatchMatcher(num_threads=num_threads)
    rows = 6

    def work(index: int) -> None:
        matchers = [Matcher(compiled) for _ in range(rows)]
        bitmask = jaxguide.allocate_token_bitmask(rows, info.logits_width)
        for step, token in enumerate(tokens):
            if index % 2:
                assert batch.fill_next_token_bitmask(matchers, bitmask) == {}
            else:
                batch.fill_next_token_bitmask_async(matchers, bitmask).wait()
            np.testing.assert_array_equal(bitmask, np.repeat(expected[step:step + 1], rows, 0))
            assert batch.accept_tokens(matchers, [token] * rows).all()
            if step % 5 == 4:  # roll one step back and forth
                batch.rollback(matchers, 1)
                assert batch.accept_tokens(matchers, [token] * rows).all()

    _run_threads(work, 4)
    if num_threads is not None:
        batch.close()


def test_one_matcher_in_two_threads_batches_is_busy_not_wrong(info):
    compiled = compile_grammar(Grammar.from_json_schema(SCHEMA), info)
    expected = _reference_masks(compiled, info, [])
    batch = BatchMatcher()
    shared = Matcher(compiled)
    busy = [0]

    def work(index: int) -> None:
        matchers = [shared] + [Matcher(compiled) for _ in range(3)]
        bitmask = jaxguide.allocate_token_bitmask(4, info.logits_width)
        for _ in range(40):
            try:
                batch.fill_next_token_bitmask(matchers, bitmask)
            except MatcherBusyError:
                busy[0] += 1
                continue
            np.testing.assert_array_equal(bitmask, np.repeat(expected[:1], 4, 0))

    _run_threads(work, 3)
