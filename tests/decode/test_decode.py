"""End-to-end constrained generation with the real SmolLM2-135M (CPU, real weights).

Oracles: `jsonschema` for schema outputs, `lark` for grammar outputs, and the model itself
(greedy constrained output equals greedy unconstrained output wherever the latter already
conforms: the constraint is minimally invasive).
"""

from __future__ import annotations

import json

import jax.numpy as jnp
import jsonschema
import lark
import numpy as np
import pytest

import jaxguide
from jaxguide import Grammar
from jaxguide.decode import ConstrainedBatch, DecodeStats, Request, generate
from jaxguide.device.sampling import Greedy, Temperature
from jaxguide.engine.tokenizer import encode_prompt
from jaxguide.models import assets


@pytest.fixture(scope="module")
def smollm2():
    from jaxguide.models import smollm2

    return smollm2.load()


def chat(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def test_answers_the_capital_of_france(smollm2):
    model, info = smollm2
    [result] = generate(model, info, [Request(messages=chat("What is the capital of France?"))],
                        max_new_tokens=24)
    assert "Paris" in result.text, result
    assert result.finish_reason == "eos"
    assert result.error is None


PERSON = {"type": "object",
          "properties": {"name": {"type": "string", "maxLength": 40},
                         "age": {"type": "integer", "minimum": 0, "maximum": 150},
                         "city": {"type": "string", "maxLength": 40}},
          "required": ["name", "age", "city"], "additionalProperties": False}


def test_json_schema_batch_outputs_parse_and_validate(smollm2):
    model, info = smollm2
    grammar = Grammar.from_json_schema(PERSON, whitespace="compact")
    people = ["a French chef", "a Japanese engineer", "a retired teacher", "a young pilot",
              "a Brazilian footballer", "an Egyptian doctor", "a Canadian singer",
              "a Kenyan runner"]
    requests = [Request(messages=chat(f"Describe {who} as JSON with name, age and city."),
                        grammar=grammar) for who in people]
    stats = DecodeStats()
    results = generate(model, info, requests, max_new_tokens=48, stats=stats)
    assert len(results) == 8
    for result in results:
        assert result.finish_reason in ("eos", "grammar_end"), result
        value = json.loads(result.text)
        jsonschema.validate(value, PERSON)
    # The schema forces keys and punctuation: fast-forward took some of the tokens.
    assert stats.forced_tokens > 0
    assert sum(r.forced_tokens for r in results) == stats.forced_tokens


SENTENCE = r"""
start: WORD (" " WORD)* "."
WORD: /[A-Za-z]+/
"""


def test_constrained_greedy_equals_unconstrained_where_it_conforms(smollm2):
    """Minimally invasive: where the free greedy answer is already in the language, the
    constrained greedy answer is the same tokens (with or without fast-forward)."""
    model, info = smollm2
    questions = ["What is the capital of France?", "What color is the sky on a clear day?",
                 "Name the largest planet in the solar system.", "What is two plus two?"]
    free = generate(model, info, [Request(messages=chat(q)) for q in questions],
                    max_new_tokens=24)
    parser = lark.Lark(SENTENCE, parser="earley", lexer="dynamic")
    conforming = []
    for question, result in zip(questions, free):
        if result.finish_reason != "eos":
            continue
        try:
            parser.parse(result.text)
        except lark.exceptions.LarkError:
            continue
        conforming.append((question, result))
    assert conforming, [r.text for r in free]  # the property is exercised
    grammar = Grammar.from_lark(SENTENCE)
    for fast_forward in (False, True):
        constrained = generate(model, info,
                               [Request(messages=chat(q), grammar=grammar) for q, _ in conforming],
                               max_new_tokens=24, fast_forward=fast_forward)
        for (question, expected), got in zip(conforming, constrained):
            assert got.text == expected.text, (question, fast_forward)
            assert got.token_ids == expected.token_ids, (question, fast_forward)


def test_rows_are_independent_and_failures_stay_in_their_row(smollm2):
    """An unconstrained row in a mixed batch gives what it gives alone; a grammar with nothing
    left but EOS ends its row (grammar_end); max_new_tokens stops a row (max_tokens)."""
    model, info = smollm2
    question = chat("What is the capital of France?")
    alone = generate(model, info, [Request(messages=question)], max_new_tokens=12)[0]
    two_letters = Grammar.from_lark('start: "a" B\nB: /b/')
    results = generate(model, info, [
        Request(messages=question),
        Request(messages=question, grammar=Grammar.from_json_schema(PERSON)),
        Request(prompt="The capital of France is", grammar=two_letters, max_new_tokens=5),
        Request(messages=question, grammar=Grammar.from_regex("x")),
        Request(messages=question, max_new_tokens=3),
    ], max_new_tokens=12)
    assert results[0].token_ids == alone.token_ids
    assert results[0].text == alone.text
    assert results[1].text.startswith("{")
    assert results[2].text == "ab" and results[2].finish_reason == "grammar_end"
    assert results[3].text == "x" and results[3].finish_reason == "grammar_end"
    assert results[4].finish_reason == "max_tokens" and len(results[4].token_ids) == 3
    assert results[4].token_ids == alone.token_ids[:3]


def test_compile_errors_fail_only_their_request(smollm2):
    model, info = smollm2
    other = jaxguide.TokenizerInfo.from_gguf(assets.smollm2_gguf_path())
    foreign = jaxguide.compile_grammar(Grammar.from_regex("[ab]+"), other)
    results = generate(model, info, [Request(prompt="Hello", grammar=foreign),
                                     Request(prompt="Hello", grammar=Grammar.from_regex("[ab]+"),
                                             max_new_tokens=4)], max_new_tokens=4)
    assert results[0].finish_reason == "error" and "TokenizerInfo" in results[0].error
    assert results[1].error is None and set(results[1].text) <= {"a", "b"}


def test_hook_api_loop_matches_generate(smollm2):
    """A decode loop written against ConstrainedBatch alone (as a MaxText / gemma loop would
    use it) yields what generate() yields."""
    model, info = smollm2
    grammar = Grammar.from_json_schema(PERSON, whitespace="compact")
    prompts = ["Describe a chef as JSON.", "Describe a pilot as JSON."]
    expected = generate(model, info, [Request(messages=chat(p), grammar=grammar)
                                      for p in prompts], max_new_tokens=20, fast_forward=False)

    ids = [encode_prompt(info, model.render_chat(chat(p))) for p in prompts]
    batch, width = len(ids), 64
    tokens = np.zeros((batch, width), np.int32)
    for row, row_ids in enumerate(ids):
        tokens[row, :len(row_ids)] = row_ids
    lengths = np.array([len(r) for r in ids])
    cache = model.init_cache(batch, 256)
    logits, cache = model.forward_last(
        jnp.asarray(tokens), jnp.broadcast_to(jnp.arange(width, dtype=jnp.int32), (batch, width)),
        jnp.asarray(lengths - 1, dtype=jnp.int32), cache)
    constraint = ConstrainedBatch(info, [grammar] * batch, logits_width=model.config.vocab_size)
    constraint.start_masks()                             # step 0 masks, while prefill runs
    outputs: list[list[int]] = [[] for _ in range(batch)]
    done = [False] * batch
    positions = lengths.copy()
    for _ in range(20):
        sampled = np.asarray(constraint.sample(logits, None, Greedy()))
        for row in range(batch):
            if not done[row]:
                if int(sampled[row]) in info.eos_token_ids or \
                        row in constraint.finished_rows():
                    done[row] = True
                    constraint.stop_row(row)
                else:
                    outputs[row].append(int(sampled[row]))
        if all(done):
            break
        logits, cache = model.forward_last(jnp.asarray(sampled[:, None]),
                                           jnp.asarray(positions[:, None], dtype=jnp.int32),
                                           jnp.zeros(batch, jnp.int32), cache)
        positions += 1
        constraint.start_masks(sampled)                  # "the tokens of step t-1"
    constraint.close()
    assert [r.token_ids for r in expected] == outputs


def test_sampling_with_temperature_is_reproducible_and_valid(smollm2):
    model, info = smollm2
    grammar = Grammar.from_json_schema(PERSON, whitespace="compact")
    requests = [Request(messages=chat("Describe a chef as JSON."), grammar=grammar)] * 2
    first = generate(model, info, requests, sampling=Temperature(1.0), seed=3, max_new_tokens=48)
    again = generate(model, info, requests[:1], sampling=Temperature(1.0), seed=3,
                     max_new_tokens=48)
    assert first[0].token_ids == again[0].token_ids  # a row's draw ignores the rest of the batch
    for result in first:
        if result.finish_reason != "max_tokens":
            jsonschema.validate(json.loads(result.text), PERSON)


def test_bad_requests_are_refused_clearly():
    with pytest.raises(ValueError, match="exactly one"):
        Request()
    with pytest.raises(ValueError, match="exactly one"):
        Request(prompt="a", messages=chat("b"))
    with pytest.raises(TypeError, match="grammar"):
        Request(prompt="a", grammar="start: 'a'")
    with pytest.raises(ValueError, match="max_new_tokens"):
        Request(prompt="a", max_new_tokens=0)


def test_encode_prompt_maps_special_token_names(smollm2):
    _, info = smollm2
    ids = encode_prompt(info, "<|im_start|>user\nHi<|im_end|>\n")
    assert ids[0] == 1 and 2 in ids
    assert info.decode_bytes([i for i in ids if i not in (1, 2)]) == b"user\nHi\n"


def _valid(kind, text):
    if kind == "json":
        try:
            jsonschema.validate(json.loads(text), PERSON)
        except (ValueError, jsonschema.ValidationError):
            return False
        return True
    return text in ("yes", "no")


def test_opportunistic_masking_is_exact_and_never_emits_a_refused_token(smollm2):
    model, info = smollm2
    person = Grammar.from_json_schema(PERSON)  # flexible whitespace: the model's own choices
    requests = [
        Request(messages=chat("Describe a French chef as JSON with name, age and city."),
                grammar=person),
        Request(messages=chat("Describe a young pilot as JSON with name, age and city."),
                grammar=person),
        Request(messages=chat("Is Rome in Italy? Answer yes or no."),
                grammar=Grammar.choice(["yes", "no"])),
        Request(messages=chat("Name a color.")),
    ]
    reference = generate(model, info, requests, max_new_tokens=40)
    for policy in ("always", "auto"):
        stats = DecodeStats()
        results = generate(model, info, requests, max_new_tokens=40, opportunistic=policy,
                           stats=stats)
        assert [r.token_ids for r in results] == [r.token_ids for r in reference], policy
        assert stats.deferred_masks > 0
        if policy == "always":
            # Some unconstrained draws were refused and redrawn under the mask.
            assert 0 < stats.resampled < stats.deferred_masks
    # Sampling with temperature: a refused draw is redrawn, the outputs still conform.
    sampled = generate(model, info, requests[:3], max_new_tokens=40, seed=3,
                       sampling=Temperature(1.0), opportunistic="always")
    for kind, result in zip(("json", "json", "choice"), sampled):
        assert result.error is None
        if result.finish_reason != "max_tokens":
            assert _valid(kind, result.text), result.text
        replay = jaxguide.Matcher(jaxguide.compile_grammar(requests[0].grammar if kind == "json"
                                                           else requests[2].grammar, info))
        assert replay.accept_tokens(result.token_ids) == len(result.token_ids)


def test_opportunistic_masking_switches_and_limits(smollm2):
    model, info = smollm2
    request = Request(prompt="Say yes or no:", grammar=Grammar.choice(["yes", "no"]))
    stats = DecodeStats()
    generate(model, info, [request, Request(prompt="Say yes or no:", opportunistic=True,
                                            grammar=Grammar.choice(["yes", "no"]))],
             max_new_tokens=4, stats=stats)
    assert 0 < stats.deferred_masks <= 4  # only the second row
    with pytest.raises(ValueError, match="exact only with Greedy or Temperature"):
        generate(model, info, [request], sampling=jaxguide.TopP(0.9), opportunistic="always")
    with pytest.raises(ValueError, match="opportunistic must be"):
        generate(model, info, [request], opportunistic="sometimes")
    with pytest.raises(ValueError, match="opportunistic must be None, True or False"):
        Request(prompt="x", opportunistic="yes")
    generate(model, info, [request], sampling=jaxguide.TopP(0.9), opportunistic="auto",
             max_new_tokens=2)  # auto: simply off for truncating samplers
