"""jaxguide.device.sampling against numpy oracles: masking, greedy, keep sets, distributions, sharding.

Oracles are independent of the implementation: bits are unpacked with `np.unpackbits` on the
little-endian bytes, keep sets and probabilities are computed in float64 numpy, and sampled
distributions are checked with a chi-square test at a fixed seed (each such test also checks
that a slightly wrong distribution is rejected, so it can fail).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import textwrap

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.fake_devices import run_with_8_cpu_devices

from jaxguide.device.sampling import (
    NO_ALLOWED_TOKEN,
    Greedy,
    MinP,
    Temperature,
    TopK,
    TopP,
    apply_token_bitmask,
    sample,
    sampling_logits,
    unpack_token_bitmask,
)

try:
    from scipy import stats as scipy_stats
except ImportError:  # pragma: no cover - scipy is in the test extra
    scipy_stats = None

HYPOTHESIS = settings(max_examples=30, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow])
# A few shapes, so that hypothesis examples reuse compiled programs instead of compiling anew.
VOCAB_SIZES = [1, 5, 31, 32, 33, 70, 100]
BATCH_SIZES = [1, 3, 8]
DTYPES = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16}


# ----------------------------------------------------------------------------- numpy oracles

def unpack_oracle(bitmask: np.ndarray, vocab_size: int) -> np.ndarray:
    """bool [B, V] from uint32 [B, W] via the little-endian byte view (independent of shifts)."""
    as_bytes = np.ascontiguousarray(bitmask.astype("<u4")).view(np.uint8)
    return np.unpackbits(as_bytes, axis=1, bitorder="little")[:, :vocab_size].astype(bool)


def pack_oracle(allowed: np.ndarray, words: int) -> np.ndarray:
    """uint32 [B, words] from bool [B, V] (V <= 32 * words), little-endian bit order."""
    batch, vocab_size = allowed.shape
    padded = np.zeros((batch, 32 * words), dtype=bool)
    padded[:, :vocab_size] = allowed
    return np.packbits(padded, axis=1, bitorder="little").view("<u4").astype(np.uint32)


def random_bitmask(rng: np.random.Generator, batch: int, vocab_size: int, words: int,
                   density: float, pad_bits: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(uint32 [B, W], bool allowed [B, V]); bits at ids >= V are random garbage if pad_bits."""
    allowed = rng.random((batch, vocab_size)) < density
    bitmask = pack_oracle(allowed, words)
    if pad_bits:
        garbage = pack_oracle(rng.random((batch, 32 * words)) < 0.5, words)
        pad = pack_oracle(np.arange(32 * words)[None, :] >= vocab_size, words)
        bitmask |= garbage & pad
    return bitmask, allowed


def keep_oracle(logits: np.ndarray, allowed: np.ndarray, config, temperature=None):
    """(bool keep [B, V], float64 margin): the tokens `config` may draw, in float64.

    The margin is the distance of the closest value to a keep/drop boundary; tests discard
    examples whose margin is within float32 rounding.
    """
    with np.errstate(invalid="ignore"):
        return _keep_oracle(logits, allowed, config, temperature)


def _keep_oracle(logits, allowed, config, temperature):
    x = logits.astype(np.float64)
    if temperature is not None:
        t = np.asarray(temperature, np.float64)
        x = x / np.where(t > 0, t, 1.0)[:, None]
    elif not isinstance(config, Greedy):
        x = x / config.temperature
    x = np.where(allowed, x, -np.inf)
    keep = allowed & (x > -np.inf)
    margin = np.inf
    if isinstance(config, TopK):
        k = min(config.k, x.shape[1])
        kth = np.sort(x, axis=1)[:, -k][:, None]
        keep &= x >= kth
        gaps = np.abs(x - kth)[(x != kth) & np.isfinite(x) & np.isfinite(kth)]
        margin = gaps.min(initial=np.inf)
    elif isinstance(config, MinP) and config.p > 0:
        row_max = x.max(axis=1, keepdims=True)
        bound = row_max + math.log(config.p)
        keep &= x >= bound
        finite = np.isfinite(x) & np.isfinite(bound)
        margin = np.abs(x - bound)[finite].min(initial=np.inf)
    elif isinstance(config, TopP) and config.p < 1:
        for row in range(x.shape[0]):
            if not keep[row].any():
                continue
            probs = np.exp(x[row] - x[row].max())
            probs /= probs.sum()
            ordered = np.sort(probs)[::-1]
            before = np.cumsum(ordered) - ordered
            inside = before < config.p
            threshold = ordered[inside].min()
            keep[row] &= probs >= threshold
            margin = min(margin, np.abs(before - config.p).min())
            below = probs[probs < threshold]
            if below.size:  # relative gap between the threshold and the next smaller prob
                margin = min(margin, (threshold - below.max()) / threshold)
    return keep, margin


def softmax_over(logits: np.ndarray, keep: np.ndarray, temperature: float) -> np.ndarray:
    x = np.where(keep, logits.astype(np.float64) / temperature, -np.inf)
    p = np.exp(x - x.max())
    return p / p.sum()


def chi_square_pvalue(counts: np.ndarray, probs: np.ndarray) -> tuple[float, float]:
    """(statistic, p-value) of counts against probs, pooling cells with expected count < 5.

    Without scipy the p-value is replaced by 0.0 or 1.0 from a Wilson-Hilferty critical value
    at alpha = 1e-4, which is all the tests use it for.
    """
    total = counts.sum()
    assert np.all(counts[probs == 0] == 0), "draws in a zero-probability cell"
    expected = probs * total
    big = expected >= 5
    obs = np.append(counts[big], counts[~big & (probs > 0)].sum())
    exp = np.append(expected[big], expected[~big & (probs > 0)].sum())
    obs, exp = obs[exp > 0], exp[exp > 0]
    stat = float(((obs - exp) ** 2 / exp).sum())
    df = len(obs) - 1
    if df == 0:
        return stat, 1.0
    if scipy_stats is not None:
        return stat, float(scipy_stats.chi2.sf(stat, df))
    z = 3.719  # upper 1e-4 quantile of N(0, 1)
    critical = df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3
    return stat, 0.0 if stat > critical else 1.0


# ----------------------------------------------------------------------------- unpacking

@HYPOTHESIS
@given(batch=st.sampled_from(BATCH_SIZES), vocab_size=st.sampled_from(VOCAB_SIZES),
       extra_words=st.integers(0, 2), seed=st.integers(0, 2**32 - 1))
def test_unpack_matches_byte_oracle(batch, vocab_size, extra_words, seed):
    rng = np.random.default_rng(seed)
    words = -(-vocab_size // 32) + extra_words
    bitmask = rng.integers(0, 2**32, size=(batch, words), dtype=np.uint32)
    got = np.asarray(jax.jit(unpack_token_bitmask, static_argnums=1)(bitmask, vocab_size))
    np.testing.assert_array_equal(got, unpack_oracle(bitmask, vocab_size))
    # int32 masks (e.g. from torch-style producers) are the same bits.
    got_int32 = np.asarray(unpack_token_bitmask(jnp.asarray(bitmask.view(np.int32)), vocab_size))
    np.testing.assert_array_equal(got_int32, got)


def test_bit_order_is_little_endian():
    bitmask = np.zeros((1, 2), np.uint32)
    bitmask[0, 1] = 1 << 3  # token 35
    bitmask[0, 0] = 1 << 31  # token 31
    allowed = np.asarray(unpack_token_bitmask(jnp.asarray(bitmask), 40))[0]
    assert list(np.flatnonzero(allowed)) == [31, 35]


@HYPOTHESIS
@given(batch=st.sampled_from(BATCH_SIZES), vocab_size=st.sampled_from(VOCAB_SIZES),
       extra_words=st.integers(0, 2), dtype=st.sampled_from(sorted(DTYPES)),
       seed=st.integers(0, 2**32 - 1))
def test_apply_token_bitmask(batch, vocab_size, extra_words, dtype, seed):
    rng = np.random.default_rng(seed)
    words = -(-vocab_size // 32) + extra_words
    bitmask, allowed = random_bitmask(rng, batch, vocab_size, words, density=0.4)
    logits = rng.normal(size=(batch, vocab_size)).astype(DTYPES[dtype])
    got = np.asarray(apply_token_bitmask(jnp.asarray(logits), jnp.asarray(bitmask)))
    assert got.dtype == logits.dtype
    np.testing.assert_array_equal(np.isneginf(got.astype(np.float32)), ~allowed)
    np.testing.assert_array_equal(got[allowed], logits[allowed])


def test_constrained_rows_ignore_their_mask():
    rng = np.random.default_rng(1)
    bitmask, allowed = random_bitmask(rng, 4, 50, 2, density=0.3)
    logits = rng.normal(size=(4, 50)).astype(np.float32)
    constrained = np.array([True, False, True, False])
    got = np.asarray(apply_token_bitmask(logits, bitmask, constrained=constrained))
    np.testing.assert_array_equal(np.isfinite(got), allowed | ~constrained[:, None])
    tokens = np.asarray(sample(logits, bitmask, None, Greedy(), constrained=constrained))
    masked = np.where(allowed, logits, -np.inf)
    np.testing.assert_array_equal(tokens, np.where(constrained, masked.argmax(1),
                                                   logits.argmax(1)))


# ----------------------------------------------------------------------------- greedy

def greedy_oracle(logits: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    x = np.where(allowed, logits.astype(np.float64), -np.inf)
    empty = (x == -np.inf).all(axis=1)
    return np.where(empty, NO_ALLOWED_TOKEN, x.argmax(axis=1)).astype(np.int32)


@HYPOTHESIS
@given(batch=st.sampled_from(BATCH_SIZES), vocab_size=st.sampled_from(VOCAB_SIZES),
       extra_words=st.integers(0, 1), dtype=st.sampled_from(sorted(DTYPES)),
       density=st.sampled_from([0.0, 0.05, 0.5, 1.0]), seed=st.integers(0, 2**32 - 1))
def test_greedy_is_argmax_over_allowed_with_ties(batch, vocab_size, extra_words, dtype,
                                                 density, seed):
    rng = np.random.default_rng(seed)
    words = -(-vocab_size // 32) + extra_words
    bitmask, allowed = random_bitmask(rng, batch, vocab_size, words, density)
    # Small integers: many exact ties, in float32 and bfloat16 alike; some -inf logits.
    logits = rng.integers(-3, 4, size=(batch, vocab_size)).astype(np.float32)
    logits[rng.random((batch, vocab_size)) < 0.1] = -np.inf
    logits = logits.astype(DTYPES[dtype])
    got = np.asarray(sample(jnp.asarray(logits), jnp.asarray(bitmask), None, Greedy()))
    np.testing.assert_array_equal(got, greedy_oracle(logits, allowed))
    unmasked = np.asarray(sample(jnp.asarray(logits), None, None, Greedy()))
    np.testing.assert_array_equal(unmasked, greedy_oracle(logits, np.ones_like(allowed)))


def test_greedy_bf16_ties_pick_lowest_allowed_id():
    logits = np.array([[2.0, 3.0, 3.0, 3.0, 1.0]], dtype=ml_dtypes.bfloat16)
    allowed = np.array([[True, False, True, True, True]])
    bitmask = pack_oracle(allowed, 1)
    assert int(sample(jnp.asarray(logits), bitmask, None, Greedy())[0]) == 2


# ----------------------------------------------------------------------------- keep sets

CONFIG_STRATEGY = st.one_of(
    st.builds(Temperature, st.sampled_from([0.3, 1.0, 2.5])),
    st.builds(TopK, st.integers(1, 40), st.sampled_from([0.5, 1.0])),
    st.builds(TopP, st.sampled_from([0.05, 0.3, 0.6, 0.9, 0.97, 1.0]),
              st.sampled_from([0.7, 1.0])),
    st.builds(MinP, st.sampled_from([0.0, 0.02, 0.2, 0.7, 1.0]), st.sampled_from([0.8, 1.0])),
)


@HYPOTHESIS
@given(batch=st.sampled_from(BATCH_SIZES), vocab_size=st.sampled_from(VOCAB_SIZES),
       extra_words=st.integers(0, 1), dtype=st.sampled_from(sorted(DTYPES)),
       config=CONFIG_STRATEGY, per_row=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_keep_sets_match_reference(batch, vocab_size, extra_words, dtype, config, per_row,
                                   seed):
    rng = np.random.default_rng(seed)
    words = -(-vocab_size // 32) + extra_words
    bitmask, allowed = random_bitmask(rng, batch, vocab_size, words, density=0.6)
    logits = (2.0 * rng.normal(size=(batch, vocab_size))).astype(DTYPES[dtype])
    temperature = None
    if per_row:
        temperature = rng.choice([0.0, 0.5, 1.5], size=batch).astype(np.float32)
    keep, margin = keep_oracle(logits, allowed, config, temperature)
    assume(margin > 1e-4)
    got = np.asarray(sampling_logits(jnp.asarray(logits), jnp.asarray(bitmask), config,
                                     temperature=temperature))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(np.isfinite(got), keep)
    # Every draw lies in the keep set; empty rows give the sentinel.
    tokens = np.asarray(sample(jnp.asarray(logits), jnp.asarray(bitmask),
                               jax.random.key(seed % 1000), config, temperature=temperature))
    for row, token in enumerate(tokens):
        if keep[row].any():
            assert 0 <= token < vocab_size and keep[row, token]
        else:
            assert token == NO_ALLOWED_TOKEN


def test_truncation_is_after_masking():
    # The best unmasked tokens are disallowed: top-k must keep the best *allowed* ones.
    logits = np.array([[9.0, 8.0, 7.0, 1.0, 0.5, 0.0, -1.0]], np.float32)
    allowed = np.array([[False, False, False, True, True, True, True]])
    bitmask = pack_oracle(allowed, 1)
    got = np.isfinite(np.asarray(sampling_logits(logits, bitmask, TopK(2))))[0]
    assert list(np.flatnonzero(got)) == [3, 4]
    got = np.isfinite(np.asarray(sampling_logits(logits, bitmask, MinP(0.5))))[0]
    assert list(np.flatnonzero(got)) == [3, 4]  # exp(-0.5) >= 0.5 > exp(-1)
    probs = softmax_over(logits[0], allowed[0], 1.0)
    assert probs[3] < 0.6 < probs[3] + probs[4]
    got = np.isfinite(np.asarray(sampling_logits(logits, bitmask, TopP(0.6))))[0]
    assert list(np.flatnonzero(got)) == [3, 4]


# ----------------------------------------------------------------------------- never disallowed

@functools.partial(jax.jit, static_argnames=("config", "steps"))
def draw_steps(logits, bitmask, key, temperature, *, config, steps):
    """int32 [steps, B]: `steps` independent draws for every row, in one program."""
    keys = jax.random.split(key, steps)
    return jax.lax.map(lambda k: sample(logits, bitmask, k, config, temperature=temperature),
                       keys)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_masked_out_tokens_are_never_sampled(dtype):
    """2.4M draws (6 configs x 2 dtypes x 8192 rows x 16 steps), disallowed tokens favoured."""
    rng = np.random.default_rng(7)
    batch, vocab_size, words, steps = 8192, 100, 5, 16
    density = rng.choice([0.01, 0.05, 0.3, 0.9], size=(batch, 1))
    allowed = rng.random((batch, vocab_size)) < density
    allowed[: batch // 8] = False  # the first rows allow exactly one token
    allowed[np.arange(batch), rng.integers(0, vocab_size, batch)] = True
    allowed[-4:] = False  # empty rows
    bitmask = pack_oracle(allowed, words) | pack_oracle(
        np.arange(32 * words)[None, :] >= vocab_size, words)  # all padding bits set
    logits = rng.normal(size=(batch, vocab_size)) + np.where(allowed, 0.0, 6.0)
    logits = jnp.asarray(logits.astype(DTYPES[dtype]))
    per_row = rng.choice([0.0, 0.7, 3.0], size=batch).astype(np.float32)
    cases = [(Temperature(1.0), None), (Temperature(4.0), None), (TopK(3, 2.0), None),
             (TopP(0.95, 3.0), None), (MinP(0.01, 5.0), None), (Temperature(1.0), per_row)]
    for index, (config, temperature) in enumerate(cases):
        tokens = np.asarray(draw_steps(logits, jnp.asarray(bitmask), jax.random.key(index),
                                       temperature, config=config, steps=steps))
        assert tokens.shape == (steps, batch)
        assert np.all(tokens[:, -4:] == NO_ALLOWED_TOKEN), config
        tokens = tokens[:, :-4]
        assert tokens.min() >= 0 and tokens.max() < vocab_size, config
        rows = np.broadcast_to(np.arange(batch - 4), tokens.shape)
        assert allowed[rows, tokens].all(), f"{config}: a masked-out token was sampled"


# ----------------------------------------------------------------------------- distributions

CHI_SQUARE_CASES = [
    ("temperature", Temperature(0.7), None),
    ("top_k", TopK(5, 1.3), None),
    ("top_p", TopP(0.8), None),
    ("min_p", MinP(0.15), None),
    ("per_row_temperature", Temperature(1.0), 0.6),
]


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("name,config,row_temperature", CHI_SQUARE_CASES,
                         ids=[case[0] for case in CHI_SQUARE_CASES])
def test_sampled_distribution_matches_renormalized_allowed(name, config, row_temperature,
                                                           dtype):
    rng = np.random.default_rng(2024)
    vocab_size, words, draws = 45, 2, 131072
    allowed = np.zeros(vocab_size, bool)
    allowed[rng.choice(vocab_size, 14, replace=False)] = True
    row = rng.normal(scale=1.2, size=vocab_size).astype(DTYPES[dtype])
    row[~allowed] += 3  # the model prefers what the grammar forbids
    logits = jnp.broadcast_to(jnp.asarray(row), (draws, vocab_size))
    bitmask_row = pack_oracle(allowed[None], words) | pack_oracle(
        np.arange(32 * words)[None, :] >= vocab_size, words)
    bitmask = jnp.broadcast_to(jnp.asarray(bitmask_row), (draws, words))
    temperature = None
    effective_t = getattr(config, "temperature", 1.0)
    if row_temperature is not None:
        temperature = jnp.full((draws,), row_temperature, jnp.float32)
        effective_t = row_temperature
    keep, margin = keep_oracle(row[None], allowed[None], config,
                               None if temperature is None else np.array([row_temperature]))
    assert margin > 1e-3
    probs = softmax_over(row, keep[0], effective_t)
    tokens = np.asarray(sample(logits, bitmask, jax.random.key(11), config,
                               temperature=temperature))
    counts = np.bincount(tokens, minlength=vocab_size)
    assert counts.sum() == draws and np.all(counts[~keep[0]] == 0)
    _, p_value = chi_square_pvalue(counts, probs)
    assert p_value > 1e-4, f"{name}: sampled frequencies do not match (p={p_value:.2e})"
    # Power check: a distribution 10% off in temperature is rejected by the same test.
    wrong = softmax_over(row, keep[0], effective_t * 1.1)
    _, p_wrong = chi_square_pvalue(counts, wrong)
    assert p_wrong < 1e-6, f"{name}: the chi-square test cannot tell a wrong temperature"


def test_per_row_keys_make_rows_independent_of_the_batch():
    rng = np.random.default_rng(3)
    bitmask, _ = random_bitmask(rng, 8, 70, 3, density=0.5)
    logits = rng.normal(size=(8, 70)).astype(np.float32)
    keys = jax.random.split(jax.random.key(5), 8)
    tokens = np.asarray(sample(logits, bitmask, keys, TopP(0.9)))
    order = rng.permutation(8)
    permuted = np.asarray(sample(logits[order], bitmask[order], keys[order], TopP(0.9)))
    np.testing.assert_array_equal(permuted, tokens[order])
    raw_keys = jax.random.key_data(keys)  # raw uint32 [B, 2] keys behave the same
    np.testing.assert_array_equal(np.asarray(sample(logits, bitmask, raw_keys, TopP(0.9))),
                                  tokens)


def test_per_row_temperature_equals_scalar_config_and_zero_is_greedy():
    rng = np.random.default_rng(4)
    bitmask, allowed = random_bitmask(rng, 16, 100, 4, density=0.5)
    logits = rng.normal(size=(16, 100)).astype(np.float32)
    key = jax.random.key(9)
    for config in (Temperature(0.8), TopK(7, 0.8), TopP(0.7, 0.8), MinP(0.1, 0.8)):
        scalar = np.asarray(sample(logits, bitmask, key, config))
        per_row = np.asarray(sample(logits, bitmask, key,
                                    dataclasses.replace(config, temperature=1.0),
                                    temperature=np.full(16, 0.8, np.float32)))
        np.testing.assert_array_equal(per_row, scalar)
        mixed_t = np.where(np.arange(16) % 2 == 0, 0.0, 0.8).astype(np.float32)
        mixed = np.asarray(sample(logits, bitmask, key, config, temperature=mixed_t))
        greedy = greedy_oracle(logits, allowed)
        np.testing.assert_array_equal(mixed[::2], greedy[::2])
        np.testing.assert_array_equal(mixed[1::2], scalar[1::2])


# ----------------------------------------------------------------------------- edge cases

@pytest.mark.parametrize("config", [Greedy(), Temperature(1.0), TopK(3), TopP(0.5),
                                    MinP(0.2)], ids=repr)
def test_rows_with_nothing_drawable_give_the_sentinel(config):
    logits = np.zeros((4, 40), np.float32)
    logits[2, :] = -np.inf  # everything allowed, but nothing has a finite logit
    logits[3, 5] = np.nan   # a NaN on a disallowed id must not leak through
    allowed = np.zeros((4, 40), bool)
    allowed[1, 39] = True
    allowed[2, :] = True
    allowed[3, 7] = True
    bitmask = pack_oracle(allowed, 2)
    bitmask[0, 1] |= np.uint32(0xFFFFFF00)  # only padding bits (ids 40..63): still empty
    tokens = np.asarray(sample(logits, bitmask, jax.random.key(0), config))
    assert list(tokens) == [NO_ALLOWED_TOKEN, 39, NO_ALLOWED_TOKEN, 7]


def test_invalid_arguments_raise_clear_errors():
    logits = jnp.zeros((2, 64), jnp.float32)
    with pytest.raises(ValueError, match="covers 32 ids"):
        sample(logits, jnp.zeros((2, 1), jnp.uint32), None, Greedy())
    with pytest.raises(ValueError, match="rows"):
        sample(logits, jnp.zeros((3, 2), jnp.uint32), None, Greedy())
    with pytest.raises(TypeError, match="uint32"):
        sample(logits, jnp.zeros((2, 2), jnp.float32), None, Greedy())
    with pytest.raises(ValueError, match=r"\[B, V\]"):
        sample(jnp.zeros(64), None, None, Greedy())
    with pytest.raises(TypeError, match="floating"):
        sample(jnp.zeros((2, 64), jnp.int32), None, None, Greedy())
    with pytest.raises(ValueError, match="PRNG key"):
        sample(logits, None, None, Temperature(1.0))
    with pytest.raises(ValueError, match="Greedy"):
        sample(logits, None, None, Greedy(), temperature=jnp.ones(2))
    with pytest.raises(ValueError, match="temperature must have shape"):
        sample(logits, None, jax.random.key(0), Temperature(), temperature=jnp.ones(3))
    with pytest.raises(ValueError, match="constrained must have shape"):
        apply_token_bitmask(logits, jnp.zeros((2, 2), jnp.uint32), constrained=jnp.ones(3, bool))
    with pytest.raises(TypeError, match="config"):
        sample(logits, None, jax.random.key(0), "greedy")
    for bad in (lambda: Temperature(0.0), lambda: Temperature(float("nan")),
                lambda: TopK(0), lambda: TopK(2.5), lambda: TopP(0.0), lambda: TopP(1.5),
                lambda: MinP(-0.1), lambda: MinP(1.1)):
        with pytest.raises(ValueError):
            bad()
    assert hash(TopK(5)) == hash(TopK(5.0)) and TopK(5) == TopK(5.0)  # static, hashable


# ----------------------------------------------------------------------------- compilation

def test_no_recompilation_over_100_steps():
    compiles: list[str] = []

    def on_duration(event: str, duration: float, **kwargs) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(event)

    traces = []
    batch, vocab_size, words = 8, 300, 10

    @jax.jit
    def decode_step(logits, bitmask, key, temperature, constrained):
        traces.append(1)  # Python side effect: runs once per trace
        return sample(logits, bitmask, key, TopP(0.9), temperature=temperature,
                      constrained=constrained)

    rng = np.random.default_rng(0)
    inputs = []
    for step in range(100):
        bitmask, _ = random_bitmask(rng, batch, vocab_size, words, density=0.2)
        inputs.append((jax.device_put(rng.normal(size=(batch, vocab_size)).astype(np.float32)),
                       jax.device_put(bitmask), jax.random.key(step),
                       jax.device_put(rng.uniform(0, 2, batch).astype(np.float32)),
                       jax.device_put(rng.random(batch) < 0.5)))
    decode_step(*inputs[0]).block_until_ready()  # warm-up compile
    unconstrained = jax.jit(lambda logits, key: sample(logits, None, key, TopP(0.9)))
    unconstrained(inputs[0][0], inputs[0][2]).block_until_ready()
    jax.monitoring.register_event_duration_secs_listener(on_duration)
    try:
        for step in range(100):
            decode_step(*inputs[step]).block_until_ready()
            unconstrained(inputs[step][0], inputs[step][2]).block_until_ready()
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
    assert len(traces) == 1
    assert compiles == []


SHARDED_SCRIPT = textwrap.dedent("""
    import json
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P
    from jaxguide.device.sampling import Greedy, MinP, Temperature, TopK, TopP, sample

    assert jax.device_count() == 8, jax.devices()
    compiles = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, duration, **kw: compiles.append(event)
        if event == "/jax/core/compile/backend_compile_duration" else None)
    mesh = jax.make_mesh((8,), ("data",))
    rows = NamedSharding(mesh, P("data"))
    batch, vocab_size, words, steps = 64, 1000, 40, 4
    rng = np.random.default_rng(0)
    data = []
    for step in range(steps):
        logits = rng.normal(size=(batch, vocab_size)).astype(np.float32)
        bitmask = rng.integers(0, 2**32, size=(batch, words), dtype=np.uint32)
        bitmask[:, 2:] &= rng.integers(0, 2**32, size=(batch, words - 2), dtype=np.uint32)
        t = rng.uniform(0, 2, batch).astype(np.float32)
        data.append((logits, bitmask, t))
    result = {}
    configs = {"greedy": Greedy(), "temperature": Temperature(0.8), "top_k": TopK(20),
               "top_p": TopP(0.9), "min_p": MinP(0.1), "per_row": Temperature()}

    def make_step(config, per_row):
        def step_fn(logits, bitmask, key, t):
            return sample(logits, bitmask, key, config, temperature=t if per_row else None)
        return step_fn

    for name, config in configs.items():
        step_fn = make_step(config, name == "per_row")
        plain = jax.jit(step_fn)
        sharded = jax.jit(step_fn, out_shardings=rows)
        equal, out_sharded = True, True
        before = None
        for step, (logits, bitmask, t) in enumerate(data):
            key = jax.random.key(step)
            want = np.asarray(plain(logits, bitmask, key, t))
            args = [jax.device_put(a, rows) for a in (logits, bitmask, t)]
            if step == 1:
                before = len(compiles)
            got = sharded(args[0], args[1], key, args[2])
            out_sharded &= got.sharding.is_equivalent_to(rows, 1)
            equal &= bool(np.array_equal(np.asarray(got), want))
        result[name] = {"equal": equal, "out_sharded": bool(out_sharded),
                        "compiles_after_first": len(compiles) - before}
    print("RESULT " + json.dumps(result))
""")


def test_batch_sharded_sampling_compiles_once_and_matches_unsharded():
    result = run_with_8_cpu_devices(SHARDED_SCRIPT)
    assert len(result) == 6
    for name, outcome in result.items():
        assert outcome == {"equal": True, "out_sharded": True, "compiles_after_first": 0}, \
            (name, outcome)
