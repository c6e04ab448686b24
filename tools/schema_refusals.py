"""What the JSON Schema front-end still refuses on MaskBench, counted by keyword and reason.

Lowers every schema of the data (`Grammar.from_json_schema`, flexible whitespace, strict) and
counts each refusal by the keyword its error names and the reason in its parentheses (the
first refusal of a schema: the one that stops it), per category too. Lowering only: a schema
that lowers may still fail the native compile (an empty language, a lexer budget), which the
soundness and MaskBench runs count.

Usage: python tools/schema_refusals.py [--data ../shared/data/maskbench]
           [--out benchmarks/results/schema_refusals.md]
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import pathlib
import re
import sys
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from jaxguide import Grammar, GrammarError  # noqa: E402

_KEYWORD = re.compile(r"keyword '([^']+)' cannot be enforced(?: \((.*)\))?;")


def reason_of(error: Exception) -> tuple[str, str]:
    """(keyword, reason) of a lowering error, the reason cut before any JSON pointer or
    value that would split one reason into many rows."""
    text = str(error).removeprefix("JSON Schema: ")
    found = _KEYWORD.search(text)
    keyword, reason = (found.group(1), found.group(2) or "") if found else ("", text)
    reason = re.sub(r" at [#/].*$", "", reason)
    reason = re.sub(r"'[^']*'", "'...'", reason)
    reason = re.sub(r"\d[\d,]*", "N", reason)
    return keyword or getattr(error, "keyword", "") or type(error).__name__, reason[:140]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "maskbench"))
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" /
                                             "schema_refusals.md"))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    reasons: collections.Counter = collections.Counter()
    per_category: dict[str, list[int]] = {}
    for path in sorted(pathlib.Path(args.data).glob("*.jsonl.gz")):
        category = path.name.removesuffix(".jsonl.gz")
        counts = per_category.setdefault(category, [0, 0])
        with gzip.open(path, "rt") as lines:
            for line in lines:
                counts[1] += 1
                try:
                    Grammar.from_json_schema(json.loads(line)["schema"])
                    counts[0] += 1
                except (GrammarError, RecursionError) as error:
                    reasons[reason_of(error)] += 1
    lowered = sum(c[0] for c in per_category.values())
    total = sum(c[1] for c in per_category.values())
    out = [f"# JSON Schema refusals on MaskBench ({args.data})", "",
           "Command: `python tools/schema_refusals.py`. Lowering only (strict, flexible "
           "whitespace); the first refusal of each schema.", "",
           f"Lowered: {lowered:,} of {total:,} ({lowered / total:.1%}).", "",
           "| category | lowered | schemas |", "|---|---:|---:|"]
    out += [f"| {name} | {c[0]} | {c[1]} |" for name, c in sorted(per_category.items())]
    out += ["", "| schemas | keyword | reason |", "|---:|---|---|"]
    out += [f"| {n} | {keyword} | {reason.replace('|', '/')} |"
            for (keyword, reason), n in reasons.most_common()]
    pathlib.Path(args.out).write_text("\n".join(out) + "\n")
    print("\n".join(out[:6]))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
