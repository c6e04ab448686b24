"""Speculative decoding (jaxguide.decode.speculative) with SmolLM2 on CPU, with grammar-driven
proposals and with draft models: the tokens are exactly those of non-speculative greedy decoding
with the same grammars (forced tokens included: they are verified, so where the model prefers
another tokenization of the forced text than fast-forward's canonical one, the model's wins),
while good proposals save forward passes."""

from __future__ import annotations

import dataclasses

import pytest

import jaxguide
from jaxguide.decode import DecodeStats
from jaxguide.decode.speculative import (
    GrammarPredictor,
    SpeculationStats,
    generate_speculative,
)
from jaxguide.models import LlamaModel

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


def batch_requests():
    person = jaxguide.Grammar.from_json_schema(SCHEMA, whitespace="compact")
    return [
        jaxguide.Request(messages=chat(f"Describe a French chef {FIELDS}"), grammar=person),
        jaxguide.Request(messages=chat(f"Describe a retired teacher {FIELDS}"), grammar=person),
        jaxguide.Request(messages=chat("When did the Berlin Wall fall? A date."),
                         grammar=jaxguide.Grammar.from_regex(r"(19|20)\d\d-[01]\d-[0-3]\d")),
        jaxguide.Request(messages=chat("Is Paris in France? yes or no"),
                         grammar=jaxguide.Grammar.choice(["yes", "no"])),
        jaxguide.Request(messages=chat("What is the capital of France?")),
    ]


@pytest.fixture(scope="module")
def reference(smollm2):
    """Non-speculative greedy decoding without fast-forward of batch_requests()."""
    model, info = smollm2
    stats = DecodeStats()
    results = jaxguide.generate(model, info, batch_requests(), max_new_tokens=40, stats=stats,
                                fast_forward=False)
    return results, stats


def assert_same_tokens(reference_results, results):
    for ref, got in zip(reference_results, results, strict=True):
        assert got.token_ids == ref.token_ids, (ref.text, got.text)
        assert got.finish_reason == ref.finish_reason
        assert got.error is None


def test_speculation_gives_exactly_the_greedy_tokens(smollm2, reference):
    model, info = smollm2
    person = jaxguide.Grammar.from_json_schema(SCHEMA, whitespace="compact")
    warmup = [jaxguide.Request(messages=chat(f"Describe {who} {FIELDS}"), grammar=person)
              for who in ("a German doctor", "a Kenyan runner", "an Italian painter")]
    batch = batch_requests()
    reference_results, plain_stats = reference

    predictor = GrammarPredictor()
    generate_speculative(model, info, warmup, predictor=predictor, max_new_tokens=40)
    assert len(predictor) > 0
    stats = SpeculationStats()
    results = generate_speculative(model, info, batch, predictor=predictor, max_new_tokens=40,
                                   stats=stats)
    # The batch is one where fast-forward's canonical forced tokens are not what the model
    # writes (so appending forced tokens instead of verifying them would fail this test).
    with_ff = jaxguide.generate(model, info, batch[:2], max_new_tokens=40)
    assert [r.token_ids for r in with_ff] != [r.token_ids for r in reference_results[:2]]
    assert_same_tokens(reference_results, results)
    # The warmed-up predictor's proposals are mostly right and save forward passes.
    assert stats.accepted >= 0.5 * stats.proposed > 0
    assert stats.steps < plain_stats.steps


def test_draft_model_speculation_gives_exactly_the_greedy_tokens(smollm2, reference):
    model, info = smollm2
    reference_results, plain_stats = reference
    # The model as its own draft proposes exactly what it verifies: every proposal is accepted
    # unless the draft's cache bookkeeping (committed tokens, rejected suffixes, forced tokens
    # fed at the head of a draft) is off — then its proposals come from a wrong context.
    stats = SpeculationStats()
    results = generate_speculative(model, info, batch_requests(), draft_model=model,
                                   num_draft=4, max_new_tokens=40, stats=stats)
    assert_same_tokens(reference_results, results)
    assert stats.proposed > 40 and stats.accepted == stats.proposed
    assert stats.steps * 3 < plain_stats.steps and stats.draft_forwards > 0
    # An early-exit draft (6 of 30 layers) is often wrong: rejections and the model's own
    # tokens in their place, and still exactly the greedy tokens.
    stats = SpeculationStats()
    results = generate_speculative(model, info, batch_requests(),
                                   draft_model=model.with_layers(range(6)), num_draft=3,
                                   max_new_tokens=40, stats=stats)
    assert_same_tokens(reference_results, results)
    assert 0 < stats.accepted < stats.proposed


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
    with pytest.raises(ValueError, match="not both"):
        generate_speculative(model, info, [], predictor=GrammarPredictor(), draft_model=model)
    other = LlamaModel.init_random(dataclasses.replace(model.config, vocab_size=64, n_layers=1))
    with pytest.raises(ValueError, match="vocabulary"):
        generate_speculative(model, info, [jaxguide.Request(prompt="x")], draft_model=other)
