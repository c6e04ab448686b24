"""Walks through the masks of a grammar with calls in free text, started where a call opens:
free text rarely walks into a trigger by chance, so each walk is given the opening text, and
after a finished walk, a next one continues it with another opening."""

from __future__ import annotations

import random
from collections.abc import Callable

from jaxguide.testing import SHORT_WALK, random_walk


def walk_opened_calls(compiled, info, oracle, *, seed: str, walks: int, rounds: int,
                      first: Callable[[random.Random], str],
                      again: Callable[[random.Random], str], marker: str) -> tuple[int, int]:
    """(finished texts, calls in them, counted by `marker`); every finished text must pass
    `oracle.check`. Walk i starts from `first(rng)`; up to `rounds` walks continue each other,
    the next from the last one's tokens plus `again(rng)`."""
    finished = calls = 0
    for i in range(walks):
        rng = random.Random(f"{seed}:{i}")
        prefix = info.encode(first(rng))
        for _ in range(rounds):
            walk = random_walk(compiled, rng, SHORT_WALK, prefix=prefix)
            assert walk is not None and walk.end in ("eos", "max_tokens"), walk
            if walk.end != "eos":
                break
            text = walk.text.decode()
            assert oracle.check(text) is None, (text, oracle.check(text))
            finished += 1
            calls += text.count(marker)
            prefix = walk.tokens + info.encode(again(rng))
    return finished, calls
