"""Many tools: time to first mask of a tool-call grammar for 10 / 100 / 500 tools, jaxguide,
llguidance and XGrammar side by side in the same run (each engine that is installed), cold and
warm.

The tools are every distinct tool of MaskBench's BFCL_* schemas (`--data`; see
soundness_tool_calls.py) plus each MCPspec schema as one tool's parameters: about 480. For N
tools (the first N of a seeded shuffle), time to first mask (TTFM) = build the grammar + compile
it + one mask of a fresh matcher, against the Llama-3 tokenizer, with tool_choice "auto" in the
Hermes / Qwen format (`<tool_call>{"name": ..., "arguments": ...}</tool_call>`).

  cold   in a fresh process per (engine, N) (the tokenizer loaded and one tiny grammar compiled
         first, so imports and tokenizer tables are not counted), nothing cached;
  warm   in the same process right after the cold run: the same N tools again (a new request
         with the same tools: jaxguide's schema and compiled-grammar caches), and "shifted":
         N tools of which 10% are new (jaxguide reuses the lowered IR of each repeated tool
         schema; the compiled grammar is new).

llguidance gets the same language as a Lark grammar with one `%json` alternative per tool
(its own free-text terminal is `/[^<]+/`, not the exact complement of the trigger: a compile
time comparison, not a language-for-language one). XGrammar gets its own structural tag for
this format (`xgrammar.get_model_structural_tag("qwen_3", tools, "auto")`: triggered tags
`<tool_call>\n{"name": "NAME", "arguments": ` + the tool's JSON Schema + `}\n</tool_call>`,
compiled by `GrammarCompiler.compile_structural_tag`, its default threads and cache), against
the same tokenizer (special tokens as empty tokens, EOS `<|eot_id|>`). A mask inside a call
(after `<tool_call>{"name": "`; for XGrammar, whose begin text fixes the layout, after
`<tool_call>\n{"name": "`) is timed too.

`--repeat R` runs each (engine, N) in R fresh processes and keeps each figure's minimum (the
machine's other load only ever adds time); `--core C` pins every worker to CPU C.

Usage:
  python benchmarks/bench_many_tools.py --data ../shared/data/maskbench --repeat 5 --core 1 \\
      --out benchmarks/results/many_tools.json [--plot benchmarks/results/many_tools.png]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import time

from soundness_tool_calls import tool_sets

SIZES = (10, 100, 500)
IN_CALL = '<tool_call>{"name": "'


def all_tools(data: str, seed: int) -> list[dict]:
    tools, seen = [], set()
    for _, group in tool_sets(data):
        for tool in group:
            if tool["function"]["name"] not in seen:
                seen.add(tool["function"]["name"])
                tools.append(tool)
    with gzip.open(os.path.join(data, "MCPspec.jsonl.gz"), "rt") as f:
        for k, line in enumerate(f):
            row = json.loads(line)
            tools.append({"type": "function", "function": {
                "name": f"mcp_{k}", "parameters": row["schema"]}})
    random.Random(seed).shuffle(tools)
    return tools


class Jaxguide:
    def __init__(self, encoding):
        import jaxguide

        self.jg = jaxguide
        self.info = jaxguide.TokenizerInfo.from_tiktoken(encoding)
        self.bitmask = jaxguide.allocate_token_bitmask(1, self.info.logits_width)

    def first_mask(self, tools):
        grammar = self.jg.tool_call_grammar(tools, "auto", format="hermes")
        matcher = self.jg.Matcher(self.jg.compile_grammar(grammar, self.info))
        matcher.fill_next_token_bitmask(self.bitmask)
        return matcher

    def mask_in_call(self, matcher):
        matcher.accept_tokens(self.info.encode(IN_CALL))
        matcher.fill_next_token_bitmask(self.bitmask)


class Llguidance:
    def __init__(self, encoding):
        import llguidance
        import llguidance.numpy as lln
        import llguidance.tiktoken

        self.ll, self.lln, self.encoding = llguidance, lln, encoding
        eos = encoding.encode("<|eot_id|>", allowed_special="all")[0]
        self.tokenizer = llguidance.tiktoken.lltokenizer_from_encoding(encoding, eos_token=eos)
        self.bitmask = lln.allocate_token_bitmask(1, self.tokenizer.vocab_size)

    def first_mask(self, tools):
        alternatives, bodies = [], []
        from jaxguide.grammars.tool_calls import parse_tools
        from jaxguide.grammars.tool_formats import FORMATS

        for k, tool in enumerate(parse_tools(tools)):  # the same call schemas as jaxguide's
            schema = {**FORMATS["hermes"].call_schema(tool),  # formats it lacks: ignored
                      "x-guidance": {"lenient": True, "whitespace_flexible": True}}
            alternatives.append(f"c{k}")
            bodies.append(f"c{k}: %json {json.dumps(schema)}")
        text = ("start: TEXT? (call TEXT?)*\n"
                f'call: "<tool_call>" "\\n"? ({" | ".join(alternatives)}) "\\n"? '
                '"</tool_call>"\n' + "\n".join(bodies) + "\nTEXT: /[^<]+/\n")
        grammar = self.ll.LLMatcher.grammar_from_lark(text)
        matcher = self.ll.LLMatcher(self.tokenizer, grammar)
        if matcher.is_error():
            raise ValueError(matcher.get_error())
        self.lln.fill_next_token_bitmask(matcher, self.bitmask)
        return matcher

    def mask_in_call(self, matcher):
        for token in self.encoding.encode(IN_CALL):
            matcher.consume_token(token)
        self.lln.fill_next_token_bitmask(matcher, self.bitmask)


class Xgrammar:
    def __init__(self, encoding):
        import xgrammar

        self.xgr, self.encoding = xgrammar, encoding
        special = set(encoding._special_tokens.values())
        vocab = [b"" if i in special else encoding.decode_single_token_bytes(i)
                 for i in range(encoding.n_vocab)]
        eos = encoding.encode("<|eot_id|>", allowed_special="all")[0]
        info = xgrammar.TokenizerInfo(vocab, xgrammar.VocabType.RAW,
                                      vocab_size=encoding.n_vocab, stop_token_ids=[eos])
        self.compiler = xgrammar.GrammarCompiler(info)
        self.bitmask = xgrammar.allocate_token_bitmask(1, info.vocab_size)

    def first_mask(self, tools):
        tag = self.xgr.get_model_structural_tag("qwen_3", tools=tools, tool_choice="auto",
                                                reasoning="disabled")
        matcher = self.xgr.GrammarMatcher(self.compiler.compile_structural_tag(tag))
        matcher.fill_next_token_bitmask(self.bitmask)
        return matcher

    def mask_in_call(self, matcher):
        for token in self.encoding.encode(IN_CALL.replace(">{", ">\n{")):
            if not matcher.accept_token(token):
                raise ValueError("XGrammar refused the call's opening")
        matcher.fill_next_token_bitmask(self.bitmask)


ENGINES = {"jaxguide": Jaxguide, "llguidance": Llguidance, "xgrammar": Xgrammar}


def installed(engine: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(engine) is not None


def measure(engine_name: str, n: int, data: str, seed: int) -> dict:
    """One (engine, N): cold, warm (same tools), warm shifted (10% new tools), in-call mask."""
    import tiktoken  # noqa: F401 - the encoding loader below needs it

    from jaxguide import assets

    encoding = assets.llama3_tiktoken_encoding()
    tools = all_tools(data, seed)
    engine = ENGINES[engine_name](encoding)
    engine.first_mask(tools[-1:])  # warm-up: imports, tables (a tool outside every N)
    result = {"engine": engine_name, "tools": n}
    try:
        for label, chosen in (("cold_s", tools[:n]), ("warm_same_s", tools[:n]),
                              ("warm_shifted_s", tools[:n - max(1, n // 10)] +
                               tools[n:n + max(1, n // 10)])):
            start = time.perf_counter()
            matcher = engine.first_mask(chosen)
            result[label] = round(time.perf_counter() - start, 4)
        start = time.perf_counter()
        engine.mask_in_call(matcher)
        result["mask_in_call_s"] = round(time.perf_counter() - start, 5)
    except Exception as e:  # noqa: BLE001 - reported in the results
        result["error"] = f"{type(e).__name__}: {str(e)[:300]}"
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--engines", default="jaxguide,llguidance,xgrammar",
                        help="those installed are run")
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--repeat", type=int, default=1,
                        help="fresh processes per (engine, N); each figure's minimum is kept")
    parser.add_argument("--core", type=int, default=None, help="pin the workers to this CPU")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="tool counts (the first N tools)")
    parser.add_argument("--out", default=None)
    parser.add_argument("--plot", default=None)
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # engine N (a worker)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one[0], int(args.one[1]), args.data, args.seed)))
        return 0
    rows = []
    engines = [e for e in args.engines.split(",") if installed(e)]
    pin = ["taskset", "-c", str(args.core)] if args.core is not None else []
    for n in map(int, args.sizes.split(",")):
        for engine in engines:
            runs = []
            for _ in range(max(1, args.repeat)):
                done = subprocess.run(pin + [sys.executable, __file__, "--data", args.data,
                                             "--seed", str(args.seed), "--one", engine, str(n)],
                                      capture_output=True, text=True, timeout=1800)
                runs.append(json.loads(done.stdout.strip().splitlines()[-1])
                            if done.returncode == 0 else
                            {"engine": engine, "tools": n, "error": done.stderr[-500:]})
            row = best_of(runs)
            print(json.dumps(row), flush=True)
            rows.append(row)
    result = {"config": vars(args), "tools_available": len(all_tools(args.data, args.seed)),
              "rows": rows}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    if args.plot:
        plot(rows, args.plot)
    return 0


def best_of(runs: list[dict]) -> dict:
    """One row from repeated runs of one (engine, N): each timing's minimum (an error row when
    any run failed)."""
    failed = [r for r in runs if "error" in r]
    if failed:
        return failed[0]
    row = dict(runs[0])
    for key in row:
        if key.endswith("_s"):
            row[key] = min(r[key] for r in runs)
    if len(runs) > 1:
        row["runs"] = len(runs)
    return row


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for engine in sorted({r["engine"] for r in rows}):
        for key, style in (("cold_s", "-o"), ("warm_shifted_s", "--s")):
            points = [(r["tools"], r[key]) for r in rows if r["engine"] == engine and key in r]
            if points:
                ax.plot(*zip(*points), style, label=f"{engine} {key[:-2]}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tools")
    ax.set_ylabel("time to first mask (s)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
