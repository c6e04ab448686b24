"""The fuzzer: mutated grammars, schemas and request lines through the whole public API.

Design note. A *case* (`fuzz_inputs.make_case`: a JSON-serializable dict, so a saved finding
replays by itself) names a target and its input: `regex`, `lark` and `json_schema` go through
their `Grammar` front end and `compile_grammar`, then a *checked walk* of 4-40 steps over the
matcher API; `request` goes through the batch job's JSONL reader (`parse_request_line` and
`read_requests`, which must never raise). Outcomes per case:

  walked        compiled and walked, every invariant held (or the request lines all parsed to
                a request or an error);
  clean_error   a `JaxguideError` from a front end or `compile_grammar` (counted by type);
  unclean       any other exception escaping the public API (RecursionError, a pybind
                TypeError, AttributeError, ...), or any exception at all from a call the walk
                makes legitimately;
  invariant     a broken invariant of the walk (below);
  memory        MemoryError (each worker runs under RLIMIT_AS = its warm size + the limit);
  crash / hang  the worker died on a signal / ran past the time limit (set by the parent).

The checked walk. Each step fills the mask and checks it against the matcher: no bit beyond the
vocabulary; EOS in the mask iff `is_accepting()`; no dead end (no token and no EOS outside the
error state; a dead end the README's Limits document, a follow restriction excluding every byte
that could come next, ends the walk instead); a token drawn from the mask (by the soundness
walks' token classes, or uniformly) is `is_token_allowed` and `accept_token` takes it; a token
outside it is refused by both. At random it also rolls back 1-3 steps (the mask must equal the
one recorded at that depth), forks (the fork's mask equals the original's; the fork advancing
leaves the original unchanged; the walk goes on with the fork), fills a `BatchMatcher` batch of
the matcher and a fork (rows equal the single fills), takes the fast-forward bytes and tokens
(they must be accepted, and the state is unchanged after rolling them back), takes EOS (then
`is_terminated()`), and makes one *misuse* call on a fork: a random method with a bad argument
(negative, huge, float, None, wrong type, a bad bitmask buffer), which must raise a
`JaxguideError`, `TypeError` or `ValueError` of jaxguide's own (not pybind's "incompatible
function arguments") or succeed, and after an exception the fork's state must be unchanged. A
check that fails on a matcher that a work budget or the memory limit put in its error state
(either side of a comparison: one call may run out where another did not) ends the walk
("matcher_error") instead of counting as a violation.

Execution. `Environment.load()` imports everything and loads the tokenizers once, in the
parent; `WorkerPool` (behind `run_fuzz`) forks `jobs` persistent workers from it
(`multiprocessing` "fork": the children share the warm pages), sends each a case at a time
over a pipe and waits with the case's deadline (a walk stops taking steps after
`WALK_SECONDS`, so a grammar whose masks are slow is no hang; one call past the deadline is).
A worker past the deadline is killed (hang) and a new one forked; one that dies is replaced
(crash, with its signal); one whose address space grew past half the limit answers, exits and
is replaced, so a leak or a fragmented heap never blames a later case.
"""

from __future__ import annotations

import ctypes
import dataclasses
import faulthandler
import multiprocessing
import multiprocessing.connection
import os
import random
import re
import resource
import signal
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from jaxguide.engine import (
    BatchMatcher,
    CompiledGrammar,
    Matcher,
    TokenizerInfo,
    allocate_token_bitmask,
    compile_grammar,
    eos_only_row,
)
from jaxguide.errors import JaxguideError
from jaxguide.grammars import Grammar
from jaxguide.jobs.generation_job import JobError, parse_request_line, read_requests
from jaxguide.models import assets
from jaxguide.testing.fuzz_inputs import FRONT_ENDS, nested_schema
from jaxguide.testing.walks import (
    _EXPLORE_WEIGHTS,
    TokenClasses,
    _sample_class,
    _tokenizer_class_words,
)

CASE_SECONDS = 10.0
MEMORY_BYTES = 1 << 30
WALK_SECONDS = 4.0  # a walk stops taking steps after this long (slow masks are no hang)
RECYCLE_CASES = 5000  # a worker is replaced after this many cases (bounds slow leaks)
OUTCOMES = ("walked", "clean_error", "unclean", "invariant", "memory", "crash", "hang")
FINDINGS = ("unclean", "invariant", "memory", "crash", "hang")
_PYBIND_MESSAGES = ("incompatible function arguments", "incompatible constructor arguments",
                    "Unable to cast", "unable to convert", "Unable to convert")
_EXAMPLES_PER_SIGNATURE = 3


def load_tokenizer(name: str) -> TokenizerInfo:
    if name == "llama3":
        return TokenizerInfo.from_tiktoken(assets.llama3_tiktoken_encoding())
    if name == "mistral":
        return TokenizerInfo.from_sentencepiece(assets.mistral_sentencepiece_path("v1"))
    raise ValueError(f"unknown fuzzing tokenizer {name!r}")


@dataclasses.dataclass
class Environment:
    """What workers share: tokenizers by name, their token classes and EOS rows."""

    tokenizers: dict[str, TokenizerInfo]
    classes: dict[str, TokenClasses]
    eos_rows: dict[str, np.ndarray]

    @classmethod
    def load(cls, names: Iterable[str] = ("llama3", "mistral")) -> Environment:
        tokenizers = {name: load_tokenizer(name) for name in names}
        return cls(tokenizers,
                   {n: TokenClasses(_tokenizer_class_words(i), []) for n, i in tokenizers.items()},
                   {n: eos_only_row(i, i.bitmask_width) for n, i in tokenizers.items()})


class Violation(Exception):
    """A broken invariant of the checked walk."""


class _Budget(Exception):
    """A check failed on a matcher that a budget or the memory limit put in its error state."""


# Matcher errors of a work budget or of memory (the worker's RLIMIT_AS): one side of a
# comparison may run out where the other did not (lexer DFA states built by the first call are
# free for the next, a fork copies retained Earley sets), so a check that fails with such an
# error on either side ends the walk ("matcher_error") instead of reporting a violation. Any
# other matcher error keeps the check strict.
_RESOURCE_ERRORS = ("budget", "bad_alloc")


def _resource_error(*matchers: Matcher) -> bool:
    return any(m.error is not None and any(s in m.error for s in _RESOURCE_ERRORS)
               for m in matchers)


class _DocumentedDeadEnd(Exception):
    """A dead end of the kind the README's Limits document (see `follow_restriction_dead_end`)."""


def _violation(message: str, *matchers: Matcher) -> Exception:
    return _Budget(message) if _resource_error(*matchers) else Violation(message)


# ------------------------------------------------------------------------------ one case


def _is_clean_misuse(error: BaseException) -> bool:
    if isinstance(error, JaxguideError):
        return True
    return type(error) in (TypeError, ValueError) and not any(
        m in str(error) for m in _PYBIND_MESSAGES)


def _ids(words: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little"))


def _bad_bitmask(rng: random.Random, good: np.ndarray) -> tuple[np.ndarray, int]:
    rows, width = good.shape
    roll = rng.randrange(8)
    if roll == 0:
        return np.zeros((rows, width), np.int32), 0
    if roll == 1:
        return np.zeros((rows, max(1, width - 1)), np.uint32), 0
    if roll == 2:
        array = np.zeros((rows, width), np.uint32)
        array.flags.writeable = False
        return array, 0
    if roll == 3:
        return np.zeros((rows + 1, width * 2), np.uint32)[:, ::2], 0
    if roll == 4:
        return np.zeros((width,), np.uint32), 0
    if roll == 5:
        return np.zeros((0, width), np.uint32), 0
    return good, rng.choice((-1, rows, 2**31, 2**63, -2**63, 2**64))


class _Walk:
    """One checked walk (see the module docstring)."""

    def __init__(self, compiled: CompiledGrammar, env: Environment, tokenizer: str,
                 rng: random.Random, batch: Callable[[], BatchMatcher],
                 grammar: Grammar | None = None):
        self.compiled, self.rng, self.batch, self.grammar = compiled, rng, batch, grammar
        self.info = compiled.tokenizer_info
        self.classes, self.eos = env.classes[tokenizer], env.eos_rows[tokenizer]
        self.matcher = Matcher(compiled)
        self.bitmask = allocate_token_bitmask(2, self.info.logits_width)
        self.masks: list[np.ndarray] = []  # masks[d]: the mask after d accepted steps
        self.tokens: list[int] = []
        self.steps = 0

    def fill(self, matcher: Matcher) -> np.ndarray:
        matcher.fill_next_token_bitmask(self.bitmask, 0)
        return self.bitmask[0].copy()

    def expect_mask(self, matcher: Matcher, row: np.ndarray, what: str) -> None:
        if not np.array_equal(self.fill(matcher), row):
            raise _violation(f"{what}: mask differs after {self.text()!r}", self.matcher,
                             matcher)

    def text(self) -> bytes:
        return self.info.decode_bytes(self.tokens)

    def run(self, steps: int) -> dict[str, Any]:
        try:
            return self._run(steps)
        except _Budget:
            return {"end": "matcher_error"}
        except _DocumentedDeadEnd:
            return {"end": "documented_dead_end"}

    def _run(self, steps: int) -> dict[str, Any]:
        deadline = time.perf_counter() + WALK_SECONDS
        for _ in range(steps):
            if time.perf_counter() > deadline:
                return {"end": "walk_seconds"}
            row = self.fill(self.matcher)
            if self.matcher.error is not None:
                return {"end": "matcher_error"}
            self.check_row(row)
            self.masks.append(row)
            self.steps += 1
            if not self.act(row):
                return {"end": "eos"}
        return {"end": "steps"}

    def check_row(self, row: np.ndarray) -> None:
        vocab = self.info.vocab_size
        beyond = _ids(row)
        if len(beyond) and beyond[-1] >= vocab:
            raise Violation(f"mask allows id {int(beyond[-1])} >= vocab size {vocab}")
        eos = bool((row & self.eos).any())
        if eos != self.matcher.is_accepting():
            raise _violation(f"EOS in mask {eos} but is_accepting() {not eos} after "
                             f"{self.text()!r}", self.matcher)
        if not eos and not (row & ~self.eos).any():
            if self.follow_restriction_dead_end():
                raise _DocumentedDeadEnd
            raise Violation(f"dead end after {self.text()!r}")

    def follow_restriction_dead_end(self) -> bool:
        """Whether this dead end is the README's documented limitation: a real terminal's
        follow restriction (a trailing negative lookahead) excludes every byte that could come
        next. Exactly then the same tokens through the grammar without the follow restrictions
        of its non-ignored terminals (a larger language) reach a state with a way on."""
        if self.grammar is None:
            return False
        ir = self.grammar.ir
        ignored = set(ir.ignore)
        if not any(t.forbidden_next for i, t in enumerate(ir.terminals) if i not in ignored):
            return False
        terminals = tuple(t if i in ignored else dataclasses.replace(t, forbidden_next="")
                          for i, t in enumerate(ir.terminals))
        relaxed = Matcher(compile_grammar(Grammar(dataclasses.replace(ir, terminals=terminals)),
                                          self.info))
        if relaxed.accept_tokens(self.tokens) != len(self.tokens):
            return False
        return bool(self.fill(relaxed).any()) and relaxed.error is None

    def act(self, row: np.ndarray) -> bool:
        """One random action from the mask `row`; False when the walk took EOS."""
        roll = self.rng.random()
        if roll < 0.08 and len(self.masks) > 1:
            self.rollback_check()
            return True
        if roll < 0.16:
            self.fork_check(row)
        elif roll < 0.22:
            self.batch_check(row)
        elif roll < 0.28:
            self.fast_forward_check(row)
        elif roll < 0.38:
            self.misuse(row)
        elif roll < 0.45:
            self.refused_check(row)
        token = self.pick(row)
        if token is None or ((row & self.eos).any() and self.rng.random() < 0.12):
            eos = int(_ids(row & self.eos)[0])
            if not self.matcher.accept_token(eos) or not self.matcher.is_terminated():
                raise _violation(f"EOS {eos} allowed but not accepted after {self.text()!r}",
                                 self.matcher)
            return False
        self.advance(token)
        return True

    def pick(self, row: np.ndarray) -> int | None:
        allowed = row & ~self.eos
        if (allowed & self.classes.words[0]).any() and self.rng.random() < 0.7:
            return _sample_class(allowed, self.classes, _EXPLORE_WEIGHTS, self.rng)
        ids = _ids(allowed)
        return int(self.rng.choice(ids)) if len(ids) else None

    def advance(self, token: int) -> None:
        if not self.matcher.is_token_allowed(token):
            raise _violation(f"token {token} in the mask but not is_token_allowed after "
                             f"{self.text()!r}", self.matcher)
        if not self.matcher.accept_token(token):
            raise _violation(f"token {token} ({self.info.token_bytes(token)!r}) in the mask "
                             f"but refused by accept_token after {self.text()!r}", self.matcher)
        self.tokens.append(token)

    def refused_check(self, row: np.ndarray) -> None:
        token = self.rng.randrange(self.info.vocab_size)
        if row[token >> 5] >> np.uint32(token & 31) & np.uint32(1):
            return
        if self.matcher.is_token_allowed(token) or self.matcher.accept_token(token):
            raise Violation(f"token {token} ({self.info.token_bytes(token)!r}) not in the mask "
                            f"but allowed after {self.text()!r}")

    def rollback_check(self) -> None:
        k = self.rng.randint(1, min(3, len(self.masks) - 1))
        self.matcher.rollback(k)
        del self.masks[-k:]
        del self.tokens[len(self.masks) - 1:]  # masks[-1] is the mask at the new depth
        self.expect_mask(self.matcher, self.masks[-1], f"rollback({k})")
        self.masks.pop()  # the next step records it again

    def fork_check(self, row: np.ndarray) -> None:
        fork = self.matcher.fork()
        self.expect_mask(fork, row, "fork")
        token = self.pick(row)
        if token is not None and fork.accept_token(token):
            self.expect_mask(self.matcher, row, "original after the fork advanced")
            fork.rollback(1)
            self.expect_mask(fork, row, "fork after rollback(1)")
        self.matcher = fork

    def batch_check(self, row: np.ndarray) -> None:
        fork = self.matcher.fork()
        token = self.pick(row)
        if token is not None:
            fork.accept_token(token)
        single = self.fill(fork)
        bitmask = allocate_token_bitmask(2, self.info.logits_width)
        errors = self.batch().fill_next_token_bitmask([self.matcher, fork], bitmask)
        if errors and self.matcher.error is None and fork.error is None:
            raise Violation(f"batch fill errors {errors} without a matcher error")
        if not np.array_equal(bitmask[0], row) or not np.array_equal(bitmask[1], single):
            raise _violation(f"BatchMatcher rows differ from single fills after {self.text()!r}",
                             self.matcher, fork)

    def fast_forward_check(self, row: np.ndarray) -> None:
        forced = self.matcher.compute_ff_bytes()
        if forced:
            if not self.matcher.accept_bytes(forced):
                raise _violation(f"forced bytes {forced!r} refused after {self.text()!r}",
                                 self.matcher)
            self.matcher.rollback(1)
        tokens = self.matcher.compute_ff_tokens(self.tokens[-3:])
        accepted = self.matcher.accept_tokens(tokens)
        self.matcher.rollback(accepted)
        if accepted != len(tokens):
            raise _violation(f"fast-forward tokens {tokens} refused at {accepted} after "
                             f"{self.text()!r}", self.matcher)
        self.expect_mask(self.matcher, row, "after fast-forward and rollback")

    def misuse(self, row: np.ndarray) -> None:
        probe = self.matcher.fork()
        name, call = self.rng.choice(_misuse_calls(self, probe))
        try:
            call()
        except BaseException as e:  # noqa: BLE001 (classified below)
            if isinstance(e, MemoryError) or not _is_clean_misuse(e):
                e.add_note(f"misuse call: {name}")
                raise
            self.expect_mask(probe, row, f"state after the refused misuse call {name}")


_JUNK_IDS = (-1, 2**32, 2**40, -2**63, 10**30, 1.5, "a", None, True, np.int64(3),
             np.uint64(2**63), b"x", [1], float("nan"))


def _misuse_calls(walk: _Walk, m: Matcher) -> list[tuple[str, Callable[[], Any]]]:
    rng, compiled, info = walk.rng, walk.compiled, walk.info
    pick = rng.choice
    return [
        ("accept_token", lambda: m.accept_token(pick(_JUNK_IDS + (info.vocab_size,)))),
        ("accept_tokens", lambda: m.accept_tokens(pick(([-1], [2**40], "ab", None, [1.5],
                                                        iter([10**30]), 5)))),
        ("accept_bytes", lambda: m.accept_bytes(pick(("str", None, 5, b"\xff\xfe", [1, 2],
                                                      bytearray(b"{"), b"\x00" * 10000)))),
        ("is_token_allowed", lambda: m.is_token_allowed(pick(_JUNK_IDS))),
        ("rollback", lambda: m.rollback(pick((-1, 1.5, None, "1", 2**70, -2**70, 2**64)))),
        ("fill_next_token_bitmask", lambda: m.fill_next_token_bitmask(
            *_bad_bitmask(rng, walk.bitmask))),
        ("compute_ff_bytes", lambda: m.compute_ff_bytes(pick((-1, 0, 2**40, 1.5, None,
                                                              10**30)))),
        ("compute_ff_tokens", lambda: m.compute_ff_tokens(
            pick(([-1], [2**40], None, [1.5], "ab", [10**30], [])),
            max_hold_back_tokens=pick((-1, 0, 10**6, 4, None)),
            max_bytes=pick((-5, 0, 10**30, 256, 1.5)))),
        ("shortest_lexeme_completion", lambda: m.shortest_lexeme_completion(
            pick((-1, 0, 2**40, None, 1.5, 10**30)))),
        ("validate_tokens", lambda: m.validate_tokens(pick(([-1, 5], [2**40], None, [1.5])))),
        ("fill_draft_bitmasks", lambda: m.fill_draft_bitmasks(
            *_bad_bitmask(rng, allocate_token_bitmask(3, info.logits_width))[:1],
            pick(([1, 2], [-1], [2**40], None, [1.5])), pick((0, -1, 5, 2**63)))),
        ("Matcher", lambda: Matcher(pick((compiled, None, "x", compiled.native)),
                                    mask_step_budget=pick((None, 0, -1, 10**30, 1.5, 1)),
                                    required_prefix=pick((b"", "str", b"\xff", None, b"{",
                                                          b"\x00" * 300)))),
        ("BatchMatcher.fill", lambda: walk.batch().fill_next_token_bitmask(
            pick(([m, m], [m, None], [m], [], [m, "x"])), _bad_bitmask(rng, walk.bitmask)[0],
            pick((None, [0, 0], [-1, 0], [0, 2**40], [1.5, 0], "ab")))),
        ("BatchMatcher.accept_tokens", lambda: walk.batch().accept_tokens(
            pick(([m], [m, m], [None])), pick(([-1], [2**40], [1, 2], [[1]], [1.5], None)))),
        ("BatchMatcher.rollback", lambda: walk.batch().rollback(
            pick(([m], [m, m], [None])), pick((-1, [1, 2], 10**30, [-1], 1.5, None)))),
        ("allocate_token_bitmask", lambda: allocate_token_bitmask(
            pick((-1, 0, 1.5, None, 2)), pick((0, -1, 1.5, 2**63, None)))),
        ("BatchMatcher()", lambda: BatchMatcher(pick((0, -1, 1.5, "2", 2**40)))),
    ]


def _front_end(case: dict[str, Any]) -> Grammar:
    kind, value = case["kind"], case["input"]
    if kind == "regex":
        return Grammar.from_regex(value)
    if kind == "lark":
        return Grammar.from_lark(value)
    if "nest" in case:
        value = nested_schema(value, case["nest"]["depth"], case["nest"]["key"])
    return Grammar.from_json_schema(value, whitespace=case.get("whitespace", "flexible"),
                                    lenient=case.get("lenient", False))


def _run_requests(text: str, directory: str) -> dict[str, Any]:
    lines = [line for line in text.split("\n") if line.strip()]
    parsed = 0
    for number, line in enumerate(lines, start=1):
        job = parse_request_line(line, number, {"kind": "greedy"})
        if (job.request is None) == (job.error is None):
            raise Violation(f"line {number}: request {job.request!r} with error {job.error!r}")
        parsed += job.request is not None
    path = os.path.join(directory, "requests.jsonl")
    with open(path, "wb") as f:
        f.write(text.encode("utf-8", "surrogatepass"))
    try:
        jobs = read_requests(path, {"kind": "greedy"})
    except JobError:
        jobs = None
    if jobs is not None and len(jobs) != len(lines):
        raise Violation(f"read_requests returned {len(jobs)} requests for {len(lines)} lines")
    if jobs is not None and len({job.id for job in jobs}) != len(jobs):
        raise Violation("read_requests gave two requests the same id")
    return {"parsed": parsed, "lines": len(lines)}


@dataclasses.dataclass
class Worker:
    """A worker's state: the environment, a lazily made BatchMatcher and a scratch folder."""

    env: Environment
    directory: str = dataclasses.field(default_factory=tempfile.mkdtemp)
    _batch: BatchMatcher | None = None

    def batch(self) -> BatchMatcher:
        if self._batch is None:
            self._batch = BatchMatcher(num_threads=1)
        return self._batch


def _error(outcome: str, stage: str, error: BaseException) -> dict[str, Any]:
    frames = traceback.extract_tb(error.__traceback__)[-4:]
    notes = getattr(error, "__notes__", [])
    return {"outcome": outcome, "stage": stage, "error_type": type(error).__name__,
            "message": " ".join([str(error)[:500], *notes]),
            "where": [f"{os.path.basename(f.filename)}:{f.lineno} {f.name}" for f in frames]}


def _self_test(what: str) -> dict[str, Any]:
    """Kind "selftest": misbehaves on purpose, so tests can see the harness classify it."""
    if what == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif what == "hang":
        time.sleep(3600)
    elif what == "memory":
        return {"size": len(bytearray(2 * MEMORY_BYTES))}
    elif what == "unclean":
        raise KeyError(what)
    return {"outcome": "walked"}


def run_case(case: dict[str, Any], worker: Worker) -> dict[str, Any]:
    """One case in this process: its outcome dict (see the module docstring)."""
    stage = "front_end"
    try:
        if case["kind"] == "selftest":
            return _self_test(case["input"])
        if case["kind"] == "request":
            stage = "request_reader"
            return {"outcome": "walked", **_run_requests(case["input"], worker.directory)}
        grammar = _front_end(case)
        stage = "compile"
        compiled = compile_grammar(grammar, worker.env.tokenizers[case["tokenizer"]])
        stage = "walk"
        rng = random.Random(case["walk_seed"])
        walk = _Walk(compiled, worker.env, case["tokenizer"], rng, worker.batch, grammar)
        return {"outcome": "walked", "compiled": True,
                **walk.run(rng.randint(4, 40)), "steps": walk.steps}
    except Violation as e:
        return {"outcome": "invariant", "stage": stage, "error_type": "Violation",
                "message": str(e)[:1000], "compiled": stage == "walk"}
    except MemoryError as e:
        return _error("memory", stage, e)
    except JaxguideError as e:
        if stage in ("front_end", "compile"):
            return {"outcome": "clean_error", "stage": stage, "error_type": type(e).__name__}
        return _error("unclean", stage, e)
    except Exception as e:  # noqa: BLE001 (any other exception is a finding)
        return _error("unclean", stage, e)


# ------------------------------------------------------------------------------ workers


def _address_space() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _die_with_parent() -> None:
    try:  # Linux: PR_SET_PDEATHSIG, so a killed fuzzer leaves no worker running
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def _worker_main(conn: multiprocessing.connection.Connection, env: Environment,
                 memory_bytes: int) -> None:
    _die_with_parent()
    faulthandler.disable()  # a crash is reported by the parent, not dumped by each worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    warnings.simplefilter("ignore")
    base = _address_space()
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = base + memory_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard < 0 else min(limit, hard), hard))
    worker = Worker(env)
    for done in range(1, RECYCLE_CASES + 1):
        try:
            case = conn.recv()
        except EOFError:
            break
        started = time.perf_counter()
        result = run_case(case, worker)
        result["seconds"] = time.perf_counter() - started
        result["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        result["recycle"] = done == RECYCLE_CASES or _address_space() > base + memory_bytes // 2
        conn.send(result)
        if result["recycle"]:
            break
    os._exit(0)


@dataclasses.dataclass
class _Slot:
    process: Any
    conn: multiprocessing.connection.Connection
    case: dict[str, Any] | None = None
    deadline: float = 0.0


class WorkerPool:
    """`jobs` persistent workers forked from this (warm) process; see the module docstring."""

    def __init__(self, env: Environment, jobs: int = 1, case_seconds: float = CASE_SECONDS,
                 memory_bytes: int = MEMORY_BYTES):
        self.env, self.case_seconds, self.memory_bytes = env, case_seconds, memory_bytes
        self.context = multiprocessing.get_context("fork")
        self.slots = [self._start() for _ in range(jobs)]
        self.restarts = 0

    def _start(self) -> _Slot:
        parent, child = self.context.Pipe()
        process = self.context.Process(target=_worker_main,
                                       args=(child, self.env, self.memory_bytes), daemon=True)
        process.start()
        child.close()
        return _Slot(process, parent)

    def _replace(self, slot: _Slot, kill: bool) -> _Slot:
        if kill and slot.process.is_alive():
            slot.process.kill()
        slot.process.join(30)
        slot.conn.close()
        self.restarts += 1
        return self._start()

    def run(self, cases: Iterable[dict[str, Any]]) -> Iterator[tuple[dict, dict]]:
        """Yields (case, result) for every case, in completion order."""
        pending = iter(cases)
        idle, busy = list(range(len(self.slots))), {}
        while True:
            while idle:
                case = next(pending, None)
                if case is None:
                    break
                index = idle.pop()
                slot = self.slots[index]
                slot.case, slot.deadline = case, time.monotonic() + self.case_seconds
                slot.conn.send(case)
                busy[slot.conn] = index
            if not busy:
                return
            timeout = max(0.0, min(self.slots[i].deadline for i in busy.values())
                          - time.monotonic())
            ready = multiprocessing.connection.wait(list(busy), timeout)
            for conn in ready:
                index = busy.pop(conn)
                yield self.slots[index].case, self._receive(index)
                idle.append(index)
            now = time.monotonic()
            for conn, index in list(busy.items()):
                if self.slots[index].deadline <= now:
                    del busy[conn]
                    case = self.slots[index].case
                    self.slots[index] = self._replace(self.slots[index], kill=True)
                    yield case, {"outcome": "hang", "seconds": self.case_seconds}
                    idle.append(index)

    def _receive(self, index: int) -> dict[str, Any]:
        slot = self.slots[index]
        try:
            result = slot.conn.recv()
        except (EOFError, OSError):
            slot.process.join(30)
            code = slot.process.exitcode
            self.slots[index] = self._replace(slot, kill=True)
            name = signal.Signals(-code).name if code is not None and code < 0 else None
            return {"outcome": "crash", "exitcode": code, "signal": name,
                    "error_type": name or f"exit {code}"}
        if result.pop("recycle", False):
            self.slots[index] = self._replace(slot, kill=False)
        return result

    def close(self) -> None:
        for slot in self.slots:
            slot.conn.close()
        for slot in self.slots:
            slot.process.join(5)
            if slot.process.is_alive():
                slot.process.kill()


# ------------------------------------------------------------------------------ summary


def _signature(case: dict[str, Any], result: dict[str, Any]) -> str:
    message = re.sub(r"\d+", "N", result.get("message", ""))[:70]
    return "|".join((case["kind"], result["outcome"], result.get("stage", ""),
                     result.get("error_type", ""), message))


@dataclasses.dataclass
class Summary:
    """Counts per front end and the findings (grouped by signature, a few cases each)."""

    counts: dict[str, Counter] = dataclasses.field(
        default_factory=lambda: {kind: Counter() for kind in FRONT_ENDS})
    clean_errors: dict[str, Counter] = dataclasses.field(
        default_factory=lambda: {kind: Counter() for kind in FRONT_ENDS})
    findings: dict[str, dict] = dataclasses.field(default_factory=dict)
    peak_rss_mb: float = 0.0
    seconds: list[float] = dataclasses.field(default_factory=list)
    slowest: list[tuple[float, int, str]] = dataclasses.field(default_factory=list)

    def add(self, case: dict[str, Any], result: dict[str, Any]) -> None:
        kind, outcome = case["kind"], result["outcome"]
        counts = self.counts.setdefault(kind, Counter())
        self.clean_errors.setdefault(kind, Counter())
        counts["inputs"] += 1
        counts[outcome] += 1
        counts["compiled"] += bool(result.get("compiled"))
        counts["steps"] += result.get("steps", 0)
        counts["request_lines"] += result.get("lines", 0)
        counts["requests_parsed"] += result.get("parsed", 0)
        if outcome == "clean_error":
            self.clean_errors[kind][result["error_type"]] += 1
        self.peak_rss_mb = max(self.peak_rss_mb, result.get("rss_mb", 0.0))
        self.seconds.append(result.get("seconds", 0.0))
        self.slowest = sorted([*self.slowest, (result.get("seconds", 0.0), case["id"], kind)],
                              reverse=True)[:10]
        if outcome in FINDINGS:
            entry = self.findings.setdefault(_signature(case, result),
                                             {"count": 0, "examples": []})
            entry["count"] += 1
            if len(entry["examples"]) < _EXAMPLES_PER_SIGNATURE:
                entry["examples"].append({"case": case, "result": result})

    def totals(self) -> Counter:
        total: Counter = Counter()
        for counts in self.counts.values():
            total.update(counts)
        return total

    def to_json(self, wall_seconds: float, jobs: int) -> dict[str, Any]:
        front_ends = {}
        for kind, counts in self.counts.items():
            inputs = counts["inputs"]
            share = (counts["requests_parsed"] / max(1, counts["request_lines"])
                     if kind == "request" else counts["compiled"] / max(1, inputs))
            front_ends[kind] = {**{k: counts[k] for k in ("inputs", "compiled", *OUTCOMES,
                                                          "steps")},
                                "compiled_share": round(share, 4),
                                "clean_errors": dict(self.clean_errors[kind].most_common())}
        total = self.totals()
        seconds = np.asarray(self.seconds or [0.0])
        return {
            "cases": total["inputs"], "wall_seconds": round(wall_seconds, 2), "jobs": jobs,
            "cases_per_second": round(total["inputs"] / max(wall_seconds, 1e-9), 2),
            "cases_per_second_per_worker": round(total["inputs"] / max(wall_seconds, 1e-9)
                                                 / jobs, 2),
            "case_seconds": {"p50": float(np.percentile(seconds, 50)),
                             "p99": float(np.percentile(seconds, 99)),
                             "max": float(seconds.max())},
            "totals": {k: total[k] for k in ("inputs", "compiled", *OUTCOMES)},
            "crashes": total["crash"], "hangs": total["hang"], "memory": total["memory"],
            "unclean_errors": total["unclean"], "invariant_violations": total["invariant"],
            "peak_rss_mb": round(self.peak_rss_mb, 1),
            "front_ends": front_ends,
            "slowest_cases": [{"seconds": round(s, 3), "id": i, "kind": k}
                              for s, i, k in self.slowest],
            "findings": [{"signature": sig, **entry} for sig, entry in
                         sorted(self.findings.items(), key=lambda kv: -kv[1]["count"])],
        }


def run_fuzz(cases: Iterable[dict[str, Any]], *, jobs: int = 1, env: Environment | None = None,
             case_seconds: float = CASE_SECONDS, memory_bytes: int = MEMORY_BYTES,
             progress: Callable[[int, Summary], None] | None = None) -> dict[str, Any]:
    """Runs the cases on `jobs` forked workers; returns `Summary.to_json` plus "restarts"."""
    env = env if env is not None else Environment.load()
    pool = WorkerPool(env, jobs, case_seconds, memory_bytes)
    summary = Summary()
    started = time.perf_counter()
    try:
        for done, (case, result) in enumerate(pool.run(cases), start=1):
            summary.add(case, result)
            if progress is not None:
                progress(done, summary)
    finally:
        pool.close()
    out = summary.to_json(time.perf_counter() - started, jobs)
    out["worker_restarts"] = pool.restarts
    return out


def compiled_shares(result: dict[str, Any]) -> dict[str, float]:
    return {kind: stats["compiled_share"] for kind, stats in result["front_ends"].items()}
