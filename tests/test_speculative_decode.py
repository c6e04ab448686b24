"""Grammar-driven speculative decoding (jaxguide.speculative_decode) with SmolLM2 on CPU: the
tokens are exactly those of non-speculative greedy decoding with the same grammars (forced
tokens included: they are verified, so where the model prefers another tokenization of the
forced text than fast-forward's canonical one, the model's wins), while a warmed-up predictor
saves forward passes."""

from __future__ import annotations

import pytest

import jaxguide
from jaxguide.decode import DecodeStats
from jaxguide.speculative_decode import (GrammarPredictor, SpeculationStats,
                                         generate_speculative)

SCHEMA = {"type": "object",
          "properties": {"name": {"type": "string", "maxLength": 32},
                         "age": {"type": "integer", "minimum": 0, "maximum": 120},
                         "occupation": {"type": "string", "maxLength": 32},
                         "city": {"type": "string", "maxLength": 32}},
          "required": ["name", "age", "occupation", "city"], "additionalProperties": False}
FIELDS = "as a JSON object with name, age, occupation and city."


def chat(text):
    return [{"role": "user", "content": text}]


@pytest.fixture(scope="module")
def smollm2():
    from jaxguide.models import smollm2 as loader

    return loader.load()


def test_speculation_gives_exactly_the_greedy_tokens(smollm2):
    model, info = smollm2
    person = jaxguide.Grammar.from_json_schema(SCHEMA, whitespace="compact")
    warmup = [jaxguide.Request(messages=chat(f"Describe {who} {FIELDS}"), grammar=person)
              for who in ("a German doctor", "a Kenyan runner", "an Italian painter")]
    batch = [
        jaxguide.Request(messages=chat(f"Describe a French chef {FIELDS}"), grammar=person),
        jaxguide.Request(messages=chat(f"Describe a retired teacher {FIELDS}"), grammar=person),
        jaxguide.Request(messages=chat("When did the Berlin Wall fall? A date."),
                         grammar=jaxguide.Grammar.from_regex(r"(19|20)\d\d-[01]\d-[0-3]\d")),
        jaxguide.Request(messages=chat("Is Paris in France? yes or no"),
                         grammar=jaxguide.Grammar.choice(["yes", "no"])),
        jaxguide.Request(messages=chat("What is the capital of France?")),
    ]
    plain_stats = DecodeStats()
    reference = jaxguide.generate(model, info, batch, max_new_tokens=40, stats=plain_stats,
                                  fast_forward=False)

    predictor = GrammarPredictor()
    generate_speculative(model, info, warmup, predictor=predictor, max_new_tokens=40)
    assert len(predictor) > 0
    stats = SpeculationStats()
    results = generate_speculative(model, info, batch, predictor=predictor, max_new_tokens=40,
                                   stats=stats)
    # The batch is one where fast-forward's canonical forced tokens are not what the model
    # writes (so appending forced tokens instead of verifying them would fail this test).
    with_ff = jaxguide.generate(model, info, batch[:2], max_new_tokens=40)
    assert [r.token_ids for r in with_ff] != [r.token_ids for r in reference[:2]]
    for ref, got in zip(reference, results):
        assert got.token_ids == ref.token_ids, (ref.text, got.text)
        assert got.finish_reason == ref.finish_reason
        assert got.error is None
    # The warmed-up predictor's proposals are mostly right and save forward passes.
    assert stats.accepted >= 0.5 * stats.proposed > 0
    assert stats.steps < plain_stats.steps


def test_speculation_errors_stay_in_their_row(smollm2):
    model, info = smollm2
    bad = jaxguide.Grammar.from_regex(r"(?=a)a")  # lookahead: fails to compile
    results = generate_speculative(
        model, info, [jaxguide.Request(prompt="x", grammar=bad),
                      jaxguide.Request(prompt="The capital of France is")],
        predictor=GrammarPredictor(), max_new_tokens=5)
    assert results[0].finish_reason == "error" and "lookahead" in results[0].error.lower()
    assert results[1].finish_reason in ("eos", "max_tokens") and results[1].token_ids
    with pytest.raises(ValueError, match="num_draft"):
        generate_speculative(model, info, [], predictor=GrammarPredictor(), num_draft=-1)
