"""Fingerprints of every grammar IR the front-ends build, to prove a refactor changes nothing.

For each MaskBench schema (in four settings: flexible / compact / indent 2 whitespace, and
lenient), each Lark grammar of the test corpus and each MaskBench regex, the SHA-256 of
`GrammarIR.to_json()` or the error class and message. The IR is everything the native compiler
sees, and the native side is deterministic: equal fingerprints mean equal masks, so the same
schemas compile and every instance gets the same answer.

Usage:
  python tools/grammar_fingerprints.py --out /tmp/before.json
  python tools/grammar_fingerprints.py --out /tmp/after.json --compare /tmp/before.json
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import pathlib
import sys
import time
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "benchmarks"))

import soundness  # noqa: E402  (its Lark and regex corpora)

from jaxguide import Grammar  # noqa: E402

SCHEMA_SETTINGS = {
    "flexible": {},
    "compact": {"whitespace": "compact"},
    "indent2": {"whitespace": 2},
    "lenient": {"lenient": True},
}


def fingerprint(build) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            grammar = build()
    except Exception as error:  # noqa: BLE001 - the error is the fingerprint
        return f"{type(error).__name__}: {error}"
    ir = json.loads(grammar.ir.to_json())
    ir.pop("version", None)  # the IR's format version: no part of the language
    return hashlib.sha256(json.dumps(ir, sort_keys=True).encode()).hexdigest()


def schema_fingerprints(data: pathlib.Path) -> dict[str, str]:
    out = {}
    for path in sorted(data.glob("*.jsonl.gz")):
        with gzip.open(path, "rt") as lines:
            for number, line in enumerate(lines):
                schema = json.loads(line)["schema"]
                for setting, options in SCHEMA_SETTINGS.items():
                    out[f"{path.name}:{number}:{setting}"] = fingerprint(
                        lambda: Grammar.from_json_schema(schema, **options))
    return out


def lark_fingerprints() -> dict[str, str]:
    return {f"lark:{name}": fingerprint(lambda: Grammar.from_lark(text))
            for name, text in soundness.lark_grammars().items()}


def regex_fingerprints() -> dict[str, str]:
    return {f"regex:{i}": fingerprint(lambda: Grammar.from_regex(p))
            for i, p in enumerate(soundness.maskbench_patterns())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared/data/maskbench"))
    parser.add_argument("--out", required=True)
    parser.add_argument("--compare", help="an earlier --out file; exit 1 on any difference")
    args = parser.parse_args()
    start = time.perf_counter()
    prints = {**schema_fingerprints(pathlib.Path(args.data)), **lark_fingerprints(),
              **regex_fingerprints()}
    pathlib.Path(args.out).write_text(json.dumps(prints, indent=0, sort_keys=True))
    errors = sum(not (len(v) == 64 and " " not in v) for v in prints.values())
    print(f"{len(prints)} grammars ({errors} errors) in {time.perf_counter() - start:.0f} s")
    if not args.compare:
        return 0
    before = json.loads(pathlib.Path(args.compare).read_text())
    differ = sorted(k for k in before.keys() | prints.keys() if before.get(k) != prints.get(k))
    for key in differ[:40]:
        print(f"DIFFERS {key}\n  before: {before.get(key)}\n  after:  {prints.get(key)}")
    print(f"{len(differ)} of {len(prints)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
