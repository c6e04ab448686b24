"""Grammars used by the matcher tests and benchmarks: real ones from packages, and tricky ones."""

from __future__ import annotations

from jaxguide.assets import package_file
from jaxguide.grammar import JSON_LARK  # noqa: F401  (re-exported for the tests)

TRICKY = {
    # Ambiguity: the same sentence has many parses.
    "ambiguous": 'start: x+\nx: "a" | "a" "a" | "aa" | x x\n',
    # Nullable rules everywhere.
    "nullable": 'start: a b a "!"\na: "x"? \nb: a a | "y"*\n',
    # Left recursion with operators.
    "left_recursive": 'start: e\ne: e "+" t | e "-" t | t\nt: t "*" f | f\n'
                      'f: NUMBER | "(" e ")"\n%import common.NUMBER\n%ignore " "\n',
    # Right recursion.
    "right_recursive": 'start: l\nl: "[" l? "]" l?\n',
    # Case-insensitive keywords competing with identifiers.
    "keywords": 'start: stmt+\nstmt: "select"i NAME ";" | NAME "=" NAME ";"\n'
                'NAME: /[a-z_][a-z0-9_]*/\n%ignore /[ \\n]+/\n',
    # Tokens spanning terminals, terminals that share prefixes, unicode literals.
    "spanning": 'start: "ab" "c" | "a" "bd" | "é" "日本" | WORD "." WORD\nWORD: /[a-z]+/\n',
    # Maximal munch decides: A takes every "a", so "a" "ab" (= "aab") is not a sentence.
    "munch": 'start: A B | A "c"\nA: /a+/\nB: /ab/\n',
    # A lazy terminal (first match) next to a greedy one.
    "lazy": 'start: COMMENT NUMBER\nCOMMENT: /<!--.*?-->/\nNUMBER: /[0-9]+/\n',
}


def outlines_grammar(name: str) -> str:
    with open(package_file("outlines", "grammars", name)) as f:
        return f.read()
