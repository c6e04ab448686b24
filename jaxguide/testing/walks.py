"""Random walks through a matcher's masks: the generative half of the soundness checker.

Design note. A mask is only proven by what it lets through, so a walk takes a token from the
mask at every step, accepts it, and goes on until it takes EOS (then its text must be valid),
hits its token budget, meets a dead end (no token and no EOS allowed: always a bug) or the
matcher's error state. Every token a walk takes is checked to be in the mask of its step.

Exploring. Uniform sampling over a 128k vocabulary almost never picks the tokens where bugs
hide, so each step draws a *token class* by weight, then a token uniformly within the class
among the allowed ones:

  any          every allowed token (the plain uniform walk);
  non_ascii    tokens with a byte >= 0x80 (UTF-8 pieces: dialect bugs such as `\\d` read as any
               Unicode digit, truncated sequences);
  whitespace   tokens made only of whitespace (runs of it, `%ignore`d terminals);
  long         tokens of 8 bytes or more (they cross lexeme boundaries);
  bridge       tokens mixing punctuation with letters/digits (`",`, `":"`, `0.`: tokens that
               span terminals);
  short        tokens of one byte;
  closer       tokens made only of closing punctuation (`"`, `}`, `]`, `)`, `,`, `;`, ...);
  literal      tokens inside a literal run of the grammar's terminals (keywords, property
               names, enum values, punctuation; per grammar).

Finishing. Past its target length a walk steers toward the end: each step it tries, one step
ahead, a few candidate tokens (drawn with finishing weights), every literal run of the grammar
(a property name, a closing bracket, `true`), and the rest of each run the text already began
(after a `"` token, the rest of a key), each also with the shortest bytes that finish the
lexeme it leaves open (a key's `:`), and takes the candidate after which the fewest grammar
terminals are still needed (`Matcher.min_terminals_to_accept`: an optional key leaves it as it
was, a required one lowers it); among ties, runs used less, then the fewest tokens allowed
(closing a string shrinks the mask). A chosen run becomes a plan: the longest token that
prefixes its remaining bytes, step after step, each still taken from the mask (every such token
spells a viable continuation, so one missing from the mask is a blocked text, reported by
`Walk.blocked`). EOS, when allowed, is taken with probability `p_eos` (always once past three
quarters of the token budget). The token budget grows with the grammar's shortest completion
(`_TOKENS_PER_TERMINAL` tokens per terminal still needed at the start, and again where the
walk starts finishing), so a schema whose smallest instance is longer than `max_tokens` (a
hundred required nested objects) still ends. A finishing step where no candidate brings the
end nearer (inside a string whose pattern needs some text before the closing quote) also tries
the shortest bytes that finish the lexeme (`Matcher.shortest_lexeme_completion`) and each
run after a space (an identifier that every keyword only lengthens); after
`_STALL_STEPS` such steps in a row, steps are random among the candidates that cost at most
one more terminal, until one gets nearer (a plateau: in a comment that swallows the rest of
the line, the way out first adds a newline, and a terminal).

Cost: per exploring step one mask fill plus O(W) word operations per class (W = ceil(V/32));
a finishing step adds an accept / distance / rollback probe per candidate (~4 us each, up to
`_MAX_RUN_CANDIDATES` runs) and up to `_MASKED_TIES` mask fills.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import re
import weakref
from collections.abc import Sequence
from re import _constants as sre_constants
from re import _parser as sre_parse

import numpy as np

from jaxguide.engine import (
    CompiledGrammar,
    Matcher,
    TokenizerInfo,
    allocate_token_bitmask,
    eos_only_row,
)

TOKEN_CLASSES = ("any", "non_ascii", "whitespace", "long", "bridge", "short", "closer",
                 "literal")

# Class weights while exploring and while finishing (past the walk's target length).
_EXPLORE_WEIGHTS = {"any": 4.0, "non_ascii": 1.0, "whitespace": 1.0, "long": 1.0,
                    "bridge": 1.0, "short": 1.0, "closer": 0.5, "literal": 2.0}
_FINISH_WEIGHTS = {"any": 0.5, "non_ascii": 0.1, "whitespace": 0.0, "long": 0.1,
                   "bridge": 0.5, "short": 1.0, "closer": 4.0, "literal": 4.0}
_UNIFORM_WEIGHTS = {name: float(name == "any") for name in TOKEN_CLASSES}
_CLOSERS = frozenset(b'"\'}])>;,')
_LOOKAHEAD_TOKENS = 3
_MAX_RUN_CANDIDATES = 2000  # literal runs tried per finishing step (~4 us each)
_MASKED_TIES = 4  # candidates at the best distance whose masks break the tie
_MAX_LITERAL_SUBSTRING = 16
_TOKENS_PER_TERMINAL = 10  # budget per terminal of the shortest completion (see the note)
_NO_COMPLETION = 2 ** 30 - 1  # min_terminals_to_accept in the error state
_STALL_STEPS = 8  # stalled finishing steps before random steps (see the note)


@dataclasses.dataclass(frozen=True)
class WalkConfig:
    """How one walk samples.

    Attributes:
      p_eos: probability of taking EOS at a step where it is allowed.
      target_tokens: soft length; past it the walk steers toward the end.
      max_tokens: hard budget; a walk that reaches it ends as "max_tokens" (not checked). It
        grows to `target_tokens + 10 * (terminals of the shortest completion)` when that is
        more, counted at the start and again when the walk starts finishing (grammars whose
        shortest sentence is long).
      uniform: sample uniformly among all allowed tokens (no classes, no steering).
    """

    p_eos: float = 0.3
    target_tokens: int = 24
    max_tokens: int = 400
    uniform: bool = False


@dataclasses.dataclass
class Walk:
    """One walk's outcome.

    Attributes:
      tokens: the token ids taken ([n]; EOS not included).
      text: their bytes.
      end: "eos" | "max_tokens" | "dead_end" (a mask with no token and no EOS outside the error
        state: a bug) | "error" (the matcher's error state, e.g. an exhausted work budget).
      error: the matcher's error message for end == "error".
      blocked: (bytes so far, token id) where a token the matcher had accepted as a viable
        continuation (a literal run's bytes) was missing from the mask; None if never.
    """

    tokens: list[int]
    text: bytes
    end: str
    error: str | None = None
    blocked: tuple[bytes, int] | None = None


class TokenClasses:
    """The token classes of one grammar and tokenizer.

    Attributes:
      words: packed uint32 [len(TOKEN_CLASSES), W] masks, one row per class.
      runs: the grammar's literal runs (UTF-8), in the order of the terminals they come from
        (for a JSON Schema: the schema's order, so the keys of an object are neighbours).
    """

    def __init__(self, words: np.ndarray, runs: Sequence[bytes]):
        self.words = words
        self.runs = list(runs)


@functools.lru_cache(maxsize=8)
def _tokenizer_class_words(info: TokenizerInfo) -> np.ndarray:
    """Packed rows of the classes that depend on the vocabulary alone (`literal` empty)."""
    bits = np.zeros((len(TOKEN_CLASSES), info.bitmask_width * 32), dtype=bool)
    specials = info.special_token_ids
    for token_id, data in enumerate(info.all_token_bytes()):
        if not data or token_id in specials:
            continue
        row = bits[:, token_id]
        ascii_bytes = [chr(b) for b in data if b < 0x80]
        row[0] = True
        row[1] = max(data) >= 0x80
        row[2] = not data.strip(b" \t\n\r\f\v")
        row[3] = len(data) >= 8
        row[4] = (any(not c.isalnum() and not c.isspace() for c in ascii_bytes)
                  and any(c.isalnum() for c in ascii_bytes))
        row[5] = len(data) == 1
        row[6] = all(b in _CLOSERS for b in data)
    words = np.packbits(bits, axis=1, bitorder="little").view(np.uint32)
    words.flags.writeable = False
    return words


def literal_runs(regex: str) -> list[str]:
    """Maximal runs of literal characters in a Python-syntax regex (`"name"`, `true`, `{`)."""
    runs: list[str] = []

    def walk(items) -> None:
        run: list[str] = []
        for op, arg in items:
            if op is sre_constants.LITERAL:
                run.append(chr(arg))
                continue
            if run:
                runs.append("".join(run))
                run = []
            for value in (arg if isinstance(arg, (tuple, list)) else (arg,)):
                if isinstance(value, sre_parse.SubPattern):
                    walk(value)
                elif isinstance(value, (tuple, list)):
                    for inner in value:
                        if isinstance(inner, sre_parse.SubPattern):
                            walk(inner)
        if run:
            runs.append("".join(run))

    try:
        walk(sre_parse.parse(regex))
    except (re.error, RecursionError, OverflowError):
        pass
    return runs


_GRAMMAR_CLASSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def grammar_token_classes(compiled: CompiledGrammar) -> TokenClasses:
    """The tokenizer's classes plus `literal`: tokens whose bytes occur inside a literal run of
    one of the grammar's terminals (cached per compiled grammar)."""
    classes = _GRAMMAR_CLASSES.get(compiled)
    if classes is not None:
        return classes
    info = compiled.tokenizer_info
    runs: dict[bytes, None] = {}  # ordered set
    for terminal in compiled.grammar.ir.terminals:
        if not terminal.special:
            runs.update((run.encode("utf-8", "surrogatepass"), None)
                        for run in literal_runs(terminal.regex))
    pieces = {run[a:b] for run in runs for a in range(len(run))
              for b in range(a + 1, min(len(run), a + _MAX_LITERAL_SUBSTRING) + 1)}
    literal = np.zeros(info.bitmask_width * 32, dtype=bool)
    for piece in pieces:
        ids = info.tokens_with_prefix(piece)
        for token_id in ids[:64]:
            if info.token_bytes(int(token_id)) == piece:
                literal[token_id] = True
                break
    words = _tokenizer_class_words(info).copy()
    words[TOKEN_CLASSES.index("literal")] = np.packbits(literal, bitorder="little").view(
        np.uint32)
    classes = TokenClasses(words, list(runs))
    _GRAMMAR_CLASSES[compiled] = classes
    return classes


def _nth_set_bit(words: np.ndarray, counts: np.ndarray, n: int) -> int:
    """The id of the n-th (0-based) set bit of a packed row, given its per-word popcounts."""
    cumulative = np.cumsum(counts)
    word = int(np.searchsorted(cumulative, n, side="right"))
    before = int(cumulative[word - 1]) if word else 0
    value = int(words[word])
    for _ in range(n - before):
        value &= value - 1  # clear the lowest set bit
    return word * 32 + (value & -value).bit_length() - 1


def _sample_class(allowed: np.ndarray, classes: TokenClasses, weights: dict[str, float],
                  rng: random.Random) -> int:
    """A token drawn by class weight, uniformly within the class among the allowed (which
    must not be empty)."""
    options, option_weights = [], []
    for index, name in enumerate(TOKEN_CLASSES):
        weight = weights[name]
        if weight <= 0:
            continue
        candidates = allowed & classes.words[index]
        counts = np.bitwise_count(candidates)
        total = int(counts.sum())
        if total:
            options.append((candidates, counts, total))
            option_weights.append(weight)
    candidates, counts, total = rng.choices(options, option_weights)[0]
    return _nth_set_bit(candidates, counts, rng.randrange(total))


def _in_mask(row: np.ndarray, token: int) -> bool:
    return bool(row[token // 32] >> np.uint32(token % 32) & np.uint32(1))


class _Walker:
    """The state of one walk (see the module docstring)."""

    def __init__(self, compiled: CompiledGrammar, rng: random.Random, config: WalkConfig):
        self.info = compiled.tokenizer_info
        self.classes = grammar_token_classes(compiled)
        self.rng = rng
        self.config = config
        self.matcher = Matcher(compiled)
        self.bitmask = allocate_token_bitmask(1, self.info.logits_width)
        self.probe = allocate_token_bitmask(1, self.info.logits_width)
        self.eos_words = eos_only_row(self.info, self.bitmask.shape[1])
        self.tokens: list[int] = []
        self.plan = b""  # bytes of a chosen literal run still to be taken
        self.run_uses: dict[bytes, int] = {}  # how often each literal run was chosen
        self.blocked: tuple[bytes, int] | None = None
        self.stalled_steps = 0  # finishing steps in a row where no candidate got nearer

    def end(self, how: str, error: str | None = None) -> Walk:
        return Walk(self.tokens, self.info.decode_bytes(self.tokens), how, error, self.blocked)

    def token_budget(self) -> int:
        """`config.max_tokens`, or more when the shortest completion needs it."""
        distance = self.matcher.min_terminals_to_accept()
        if distance >= _NO_COMPLETION:
            return self.config.max_tokens
        return max(self.config.max_tokens, len(self.tokens) + self.config.target_tokens
                   + _TOKENS_PER_TERMINAL * distance)

    def run(self) -> Walk:
        config, matcher, row = self.config, self.matcher, self.bitmask[0]
        max_tokens = self.token_budget()
        while True:
            matcher.fill_next_token_bitmask(self.bitmask)
            if matcher.error is not None:
                return self.end("error", matcher.error)
            eos_allowed = bool((row & self.eos_words).any())
            allowed = row & ~self.eos_words & self.classes.words[0]
            if not allowed.any():
                return self.end("eos" if eos_allowed else "dead_end")
            if eos_allowed:
                p_eos = 1.0 if len(self.tokens) >= max_tokens * 3 // 4 else config.p_eos
                if self.rng.random() < p_eos:
                    return self.end("eos")
            if len(self.tokens) >= max_tokens:
                return self.end("max_tokens")
            if config.uniform:
                token = _sample_class(allowed, self.classes, _UNIFORM_WEIGHTS, self.rng)
            elif len(self.tokens) < config.target_tokens:
                token = _sample_class(allowed, self.classes, _EXPLORE_WEIGHTS, self.rng)
            else:
                if len(self.tokens) == config.target_tokens:
                    max_tokens = max(max_tokens, self.token_budget())
                token = self.finishing_token(allowed, row)
            if not _in_mask(row, token):
                raise AssertionError(f"walk bug: token {token} is not in the mask")
            if not matcher.accept_token(token):
                raise AssertionError(f"token {token} is in the mask but accept_token refused "
                                     f"it after {self.info.decode_bytes(self.tokens)!r}")
            self.tokens.append(token)

    def distance_after(self, accepted: bool) -> int | None:
        """Terminals still needed after the probe just accepted (rolled back); None if the
        probe was refused, or leaves a lexeme open that cannot be finished the shortest way
        (`open_lexeme_finishes`)."""
        if not accepted:
            return None
        distance = self.matcher.min_terminals_to_accept()
        finishes = self.open_lexeme_finishes()
        self.matcher.rollback(1)
        return distance if finishes else None

    def open_lexeme_finishes(self) -> bool:
        """Whether the lexeme the text leaves open (if any) can be finished by its shortest
        completion. The grammar's distance counts an open key as the key it may become; a key
        the matcher refuses beyond the grammar (already used in an any-order object) would
        lure the walk into extending it into other keys forever."""
        completion = self.matcher.shortest_lexeme_completion()
        if not completion:
            return True
        if not self.matcher.accept_bytes(completion):
            return False
        self.matcher.rollback(1)
        return True

    def mask_count_after(self, candidate: int | bytes) -> int:
        """Allowed tokens after the candidate (a token id or bytes), rolled back."""
        accepted = (self.matcher.accept_token(candidate) if isinstance(candidate, int)
                    else self.matcher.accept_bytes(candidate))
        assert accepted
        self.matcher.fill_next_token_bitmask(self.probe)
        self.matcher.rollback(1)
        return int(np.bitwise_count(self.probe).sum())

    def run_scores(self, run: bytes) -> list[tuple[int, bytes]]:
        """(distance, bytes) of a run, and of the run with the shortest bytes that finish the
        lexeme it leaves open (`"key"` then `:`: a run may stop inside a terminal, where the
        distance cannot see that it brought the end nearer); [] if refused."""
        if not self.matcher.accept_bytes(run):
            return []
        out = [(self.matcher.min_terminals_to_accept(), run)]
        completion = self.matcher.shortest_lexeme_completion()
        if completion:
            if self.matcher.accept_bytes(completion):
                out.append((self.matcher.min_terminals_to_accept(), run + completion))
                self.matcher.rollback(1)
            else:
                out = []  # (see open_lexeme_finishes)
        self.matcher.rollback(1)
        return out

    def run_candidates(self) -> list[bytes]:
        """Every literal run (capped), and the rest of each run whose beginning the text
        already ends with (after a `"` typed as a token, the rest of a key)."""
        runs = self.classes.runs
        if len(runs) > _MAX_RUN_CANDIDATES:
            runs = self.rng.sample(runs, _MAX_RUN_CANDIDATES)
        tail = self.info.decode_bytes(self.tokens[-8:])
        rests = [run[n:] for run in runs for n in range(1, min(len(run), 9))
                 if tail.endswith(run[:n])]
        return [*runs, *rests]

    def finishing_token(self, allowed: np.ndarray, row: np.ndarray) -> int:
        if self.plan:
            token = self.plan_token(row)
            if token is not None:
                return token
        scored: list[tuple[int, int | bytes]] = []  # (distance, token id or run bytes)
        for _ in range(_LOOKAHEAD_TOKENS):
            token = _sample_class(allowed, self.classes, _FINISH_WEIGHTS, self.rng)
            distance = self.distance_after(self.matcher.accept_token(token))
            if distance is not None:
                scored.append((distance, token))
        runs = self.run_candidates()
        for run in runs:
            scored += self.run_scores(run)
        current = self.matcher.min_terminals_to_accept()
        if not scored or min(d for d, _ in scored) >= current:
            # Stalled: inside a lexeme that needs more text before it can end (a string whose
            # pattern wants "1.2.3"), finish it the shortest way; in one that can end but that
            # every run only lengthens (an identifier, a keyword), put a space first.
            completion = self.matcher.shortest_lexeme_completion()
            for candidate in ([completion] if completion else []) + [b" " + r for r in runs]:
                distance = self.distance_after(self.matcher.accept_bytes(candidate))
                if distance is not None:
                    scored.append((distance, candidate))
        if not scored:
            return _sample_class(allowed, self.classes, _FINISH_WEIGHTS, self.rng)
        nearest = min(d for d, _ in scored)
        self.stalled_steps = self.stalled_steps + 1 if nearest >= current else 0
        if self.stalled_steps > _STALL_STEPS:
            # A plateau the one-step distance cannot see out of (a comment that swallows the
            # rest of the line, where the shortest way out first adds a newline): a random
            # step that costs at most one more terminal.
            choice = self.rng.choice([c for d, c in scored if d <= max(current + 1, nearest)])
            return self.take(choice, allowed, row)
        tied = [c for d, c in scored if d == nearest]
        if nearest > 0 and len(tied) > 1:
            # Runs used less first, then the fewest tokens allowed after the candidate.
            self.rng.shuffle(tied)
            tied.sort(key=lambda c: 0 if isinstance(c, int) else self.run_uses.get(c, 0))
            tied = tied[:_MASKED_TIES]
            counts = [self.mask_count_after(c) for c in tied]
            tied = [tied[counts.index(min(counts))]]
        return self.take(tied[0] if nearest > 0 else self.rng.choice(tied), allowed, row)

    def take(self, choice: int | bytes, allowed: np.ndarray, row: np.ndarray) -> int:
        """The token to take for a chosen candidate: itself, or the first of a run's plan."""
        if isinstance(choice, int):
            return choice
        self.run_uses[choice] = self.run_uses.get(choice, 0) + 1
        self.plan = choice
        token = self.plan_token(row)
        return token if token is not None else _sample_class(allowed, self.classes,
                                                             _FINISH_WEIGHTS, self.rng)

    def plan_token(self, row: np.ndarray) -> int | None:
        """The longest token that prefixes the plan (the plan advances past it). Every such
        token spells a viable continuation (the matcher accepted the plan's bytes), so one
        missing from the mask is recorded in `blocked`; None (plan dropped) if none is in it."""
        ids = self.info.tokens_prefixing(self.plan)
        lengths = self.info.token_byte_lengths[ids]
        chosen = None
        for token in ids[np.argsort(-lengths, kind="stable")]:
            token = int(token)
            if not _in_mask(row, token):
                if self.blocked is None:
                    self.blocked = (self.info.decode_bytes(self.tokens), token)
            elif chosen is None:
                chosen = token
        if chosen is None:
            self.plan = b""
            return None
        self.plan = self.plan[self.info.token_byte_lengths[chosen]:]
        return chosen


def random_walk(compiled: CompiledGrammar, rng: random.Random,
                config: WalkConfig = WalkConfig(), prefix: Sequence[int] = ()) -> Walk | None:
    """Walks the masks of a fresh matcher of `compiled` until the walk ends.

    Args:
      compiled: the grammar under test.
      rng: the only source of randomness (a seeded walk is reproducible).
      config: how to sample.
      prefix: tokens to accept first (they count towards the budgets); None is returned if
        the matcher refuses one of them. With `target_tokens=0` this completes a prefix.
    """
    walker = _Walker(compiled, rng, config)
    walker.tokens = list(prefix)
    if walker.matcher.accept_tokens(walker.tokens) != len(walker.tokens):
        return None
    return walker.run()
