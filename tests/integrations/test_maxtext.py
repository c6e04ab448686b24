"""jaxguide.integrations.maxtext on MaxText's real MaxEngine (CPU, a tiny random-weight decoder
with SmolLM2's 49,152-token vocabulary): the logits come from MaxEngine's own prefill and
generate; the constrained tokens are checked against an independent replay (fresh matchers,
jaxguide's greedy masked argmax and a NumPy one over the same logits) and the outputs against
`jsonschema` and Python's `re`.

MaxText needs Python >= 3.12 and is not part of the test extra: where it is not importable these
tests are skipped, except under JAXGUIDE_REQUIRE_MAXTEXT=1 (tools/maxtext/run_tests.sh, the
Python 3.12 run of CI), where a missing MaxText is a failure.
"""

from __future__ import annotations

import json
import os
import pathlib
import re

import jax
import jax.numpy as jnp
import jsonschema
import numpy as np
import pytest

import jaxguide
from jaxguide.models import smollm2

if os.environ.get("JAXGUIDE_REQUIRE_MAXTEXT") == "1":
    from maxtext.inference.maxengine import maxengine  # a missing MaxText fails here
else:
    maxengine = pytest.importorskip("maxtext.inference.maxengine.maxengine")

from jaxguide.integrations.maxtext import MaxEngineConstraint  # noqa: E402

PREFILL = 32
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["name", "age", "ok"],
          "properties": {"name": {"type": "string", "maxLength": 6},
                         "age": {"type": "integer", "minimum": 0, "maximum": 120},
                         "ok": {"type": "boolean"}}}
REGEX = r"[a-z]{1,6}@[a-z]{2,5}\.(com|org)"


@pytest.fixture(scope="module")
def engine_params_info():
    """A tiny random-weight MaxText decoder (2 layers, d_model 64, 2 slots) whose vocabulary
    is SmolLM2's, with its random parameters, and SmolLM2's TokenizerInfo."""
    import maxtext
    from maxtext.configs import pyconfig

    info = smollm2.tokenizer_info()
    base = pathlib.Path(maxtext.__file__).parent / "configs" / "base.yml"
    config = pyconfig.initialize(
        ["jaxguide-test", str(base)], run_name="jaxguide_test", enable_checkpointing=False,
        per_device_batch_size=2.0 / jax.device_count(), base_num_decoder_layers=2,
        base_emb_dim=64, base_num_query_heads=2, base_num_kv_heads=2, head_dim=32,
        base_mlp_dim=128, vocab_size=info.vocab_size, attention="dot_product",
        max_prefill_predict_length=PREFILL, max_target_length=PREFILL + 48,
        skip_jax_distributed_system=True, base_output_directory="/tmp/jaxguide_maxtext_output")
    engine = maxengine.MaxEngine(config)
    params = engine.load_params(rng=jax.random.PRNGKey(7))
    return engine, params, info


def _prompt(info, text):
    ids = info.encode(text)
    assert len(ids) <= PREFILL
    return jnp.asarray(ids + [0] * (PREFILL - len(ids)), jnp.int32), len(ids)


def _run(engine, params, info, grammars, prompts, max_steps=46):
    """The constrained MaxEngine loop; returns (results, logits [steps, B, V] per step)."""
    constraint = MaxEngineConstraint(engine, info, grammars, max_new_tokens=max_steps)
    constraint.start_masks()
    state = engine.init_decode_state()
    for slot, text in enumerate(prompts):
        padded, length = _prompt(info, text)
        prefix, _ = engine.prefill(params=params, padded_tokens=padded, true_length=length)
        state = engine.insert(prefix, state, slot=slot)
    seen = []
    for _ in range(max_steps):
        state = constraint.constrain(state)
        seen.append(np.asarray(state["logits"][:, 0, :]))   # generate donates the state
        if constraint.done():
            break
        state, _ = engine.generate(params, state)
        constraint.start_masks()
    return constraint.results(), seen


def _replay(info, grammar, tokens, seen, row):
    """Replays a row's tokens with a fresh matcher: each equals jaxguide's greedy masked argmax
    (and a NumPy one) over that step's logits. Returns how many steps the mask changed the
    unmasked argmax."""
    matcher = jaxguide.Matcher(jaxguide.compile_grammar(grammar, info))
    changed = 0
    for step, token in enumerate(tokens):
        logits = seen[step][row]
        bitmask = jaxguide.allocate_token_bitmask(1, logits.shape[0])
        matcher.fill_next_token_bitmask(bitmask, row=0)
        bits = np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")[:logits.shape[0]]
        expected = int(np.argmax(np.where(bits.astype(bool), logits, -np.inf)))
        device = jaxguide.sample(jnp.asarray(logits[None]), bitmask, None, jaxguide.Greedy())
        assert token == expected == int(device[0]), (step, token, expected, int(device[0]))
        changed += not bits[int(np.argmax(logits))]
        assert matcher.accept_token(token)
    assert matcher.is_accepting()
    return changed


def test_constrained_maxengine_json_schema_and_regex(engine_params_info):
    engine, params, info = engine_params_info
    grammars = [jaxguide.Grammar.from_json_schema(SCHEMA, whitespace="compact"),
                jaxguide.Grammar.from_regex(REGEX)]
    results, seen = _run(engine, params, info, grammars,
                         ["Describe a person as JSON.", "Write an email address."])
    print([(r.finish_reason, r.text) for r in results])
    assert [r.finish_reason for r in results] == ["grammar_end", "grammar_end"], results
    jsonschema.validate(json.loads(results[0].text), SCHEMA)
    assert re.fullmatch(REGEX, results[1].text), results[1].text
    changed = sum(_replay(info, grammar, result.token_ids, seen, row)
                  for row, (grammar, result) in enumerate(zip(grammars, results)))
    assert changed >= 1   # the mask forbade MaxText's own (unmasked) argmax at least once


def test_unconstrained_slot_is_maxtexts_own_greedy_decoding(engine_params_info):
    """A slot without a grammar gets exactly MaxText's own greedy tokens: the hook changes
    nothing but the masked draw."""
    engine, params, info = engine_params_info
    steps = 6
    padded, length = _prompt(info, "Hello")
    state = engine.init_decode_state()
    prefix, first = engine.prefill(params=params, padded_tokens=padded, true_length=length)
    state = engine.insert(prefix, state, slot=0)
    own = [int(np.asarray(first.data)[0, 0])]
    for _ in range(steps - 1):
        state, result = engine.generate(params, state)
        own.append(int(np.asarray(result.data)[0, 0]))
    eos = set(info.eos_token_ids)
    own = own[:next((i for i, t in enumerate(own) if t in eos), steps)]
    results, _ = _run(engine, params, info, [None], ["Hello"], max_steps=steps)
    assert results[0].token_ids == own


def test_bad_arguments_are_refused(engine_params_info):
    engine, _, info = engine_params_info
    with pytest.raises(ValueError, match="slots"):
        MaxEngineConstraint(engine, info, [None] * (engine.max_concurrent_decodes + 1))
    with pytest.raises(ValueError, match="max_new_tokens"):
        MaxEngineConstraint(engine, info, [None], max_new_tokens=0)
    constraint = MaxEngineConstraint(engine, info, [None])
    with pytest.raises(ValueError, match="decode state"):
        constraint.constrain({"cache": {}})
    with pytest.raises(ValueError, match="shape"):
        constraint.constrain({"logits": jnp.zeros((3, 1, info.vocab_size)),
                              "tokens": jnp.zeros((3, 1), jnp.int32)})
