"""The native token trie against brute-force scans, for every real tokenizer."""

from __future__ import annotations

import bisect
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support.real_tokenizers import real_tokenizer

from jaxguide import TokenizerInfo


def brute_with_prefix(vocab: list[bytes], prefix: bytes) -> list[int]:
    return [i for i, b in enumerate(vocab) if b and b.startswith(prefix)]


def brute_prefixing(vocab: list[bytes], text: bytes) -> list[int]:
    return [i for i, b in enumerate(vocab) if b and text.startswith(b)]


class SortedOracle:
    """Tokens under a prefix by bisecting the sorted byte strings (a second, fast oracle)."""

    def __init__(self, vocab: list[bytes]):
        self.entries = sorted((b, i) for i, b in enumerate(vocab) if b)
        self.keys = [b for b, _ in self.entries]

    def with_prefix(self, prefix: bytes) -> list[int]:
        lo = bisect.bisect_left(self.keys, prefix)
        hi = lo
        while hi < len(self.keys) and self.keys[hi].startswith(prefix):
            hi += 1
        return sorted(i for _, i in self.entries[lo:hi])


def probe_prefixes(vocab: list[bytes], rng: random.Random, count: int) -> list[bytes]:
    tokens = [b for b in vocab if b]
    probes = [b"", b" ", b"\n", b"\xe6", b"\xff", b"{\"", b"zzzzzz\x00"]
    for _ in range(count):
        token = rng.choice(tokens)
        probes.append(token[:rng.randint(1, len(token))])
        probes.append(token + bytes([rng.randrange(256)]))
    return probes


def test_trie_matches_brute_force(tokenizer_name):
    info = real_tokenizer(tokenizer_name)
    vocab = info.all_token_bytes()
    rng = random.Random(7)
    for prefix in probe_prefixes(vocab, rng, 40):
        got = info.tokens_with_prefix(prefix)
        assert got.dtype == np.uint32
        assert got.tolist() == brute_with_prefix(vocab, prefix), prefix
        assert info.tokens_prefixing(prefix).tolist() == brute_prefixing(vocab, prefix), prefix


def test_trie_matches_sorted_oracle_on_many_prefixes(tokenizer_name):
    info = real_tokenizer(tokenizer_name)
    vocab = info.all_token_bytes()
    oracle = SortedOracle(vocab)
    rng = random.Random(11)
    for prefix in probe_prefixes(vocab, rng, 1500) + [bytes([b]) for b in range(256)]:
        assert info.tokens_with_prefix(prefix).tolist() == oracle.with_prefix(prefix), prefix
    # The whole trie holds exactly the tokens with bytes.
    assert info.tokens_with_prefix(b"").tolist() == [i for i, b in enumerate(vocab) if b]


def test_trie_shape_is_bounded(tokenizer_name):
    info = real_tokenizer(tokenizer_name)
    vocab = info.all_token_bytes()
    total_bytes = sum(len(b) for b in vocab)
    assert info.native.trie_num_nodes <= total_bytes + 1
    assert info.native.max_token_bytes == max(len(b) for b in vocab)


@settings(max_examples=200, deadline=None)
@given(vocab=st.lists(st.binary(max_size=5), min_size=1, max_size=60),
       probe=st.binary(max_size=6))
def test_trie_property_small_vocabularies(vocab, probe):
    info = TokenizerInfo.from_token_bytes(vocab)
    assert info.tokens_with_prefix(probe).tolist() == brute_with_prefix(vocab, probe)
    assert info.tokens_prefixing(probe).tolist() == brute_prefixing(vocab, probe)
