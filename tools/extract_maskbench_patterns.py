"""Extracts every distinct JSON Schema `pattern` and `patternProperties` key from the MaskBench
schemas into tests/data/maskbench_patterns.json (a sorted JSON list), the corpus of
tests/grammars/test_ecma_patterns.py.

Usage: python tools/extract_maskbench_patterns.py [MASKBENCH_DIR] [OUTPUT]
(defaults: /work/shared/data/maskbench, tests/data/maskbench_patterns.json). The input is the
MaskBench part of guidance-ai/jsonschemabench (MIT), one `*.jsonl.gz` per category, each line a
JSON object whose "schema" is walked recursively. Values under enum / const / default /
examples are instance data, not schemas, and are not walked.
"""

from __future__ import annotations

import gzip
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples", "example"})


def _walk(node, out: set[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item, out)
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key in _DATA_KEYWORDS:
            continue
        if key == "pattern" and isinstance(value, str):
            out.add(value)
        elif key == "patternProperties" and isinstance(value, dict):
            out.update(k for k in value if isinstance(k, str))
        _walk(value, out)


def extract(directory: pathlib.Path) -> list[str]:
    patterns: set[str] = set()
    files = sorted(directory.glob("*.jsonl.gz"))
    if not files:
        raise SystemExit(f"no *.jsonl.gz files in {directory}")
    for path in files:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    _walk(json.loads(line)["schema"], patterns)
    return sorted(patterns)


def main(argv: list[str]) -> None:
    directory = pathlib.Path(argv[1] if len(argv) > 1 else "/work/shared/data/maskbench")
    output = pathlib.Path(argv[2] if len(argv) > 2 else
                          ROOT / "tests" / "data" / "maskbench_patterns.json")
    patterns = extract(directory)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(patterns, ensure_ascii=False, indent=0) + "\n",
                      encoding="utf-8")
    print(f"{len(patterns)} patterns -> {output}")


if __name__ == "__main__":
    main(sys.argv)
