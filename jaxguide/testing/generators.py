"""Seeded generators of test inputs for the soundness checker (random regexes)."""

from __future__ import annotations

import random

_ATOMS = ("a", "b", "ab", "é", "日", "0", r"\d", r"\w", r"\s", ".", "[a-c]", "[^a]", r"[\d_]",
          r"\.", "-", " ", r"\n", "[0-9a-f]", "x")


def random_regex(rng: random.Random, depth: int = 0) -> str:
    """A random Python regex over a small alphabet: literals (ASCII and not), classes
    (incl. the Unicode-wide `\\d \\w \\s`), groups, alternation, greedy and lazy quantifiers,
    counted repetition."""
    parts = []
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.2 and depth < 2:
            inner = "|".join(random_regex(rng, depth + 1) for _ in range(rng.randint(1, 3)))
            atom = f"(?:{inner})"
        else:
            atom = rng.choice(_ATOMS)
        roll = rng.random()
        if roll < 0.15:
            atom += rng.choice(["*", "+", "?"])
        elif roll < 0.22:
            atom += rng.choice(["*?", "+?", "??"])
        elif roll < 0.3:
            lo = rng.randint(0, 3)
            atom += rng.choice([f"{{{lo}}}", f"{{{lo},{lo + rng.randint(0, 3)}}}", f"{{{lo},}}"])
        parts.append(atom)
    return "".join(parts)
