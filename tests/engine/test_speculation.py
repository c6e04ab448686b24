"""Draft verification and speculate-then-correct (jaxguide.engine.speculation), against `regex`'s
partial matching as the oracle of viable prefixes, with the real Llama-3 128k tokenizer."""

from __future__ import annotations

import re

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide.engine.speculation import check_text, fill_draft_bitmasks, validate_tokens

PATTERN = r"(ab|a[0-9]{1,3})(-[a-c]+)*(;|\.x)"
ALPHABET = "ab0123c-;.x"


@pytest.fixture(scope="module")
def info():
    return real_tokenizer("llama3_tiktoken")


@pytest.fixture(scope="module")
def compiled(info):
    return jaxguide.compile_grammar(jaxguide.Grammar.from_regex(PATTERN), info)


@pytest.fixture(scope="module")
def ascii_tokens(info):
    """Ids of the tokens made only of ALPHABET's characters (a small, relevant vocabulary)."""
    ids = []
    for token in range(info.vocab_size):
        data = info.token_bytes(token)
        if data and all(chr(b) in ALPHABET for b in data):
            ids.append(token)
    return ids


def viable(text: str) -> bool:
    return regex.fullmatch(PATTERN, text, partial=True) is not None


@settings(max_examples=150, deadline=None)
@given(sentence=st.from_regex(PATTERN, fullmatch=True), split=st.integers(0, 4),
       position=st.integers(0, 8), pick=st.integers(0, 10**6))
def test_validate_tokens_is_the_longest_viable_prefix(info, compiled, ascii_tokens, sentence,
                                                      split, position, pick):
    # A draft = the canonical tokens of a sentence after its first `split` characters, with
    # one token replaced by a random one (so drafts are legal up to some point, then not).
    prefix, rest = sentence[:split], sentence[split:]
    matcher = jaxguide.Matcher(compiled)
    assert matcher.accept_bytes(prefix.encode())
    draft = [int(t) for t in info.encode(rest)]
    if draft and pick % 3:
        draft[position % len(draft)] = ascii_tokens[pick % len(ascii_tokens)]
    before = jaxguide.allocate_token_bitmask(1, info.logits_width)
    matcher.fill_next_token_bitmask(before)
    n = validate_tokens(matcher, draft)
    expected = 0
    while expected < len(draft) and viable(
            prefix + info.decode_bytes(draft[:expected + 1]).decode()):
        expected += 1
    assert n == expected
    after = jaxguide.allocate_token_bitmask(1, info.logits_width)
    matcher.fill_next_token_bitmask(after)
    assert np.array_equal(before, after)  # state unchanged


def test_draft_masks_equal_step_by_step_masks(info, compiled, ascii_tokens):
    rng = np.random.default_rng(0)
    legal = [int(t) for t in info.encode("a12-abc-c;")]
    drafts = [legal, legal[:2], [], legal[:1] + [int(info.encode(";")[0])] + legal[1:]]
    drafts += [[int(ascii_tokens[i]) for i in rng.integers(0, len(ascii_tokens), 5)]
               for _ in range(20)]
    for draft in drafts:
        matcher = jaxguide.Matcher(compiled)
        rows = jaxguide.allocate_token_bitmask(len(draft) + 3, info.logits_width)
        rows[:] = 0xDEADBEEF
        n = fill_draft_bitmasks(matcher, rows, draft, first_row=1)
        assert n == validate_tokens(matcher, draft) == matcher.validate_tokens(draft)
        assert matcher.fill_draft_bitmasks(rows, draft, first_row=1) == n
        assert np.all(rows[0] == 0xDEADBEEF) and np.all(rows[len(draft) + 2] == 0xDEADBEEF)
        reference = jaxguide.Matcher(compiled)
        one = jaxguide.allocate_token_bitmask(1, info.logits_width)
        for i in range(len(draft) + 1):
            if i <= n:
                reference.fill_next_token_bitmask(one)
                assert np.array_equal(rows[1 + i], one[0]), (draft, i)
                if i < n:
                    assert reference.accept_token(draft[i])
            else:
                assert not rows[1 + i].any()
        if n < len(draft):
            bit = (rows[1 + n][draft[n] >> 5] >> np.uint32(draft[n] & 31)) & 1
            assert bit == 0  # the first illegal draft token is masked out where it stands
    with pytest.raises(ValueError, match="needs 4 rows"):
        fill_draft_bitmasks(jaxguide.Matcher(compiled),
                            jaxguide.allocate_token_bitmask(3, info.logits_width), [1, 2, 3])


@settings(max_examples=200, deadline=None)
@given(text=st.text(ALPHABET, max_size=14))
def test_check_text_finds_the_longest_valid_prefix(info, compiled, text):
    check = check_text(compiled, text)
    longest = max(k for k in range(len(text) + 1) if viable(text[:k]))
    assert check.valid_length == longest
    assert check.valid_prefix == text[:longest].encode()
    assert check.complete == (re.fullmatch(PATTERN, text) is not None)
    # The allowed continuations: exactly the tokens that keep the prefix viable (checked on
    # the small relevant vocabulary) and nothing past the vocabulary.
    allowed = set(check.allowed_tokens.tolist())
    for token in range(0, info.vocab_size, 997):
        data = info.token_bytes(token)
        if data and all(chr(b) in ALPHABET for b in data):
            assert (token in allowed) == viable(text[:longest] + data.decode()), token


def test_check_text_continues_json_where_the_generator_went_wrong(info):
    schema = {"type": "object", "properties": {"n": {"type": "integer"},
                                               "tag": {"enum": ["x", "y"]}},
              "required": ["n", "tag"], "additionalProperties": False}
    compiled = jaxguide.compile_grammar(
        jaxguide.Grammar.from_json_schema(schema, whitespace="compact"), info)
    check = check_text(compiled, '{"n":12,"tag":"z"}')
    assert check.valid_prefix == b'{"n":12,"tag":"'
    assert check.forced == b""  # "x" or "y"
    assert not check.complete
    assert check.matcher.accept_bytes(b'y"}') and check.matcher.is_accepting()
    whole = check_text(compiled, '{"n":12,"tag":"x"}')
    assert whole.complete and whole.valid_length == len('{"n":12,"tag":"x"}')
    assert list(whole.allowed_tokens) == sorted(info.eos_token_ids)
    forced = check_text(compiled, '{"n":1')
    assert forced.valid_length == 6 and forced.forced == b""  # more digits or the comma
    assert check_text(compiled, '{"n":1,').forced == b'"tag":"'
