"""Python threads on the native core under ThreadSanitizer (issue #22); run by tools/tsan_python.sh.

Usage: python tools/tsan_python_threads.py <dir holding a TSan-built _native*.so>

The interpreter must run with libtsan preloaded (LD_PRELOAD); the script puts the instrumented
extension in place of the installed one (a finder first on sys.meta_path answers for
`jaxguide._native` only; nothing installed is touched), checks it was the one imported, and then
drives the thread-safety contract of the README from Python threads:

  1. one Matcher from 4 threads: accept_token, fill_next_token_bitmask, rollback, reset,
     compute_ff_tokens, fork, pending_prefix; each call runs or raises MatcherBusyError;
  2. one BatchMatcher (the shared pool, and an own pool of 2) filled, accepted and rolled back
     from two threads with disjoint matchers (sync and async fills); masks checked;
  3. threads creating matchers and filling masks on one CompiledGrammar while compiling other
     grammars against the same TokenizerInfo; masks checked;
  4. compute_ff_bytes / compute_ff_tokens / pending_prefix / accept_token / is_accepting on a
     matcher while a batch fill owns it (run or MatcherBusyError).

The checks are of outcomes (no wrong mask, no other exception); the races are TSan's to report.
"""

from __future__ import annotations

import glob
import importlib.abc
import importlib.util
import os
import random
import sys
import threading
import time

import numpy as np

NATIVE = "jaxguide._native"


class _InstrumentedNative(importlib.abc.MetaPathFinder):
    """Answers the import of jaxguide._native with the .so under `build_dir`."""

    def __init__(self, path: str):
        self.path = path

    def find_spec(self, fullname, path=None, target=None):
        if fullname != NATIVE:
            return None
        return importlib.util.spec_from_file_location(fullname, self.path)


def _substitute_native(build_dir: str) -> str:
    found = glob.glob(os.path.join(build_dir, "_native*.so"))
    if len(found) != 1:
        sys.exit(f"expected one _native*.so in {build_dir}, found {found}")
    assert "jaxguide" not in sys.modules, "the substitute must be in place before jaxguide"
    sys.meta_path.insert(0, _InstrumentedNative(os.path.abspath(found[0])))
    return os.path.abspath(found[0])


SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "pattern": "^[A-Z][a-z]{1,12}$"},
    "kind": {"enum": ["red", "green", "blue"]},
    "n": {"type": "array", "items": {"type": "integer"}}}, "required": ["name"]}
TEXT = '{"name": "Alice", "kind": "green", "n": [1, 22]}'


def _tokenize(info, text: str) -> list[int]:
    """Greedy longest-match ids of `text` (info.encode adds SentencePiece's dummy prefix)."""
    vocab = {info.token_bytes(i): i for i in range(info.vocab_size)}
    data, ids, at = text.encode("utf-8"), [], 0
    while at < len(data):
        size = next(n for n in range(min(16, len(data) - at), 0, -1) if data[at:at + n] in vocab)
        ids.append(vocab[data[at:at + size]])
        at += size
    return ids


def _run_threads(target, count: int) -> None:
    errors: list[BaseException] = []

    def wrapped(index: int) -> None:
        try:
            target(index)
        except BaseException as error:  # noqa: BLE001  (re-raised in the main thread)
            errors.append(error)

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def _reference_masks(jaxguide, compiled, tokens) -> np.ndarray:
    info = compiled.tokenizer_info
    masks = jaxguide.allocate_token_bitmask(len(tokens) + 1, info.logits_width)
    matcher = jaxguide.Matcher(compiled)
    for step, token in enumerate(tokens):
        matcher.fill_next_token_bitmask(masks, step)
        assert matcher.accept_token(token)
    matcher.fill_next_token_bitmask(masks, len(tokens))
    return masks


def one_matcher_four_threads(jaxguide, compiled, tokens, calls: int) -> dict:
    info = compiled.tokenizer_info
    matcher = jaxguide.Matcher(compiled)
    counts = {"ran": 0, "busy": 0}
    lock = threading.Lock()

    def work(seed: int) -> None:
        rng = random.Random(seed)
        mask = jaxguide.allocate_token_bitmask(1, info.logits_width)
        for _ in range(calls):
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
                    _ = matcher.pending_prefix
                outcome = "ran"
            except jaxguide.MatcherBusyError:
                outcome = "busy"
            with lock:
                counts[outcome] += 1

    _run_threads(work, 4)
    assert counts["ran"] + counts["busy"] == 4 * calls and counts["ran"] > 0, counts
    matcher.reset()
    assert matcher.accept_tokens(tokens) == len(tokens) and matcher.is_accepting()
    return counts


def batch_two_threads_disjoint(jaxguide, compiled, tokens, expected, num_threads) -> None:
    info = compiled.tokenizer_info
    batch = jaxguide.BatchMatcher(num_threads=num_threads)
    rows = 4

    def work(index: int) -> None:
        matchers = [jaxguide.Matcher(compiled) for _ in range(rows)]
        bitmask = jaxguide.allocate_token_bitmask(rows, info.logits_width)
        for step, token in enumerate(tokens):
            if (index + step) % 2:
                assert batch.fill_next_token_bitmask(matchers, bitmask) == {}
            else:
                batch.fill_next_token_bitmask_async(matchers, bitmask).wait()
            np.testing.assert_array_equal(bitmask, np.repeat(expected[step:step + 1], rows, 0))
            assert batch.accept_tokens(matchers, [token] * rows).all()
            if step % 4 == 3:  # one step back and forth
                batch.rollback(matchers, 1)
                assert batch.accept_tokens(matchers, [token] * rows).all()

    _run_threads(work, 2)
    if num_threads is not None:
        batch.close()


def shared_compiled_grammar(jaxguide, compiled, tokens, expected) -> None:
    info = compiled.tokenizer_info
    letters = _tokenize(info, "abcdefghi")

    def work(index: int) -> None:
        for _ in range(2):
            got = _reference_masks(jaxguide, compiled, tokens)  # new matchers, shared grammar
            np.testing.assert_array_equal(got, expected)
            other = jaxguide.compile_grammar(
                jaxguide.Grammar.from_regex(f"[a-z]{{{index + 1},9}}"), info)
            assert jaxguide.Matcher(other).accept_token(letters[0])

    _run_threads(work, 4)


def calls_during_batch_fill(jaxguide, compiled) -> set:
    info = compiled.tokenizer_info
    rows = 64
    matchers = [jaxguide.Matcher(compiled) for _ in range(rows)]
    bitmask = jaxguide.allocate_token_bitmask(rows, info.logits_width)
    seen_busy = set()
    with jaxguide.BatchMatcher(num_threads=1) as batch:
        for _ in range(8):
            handle = batch.fill_next_token_bitmask_async(matchers, bitmask)
            for call in ("compute_ff_bytes", "compute_ff_tokens", "pending_prefix",
                         "accept_token", "is_accepting"):
                try:
                    attribute = getattr(matchers[-1], call)
                    if callable(attribute):
                        attribute(*([0] if call == "accept_token" else []))
                except jaxguide.MatcherBusyError:
                    seen_busy.add(call)
            handle.wait()
    assert matchers[-1].compute_ff_bytes() == b"{"
    return seen_busy


def main() -> None:
    so_path = _substitute_native(sys.argv[1])
    import jaxguide  # after the substitution, on purpose
    from jaxguide import assets

    loaded = sys.modules[NATIVE].__file__
    assert os.path.samefile(loaded, so_path), f"imported {loaded}, not {so_path}"
    print(f"jaxguide._native from {loaded}", flush=True)
    info = jaxguide.TokenizerInfo.from_sentencepiece(assets.mistral_sentencepiece_path("v1"))

    def fresh():  # a new CompiledGrammar: its lexer DFA and mask cache are built by the threads
        return jaxguide.compile_grammar(jaxguide.Grammar.from_json_schema(SCHEMA), info)

    tokens = _tokenize(info, TEXT)
    expected = _reference_masks(jaxguide, fresh(), tokens)
    calls = int(os.environ.get("TSAN_SCRIPT_CALLS", "1500"))
    rounds = int(os.environ.get("TSAN_SCRIPT_ROUNDS", "3"))
    steps = []
    for _ in range(rounds):
        steps += [
            ("one matcher, 4 threads", lambda: one_matcher_four_threads(
                jaxguide, fresh(), tokens, calls)),
            ("BatchMatcher shared pool, 2 threads", lambda: batch_two_threads_disjoint(
                jaxguide, fresh(), tokens, expected, None)),
            ("BatchMatcher own pool of 2, 2 threads", lambda: batch_two_threads_disjoint(
                jaxguide, fresh(), tokens, expected, 2)),
            ("one CompiledGrammar, 4 threads", lambda: shared_compiled_grammar(
                jaxguide, fresh(), tokens, expected)),
            ("calls during a batch fill", lambda: calls_during_batch_fill(jaxguide, fresh())),
        ]
    for name, step in steps:
        start = time.perf_counter()
        result = step()
        print(f"{name}: ok in {time.perf_counter() - start:.1f} s"
              f"{'' if result is None else ' ' + repr(result)}", flush=True)
    print("tsan_python_threads: all scenarios ran", flush=True)


if __name__ == "__main__":
    main()
