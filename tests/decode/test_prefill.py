"""decode/prefill.py: the prompt setup both decode loops share."""

from __future__ import annotations

import numpy as np
from support.real_tokenizers import real_tokenizer

from jaxguide.decode import Request
from jaxguide.decode.prefill import (
    MIN_PREFILL_BUCKET,
    bucket,
    pad_token,
    prepare_prompts,
)


class _NoChatModel:  # a model without a chat template: messages= fails its row only
    pass


def test_prompt_failures_stay_in_their_row_and_shapes_are_buckets():
    info = real_tokenizer("smollm2_gguf")
    requests = [Request(prompt="The capital of France is"),
                Request(messages=[{"role": "user", "content": "Hi"}]),
                Request(prompt=""),
                Request(prompt="x " * 40, max_new_tokens=3)]
    prompts = prepare_prompts(_NoChatModel(), info, requests, max_new_tokens=8)
    assert sorted(prompts.errors) == [1, 2]
    assert "chat template" in prompts.errors[1] and "no tokens" in prompts.errors[2]
    pad = pad_token(info)
    assert pad in info.eos_token_ids and prompts.pad == pad
    assert prompts.ids[1] == prompts.ids[2] == [pad]
    assert prompts.limits.tolist() == [8, 8, 8, 3]
    assert prompts.lengths.tolist() == [len(ids) for ids in prompts.ids]
    assert prompts.longest == max(prompts.lengths)
    assert prompts.prefill_len == bucket(prompts.longest, MIN_PREFILL_BUCKET) >= prompts.longest
    tokens = prompts.prefill_tokens()
    assert tokens.shape == (4, prompts.prefill_len) and tokens.dtype == np.int32
    assert tokens[0, :prompts.lengths[0]].tolist() == prompts.ids[0]
    assert (tokens[0, prompts.lengths[0]:] == pad).all()
    assert prompts.prefill_positions()[3].tolist() == list(range(prompts.prefill_len))
    assert prompts.max_len(8, 4) == max(bucket(prompts.longest + 12, 128), prompts.prefill_len)
