"""Inputs of the fuzzer (`jaxguide.testing.fuzzing`): the seed corpus and its mutators.

Design note. Seeds are what jaxguide ships and tests against: the MaskBench regexes of
tests/data/maskbench_patterns.json, the JSON Schemas of tests/data/soundness_schemas.jsonl.gz,
the Lark grammars of tests/support/grammar_corpus.py and every grammar bundled with `lark`
(`load_seeds`). A case takes one seed and applies a few mutations (none for some cases, so
every front end keeps a share of inputs that compile and get walked):

  regex / Lark text  byte-level (replace, insert or delete a character from an alphabet of
                     metacharacters, digits, non-ASCII and lone surrogates; duplicate or drop a
                     span; splice a prefix of one seed onto the suffix of another) and
                     structural (wrap a span in a group with `*`, `+?`, `{m,n}` with small and
                     huge bounds, Lark's `~n` / `~m..n`; alternation or concatenation with
                     another seed; deep nesting; lookarounds and backreferences; for Lark,
                     rewrite one rule's body, drop or duplicate a rule, add a recursive rule);
  JSON Schema        structure-aware, on a random object node of the schema: set a keyword
                     (plausible or wrong-typed values, huge numbers, `$ref`s), delete or retype
                     a keyword, wrap the node in a combinator / array / object, splice in a
                     subschema of another seed, nest it deeply, a big `enum`; sometimes the
                     schema goes as (mutated) JSON text;
  requests           a JSONL request line of the batch job around a seed constraint, with
                     wrong-typed fields, unknown keys, sampling junk, text-level damage and
                     deep nesting.

Every mutator draws from the `random.Random` it is given, so `make_case(seeds, seed, index)`
is a pure function: a case is rebuilt from (seed, index), and a case dict replays by itself.
"""

from __future__ import annotations

import copy
import dataclasses
import gzip
import importlib.util
import json
import os
import pathlib
import random
import re
from typing import Any

import lark

from jaxguide.testing.generators import random_regex

FRONT_ENDS = ("regex", "lark", "json_schema", "request")
_FRONT_END_WEIGHTS = (0.3, 0.2, 0.3, 0.2)
TOKENIZERS = ("llama3", "mistral")
_CHARS = ("()[]{}|*+?\\^$.-,:~/\"'!#%&<>=_ \n\t0123456789azAZ" + "é日\u0000\udc80\U0001f600")
_SNIPPETS = ("(?=a)", "(?!b)", "(?<=c)", r"\1", "(?P<n>x)(?P=n)", r"\b", "(?i)", "(?s:.)",
             "[^]", "[z-a]", r"\p{L}", "{1000000}", "{2,1}", "{0,65536}", "a**", "(?#c)",
             r"\x{41}", r"\u00e9", "[[:alpha:]]", "(?>a)", "a++", "$^", "\\", "[\\d-z]")
_QUANTIFIERS = ("*", "+", "?", "*?", "+?", "{2}", "{0,3}", "{2,5}", "{3,}", "{0,100}",
                "{1000}", "{100,1000}", "{0,65535}", "{65536}")
_LARK_QUANTIFIERS = ("*", "+", "?", "~2", "~6", "~1..4", "~0..30", "~200", "~3..1")
_NEST_DEPTHS = (8, 30, 100, 400, 2000)
_SCHEMA_NUMBERS = (0, 1, 2, 5, 100, -1, 2.5, 10**6, 10**18, 10**400, 1e308, -1e308, 1e-300,
                   0.1, 1.5e9, 2**31, 2**63, "5", None, True, float("inf"), float("nan"))
_JSON_SNIPPETS = ("9" * 5000, "1e400", "NaN", "-Infinity", '"\\ud800"', "[" * 3000, "{}",
                  '"a":1,', "null", "-0", "1e-400", "[]")
_FORMATS = ("date-time", "date", "time", "email", "uuid", "ipv4", "ipv6", "uri", "hostname",
            "duration", "regex", "uri-reference", "not-a-format", "")
_TYPES = ("string", "integer", "number", "boolean", "null", "object", "array")
_COUNT_KEYWORDS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties",
                   "maxProperties", "minContains", "maxContains")
_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_SUBSCHEMA_KEYWORDS = ("items", "additionalProperties", "not", "contains", "propertyNames",
                       "if", "then", "else", "additionalItems", "unevaluatedProperties")
_LIST_KEYWORDS = ("anyOf", "oneOf", "allOf", "prefixItems")
_KEYWORDS = (("type", "enum", "const", "pattern", "format", "required", "properties",
              "patternProperties", "uniqueItems", "$ref", "$defs", "definitions",
              "dependentRequired", "default", "title")
             + _COUNT_KEYWORDS + _NUMBER_KEYWORDS + _SUBSCHEMA_KEYWORDS + _LIST_KEYWORDS)
_MAX_FRAGMENTS = 6000
# Mutations that reach bugs known and being fixed elsewhere (issue #22): deep nesting
# (RecursionErrors in lark's tree and the front ends) and Lark repetition ranges (expansion
# blowups). `make_case(..., mild=True)` leaves them out (the CI run); the long run has them.
_MILD_NEST_DEPTHS = (8, 30)
_MILD_LARK_QUANTIFIERS = ("*", "+", "?", "~2", "~3..1")


@dataclasses.dataclass
class Seeds:
    """The seed corpus: regexes, JSON Schemas (and their subschemas), Lark grammar texts."""

    regexes: list[str]
    schemas: list[Any]
    lark: list[str]
    fragments: list[Any] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.fragments:
            for schema in self.schemas:
                self.fragments.extend(_object_nodes(schema)[:60])
            del self.fragments[_MAX_FRAGMENTS:]


def _corpus_module(root: pathlib.Path):
    path = root / "tests" / "support" / "grammar_corpus.py"
    spec = importlib.util.spec_from_file_location("_jaxguide_fuzz_grammar_corpus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_seeds(root: str | os.PathLike[str]) -> Seeds:
    """The seed corpus of a jaxguide checkout at `root` (see the module docstring)."""
    root = pathlib.Path(root)
    with open(root / "tests" / "data" / "maskbench_patterns.json", encoding="utf-8") as f:
        regexes = [p for p in json.load(f) if isinstance(p, str)]
    rng = random.Random(0)
    regexes += [random_regex(rng) for _ in range(200)]
    with gzip.open(root / "tests" / "data" / "soundness_schemas.jsonl.gz", "rt",
                   encoding="utf-8") as f:
        schemas = [json.loads(line)["schema"] for line in f if line.strip()]
    corpus = _corpus_module(root)
    texts = [corpus.JSON_LARK, corpus.PYTHON_SUBSET, *corpus.TRICKY.values()]
    for name in corpus.BUNDLED:
        try:
            texts.append(corpus.bundled_grammar(name))
        except OSError:  # a package of the corpus not installed
            pass
    lark_dir = pathlib.Path(lark.__file__).parent / "grammars"
    texts += [p.read_text(encoding="utf-8") for p in sorted(lark_dir.glob("*.lark"))]
    return Seeds(regexes, schemas, texts)


# ------------------------------------------------------------------------------ text level


def _span(rng: random.Random, text: str) -> tuple[int, int]:
    if not text:
        return 0, 0
    a = rng.randrange(len(text))
    return a, min(len(text), a + 1 + int(rng.expovariate(0.2)))


def mutate_text(rng: random.Random, text: str, other: str) -> str:
    """One byte-level mutation: replace / insert / delete a character, duplicate or drop a
    span, insert a snippet, splice with `other`."""
    op = rng.randrange(7)
    a, b = _span(rng, text)
    if op == 0 and text:
        return text[:a] + rng.choice(_CHARS) + text[a + 1:]
    if op == 1:
        return text[:a] + rng.choice(_CHARS) + text[a:]
    if op == 2:
        return text[:a] + text[b:]
    if op == 3:
        return text[:b] + text[a:b] + text[b:]
    if op == 4:
        return text[:a] + rng.choice(_SNIPPETS) + text[a:]
    if op == 5:
        c = rng.randint(0, len(other))
        return text[:a] + other[c:]
    c, d = _span(rng, other)
    return text[:a] + other[c:d] + text[a:]


def _balanced_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each parenthesized group of a regex (escapes and classes skipped)."""
    spans, stack, i, in_class = [], [], 0, False
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            stack.append(i)
        elif c == ")" and stack:
            spans.append((stack.pop(), i + 1))
        i += 1
    return spans


def mutate_regex(rng: random.Random, pattern: str, other: str, mild: bool = False) -> str:
    """One regex mutation: structural (wrap a group or the whole in a quantified group,
    alternation / concatenation with `other`, deep nesting) or byte-level."""
    op = rng.random()
    spans = _balanced_spans(pattern)
    a, b = rng.choice(spans) if spans and rng.random() < 0.6 else (0, len(pattern))
    if op < 0.25:
        inner = rng.choice(("(?:%s)", "(%s)", "(?:%s|x)", "(?:%s)?"))
        return pattern[:a] + inner % pattern[a:b] + rng.choice(_QUANTIFIERS) + pattern[b:]
    if op < 0.35:
        return f"(?:{pattern})|(?:{other})" if rng.random() < 0.5 else pattern + other
    if op < 0.38:
        depth = rng.choice(_MILD_NEST_DEPTHS if mild else _NEST_DEPTHS)
        return pattern[:a] + "(" * depth + pattern[a:b] + ")" * depth + pattern[b:]
    return mutate_text(rng, pattern, other)


_RULE = re.compile(r"^(\s*[?!]?[_A-Za-z][_A-Za-z0-9]*(?:\.-?\d+)?\s*:)(.*)$")


def mutate_lark(rng: random.Random, text: str, other: str, mild: bool = False) -> str:
    """One Lark mutation: rewrite a rule's body (wrap with `*`, `~n`, `~m..n`, `[...]`,
    inline alternatives, deep nesting, another grammar's body), drop, duplicate or add a rule,
    or a byte-level mutation."""
    lines = text.split("\n")
    rules = [i for i, line in enumerate(lines) if _RULE.match(line)]
    op = rng.random()
    if not rules or op < 0.3:
        return mutate_text(rng, text, other)
    i = rng.choice(rules)
    head, body = _RULE.match(lines[i]).groups()
    if op < 0.6:
        quantifier = rng.choice(_MILD_LARK_QUANTIFIERS if mild else _LARK_QUANTIFIERS)
        body = (f" ({body.strip()} | \"x\"){quantifier}" if rng.random() < 0.3
                else f" ({body.strip()}){quantifier}")
    elif op < 0.66:
        body = f" [{body.strip()}]"
    elif op < 0.7:
        depth = rng.choice(_MILD_NEST_DEPTHS if mild else _NEST_DEPTHS)
        body = " " + "(" * depth + body.strip() + ")" * depth
    elif op < 0.78:
        other_rules = [m.group(2) for m in map(_RULE.match, other.split("\n")) if m]
        body = rng.choice(other_rules) if other_rules else body
    elif op < 0.84:
        del lines[i]
        return "\n".join(lines)
    elif op < 0.9:
        lines.insert(i, lines[i])
        return "\n".join(lines)
    else:
        name = head.strip().rstrip(":").lstrip("?!").split(".")[0]
        lines.append(f"fz_{i}: \"a\" fz_{i} \"b\" | {name}" if name.islower()
                     else f"FZ_{i}: /[a-c]+/ | {name}")
        body = f" {body.strip()} fz_{i}?" if name.islower() else body
    lines[i] = head + body
    return "\n".join(lines)


# ------------------------------------------------------------------------------ JSON Schema


def _object_nodes(value: Any, limit: int = 400) -> list[Any]:
    """The dicts inside a JSON value, outermost first (at most `limit`)."""
    out, stack = [], [value]
    while stack and len(out) < limit:
        node = stack.pop(0)
        if isinstance(node, dict):
            out.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


def _json_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.randrange(9 if depth < 3 else 6)
    if roll == 0:
        return rng.choice(("", "a", "é日", "\udc80", "x" * rng.choice((1, 50, 5000)), "null"))
    if roll == 1:
        return rng.choice(_SCHEMA_NUMBERS)
    if roll in (2, 3):
        return rng.choice((None, True, False, 0, -0.0, 3))
    if roll in (4, 5):
        return rng.choice(("abc", "0", "true", " ", "\n", '"'))
    if roll in (6, 7):
        return [_json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(("a", "b", "", "$ref", "type")): _json_value(rng, depth + 1)
            for _ in range(rng.randint(0, 3))}


def _small_schema(rng: random.Random, seeds: Seeds) -> Any:
    roll = rng.random()
    if roll < 0.4 and seeds.fragments:
        return copy.deepcopy(rng.choice(seeds.fragments))
    if roll < 0.5:
        return rng.choice((True, False, {}))
    schema: dict[str, Any] = {"type": rng.choice(_TYPES)}
    if rng.random() < 0.5:
        key = rng.choice(_KEYWORDS)
        schema[key] = _keyword_value(rng, key, seeds, shallow=True)
    return schema


def _keyword_value(rng: random.Random, key: str, seeds: Seeds, shallow: bool = False) -> Any:
    """A value for a keyword: usually of the right shape, sometimes anything at all."""
    if rng.random() < 0.15:
        return _json_value(rng)
    if key == "type":
        return rng.choice(_TYPES) if rng.random() < 0.7 else rng.sample(_TYPES, 2)
    if key in _COUNT_KEYWORDS or key in _NUMBER_KEYWORDS:
        return rng.choice(_SCHEMA_NUMBERS)
    if key == "pattern":
        return rng.choice(seeds.regexes)
    if key == "format":
        return rng.choice(_FORMATS)
    if key == "enum":
        size = rng.choice((0, 1, 3, 5, 200, 5000)) if not shallow else rng.randint(0, 3)
        return [_json_value(rng) if rng.random() < 0.3 else f"v{i}" for i in range(size)]
    if key in ("const", "default", "title"):
        return _json_value(rng)
    if key in ("required", "dependentRequired"):
        names = [rng.choice(("a", "b", "id", "", "é")) for _ in range(rng.randint(0, 3))]
        return names if key == "required" else {"a": names}
    if key == "uniqueItems":
        return rng.random() < 0.5
    if key == "$ref":
        return rng.choice(("#", "#/$defs/a", "#/definitions/a", "#/properties/a", "#/x/y",
                           "other.json", "#/$defs/%25", "#/items/0"))
    if shallow:
        return rng.choice((True, {}, {"type": "string"}))
    if key in ("properties", "patternProperties", "$defs", "definitions"):
        names = ("a", "b", "^a+$", "[", "é") if key == "patternProperties" else ("a", "b", "c")
        return {rng.choice(names): _small_schema(rng, seeds) for _ in range(rng.randint(0, 3))}
    if key in _LIST_KEYWORDS:
        return [_small_schema(rng, seeds) for _ in range(rng.choice((0, 1, 2, 3, 8)))]
    return _small_schema(rng, seeds)


def _wrap_schema(rng: random.Random, node: Any, seeds: Seeds) -> Any:
    roll = rng.randrange(6)
    if roll < 3:
        key = _LIST_KEYWORDS[roll]
        return {key: [node, _small_schema(rng, seeds)][:rng.randint(1, 2)]}
    if roll == 3:
        return {"type": "array", "items": node, "minItems": rng.choice((0, 1, 3))}
    if roll == 4:
        return {"type": "object", "properties": {"a": node}, "required": ["a"]}
    return {"$defs": {"a": node}, "$ref": "#/$defs/a"}


def mutate_schema(rng: random.Random, schema: Any, seeds: Seeds) -> Any:
    """One structure-aware mutation of a JSON Schema (see the module docstring); `schema` is
    not modified."""
    schema = copy.deepcopy(schema)
    nodes = _object_nodes(schema)
    op = rng.random()
    if not nodes or op < 0.06:
        return _wrap_schema(rng, schema, seeds)
    node = rng.choice(nodes)
    if op < 0.4:
        key = rng.choice(_KEYWORDS)
        node[key] = _keyword_value(rng, key, seeds)
    elif op < 0.55 and node:
        del node[rng.choice(list(node))]
    elif op < 0.68 and node:
        node[rng.choice(list(node))] = _json_value(rng)
    elif op < 0.8:
        key = rng.choice(list(node)) if node else "items"
        node[key] = _wrap_schema(rng, node.get(key, {}), seeds)
    elif op < 0.9:
        node[rng.choice(("items", "not", "additionalProperties"))] = _small_schema(rng, seeds)
    elif op < 0.94:
        inner: Any = _small_schema(rng, seeds)
        for _ in range(rng.randint(2, 12)):
            inner = _wrap_schema(rng, inner, seeds) if rng.random() < 0.3 else {"items": inner}
        node["items"] = inner
    else:
        node.clear()
        small = _small_schema(rng, seeds)
        node.update(small if isinstance(small, dict) and rng.random() < 0.5 else {"anyOf": [
            {"enum": _keyword_value(rng, "enum", seeds)}, {"const": _json_value(rng)}]})
    return schema


# ------------------------------------------------------------------------------ requests


def _request(rng: random.Random, seeds: Seeds) -> dict[str, Any]:
    request: dict[str, Any] = {"id": rng.choice(("q1", 7, "", "é"))}
    request["prompt" if rng.random() < 0.8 else "messages"] = (
        "Write." if rng.random() < 0.8 else [{"role": "user", "content": "hi"}])
    kind = rng.choice(("json_schema", "regex", "lark", "choice", None))
    if kind == "json_schema":
        request[kind] = rng.choice(seeds.schemas)
    elif kind == "regex":
        request[kind] = rng.choice(seeds.regexes)
    elif kind == "lark":
        request[kind] = rng.choice(seeds.lark)
    elif kind == "choice":
        request[kind] = ["yes", "no", "é"][:rng.randint(0, 3)]
    if rng.random() < 0.5:
        request["sampling"] = {"kind": rng.choice(("greedy", "temperature", "top_k", "top_p",
                                                   "min_p")),
                               "temperature": rng.choice((0.7, 1.0, 1e-9, 1e308))}
    if rng.random() < 0.5:
        request["max_new_tokens"] = rng.choice((1, 64, 0, 10**12))
    return request


def mutate_request(rng: random.Random, text: str, seeds: Seeds) -> str:
    """One mutation of a request line: a field's value, a constraint, a key, or the text."""
    op = rng.random()
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict) or op < 0.3:
        if op < 0.03:
            depth = rng.choice((100, 1000, 100000))
            return text[:1] + '{"a":' * depth + "[" * depth + text[1:]
        if op < 0.15:
            a = rng.randint(0, len(text))
            return text[:a] + rng.choice(_JSON_SNIPPETS) + text[a:]
        return mutate_text(rng, text, rng.choice(seeds.regexes))
    key = rng.choice(("id", "prompt", "messages", "json_schema", "regex", "lark", "choice",
                      "sampling", "max_new_tokens", "seed", "unknown"))
    if op < 0.5 and key == "json_schema" and isinstance(data.get(key), dict):
        data[key] = mutate_schema(rng, data[key], seeds)
    elif op < 0.6 and key in data:
        del data[key]
    elif op < 0.7 and key == "sampling":
        data[key] = {rng.choice(("kind", "temperature", "top_k", "top_p", "min_p", "x")):
                     _json_value(rng)}
    else:
        data[key] = _json_value(rng)
    return json.dumps(data)


# ------------------------------------------------------------------------------ cases


def _mutations(rng: random.Random) -> int:
    """How many mutations a case gets: none for a sixth of the cases, else 1 + Geometric."""
    if rng.random() < 0.17:
        return 0
    n = 1
    while n < 8 and rng.random() < 0.4:
        n += 1
    return n


def nested_schema(schema: Any, depth: int, key: str) -> Any:
    """`schema` wrapped `depth` times in `key` (built iteratively, so any depth)."""
    for _ in range(depth):
        if key in ("anyOf", "oneOf", "allOf"):
            schema = {key: [schema]}
        elif key in ("properties", "$defs"):
            schema = {key: {"a": schema}, "$ref": "#/$defs/a"} if key == "$defs" else {
                "type": "object", key: {"a": schema}}
        else:
            schema = {key: schema}
    return schema


def make_case(seeds: Seeds, seed: int | str, index: int, mild: bool = False) -> dict[str, Any]:
    """Case `index` of the run seeded `seed`: {"id", "kind", "input", "tokenizer",
    "walk_seed"} (+ "lenient", "whitespace", "nest" for JSON Schema). JSON-serializable: a
    saved case replays without the seeds. `mild` leaves out the mutations of known bugs."""
    rng = random.Random(f"{seed}:{index}")
    kind = rng.choices(FRONT_ENDS, _FRONT_END_WEIGHTS)[0]
    case: dict[str, Any] = {"id": index, "kind": kind, "walk_seed": f"{seed}:{index}:walk",
                            "tokenizer": "llama3" if rng.random() < 0.8 else "mistral"}
    steps = _mutations(rng)
    if kind == "regex":
        value = rng.choice(seeds.regexes)
        for _ in range(steps):
            value = mutate_regex(rng, value, rng.choice(seeds.regexes), mild)
    elif kind == "lark":
        value = rng.choice(seeds.lark)
        for _ in range(steps):
            value = mutate_lark(rng, value, rng.choice(seeds.lark), mild)
    elif kind == "json_schema":
        value = rng.choice(seeds.schemas)
        for _ in range(steps):
            value = mutate_schema(rng, value, seeds)
        if rng.random() < 0.05:
            value = json.dumps(value)
            if rng.random() < 0.5:
                value = mutate_text(rng, value, "")
        if rng.random() < 0.03:  # built by the worker: a deep value does not pickle
            case["nest"] = {"depth": rng.choice(_MILD_NEST_DEPTHS if mild else _NEST_DEPTHS),
                            "key": rng.choice(("items", "anyOf", "oneOf", "allOf", "not",
                                               "properties", "$defs"))}
        case["lenient"] = rng.random() < 0.3
        case["whitespace"] = rng.choice(("flexible",) * 8 + ("compact", 2, 0, -1, "tabs", 10**9))
    else:
        value = json.dumps(_request(rng, seeds))
        for _ in range(steps if rng.random() < 0.7 else 0):
            value = mutate_request(rng, value, seeds)
        if rng.random() < 0.2:
            value += "\n" + json.dumps(_request(rng, seeds))
    case["input"] = value
    return case
