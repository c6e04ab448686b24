"""The soundness checker: every text a mask walk can finish is valid; valid texts are never blocked.

Design note. `check_soundness` runs seeded random walks (`walks.random_walk`) through the masks
of a compiled grammar and validates every walk that ended at EOS with an independent oracle
(`oracles`). Walks come in two kinds, alternating: short ones (`p_eos` 0.3, a short target
length) and long ones (`p_eos` 0.02, a long target), both biased toward unusual tokens. A walk
that ends in invalid text is reported with everything needed to reproduce it (grammar, text,
token ids, seed) and the step where the mask first let a bad token through: the latest prefix
of the walk from which a sampled completion still validates (a token after it, or EOS, was
the bad one). `check_instances` is the reverse direction: every token of a valid text's
canonical tokenization is allowed, and EOS after it.

Reproducibility: walk i of a check uses `random.Random(f"{seed}:{i}")`, so a failure names the
one seed that replays it.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Protocol

from jaxguide.engine import CompiledGrammar, Matcher
from jaxguide.testing.oracles import OracleUndecided
from jaxguide.testing.walks import Walk, WalkConfig, random_walk

SHORT_WALK = WalkConfig(p_eos=0.3, target_tokens=12, max_tokens=600)
LONG_WALK = WalkConfig(p_eos=0.02, target_tokens=64, max_tokens=1200)
_LOCATE_TRIES = 6


class Oracle(Protocol):
    kind: str
    source: str
    note: str | None

    def check(self, text: str) -> str | None: ...


@dataclasses.dataclass
class InvalidWalk:
    """A walk whose finished text the oracle rejects (a soundness bug).

    Attributes:
      seed: replays the walk (`random.Random(seed)` with `config`).
      config: the walk's sampling config.
      tokens: the token ids taken.
      text: the text (str, or the raw bytes when they are not UTF-8).
      reason: the oracle's verdict.
      bad_step: the first step whose mask allowed a token (or EOS, when == len(tokens)) from
        which no sampled completion validated; None if not located.
      source: the grammar's source (schema JSON, pattern, Lark text), from the oracle.
    """

    seed: str
    config: WalkConfig
    tokens: list[int]
    text: str | bytes
    reason: str
    bad_step: int | None
    source: str = ""

    def describe(self, compiled: CompiledGrammar) -> str:
        info = compiled.tokenizer_info
        where = "not located"
        if self.bad_step is not None:
            before = info.decode_bytes(self.tokens[:self.bad_step])
            if self.bad_step == len(self.tokens):
                where = f"EOS allowed after {before!r}"
            else:
                where = (f"token {self.tokens[self.bad_step]} "
                         f"({info.token_bytes(self.tokens[self.bad_step])!r}) allowed after "
                         f"{before!r}")
        return (f"invalid text {self.text!r}\n  oracle: {self.reason}\n  first bad step: "
                f"{self.bad_step} ({where})\n  tokens: {self.tokens}\n  seed: {self.seed!r} "
                f"{self.config}\n  grammar: {_short(self.source or str(compiled.grammar))}")


@dataclasses.dataclass
class SoundnessReport:
    """What `check_soundness` found.

    Attributes:
      walks: walks run.
      ends: count per end ("eos", "max_tokens", "dead_end", "error").
      invalid: the EOS-ended walks whose text the oracle rejects.
      dead_ends: walks that met a mask with no token and no EOS outside the error state.
      blocked: (bytes so far, token id) where a walk found a token spelling a viable
        continuation missing from the mask (a mask narrower than the language: completeness).
      errors: matcher error messages (exhausted work budgets).
      notes: the oracles' remarks on valid texts (a format jaxguide reads as an annotation,
        repeated keys): not soundness bugs, counted to see them.
      undecided: (text, why) of EOS-ended walks the oracle could not judge (its own failure).
      lengths: token count of each EOS-ended walk.
      long_lengths: token count of each EOS-ended walk of the long kind (p_eos <= 0.02).
      long_eos: EOS-ended walks of the long kind.
    """

    walks: int = 0
    ends: Counter = dataclasses.field(default_factory=Counter)
    invalid: list[InvalidWalk] = dataclasses.field(default_factory=list)
    dead_ends: list[Walk] = dataclasses.field(default_factory=list)
    blocked: list[tuple[bytes, int]] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    undecided: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    lengths: list[int] = dataclasses.field(default_factory=list)
    long_lengths: list[int] = dataclasses.field(default_factory=list)

    @property
    def long_eos(self) -> int:
        return len(self.long_lengths)

    @property
    def eos_walks(self) -> int:
        return self.ends["eos"]

    @property
    def sound(self) -> bool:
        """No invalid text, no dead end, no blocked continuation."""
        return not self.invalid and not self.dead_ends and not self.blocked


def _short(text: str, limit: int = 600) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _decode(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _verdict(oracle: Oracle, data: bytes) -> str | None:
    text = _decode(data)
    if text is None:
        return "not UTF-8"
    return oracle.check(text)


def locate_bad_step(compiled: CompiledGrammar, oracle: Oracle, tokens: Sequence[int],
                    seed: str) -> int | None:
    """The largest k such that a sampled completion of tokens[:k] validates: the mask at step
    k let a bad token through (tokens[k], or EOS when k == len(tokens)). A binary search (a
    prefix of a viable prefix is viable), `_LOCATE_TRIES` completions per probe; None if not
    even the empty prefix completes validly (a heuristic: completions are sampled)."""
    rng = random.Random(f"{seed}:locate")
    finish = dataclasses.replace(SHORT_WALK, target_tokens=0, max_tokens=200)

    def viable(k: int) -> bool:
        for _ in range(_LOCATE_TRIES):
            walk = random_walk(compiled, rng, finish, prefix=tokens[:k])
            if walk is None or walk.end != "eos":
                continue
            try:
                if _verdict(oracle, walk.text) is None:
                    return True
            except OracleUndecided:
                continue
        return False

    if not viable(0):
        return None
    lo, hi = 0, len(tokens) + 1  # viable(lo); hi: not known viable
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if viable(mid):
            lo = mid
        else:
            hi = mid
    return lo


def check_soundness(compiled: CompiledGrammar, oracle: Oracle, *, walks: int, seed: str | int,
                    configs: Sequence[WalkConfig] = (SHORT_WALK, LONG_WALK),
                    report: SoundnessReport | None = None,
                    locate: bool = True) -> SoundnessReport:
    """Runs `walks` seeded walks (cycling through `configs`) and validates each finished text.

    Args:
      compiled: the grammar under test, compiled against a real tokenizer.
      oracle: an independent validator of the grammar's *source* (see `oracles`).
      walks: how many walks.
      seed: walk i uses `random.Random(f"{seed}:{i}")`.
      configs: the walk kinds, used in turn.
      report: a report to add to (several grammars into one), else a new one.
      locate: find the first bad step of invalid walks (costs extra walks per failure).

    Returns:
      The report; `report.sound` is False if any walk ended in invalid text or a dead end.
    """
    report = report if report is not None else SoundnessReport()
    for i in range(walks):
        config = configs[i % len(configs)]
        walk_seed = f"{seed}:{i}"
        walk = random_walk(compiled, random.Random(walk_seed), config)
        report.walks += 1
        report.ends[walk.end] += 1
        if walk.blocked is not None:
            report.blocked.append(walk.blocked)
        if walk.end == "dead_end":
            report.dead_ends.append(walk)
        elif walk.end == "error":
            report.errors.append(walk.error or "")
        if walk.end != "eos":
            continue
        report.lengths.append(len(walk.tokens))
        if config.p_eos <= 0.02:
            report.long_lengths.append(len(walk.tokens))
        try:
            reason = _verdict(oracle, walk.text)
        except OracleUndecided as e:
            report.undecided.append((walk.text.decode("utf-8", "replace"), str(e)))
            continue
        if reason is None:
            if oracle.note:
                report.notes.append(oracle.note)
            continue
        text = _decode(walk.text)
        report.invalid.append(InvalidWalk(
            seed=walk_seed, config=config, tokens=walk.tokens,
            text=text if text is not None else walk.text, reason=reason,
            source=oracle.source,
            bad_step=locate_bad_step(compiled, oracle, walk.tokens, walk_seed)
            if locate else None))
    return report


def check_instances(compiled: CompiledGrammar, texts: Iterable[str]) -> list[str]:
    """The reverse direction: each text (valid in the grammar's language) tokenized as the
    tokenizer would must be accepted token by token, with EOS allowed at its end. Returns one
    message per text that is blocked (empty: none)."""
    info = compiled.tokenizer_info
    problems = []
    for text in texts:
        matcher = Matcher(compiled)
        tokens = info.encode(text)
        accepted = matcher.accept_tokens(tokens)
        if accepted != len(tokens):
            problems.append(f"{text!r}: token {accepted} ({info.token_bytes(tokens[accepted])!r})"
                            f" refused after {info.decode_bytes(tokens[:accepted])!r}")
        elif not matcher.is_accepting():
            problems.append(f"{text!r}: EOS not allowed at the end")
    return problems
