"""Fast-forward: the bytes a grammar forces, and their canonical tokens (no tokenization the
model would not produce), with real tokenizers (Llama-3 byte-level BPE, Mistral SentencePiece)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from support.real_tokenizers import TOKENIZER_BUILDERS, real_tokenizer

import jaxguide
from jaxguide import Grammar, GrammarError, Matcher, compile_grammar, heal_prompt
from jaxguide.testing import SHORT_WALK, random_regex, random_walk

TOKENIZERS = ["llama3_tiktoken", "mistral_sp_v1"]

ORDER = 'start: "{\\"" ("orderId" | "orderName") "\\": " NUMBER "}"\nNUMBER: /[0-9]+/\n'
PERSON = ('start: "{\\"name_of_the_person\\"" WS? ":" WS? NUMBER "}"\nWS: /[ \\n]+/\n'
          'NUMBER: /[0-9]+/\n')
CHAT = ('start: <|start_header_id|> "assistant" <|end_header_id|> "\\n\\n" NUMBER <|eot_id|>\n'
        'NUMBER: /[0-9]+/\n')


def _canonical(info, text: str) -> list[int]:
    """The tokenizer's own tokens for `text` in the middle of a sequence (no dummy prefix)."""
    if not info.dummy_prefix:
        return info.encode(text)
    tokens = info.encode("\n" + text)
    for k in range(len(tokens)):
        if info.decode_bytes(tokens[:k]) == info.dummy_prefix + b"\n":
            return tokens[k:]
    raise AssertionError("no token boundary after the context")


def _accept(matcher: Matcher, tokens: list[int]) -> None:
    assert matcher.accept_tokens(tokens) == len(tokens)


@pytest.mark.parametrize("name", TOKENIZERS)
def test_order_is_not_forced_before_id_or_name(name):
    """After `{"` the grammar forces the bytes `order`. With Llama-3, `orderId` is one token:
    forcing `order` would make the model write `order` `Id`, which it never does. (Mistral's
    SentencePiece writes `order` `Id` itself, so there `order` may be forced.)"""
    info = real_tokenizer(name)
    matcher = Matcher(compile_grammar(ORDER, info))
    prefix = _canonical(info, '{"')
    _accept(matcher, prefix)
    assert matcher.compute_ff_bytes() == b"order"
    ff = matcher.compute_ff_tokens(recent_tokens=prefix)
    if b"orderId" in [info.token_bytes(t) for t in _canonical(info, '{"orderId": 1}')]:
        assert b"order" not in [info.token_bytes(t) for t in ff]
    # Whatever is forced is how the tokenizer itself writes both completions.
    for key in ("orderId", "orderName"):
        rest = _canonical(info, '{"' + key + '": 1}')[len(prefix):]
        assert rest[:len(ff)] == ff, (key, ff)


@pytest.mark.parametrize("name", TOKENIZERS)
def test_closing_quote_is_held_back(name):
    """`name_of_the_person"` is forced, but `":` (a longer token) may follow: the quote is held
    back and the name is forced."""
    info = real_tokenizer(name)
    matcher = Matcher(compile_grammar(PERSON, info))
    prefix = _canonical(info, '{"')
    _accept(matcher, prefix)
    assert matcher.compute_ff_bytes() == b'name_of_the_person"'
    ff = matcher.compute_ff_tokens(recent_tokens=prefix)
    assert info.decode_bytes(ff) == b"name_of_the_person"
    for text in ('{"name_of_the_person": 7}', '{"name_of_the_person":7}'):
        assert _canonical(info, text)[len(prefix):][:len(ff)] == ff
    _accept(matcher, ff)
    assert matcher.compute_ff_bytes() == b'"'


@pytest.mark.parametrize("name", TOKENIZERS)
def test_forced_text_at_the_start_is_canonical(name):
    info = real_tokenizer(name)
    matcher = Matcher(compile_grammar(PERSON, info))
    ff = matcher.compute_ff_tokens()
    assert info.decode_bytes(ff).startswith(b"{")
    assert ff == _canonical(info, '{"name_of_the_person": 7}')[:len(ff)]
    _accept(matcher, ff)


def test_forced_text_after_generated_tokens():
    """Forced bytes are tokenized in the context of the recent tokens; the final space is held
    back (whatever follows may open its pre-token with it: ` x` is one Llama-3 token)."""
    info = real_tokenizer("llama3_tiktoken")
    matcher = Matcher(compile_grammar('start: "The answer" " is " NUMBER\nNUMBER: /[0-9]+/\n',
                                      info))
    generated = info.encode("The answer")
    _accept(matcher, generated)
    assert matcher.compute_ff_bytes() == b" is "
    ff = matcher.compute_ff_tokens(recent_tokens=generated)
    assert info.decode_bytes(ff) == b" is"
    assert info.encode("The answer is 42")[len(generated):][:len(ff)] == ff
    words = Matcher(compile_grammar('start: "The answer" " is " WORD\nWORD: /[a-z]+/\n', info))
    _accept(words, generated)
    assert info.decode_bytes(words.compute_ff_tokens(recent_tokens=generated)) == b" is"
    assert info.encode("The answer is x")[len(generated):][:len(ff)] == ff
    # Nothing is forced once the output may end or diverge.
    _accept(matcher, ff + info.encode(" 4"))
    assert matcher.compute_ff_bytes() == b"" and matcher.compute_ff_tokens() == []


def test_forced_special_tokens():
    """Special tokens the grammar forces are forced tokens too, with the bytes between them."""
    info = real_tokenizer("llama3_tiktoken")
    ids = {n: i for i, n in info.special_token_names.items()}
    matcher = Matcher(compile_grammar(CHAT, info))
    assert matcher.compute_ff_bytes() == b""  # a special token comes first
    ff = matcher.compute_ff_tokens()
    expected = ([ids["<|start_header_id|>"]] + info.encode("assistant")
                + [ids["<|end_header_id|>"]])
    assert ff[:len(expected)] == expected
    assert info.decode_bytes(ff[len(expected):]) in (b"", b"\n\n")
    _accept(matcher, ff)
    state = matcher.fork()
    _accept(matcher, info.encode("\n\n12"[len(info.decode_bytes(ff[len(expected):])):]))
    assert matcher.compute_ff_tokens() == []  # the number may go on
    assert state.compute_ff_bytes() in (b"\n\n", b"")


def test_fast_forward_leaves_the_state_unchanged():
    info = real_tokenizer("llama3_tiktoken")
    matcher = Matcher(compile_grammar(PERSON, info))
    before = matcher.compute_ff_bytes()
    matcher.compute_ff_tokens()
    assert matcher.compute_ff_bytes() == before
    assert matcher.accept_tokens(info.encode('{"name')) == len(info.encode('{"name'))


# ------------------------------------------------------------------ token healing


def test_heal_prompt_removes_a_trailing_space_and_requires_it():
    info = real_tokenizer("llama3_tiktoken")
    prompt = info.encode("The capital of France is ")
    kept, healed = heal_prompt(prompt, info)
    assert healed == b" " and kept == prompt[:-1]
    assert heal_prompt(info.encode("The capital of France is"), info)[1] in (b"", b" is")
    ids = {n: i for i, n in info.special_token_names.items()}
    assert heal_prompt([ids["<|eot_id|>"]], info) == ([ids["<|eot_id|>"]], b"")


def test_matcher_with_required_prefix():
    """After healing, the output must start with the healed bytes; the first token may span
    them and the grammar's first bytes (` Paris`), and only then does the grammar apply."""
    info = real_tokenizer("llama3_tiktoken")
    compiled = compile_grammar('start: "Paris" | "Lyon"\n', info)
    matcher = Matcher(compiled, required_prefix=b" ")
    assert matcher.pending_prefix == b" "
    paris, = info.encode(" Paris")
    allowed = {t for t in range(info.vocab_size) if matcher.is_token_allowed(t)}
    bitmask = jaxguide.allocate_token_bitmask(1, info.logits_width)
    matcher.fill_next_token_bitmask(bitmask)
    bits = np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")[:info.vocab_size]
    assert set(np.nonzero(bits)[0].tolist()) == allowed
    assert paris in allowed and info.encode(" ")[0] in allowed
    assert info.encode("Paris")[0] not in allowed and info.encode(" London")[0] not in allowed
    assert all(info.token_bytes(t).startswith(b" ") for t in allowed)
    assert not matcher.is_accepting() and min(info.eos_token_ids) not in allowed
    assert matcher.compute_ff_bytes() == b" "
    assert matcher.accept_token(paris) and matcher.is_accepting()
    assert matcher.pending_prefix == b""
    matcher.rollback(1)
    assert matcher.pending_prefix == b" "
    # The prefix alone, then the grammar from its start.
    assert matcher.accept_token(info.encode(" ")[0]) and matcher.pending_prefix == b""
    assert matcher.accept_tokens(info.encode("Lyon")) == len(info.encode("Lyon"))
    assert matcher.is_accepting()


@pytest.mark.parametrize("name", TOKENIZERS)
def test_last_pre_token_is_held_back(name):
    """MaskBench Github_hard o9843: the grammar forces `gregationOptions":[]` after
    `...","ag`. Llama-3 pre-tokenizes `":[]` with whatever punctuation follows (`":[]},"`),
    whose BPE starts `":[`, so forcing `":` (or any token of that last pre-token) would be
    non-canonical: the run is held back, the letters before it are forced."""
    info = real_tokenizer(name)
    grammar = ('start: "{\\"ag" "gregationOptions\\":[]" ("}" | ",\\"x\\":1}")\n')
    matcher = Matcher(compile_grammar(grammar, info))
    prefix = _canonical(info, '{"ag')
    if info.decode_bytes(prefix) != b'{"ag':
        pytest.skip("no token boundary after the prefix")
    _accept(matcher, prefix)
    assert matcher.compute_ff_bytes() == b'gregationOptions":[]'
    ff = matcher.compute_ff_tokens(recent_tokens=prefix)
    assert info.decode_bytes(ff) == b"gregationOptions"[:len(info.decode_bytes(ff))]
    for text in ('{"aggregationOptions":[]}', '{"aggregationOptions":[],"x":1}'):
        assert _canonical(info, text)[len(prefix):][:len(ff)] == ff


@pytest.mark.parametrize("name", [*TOKENIZERS, "gemma3_gguf"])
def test_merges_across_the_cut_are_held_back(name):
    """MaskBench Github_medium o2050: `{"$schema":".` is forced, `./samples...` follows. Gemma 3
    encodes the forced bytes `":` `".`, and `".` is held back (a longer `".`... token may
    follow), but the text with what follows is `":"` `./`: forcing `":` would be
    non-canonical, so the tokens kept are those the continued text has too."""
    info = real_tokenizer(name)
    matcher = Matcher(compile_grammar('start: "{\\"$schema\\":\\"." ("/a" | "b") "\\"}"\n',
                                      info))
    assert matcher.compute_ff_bytes() == b'{"$schema":".'
    ff = matcher.compute_ff_tokens()
    for text in ('{"$schema":"./a"}', '{"$schema":".b"}'):
        assert _canonical(info, text)[:len(ff)] == ff, text
    if name == "gemma3_gguf":
        assert info.decode_bytes(ff) == b'{"$schema'
        # Without the probe of what follows, `":` itself would be forced.
        unchecked = matcher.compute_ff_tokens(max_span_probes=0)
        assert info.decode_bytes(unchecked) == b'{"$schema":'


@pytest.mark.parametrize("data, stable", [
    (b'gregationOptions":[]', b"gregationOptions"), (b'name":', b"name"), (b'"name', b""),
    (b"a, ", b"a,"), (b"a:\n", b"a"), (b"12345", b""), (b"x 12", b"x"), (b"foo bar", b"foo"),
    (b" is ", b" is"), (b"", b""), ("été".encode(), b""), ("a é".encode(), b"a"),
    ("1½".encode(), b""),  # \\p{N}: ½ is a number, in one run with the 1
])
def test_unstable_tail_start(data, stable):
    from jaxguide.engine.token_boundaries import unstable_tail_start
    assert data[:unstable_tail_start(data)] == stable


@pytest.mark.parametrize("name, expected", [
    ("llama3_tiktoken", True), ("deepseek_hf_json", True), ("smollm2_gguf", True),
    ("tekken", True), ("mistral_sp_v1", False), ("mistral_sp_v3", False),
])
def test_which_tokenizers_split_with_a_pre_tokenizer_regex(name, expected):
    """The pre-token hold-back applies to byte-level BPE with a split regex; SentencePiece
    keeps only the longer-token hold-back (0 non-canonical sequences on MaskBench without it)."""
    assert real_tokenizer(name).regex_pre_tokenized is expected


@pytest.mark.parametrize("name", sorted(TOKENIZER_BUILDERS))
def test_forced_tokens_are_canonical_on_random_regexes(name):
    """Texts of random grammars (seeded walks to EOS through random regexes), tokenized by the
    tokenizer itself and replayed: wherever the matcher forces tokens they are the tokenizer's
    own (benchmarks/bench_fast_forward.py --random-grammars runs more, and the Lark corpus)."""
    info = real_tokenizer(name)
    forced = 0
    for k in range(40):
        pattern = random_regex(random.Random(f"ff-test:{k}"))
        try:
            compiled = compile_grammar(Grammar.from_regex(pattern), info)
        except GrammarError:
            continue
        for w in range(3):
            walk = random_walk(compiled, random.Random(f"{name}:{k}:{w}"), SHORT_WALK)
            if walk is None or walk.end != "eos" or not walk.text:
                continue
            try:
                tokens = _canonical(info, walk.text.decode("utf-8"))
            except UnicodeDecodeError:
                continue
            matcher, i = Matcher(compiled), 0
            while i < len(tokens):
                ff = matcher.compute_ff_tokens(recent_tokens=tokens[max(0, i - 3):i])
                if ff:
                    assert ff == tokens[i:i + len(ff)], (pattern, walk.text, i, ff)
                    _accept(matcher, ff)
                    forced, i = forced + len(ff), i + len(ff)
                else:
                    assert matcher.accept_token(tokens[i]), (pattern, walk.text, i)
                    i += 1
    assert forced > 0
