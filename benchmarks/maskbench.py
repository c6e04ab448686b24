"""MaskBench: JSON Schema masks of jaxguide, llguidance and xgrammar, side by side.

For every schema of the MaskBench data (../shared/data/maskbench, JSON Lines, gzip), one engine:
compiles the schema against the Llama-3 tokenizer (128,256 ids; the same vocabulary for every
engine), builds a matcher and fills the first mask: that is the *time to first mask* (TTFM).
Then, for each test instance, the text `json.dumps(test.data)` is tokenized (Llama-3's
tokenizer) and, token after token, the token must be allowed by the mask; the time to commit it
and fill the next mask is one *time between masks* (TBM) sample. A valid instance must be
accepted to the end, and EOS must then be allowed; an invalid one must be rejected somewhere
(a token outside the mask, a refused commit, or EOS not allowed at the end).

Instances are serialized with `json.dumps` (separators ", " and ": "); every engine gets its
flexible-whitespace JSON mode and JSON Schema's additionalProperties default (true). All three
engines generate object properties in the schema's order, so each instance's keys are first put
in the order of the schema's `properties` (recursively, following $ref, allOf, the
anyOf/oneOf branch the value is valid under, items, patternProperties, additionalProperties;
extra keys keep their slots); `per_schema[].reordered` counts the instances this changed.

Isolation: each engine runs in a worker subprocess, all pinned to one core (`--core`, default
the last allowed core); the parent enforces `--timeout` per schema and restarts a worker after a
timeout or a crash, so neither ends the run. All timing happens inside the workers. Engines are
interleaved per schema (A B, then B A, ...), so machine drift falls on every engine alike.

Cold and warm. Before each schema, every schema-keyed cache of the engine is cleared
(`jaxguide.clear_caches()`; llguidance keeps none; xgrammar's is off), so TTFM is a cold
compile even where the data repeats a schema (`--keep-caches` turns this off); right after the
instances, compile + first mask is timed once more without clearing (warm TTFM). A TBM sample
above RETIME_ABOVE_US is timed RETIMES more times (a new matcher replays the instance up to it)
and the minimum counts, so one preempted sample does not decide a maximum.

`--engine jaxguide-any-order`: jaxguide with `property_order="any"`, its instances as written.
A/B of two jaxguide checkouts: `--engine jaxguide --engine jaxguide-baseline --baseline DIR`
runs the second engine from the checkout DIR (its `jaxguide/` package with its native module
built in place, e.g. by `cmake --build` and a copy of `_native*.so` into `DIR/jaxguide/`), in
the same interleaved run: before/after figures of a change on one machine.

Usage:
  python benchmarks/maskbench.py --engine jaxguide --engine llguidance \\
      --tokenizer llama3 --data ../shared/data/maskbench \\
      --out benchmarks/results/maskbench_{engine}.json.gz
  python benchmarks/maskbench.py --report benchmarks/results/maskbench_*.json.gz \\
      --md benchmarks/results/maskbench.md --plot benchmarks/results/maskbench_tbm.png

Output (one JSON file per engine, gzip-compressed when the name ends in .gz): {"engine", "summary": {"schemas", "compiled",
"compile_errors", "valid_rejected", "invalid_accepted", "timeouts", "crashes", "tokens",
"ttfm_us" / "ttfm_warm_us": {p50, p90, p99, max}, "tbm_us": {mean, p50, p99, p999, max},
"tbm_retimed"}, "per_schema": [...]}. With several engines, a markdown report (all schemas; the
schemas every engine compiled; the first engine's ratios to the others there) and a plot of the
TBM and TTFM distributions on the common schemas are written too.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import platform
import re
import select
import subprocess
import sys
import time

import jsonschema
import numpy as np

ENGINES = ("jaxguide", "llguidance", "xgrammar", "jaxguide-baseline", "jaxguide-any-order")

# ----------------------------------------------------------------------------------------------
# Key order


def _resolve(schema, root, depth=0):
    while isinstance(schema, dict) and "$ref" in schema and depth < 20:
        ref = schema["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#"):
            return schema
        node = root
        try:
            for part in [p for p in ref[1:].split("/") if p]:
                part = part.replace("~1", "/").replace("~0", "~")
                node = node[int(part)] if isinstance(node, list) else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            return schema
        schema, depth = node, depth + 1
    return schema


def _fits(branch, root, data) -> bool:
    """Whether `data` is valid under `branch` (refs resolved against `root`)."""
    try:
        cls = jsonschema.validators.validator_for(root, default=jsonschema.Draft202012Validator)
        return cls(root).evolve(schema=branch).is_valid(data)
    except Exception:  # noqa: BLE001 (a schema jsonschema cannot read)
        return False


def _views(schema, root, data, depth=0) -> list[dict]:
    """The resolved schema dicts that apply to `data` at this place, in the order an engine
    merges them: the schema, its allOf parts, then the anyOf/oneOf branch that fits `data` (the
    first valid one; for an object, else the one declaring most of its keys)."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict) or depth > 20:
        return []
    views = [schema]
    for sub in schema.get("allOf") or []:
        views += _views(sub, root, data, depth + 1)
    for key in ("anyOf", "oneOf"):
        branches = [b for b in schema.get(key) or [] if isinstance(b, (dict, bool))]
        best = next((b for b in branches if _fits(b, root, data)), None)
        if best is None and isinstance(data, dict):
            scored = [(len(set(_declared_order(_views(b, root, data, depth + 1))[0])
                           & set(data)), i) for i, b in enumerate(branches)]
            if scored and max(scored)[0] > 0:
                best = branches[max(scored, key=lambda x: (x[0], -x[1]))[1]]
        if best is not None:
            views += _views(best, root, data, depth + 1)
    return views


def _declared_order(views: list[dict]) -> tuple[list[str], dict]:
    """(property names in schema order, {name: subschema}) over the views of an object."""
    order, subs = [], {}
    for view in views:
        for name, sub in (view.get("properties") or {}).items():
            if isinstance(name, str) and name not in subs:
                order.append(name)
                subs[name] = sub
        required = view.get("required")
        if isinstance(required, list):  # required names without a declared schema come next
            order += [n for n in dict.fromkeys(required)
                      if isinstance(n, str) and n not in subs and n not in order]
    return order, subs


def _undeclared_schema(views: list[dict], key: str):
    """The schema of an undeclared key: a matching patternProperties entry, else a schema-valued
    additionalProperties, else {}."""
    for view in views:
        for pattern, sub in (view.get("patternProperties") or {}).items():
            try:
                if re.search(pattern, key):
                    return sub
            except re.error:
                continue
    for view in views:
        if isinstance(view.get("additionalProperties"), dict):
            return view["additionalProperties"]
    return {}


def schema_ordered(data, schema, root, depth=0):
    """`data` with object keys in the order of the schema's properties (extras keep slots),
    recursively through $ref, allOf, the anyOf/oneOf branch the value fits, items,
    prefixItems, patternProperties and additionalProperties."""
    if depth > 64 or not isinstance(data, (dict, list)):
        return data
    views = _views(schema, root, data)
    if isinstance(data, dict):
        order, subs = _declared_order(views)
        rank = {name: i for i, name in enumerate(order)}
        keys = list(data)
        declared = sorted((k for k in keys if k in rank), key=rank.__getitem__)
        it = iter(declared)
        new_keys = [next(it) if k in rank else k for k in keys]
        return {k: schema_ordered(data[k], subs[k] if k in subs else _undeclared_schema(
            views, k), root, depth + 1) for k in new_keys}
    prefix, rest = [], {}
    for view in views:
        items = view.get("items")
        if not prefix:
            prefix = view.get("prefixItems") or (items if isinstance(items, list) else [])
        if rest == {} and isinstance(items, dict):
            rest = items
    return [schema_ordered(x, prefix[i] if i < len(prefix) else rest, root, depth + 1)
            for i, x in enumerate(data)]


# ----------------------------------------------------------------------------------------------
# Engines (in the worker)


class JaxguideEngine:
    name = "jaxguide"

    def __init__(self, encoding, eos):
        import jaxguide

        self.jg = jaxguide
        self.info = jaxguide.TokenizerInfo.from_tiktoken(encoding)
        self.eos = eos
        self.bitmask = jaxguide.allocate_token_bitmask(1, self.info.logits_width)

    def clear_caches(self):
        self.jg.clear_caches()

    def compile(self, schema):
        grammar = self.jg.Grammar.from_json_schema(schema)
        return self.jg.compile_grammar(grammar, self.info)

    def matcher(self, compiled):
        return self.jg.Matcher(compiled)

    def fill(self, matcher):
        matcher.fill_next_token_bitmask(self.bitmask)

    def allowed(self, token):
        return (int(self.bitmask[0, token >> 5]) >> (token & 31)) & 1

    def commit(self, matcher, token):
        return matcher.accept_token(token)

    def error(self, matcher):
        return matcher.error


class LlguidanceEngine:
    name = "llguidance"

    def __init__(self, encoding, eos):
        import llguidance
        import llguidance.numpy as lln
        import llguidance.tiktoken

        self.ll = llguidance
        self.lln = lln
        self.tokenizer = llguidance.tiktoken.lltokenizer_from_encoding(encoding, eos_token=eos)
        self.bitmask = lln.allocate_token_bitmask(1, self.tokenizer.vocab_size)

    def clear_caches(self):
        pass  # llguidance keeps nothing across grammars

    def compile(self, schema):
        grammar = self.ll.LLMatcher.grammar_from_json_schema(
            schema, defaults={"whitespace_flexible": True})
        matcher = self.ll.LLMatcher(self.tokenizer, grammar)
        if matcher.is_error():
            raise ValueError(matcher.get_error())
        return (grammar, matcher)

    def matcher(self, compiled):
        grammar, first = compiled
        if first is not None:
            return first
        return self.ll.LLMatcher(self.tokenizer, grammar)

    def fill(self, matcher):
        self.lln.fill_next_token_bitmask(matcher, self.bitmask)

    def allowed(self, token):
        return (int(self.bitmask[0, token >> 5]) >> (token & 31)) & 1

    def commit(self, matcher, token):
        return matcher.consume_token(token)

    def error(self, matcher):
        return matcher.get_error() if matcher.is_error() else None


class XgrammarEngine:
    name = "xgrammar"

    def __init__(self, encoding, eos):
        import xgrammar as xgr

        self.xgr = xgr
        vocab = []
        special = set(encoding._special_tokens.values())
        for i in range(encoding.n_vocab):
            vocab.append(b"" if i in special else encoding.decode_single_token_bytes(i))
        self.info = xgr.TokenizerInfo(vocab, xgr.VocabType.RAW, vocab_size=len(vocab),
                                      stop_token_ids=[eos])
        self.compiler = xgr.GrammarCompiler(self.info, max_threads=1, cache_enabled=False)
        self.bitmask = xgr.allocate_token_bitmask(1, len(vocab))
        self.view = self.bitmask.numpy()

    def clear_caches(self):
        self.compiler.clear_cache()  # (built with cache_enabled=False: already empty)

    def compile(self, schema):
        return self.compiler.compile_json_schema(json.dumps(schema), any_whitespace=True,
                                                 strict_mode=False)

    def matcher(self, compiled):
        return self.xgr.GrammarMatcher(compiled)

    def fill(self, matcher):
        matcher.fill_next_token_bitmask(self.bitmask)

    def allowed(self, token):
        return (int(self.view[0, token >> 5]) >> (token & 31)) & 1

    def commit(self, matcher, token):
        return matcher.accept_token(token)

    def error(self, matcher):
        return None


class JaxguideAnyOrderEngine(JaxguideEngine):
    """jaxguide with `property_order="any"`: the instances are checked as written (their keys
    not put in the schema's order)."""
    name = "jaxguide-any-order"
    instances_as_written = True

    def compile(self, schema):
        grammar = self.jg.Grammar.from_json_schema(schema, property_order="any")
        return self.jg.compile_grammar(grammar, self.info)


def _make_engine(name, encoding, eos):
    return {"jaxguide": JaxguideEngine, "jaxguide-baseline": JaxguideEngine,
            "jaxguide-any-order": JaxguideAnyOrderEngine, "llguidance": LlguidanceEngine,
            "xgrammar": XgrammarEngine}[name](encoding, eos)


def _use_baseline_checkout(path: str) -> None:
    """Makes `import jaxguide` load the checkout at `path` (the installed package's import
    hooks, such as an editable install's finder, are set aside first)."""
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in
                        type(f).__module__.lower() and "ScikitBuild" not in type(f).__name__]
    sys.path.insert(0, os.path.abspath(path))


# A TBM sample above this is timed again (RETIMES times, replaying the instance up to it on a
# new matcher) and the minimum counts: one preempted sample should not decide a max.
RETIME_ABOVE_US = 5000.0
RETIMES = 3


def _first_matcher(engine, compiled):
    """Matcher of a compiled grammar for a new instance (llguidance's compile made one)."""
    return engine.matcher((compiled[0], None) if isinstance(compiled, tuple) else compiled)


def _retime(engine, compiled, tokens, position) -> float:
    """One more timing of TBM sample `position` of an instance (-1: the new matcher and its
    first mask), replaying the tokens before it as the first pass did (commit, then mask)."""
    if position < 0:
        t0 = time.perf_counter()
        engine.fill(_first_matcher(engine, compiled))
        return (time.perf_counter() - t0) * 1e6
    matcher = _first_matcher(engine, compiled)
    engine.fill(matcher)
    for token in tokens[:position]:
        engine.commit(matcher, token)
        engine.fill(matcher)
    t0 = time.perf_counter()
    engine.commit(matcher, tokens[position])
    engine.fill(matcher)
    return (time.perf_counter() - t0) * 1e6


def _compile_first_mask(engine, schema):
    compiled = engine.compile(schema)
    matcher = engine.matcher(compiled)
    engine.fill(matcher)
    return compiled, matcher


def run_instance(engine, matcher, tokens, eos, tbm, where, test_index):
    """Walks one instance's tokens through the masks; appends TBM samples to `tbm` and their
    (test, position) to `where`. Returns the position where it was rejected, or None."""
    for position, token in enumerate(tokens):
        if not engine.allowed(token):
            return position
        t0 = time.perf_counter()
        ok = engine.commit(matcher, token)
        engine.fill(matcher)
        tbm.append((time.perf_counter() - t0) * 1e6)
        where.append((test_index, position))
        if not ok:
            return position
    return None if engine.allowed(eos) else len(tokens)


def run_schema(engine, task, encode, eos) -> dict:
    """Times one schema and checks its instances (inside the worker). With task["clear"], the
    engine's schema-keyed caches are emptied first (a cold compile); with task["warm"], compile
    and first mask are timed once more right after (ttfm_warm_us)."""
    result = {"name": task["name"], "category": task["category"]}
    if task.get("clear"):
        engine.clear_caches()
    start = time.perf_counter()
    try:
        compiled, matcher = _compile_first_mask(engine, task["schema"])
    except Exception as e:  # noqa: BLE001 - any engine failure is a compile error
        result.update(status="compile_error", error=f"{type(e).__name__}: {e}"[:500])
        return result
    result["ttfm_us"] = (time.perf_counter() - start) * 1e6
    result["status"] = "ok"
    tbm: list[float] = []
    where: list[tuple[int, int]] = []
    tests = []
    text = "plain" if getattr(engine, "instances_as_written", False) else "text"
    token_lists = [encode(test.get(text, test["text"])) for test in task["tests"]]
    for i, test in enumerate(task["tests"]):
        if i > 0:
            t0 = time.perf_counter()
            matcher = _first_matcher(engine, compiled)
            engine.fill(matcher)
            tbm.append((time.perf_counter() - t0) * 1e6)
            where.append((i, -1))
        tokens = token_lists[i]
        rejected_at = run_instance(engine, matcher, tokens, eos, tbm, where, i)
        tests.append({"valid": test["valid"], "accepted": rejected_at is None,
                      "rejected_at": rejected_at, "tokens": len(tokens),
                      "reordered": test["reordered"],
                      "error": engine.error(matcher)})
    raw_max = max(tbm, default=0.0)
    retimed = 0
    for k, sample in enumerate(tbm):
        if sample > RETIME_ABOVE_US:
            i, position = where[k]
            tbm[k] = min([sample] + [_retime(engine, compiled, token_lists[i], position)
                                     for _ in range(RETIMES)])
            retimed += 1
    if task.get("warm"):
        t0 = time.perf_counter()
        _compile_first_mask(engine, task["schema"])
        result["ttfm_warm_us"] = (time.perf_counter() - t0) * 1e6
    result.update(tests=tests, tbm_us=[round(x, 1) for x in tbm], tbm_retimed=retimed,
                  tbm_raw_max_us=round(raw_max, 1))
    return result


def worker_main(engine_name: str, core: int | None, baseline: str | None = None) -> None:
    if core is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {core})
    if engine_name == "jaxguide-baseline":
        _use_baseline_checkout(baseline)
    else:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from jaxguide.models import assets

    encoding = assets.llama3_tiktoken_encoding()
    eos = encoding._special_tokens["<|eot_id|>"]
    engine = _make_engine(engine_name, encoding, eos)
    # Warm-up outside the timings: one small schema pays each engine's one-time costs (lazy
    # imports, which here also compile Python sources as PYTHONDONTWRITEBYTECODE may be set,
    # first-use tables), which would otherwise land on the first schema's TTFM.
    warm = engine.compile({"type": "object", "properties": {"a": {"type": "string"}}})
    engine.fill(engine.matcher(warm))
    out = sys.stdout.buffer
    out.write(b'{"ready": true}\n')
    out.flush()
    for line in sys.stdin.buffer:
        task = json.loads(line)
        result = run_schema(engine, task, encoding.encode_ordinary, eos)
        out.write(json.dumps(result).encode() + b"\n")
        out.flush()


# ----------------------------------------------------------------------------------------------
# Parent


class Worker:
    def __init__(self, engine: str, core: int | None, baseline: str | None = None):
        self.engine, self.core, self.baseline = engine, core, baseline
        self.proc = None
        self.buffer = b""

    def start(self, timeout: float = 600.0):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", self.engine]
        if self.core is not None:
            cmd += ["--core", str(self.core)]
        if self.baseline is not None:
            cmd += ["--baseline", self.baseline]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.buffer = b""
        line = self.read_line(timeout)
        if line is None or not json.loads(line).get("ready"):
            raise RuntimeError(f"{self.engine} worker failed to start")

    def read_line(self, timeout: float):
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return ""  # EOF: crashed
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def run(self, task: dict, timeout: float) -> dict:
        if self.proc is None:
            self.start()
        try:
            self.proc.stdin.write(json.dumps(task).encode() + b"\n")
            self.proc.stdin.flush()
            line = self.read_line(timeout)
        except BrokenPipeError:
            line = ""
        base = {"name": task["name"], "category": task["category"]}
        if line is None:
            self.stop()
            return {**base, "status": "timeout"}
        if line == "":
            code = self.proc.wait()
            self.proc = None
            return {**base, "status": "crash", "error": f"worker exit code {code}"}
        return json.loads(line)


def load_tasks(data_dir: str, limit: int | None) -> list[dict]:
    tasks = []
    for path in sorted(glob.glob(os.path.join(data_dir, "*.jsonl.gz"))):
        with gzip.open(path, "rt") as f:
            for n, line in enumerate(f):
                if limit is not None and n >= limit:
                    break
                item = json.loads(line)
                schema = item["schema"]
                tests = []
                for test in item["tests"]:
                    plain = json.dumps(test["data"])
                    try:
                        ordered = json.dumps(schema_ordered(test["data"], schema, schema))
                    except Exception:  # noqa: BLE001
                        ordered = plain
                    tests.append({"valid": bool(test["valid"]), "text": ordered,
                                  "reordered": ordered != plain, "plain": plain})
                tasks.append({"name": item.get("name", f"{n}"),
                              "category": item.get("category", os.path.basename(path)),
                              "schema": schema, "tests": tests})
    return tasks


def _pct(values, qs):
    if not len(values):
        return {name: None for name, _ in qs}
    arr = np.asarray(values, dtype=np.float64)
    return {name: (float(arr.max()) if q == 100 else float(np.percentile(arr, q)))
            for name, q in qs}


def summarize(engine: str, results: list[dict]) -> dict:
    compiled = [r for r in results if r["status"] == "ok"]
    tbm = [x for r in compiled for x in r["tbm_us"]]
    tests = [t for r in compiled for t in r["tests"]]
    summary = {
        "schemas": len(results),
        "compiled": len(compiled),
        "compile_errors": sum(r["status"] == "compile_error" for r in results),
        "valid_rejected": sum(t["valid"] and not t["accepted"] for t in tests),
        "invalid_accepted": sum((not t["valid"]) and t["accepted"] for t in tests),
        "timeouts": sum(r["status"] == "timeout" for r in results),
        "crashes": sum(r["status"] == "crash" for r in results),
        "tests": len(tests),
        "tokens": len(tbm),
        "ttfm_us": _pct([r["ttfm_us"] for r in compiled],
                        [("p50", 50), ("p90", 90), ("p99", 99), ("max", 100)]),
        "ttfm_warm_us": _pct([r["ttfm_warm_us"] for r in compiled if "ttfm_warm_us" in r],
                             [("p50", 50), ("p90", 90), ("p99", 99), ("max", 100)]),
        "tbm_us": {"mean": float(np.mean(tbm)) if tbm else None,
                   **_pct(tbm, [("p50", 50), ("p99", 99), ("p999", 99.9), ("max", 100)])},
        "tbm_retimed": sum(r.get("tbm_retimed", 0) for r in compiled),
        "tbm_raw_max_us": max((r.get("tbm_raw_max_us", 0.0) for r in compiled), default=None),
    }
    return {"engine": engine, "summary": summary}


def markdown_table(reports: list[dict]) -> str:
    def f(x, scale=1.0, digits=0):
        return "-" if x is None else f"{x / scale:,.{digits}f}"

    lines = ["| engine | schemas | compiled | compile errors | valid rejected | invalid accepted"
             " | timeouts | crashes | tokens | TTFM p50 / p90 / p99 / max (ms) | warm TTFM p50 /"
             " p99 (ms) | TBM mean / p50 / p99 / p99.9 / max (µs) | retimed |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---:|"]
    for rep in reports:
        s = rep["summary"]
        t, w, b = s["ttfm_us"], s.get("ttfm_warm_us") or {}, s["tbm_us"]
        lines.append(
            f"| {rep['engine']} | {s['schemas']} | {s['compiled']} | {s['compile_errors']} | "
            f"{s['valid_rejected']} | {s['invalid_accepted']} | {s['timeouts']} | "
            f"{s['crashes']} | {s['tokens']:,} | "
            f"{f(t['p50'], 1e3, 2)} / {f(t['p90'], 1e3, 2)} / {f(t['p99'], 1e3, 2)} / "
            f"{f(t['max'], 1e3, 2)} | {f(w.get('p50'), 1e3, 3)} / {f(w.get('p99'), 1e3, 3)} | "
            f"{f(b['mean'], 1, 1)} / {f(b['p50'], 1, 1)} / "
            f"{f(b['p99'], 1, 1)} / {f(b['p999'], 1, 1)} / {f(b['max'], 1, 0)} | "
            f"{s.get('tbm_retimed', 0)} |")
    return "\n".join(lines) + "\n"


RATIO_ROWS = [("TTFM p50 (cold)", "ttfm_us", "p50"), ("TTFM p99 (cold)", "ttfm_us", "p99"),
              ("TTFM max (cold)", "ttfm_us", "max"),
              ("TTFM p50 (warm)", "ttfm_warm_us", "p50"),
              ("TTFM p99 (warm)", "ttfm_warm_us", "p99"),
              ("TBM mean", "tbm_us", "mean"), ("TBM p50", "tbm_us", "p50"),
              ("TBM p99", "tbm_us", "p99"), ("TBM p99.9", "tbm_us", "p999"),
              ("TBM max", "tbm_us", "max")]


def ratio_table(common: list[dict]) -> str:
    """The first engine's figures over each other engine's, on the schemas all compiled."""
    base = common[0]
    lines = []
    for other in common[1:]:
        lines += [f"| figure | {base['engine']} | {other['engine']} | ratio |",
                  "|---|---:|---:|---:|"]
        for label, key, stat in RATIO_ROWS:
            a = (base["summary"].get(key) or {}).get(stat)
            b = (other["summary"].get(key) or {}).get(stat)
            unit, scale = ("ms", 1e3) if key.startswith("ttfm") else ("µs", 1.0)
            if a is None or b is None:
                continue
            lines.append(f"| {label} ({unit}) | {a / scale:,.3f} | {b / scale:,.3f} | "
                         f"{a / b:.2f}x |")
        lines.append("")
    return "\n".join(lines)


def plot_tbm(reports: list[dict], path: str) -> None:
    """TBM histogram, TBM tail and the TTFM distributions (cold and warm) per engine."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(17, 4.8))
    for rep in reports:
        ok = [r for r in rep["per_schema"] if r["status"] == "ok"]
        tbm = np.asarray([x for r in ok for x in r["tbm_us"]])
        if not tbm.size:
            continue
        tbm = np.maximum(tbm, 0.1)
        bins = np.logspace(-1, np.log10(max(tbm.max(), 10.0)) + 0.1, 120)
        ax1.hist(tbm, bins=bins, histtype="step", label=rep["engine"], linewidth=1.3)
        xs = np.sort(tbm)
        ax2.plot(xs, 1.0 - np.arange(xs.size) / xs.size, label=rep["engine"])
        for key, style in (("ttfm_us", "-"), ("ttfm_warm_us", ":")):
            ys = np.sort([r[key] / 1e3 for r in ok if key in r])
            if ys.size:
                ax3.plot(ys, np.arange(1, ys.size + 1) / ys.size, style,
                         label=f"{rep['engine']} ({'cold' if key == 'ttfm_us' else 'warm'})")
    ax1.set(xscale="log", yscale="log", xlabel="time between masks (µs)", ylabel="tokens",
            title="TBM distribution")
    ax2.set(xscale="log", yscale="log", xlabel="time between masks (µs)",
            ylabel="fraction of tokens slower", title="TBM tail (1 - CDF)")
    ax3.set(xscale="log", xlabel="time to first mask (ms)", ylabel="fraction of schemas",
            title="TTFM distribution (CDF)")
    for ax in (ax1, ax2, ax3):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle(f"MaskBench ({', '.join(r['engine'] for r in reports)}; schemas each "
                 "compiled), Llama-3 128k tokenizer, one core")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def common_subset(reports: list[dict]) -> list[dict]:
    """Each engine's summary over the schemas that every engine compiled (like for like)."""
    names = None
    for rep in reports:
        ok = {r["name"] for r in rep["per_schema"] if r["status"] == "ok"}
        names = ok if names is None else names & ok
    out = []
    for rep in reports:
        subset = [r for r in rep["per_schema"] if r["name"] in names]
        out.append({"engine": rep["engine"], **summarize(rep["engine"], subset),
                    "per_schema": subset})
    return out


def write_report(reports, md_path, plot_path, command=""):
    text = "# MaskBench results\n\n"
    if command:
        text += f"Command: `{command}`\n\n"
    first = reports[0]
    text += (f"Llama-3 tokenizer (128,256 ids), one core, {first.get('machine', '')}; "
             f"limit per category: {first.get('limit_per_category')}, timeout "
             f"{first.get('timeout_s')} s per schema; engines interleaved per schema; caches "
             f"{first.get('caches', 'kept')}.\n\n## All schemas\n\n")
    text += markdown_table(reports)
    if len(reports) > 1:
        common = common_subset(reports)
        text += (f"\n## Schemas every engine compiled ({common[0]['summary']['schemas']}): "
                 "like-for-like timing\n\n")
        text += markdown_table(common)
        text += ("\n## Ratios on those schemas (first engine / other; TBM samples above "
                 f"{RETIME_ABOVE_US / 1e3:.0f} ms re-timed {RETIMES} times, minimum kept)\n\n")
        text += ratio_table(common)
    with open(md_path, "w") as f:
        f.write(text)
    plot_tbm(common_subset(reports) if len(reports) > 1 else reports, plot_path)
    print(text)
    print(f"wrote {md_path} and {plot_path}")


def default_core() -> int | None:
    if hasattr(os, "sched_getaffinity"):
        return max(os.sched_getaffinity(0))
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", action="append", choices=ENGINES)
    parser.add_argument("--tokenizer", default="llama3", choices=["llama3"])
    parser.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                       "shared", "data", "maskbench"))
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "maskbench_{engine}.json.gz"),
                        help="per-engine result file ({engine} is replaced; .gz: gzip)")
    parser.add_argument("--limit-per-category", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per schema")
    parser.add_argument("--core", type=int, default=None, help="CPU core of the worker")
    parser.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--baseline", default=None,
                        help="checkout that engine jaxguide-baseline runs (see above)")
    parser.add_argument("--report", nargs="+", help="make the table/plot from result files")
    parser.add_argument("--keep-caches", action="store_true",
                        help="do not clear schema-keyed caches before each schema")
    parser.add_argument("--md", default=None)
    parser.add_argument("--plot", default=None)
    args = parser.parse_args()
    if args.worker:
        worker_main(args.worker, args.core, args.baseline)
        return
    if "jaxguide-baseline" in (args.engine or []) and not args.baseline:
        parser.error("--engine jaxguide-baseline needs --baseline DIR")
    results_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    md = args.md or os.path.join(results_dir, "maskbench.md")
    plot = args.plot or os.path.join(results_dir, "maskbench_tbm.png")
    if args.report:
        reports = []
        for path in args.report:
            with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
                reports.append(json.load(f))
        write_report(reports, md, plot, command=reports[0].get("command", ""))
        return
    engines = args.engine or ["jaxguide"]
    core = args.core if args.core is not None else default_core()
    tasks = load_tasks(args.data, args.limit_per_category)
    print(f"{len(tasks)} schemas, {sum(len(t['tests']) for t in tasks)} instances; "
          f"worker on core {core}", flush=True)
    results = run_interleaved(engines, tasks, core, args)
    command = "python " + " ".join(sys.argv)
    reports = []
    for engine in engines:
        report = summarize(engine, results[engine])
        report.update(command=command, tokenizer="llama3 (128,256 ids)",
                      data=os.path.abspath(args.data),
                      limit_per_category=args.limit_per_category, timeout_s=args.timeout,
                      caches="warm" if args.keep_caches else "cleared per schema",
                      machine=platform.machine(), core=core, engines=engines,
                      per_schema=results[engine])
        out = args.out.format(engine=engine) if "{engine}" in args.out else (
            args.out if len(engines) == 1 else args.out.replace(".json", f"_{engine}.json"))
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with (gzip.open(out, "wt") if out.endswith(".gz") else open(out, "w")) as f:
            json.dump(report, f)
        print(f"{engine}: {json.dumps(report['summary'])}", flush=True)
        print(f"wrote {out}", flush=True)
        reports.append(report)
    if len(reports) > 1:
        write_report(reports, md, plot, command=command)


def run_interleaved(engines, tasks, core, args) -> dict:
    """Runs every schema on every engine, engines alternating per schema (A B, then B A, ...)
    on one core, so that machine drift falls on all engines alike."""
    workers = {engine: Worker(engine, core, args.baseline) for engine in engines}
    for worker in workers.values():
        worker.start()
    results: dict = {engine: [] for engine in engines}
    start = time.monotonic()
    for i, task in enumerate(tasks):
        task = {**task, "clear": not args.keep_caches, "warm": True}
        for engine in (engines if i % 2 == 0 else engines[::-1]):
            result = workers[engine].run(task, args.timeout)
            results[engine].append(result)
            if result["status"] in ("timeout", "crash"):
                print(f"  {engine}: {task['category']}/{task['name']}: {result['status']}",
                      flush=True)
        if (i + 1) % 500 == 0:
            print(f"  {i + 1}/{len(tasks)} ({time.monotonic() - start:.0f}s)", flush=True)
    for worker in workers.values():
        worker.stop()
    print(f"  done in {time.monotonic() - start:.0f}s", flush=True)
    return results


if __name__ == "__main__":
    main()
