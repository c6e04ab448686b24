"""BatchMatcher: batch masks equal sequential masks on random walks over real grammars and the
Llama-3 tokenizer, failing rows stay in their row, misuse raises clear errors, concurrent use
from several Python threads is consistent, the MaskQueue glue, and a clean exit."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from support.grammar_corpus import JSON_LARK, TRICKY, outlines_grammar

import jaxguide
from jaxguide import (
    BatchMatcher,
    Matcher,
    MatcherBusyError,
    TokenizerInfo,
    compile_grammar,
)

EOS = b"<eos>"


@pytest.fixture(scope="module")
def llama3():
    from support.real_tokenizers import real_tokenizer
    return real_tokenizer("llama3_tiktoken")


@pytest.fixture(scope="module")
def grammars(llama3):
    texts = {"json": JSON_LARK, "arithmetic": outlines_grammar("arithmetic.lark"),
             "keywords": TRICKY["keywords"], "left_recursive": TRICKY["left_recursive"]}
    return {name: compile_grammar(text, llama3) for name, text in texts.items()}


@pytest.fixture(scope="module")
def small():
    vocab = [b"{", b"}", b'"', b"a", b":", b" ", b"1", b"2", b'{"', b'":', b"ab", b"null", b"x"]
    info = TokenizerInfo.from_token_bytes(vocab + [EOS], eos_token_ids=[len(vocab)])
    return info, compile_grammar(JSON_LARK, info)


def allowed_tokens(row: np.ndarray, vocab_size: int) -> np.ndarray:
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")[:vocab_size]
    return np.nonzero(bits)[0]


def sequential_masks(matchers, width: int) -> np.ndarray:
    out = np.zeros((len(matchers), width), np.uint32)
    for i, matcher in enumerate(matchers):
        matcher.fill_next_token_bitmask(out, i)
    return out


@pytest.mark.parametrize("batch_size,steps,seed", [(1, 12, 0), (13, 10, 1), (64, 6, 2),
                                                   (256, 3, 3)])
def test_batch_masks_equal_sequential_masks_on_random_walks(llama3, grammars, batch_size, steps,
                                                            seed):
    """Mixed grammars, random rows (a permutation of a wider, padded bitmask), random tokens
    from each mask, batched accepts (some through the fused accept-then-fill), rollbacks."""
    rng = random.Random(seed)
    names = sorted(grammars)
    batch = BatchMatcher(num_threads=3)
    matchers = [Matcher(grammars[rng.choice(names)]) for _ in range(batch_size)]
    width = llama3.bitmask_width + 1  # a padded model row: the extra word must be cleared
    num_rows = batch_size + 3
    rows = np.array(rng.sample(range(num_rows), batch_size), dtype=np.int64)
    bitmask = np.full((num_rows, width), 0xFFFFFFFF, np.uint32)
    untouched = np.setdiff1d(np.arange(num_rows), rows)
    tokens = None
    for step in range(steps):
        handle = batch.fill_next_token_bitmask_async(matchers, bitmask, rows=rows, tokens=tokens)
        assert handle.wait() == {}
        if tokens is not None:
            assert handle.accepted.all()
        assert handle.done() and np.array_equal(handle.rows, rows)
        expected = sequential_masks(matchers, width)
        np.testing.assert_array_equal(bitmask[rows], expected)
        assert (bitmask[untouched] == 0xFFFFFFFF).all()
        chosen = []
        for i in range(batch_size):
            allowed = [t for t in allowed_tokens(bitmask[rows[i]], llama3.vocab_size)
                       if llama3.token_bytes(int(t))]
            chosen.append(rng.choice(allowed) if allowed else min(llama3.eos_token_ids))
        if step % 2 == 0:
            tokens = chosen  # accepted by the next fill
        else:
            tokens = None
            assert batch.accept_tokens(matchers, chosen).all()
            back = [rng.choice([0, 0, 1]) for _ in range(batch_size)]
            batch.rollback(matchers, back)
            batch.rollback(matchers, np.int64(0))  # a numpy scalar is one count for all


def test_failing_row_gets_eos_only_mask_and_its_own_error(llama3, grammars):
    compiled = grammars["json"]
    matchers = [Matcher(compiled) for _ in range(6)]
    matchers[4] = Matcher(compiled, mask_step_budget=10)  # fails at the start of JSON
    bitmask = jaxguide.allocate_token_bitmask(6, llama3.logits_width)
    errors = BatchMatcher().fill_next_token_bitmask_async(matchers, bitmask).wait()
    assert list(errors) == [4] and "budget of 10 " in errors[4]
    assert matchers[4].error == errors[4]
    assert set(allowed_tokens(bitmask[4], llama3.vocab_size).tolist()) == \
        set(llama3.eos_token_ids)
    good = sequential_masks(matchers[:1], bitmask.shape[1])[0]
    for i in (0, 1, 2, 3, 5):
        np.testing.assert_array_equal(bitmask[i], good)
        assert matchers[i].error is None


def test_refused_token_in_fused_accept_gets_eos_only_row(small):
    info, compiled = small
    matchers = [Matcher(compiled), Matcher(compiled)]
    bitmask = jaxguide.allocate_token_bitmask(2, info.logits_width)
    handle = BatchMatcher().fill_next_token_bitmask_async(matchers, bitmask, tokens=[0, 1])
    errors = handle.wait()
    assert handle.accepted.tolist() == [True, False]  # "{" ok, "}" not at the start
    assert list(errors) == [1] and "not allowed" in errors[1]
    assert bitmask[1].tolist() == [1 << 13]
    assert matchers[1].error is None and matchers[1].is_token_allowed(0)  # unchanged


def test_buffer_rows_and_matcher_checks(small):
    info, compiled = small
    batch = BatchMatcher()
    ms = [Matcher(compiled) for _ in range(3)]
    width = info.bitmask_width
    fill = batch.fill_next_token_bitmask_async
    with pytest.raises(ValueError, match="uint32"):
        fill(ms, np.zeros((3, width), np.int32))
    with pytest.raises(ValueError, match="uint32"):
        fill(ms, np.zeros((3, width), np.dtype(">u4")))  # non-native byte order
    with pytest.raises(ValueError, match="numpy uint32 array"):
        fill(ms, [[0] * width] * 3)  # never silently copied into a temporary
    with pytest.raises(ValueError, match="2-D"):
        fill(ms, np.zeros(3 * width, np.uint32))
    with pytest.raises(ValueError, match="contiguous"):
        fill(ms, np.zeros((3, 2 * width), np.uint32)[:, ::2])
    with pytest.raises(ValueError, match="aligned"):
        raw = np.zeros(3 * width * 4 + 1, np.uint8)[1:].view(np.uint32).reshape(3, width)
        fill(ms, raw)
    readonly = np.zeros((3, width), np.uint32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        fill(ms, readonly)
    with pytest.raises(ValueError, match="width"):
        fill(ms, np.zeros((3, 0), np.uint32))
    with pytest.raises(ValueError, match="rows="):
        fill(ms, np.zeros((4, width), np.uint32))
    bitmask = np.zeros((4, width), np.uint32)
    with pytest.raises(ValueError, match="out of range"):
        fill(ms, bitmask, rows=[0, 1, 4])
    with pytest.raises(ValueError, match="out of range"):
        fill(ms, bitmask, rows=[0, -1, 2])
    with pytest.raises(ValueError, match="twice"):
        fill(ms, bitmask, rows=[0, 2, 2])
    with pytest.raises(ValueError, match="entries"):
        fill(ms, bitmask, rows=[0, 1])
    with pytest.raises(ValueError, match="integers"):
        fill(ms, bitmask, rows=[0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="positions 0 and 2"):
        fill([ms[0], ms[1], ms[0]], bitmask[:3])
    with pytest.raises(ValueError, match="positions 0 and 1"):
        fill([ms[0], ms[0].native], bitmask[:2])  # the wrapper and its native are one matcher
    with pytest.raises(TypeError, match=r"matchers\[1\] is a str"):
        fill([ms[0], "m"], bitmask[:2])
    with pytest.raises(TypeError, match="sequence"):
        fill(42, bitmask)
    with pytest.raises(ValueError, match="not a token id"):
        batch.accept_tokens(ms, [0, -1, 0])
    with pytest.raises(ValueError, match="entries"):
        batch.accept_tokens(ms, [0, 1])
    with pytest.raises(ValueError, match=">= 0"):
        batch.rollback(ms, -1)
    with pytest.raises(ValueError, match=">= 0"):
        batch.rollback(ms, [0, -2, 0])
    for bad in (0, -3):
        with pytest.raises(ValueError, match="num_threads"):
            BatchMatcher(num_threads=bad)
    with pytest.raises(TypeError, match="num_threads"):
        BatchMatcher(num_threads=2.0)
    # Nothing above started an operation: every matcher is free and untouched.
    assert batch.accept_tokens(ms, [0, 0, 0]).all()
    assert fill([], np.zeros((0, width), np.uint32)).wait() == {}


def test_matchers_in_flight_are_refused(llama3, grammars):
    """The one worker of the pool is parked, so a fill submitted meanwhile stays in flight
    (however fast its masks are) while we misuse its matchers."""
    batch = BatchMatcher(num_threads=1)
    queued = [Matcher(grammars["json"]) for _ in range(2)]
    free = Matcher(grammars["json"])
    width = llama3.bitmask_width
    with batch.native._hold_workers():
        second = batch.fill_next_token_bitmask_async(queued, np.zeros((2, width), np.uint32))
        assert not second.done()
        with pytest.raises(MatcherBusyError, match="wait for its BatchFillHandle"):
            queued[1].accept_token(0)
        for call in (lambda m: m.fill_next_token_bitmask(np.zeros((1, width), np.uint32)),
                     lambda m: m.rollback(1), lambda m: m.fork(), lambda m: m.error,
                     lambda m: m.is_accepting(), lambda m: m.reset()):
            with pytest.raises(MatcherBusyError):
                call(queued[0])
        with pytest.raises(MatcherBusyError, match="position 1 "):
            batch.accept_tokens([free, queued[0]], [0, 0])
        with pytest.raises(MatcherBusyError):
            BatchMatcher().fill_next_token_bitmask_async(queued, np.zeros((2, width), np.uint32))
        with pytest.raises(MatcherBusyError, match="bitmask row"):  # same rows, other matchers
            batch.fill_next_token_bitmask_async([free], second.bitmask, rows=[1])
        with pytest.raises(ValueError, match="still running"):
            _ = second.errors
        assert free.accept_token(llama3.encode("{")[0])  # others are unaffected
        assert not second.done()  # still parked behind the hold
    assert second.wait() == {}
    assert queued[1].accept_token(llama3.encode("[")[0])  # free again


def test_a_worker_hold_is_refused_where_it_could_not_be_released(llama3, grammars):
    with pytest.raises(ValueError, match="shared one"):
        BatchMatcher().native._hold_workers()
    batch = BatchMatcher(num_threads=2)
    hold = batch.native._hold_workers()
    del hold  # dropping a hold releases it: the pool works again
    matchers = [Matcher(grammars["json"]) for _ in range(3)]
    assert batch.fill_next_token_bitmask(matchers, np.zeros((3, llama3.bitmask_width),
                                                            np.uint32)) == {}
    batch.close()
    with pytest.raises(ValueError, match="no workers to hold"):
        batch.native._hold_workers()


def test_dropping_an_unfinished_handle_waits(llama3, grammars):
    matchers = [Matcher(grammars["keywords"]) for _ in range(8)]
    batch = BatchMatcher(num_threads=1)
    handle = batch.fill_next_token_bitmask_async(
        matchers, np.zeros((8, llama3.bitmask_width), np.uint32))  # only the handle holds it
    bitmask = handle.bitmask
    del handle  # waits: afterwards nothing writes into the bitmask and the matchers are free
    expected = sequential_masks(matchers, llama3.bitmask_width)
    np.testing.assert_array_equal(bitmask, expected)
    assert matchers[0].error is None


def test_concurrent_fills_accepts_and_rollbacks_from_python_threads(llama3, grammars):
    """Four Python threads share one pool, each driving its own mixed batch through fills,
    fused accept+fill, accepts and rollbacks; each checks every mask against a sequential
    fill of the same matchers."""
    batch = BatchMatcher()  # the shared pool
    own = BatchMatcher(num_threads=2)
    names = sorted(grammars)
    failures: list[str] = []

    def client(seed: int) -> None:
        rng = random.Random(seed)
        runner = batch if seed % 2 else own
        matchers = [Matcher(grammars[names[(seed + i) % len(names)]]) for i in range(6 + seed)]
        bitmask = jaxguide.allocate_token_bitmask(len(matchers), llama3.logits_width)
        tokens = None
        try:
            for step in range(8):
                handle = runner.fill_next_token_bitmask_async(matchers, bitmask, tokens=tokens)
                handle.wait()
                if not np.array_equal(bitmask, sequential_masks(matchers, bitmask.shape[1])):
                    failures.append(f"client {seed} step {step}: masks differ")
                chosen = []
                for row in bitmask:
                    allowed = [t for t in allowed_tokens(row, llama3.vocab_size)
                               if llama3.token_bytes(int(t))]
                    chosen.append(rng.choice(allowed) if allowed else 0)
                if step % 3 == 0:
                    tokens = chosen
                else:
                    tokens = None
                    runner.accept_tokens(matchers, chosen)
                    runner.rollback(matchers, [rng.choice([0, 1]) for _ in matchers])
        except Exception as e:  # noqa: BLE001  (reported below)
            failures.append(f"client {seed}: {e!r}")

    threads = [threading.Thread(target=client, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    own.close()


def test_shared_and_own_pools(small):
    info, compiled = small
    a, b = BatchMatcher(), BatchMatcher()
    assert a.shared and b.shared and a.num_threads == jaxguide._native.default_num_threads()
    with BatchMatcher(num_threads=3) as own:
        assert not own.shared and own.num_threads == 3
    # After close(), operations still complete (on the calling thread).
    ms = [Matcher(compiled) for _ in range(3)]
    bitmask = jaxguide.allocate_token_bitmask(3, info.logits_width)
    assert own.fill_next_token_bitmask(ms, bitmask) == {}
    np.testing.assert_array_equal(bitmask, sequential_masks(ms, bitmask.shape[1]))
    a.close()  # no-op for the shared pool
    assert b.fill_next_token_bitmask(ms, bitmask) == {}
    assert "shared pool" in repr(a) and "3" in repr(own)


def test_same_matcher_list_is_reused_and_kept_consistent(small):
    """The identity cache: passing the same objects again reuses the resolved batch; a new
    object at any position is noticed."""
    info, compiled = small
    batch = BatchMatcher()
    ms = [Matcher(compiled) for _ in range(4)]
    bitmask = jaxguide.allocate_token_bitmask(4, info.logits_width)
    batch.fill_next_token_bitmask(ms, bitmask)
    ms[2] = Matcher(compiled)
    assert ms[2].accept_token(0)
    batch.fill_next_token_bitmask(ms, bitmask)
    np.testing.assert_array_equal(bitmask, sequential_masks(ms, bitmask.shape[1]))
    with pytest.raises(ValueError, match="positions 1 and 3"):
        batch.fill_next_token_bitmask([ms[0], ms[1], ms[2], ms[1]], bitmask)


def test_fill_queue_buffer_and_submit_to_device(small):
    from jaxguide.device.mask_queue import MaskQueue

    info, compiled = small
    ms = [Matcher(compiled) for _ in range(3)]
    for i, m in enumerate(ms):
        assert m.accept_tokens([8, 3, 9][:i]) == i  # '{"', 'a', '":'
    queue = MaskQueue(batch_size=3, width=info.bitmask_width + 1, num_buffers=2)
    batch = BatchMatcher()
    for step in range(4):
        pending = queue.fill_async(batch, ms)
        array = pending.submit()
        assert pending.submit() is array and pending.errors == {}
        np.testing.assert_array_equal(np.asarray(array),
                                      sequential_masks(ms, info.bitmask_width + 1))
    # A fill that cannot start gives its buffer back to the queue.
    for _ in range(3):
        with pytest.raises(ValueError, match="rows"):
            queue.fill_async(batch, ms[:2])
    queue.drain()
    buffer = queue.acquire()
    queue.release(buffer)
    with pytest.raises(ValueError, match="not acquired"):
        queue.release(buffer)
    pending = queue.fill_async(batch, ms)
    pending.submit()
    assert "submitted" in repr(pending)


def test_interpreter_exit_with_fills_in_flight_is_clean():
    """Exiting while fills run (shared and own pools, handles dropped or kept) neither hangs,
    crashes nor leaves threads writing into freed memory."""
    script = textwrap.dedent("""
        import itertools, numpy as np, jaxguide
        from jaxguide import TokenizerInfo, compile_grammar, Matcher, BatchMatcher
        letters = "abcdefghijklmnopqrstuvwxyz"
        vocab = [bytes([c]) for c in range(32, 127)] + [
            (a + b + c).encode() for a, b, c in itertools.product(letters, repeat=3)]
        info = TokenizerInfo.from_token_bytes(vocab + [b"<eos>"], eos_token_ids=[len(vocab)])
        keywords = 'start: stmt+\\nstmt: "select"i NAME ";" | NAME "=" NAME ";"\\n' \\
                   'NAME: /[a-z_][a-z0-9_]*/\\n%ignore /[ \\\\n]+/\\n'
        compiled = compile_grammar(keywords, info)
        keep, running = [], 0
        for pool in (BatchMatcher(), BatchMatcher(num_threads=2)):
            ms = [Matcher(compiled) for _ in range(256)]
            handle = pool.fill_next_token_bitmask_async(
                ms, jaxguide.allocate_token_bitmask(256, info.logits_width))
            running += not handle.done()
            keep.append((pool, handle))
        # A dropped handle (its destructor waits) and a kept one, both in flight at exit.
        BatchMatcher().fill_next_token_bitmask_async(
            [Matcher(compiled)], jaxguide.allocate_token_bitmask(1, info.logits_width))
        print("exiting", running)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("exiting")


def test_native_stub_covers_the_batch_bindings():
    import ast
    import pathlib

    stub = ast.parse(pathlib.Path(jaxguide.__file__).with_name("_native.pyi").read_text())
    names = {node.name for node in stub.body
             if isinstance(node, (ast.ClassDef, ast.FunctionDef))}
    classes = {node.name: {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
               for node in stub.body if isinstance(node, ast.ClassDef)}
    for name in ("BatchMatcher", "BatchFillHandle", "_matcher_in_flight", "_shutdown_batch_pools",
                 "_register_matcher_busy_error", "default_num_threads"):
        assert name in names and hasattr(jaxguide._native, name), name
    for cls in ("BatchMatcher", "BatchFillHandle"):
        public = {n for n in dir(getattr(jaxguide._native, cls)) if not n.startswith("_")}
        assert public <= classes[cls], public - classes[cls]
