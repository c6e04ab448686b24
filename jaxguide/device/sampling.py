"""Jitted sampling on packed token bitmasks: greedy, temperature, top-k, top-p and min-p.

Design note
-----------
What. `sample(logits [B, V], bitmask uint32 [B, W], key, config)` draws one token id per row
from the model's distribution restricted to the tokens the grammar allows, renormalized, then
truncated by the config (top-k / top-p / min-p are applied *after* masking, over the allowed
tokens only). `sampling_logits` returns the logits of that final distribution, and
`apply_token_bitmask` / `unpack_token_bitmask` are the masking building blocks.

Bitmask layout. Token id t is bit (t % 32) of uint32 word t // 32 of its row (little-endian
packing, see DESIGN.md). V <= 32 * W is required; bits for ids >= V are ignored because those
ids are not in the logits. The bits are authoritative for every id < V: when the model's logits
are padded beyond the tokenizer's vocabulary, leaving the bits of the padding ids at 0 is the
caller's job (the native mask filler does so).

Unpacking. `(bitmask[:, :, None] >> arange(32)) & 1`, reshaped to [B, 32 * W] and sliced to V:
shifts, ands and a reshape only, no gather over V, so XLA fuses it into the select over the
logits on TPU and GPU alike. Everything is row-wise, hence exact under a batch-sharded
`NamedSharding`: no collective is added, and with `jax_threefry_partitionable` (the default)
the random draws do not depend on the sharding either.

Sampling. Gumbel-max: argmax(logits / T + Gumbel noise), with -inf written into every entry that
is not allowed (or truncated away). A masked-out entry is -inf plus finite noise, so it can
never win the argmax: whatever the logits hold (even NaN), the result is an allowed token or
the sentinel below, never a disallowed token. Inverse-CDF sampling would draw fewer random
numbers but relies on a float cumulative sum being monotone, which a parallel scan does not
guarantee, so it could select a zero-probability id; it is not used.

Empty rows. A row in which no token can be drawn (its mask allows nothing below V, or every
allowed logit is -inf) yields `NO_ALLOWED_TOKEN` (-1) instead of an arbitrary id. Check for it
(`tokens < 0`) before feeding tokens back to the model: `jnp.take` would silently clamp or wrap
a -1. The native matcher never produces such a row (a matcher in an error state allows EOS), so
a -1 always means a bug or a mask that does not belong to these logits.

Configs. Frozen dataclasses (`Greedy`, `Temperature`, `TopK`, `TopP`, `MinP`), hashable and
static under `jit`: changing a config value recompiles, changing data does not. A per-row
temperature is data, not config: pass `temperature=` (f32 [B]) to `sample`; it overrides the
config's scalar temperature row by row, and a row with temperature <= 0 is sampled greedily
(argmax of its truncated logits), so one compiled step serves a batch that mixes greedy and
sampled requests.

Cost model (per step, B rows, V logits, W = ceil(V / 32) words):
  * `bitmask=None`: no mask work at all; nothing is unpacked or selected. A step in which no row
    is constrained should pass None (and skip the host fill and the host-to-device copy, which
    are the real costs). None and an array are two traces of the caller's jitted step, each
    compiled once and cached, so alternating between them never recompiles.
  * `bitmask` given: O(B * V) integer ops fused into the pass over the logits that sampling makes
    anyway, plus a read of B * W * 4 bytes (1/32 of an f32 logits read, 1/16 of a bf16 one).
  * `constrained` (bool [B]): rows marked False ignore their mask (all ids allowed), so the host
    may skip filling them; it costs one broadcast `or`, i.e. the same as the masked path.
  * `Greedy`: one argmax over V. Sampled configs add Gumbel noise (B * V threefry draws, the
    same cost as `jax.random.categorical`) and an argmax.
  * `TopK`: + `lax.top_k` over V. `MinP`: + one max over V (cheap, no sort).
  * `TopP`: + a full sort over V and a cumulative sum, O(B * V log V): the most expensive config,
    dominating the sampler at V = 128k-256k. Prefer `MinP` or `TopK` where latency matters.

Ties. `Greedy` returns the lowest allowed id among equal maxima (as `numpy.argmax`). `TopK`
keeps every token whose value equals the k-th largest, so ties can keep more than k tokens.
`TopP` keeps every token whose probability is at least that of the last token of the smallest
probability-sorted prefix whose mass reaches p (again all ties at the boundary).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import TypeAlias

import jax
import jax.numpy as jnp

NO_ALLOWED_TOKEN: int = -1
"""Token id returned for a row in which no token can be drawn (see the module docstring)."""

_BITS_PER_WORD = 32


def _check_temperature(temperature: float) -> float:
    value = float(temperature)
    if not math.isfinite(value) or value <= 0.0:
        raise ValueError(
            f"temperature must be a finite number > 0, got {temperature!r}; use Greedy() for "
            "argmax decoding, or a per-row `temperature` array with 0 for greedy rows")
    return value


@dataclasses.dataclass(frozen=True)
class Greedy:
    """Argmax over the allowed tokens (lowest id among ties)."""


@dataclasses.dataclass(frozen=True)
class Temperature:
    """Sampling from softmax(logits / temperature) over the allowed tokens.

    Attributes:
      temperature: A finite float > 0.
    """

    temperature: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "temperature", _check_temperature(self.temperature))


@dataclasses.dataclass(frozen=True)
class TopK:
    """Sampling from the k most likely allowed tokens (ties at the k-th value all kept).

    Attributes:
      k: Number of tokens kept, an int >= 1 (clamped to V at trace time).
      temperature: A finite float > 0, applied before truncation.
    """

    k: int
    temperature: float = 1.0

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or int(self.k) != self.k or self.k < 1:
            raise ValueError(f"TopK.k must be an integer >= 1, got {self.k!r}")
        object.__setattr__(self, "k", int(self.k))
        object.__setattr__(self, "temperature", _check_temperature(self.temperature))


@dataclasses.dataclass(frozen=True)
class TopP:
    """Nucleus sampling: the smallest most-likely set of allowed tokens with mass >= p.

    Probabilities are those of the allowed tokens renormalized, after temperature.

    Attributes:
      p: Probability mass in (0, 1]; 1 keeps every allowed token.
      temperature: A finite float > 0, applied before truncation.
    """

    p: float
    temperature: float = 1.0

    def __post_init__(self) -> None:
        p = float(self.p)
        if not 0.0 < p <= 1.0:
            raise ValueError(f"TopP.p must be in (0, 1], got {self.p!r}")
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "temperature", _check_temperature(self.temperature))


@dataclasses.dataclass(frozen=True)
class MinP:
    """Min-p sampling: allowed tokens whose probability is >= p * (largest probability).

    Attributes:
      p: Relative threshold in [0, 1]; 0 keeps every allowed token, 1 only the most likely.
      temperature: A finite float > 0, applied before truncation.
    """

    p: float
    temperature: float = 1.0

    def __post_init__(self) -> None:
        p = float(self.p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"MinP.p must be in [0, 1], got {self.p!r}")
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "temperature", _check_temperature(self.temperature))


SamplingConfig: TypeAlias = Greedy | Temperature | TopK | TopP | MinP
_CONFIG_TYPES = (Greedy, Temperature, TopK, TopP, MinP)


def _check_logits(logits: jax.Array) -> None:
    if logits.ndim != 2:
        raise ValueError(f"logits must have shape [B, V], got shape {logits.shape}")
    if not jnp.issubdtype(logits.dtype, jnp.floating):
        raise TypeError(f"logits must be a floating dtype, got {logits.dtype}")


def _check_bitmask(bitmask: jax.Array, batch: int | None, vocab_size: int) -> jax.Array:
    """Validates a bitmask for [batch, vocab_size] logits (any batch if None); returns uint32."""
    if bitmask.ndim != 2:
        raise ValueError(f"bitmask must have shape [B, W], got shape {bitmask.shape}")
    if bitmask.dtype == jnp.int32:
        bitmask = jax.lax.bitcast_convert_type(bitmask, jnp.uint32)
    elif bitmask.dtype != jnp.uint32:
        raise TypeError(f"bitmask must be uint32 (or int32, reinterpreted), got {bitmask.dtype}")
    rows, words = bitmask.shape
    if batch is not None and rows != batch:
        raise ValueError(f"bitmask has {rows} rows but logits have {batch}")
    if vocab_size > _BITS_PER_WORD * words:
        raise ValueError(
            f"bitmask width {words} words covers {_BITS_PER_WORD * words} ids, fewer than the "
            f"{vocab_size} logits; it needs at least {-(-vocab_size // _BITS_PER_WORD)} words")
    return bitmask


def _check_row_vector(name: str, value: jax.Array, batch: int) -> None:
    if value.shape != (batch,):
        raise ValueError(f"{name} must have shape [B] = ({batch},), got {value.shape}")


def unpack_token_bitmask(bitmask: jax.Array, vocab_size: int) -> jax.Array:
    """Unpacks a packed bitmask into a boolean mask over the first `vocab_size` ids.

    Args:
      bitmask: uint32 (or int32, reinterpreted bit for bit) `[B, W]`; token t is bit t % 32 of
        word t // 32. Requires `vocab_size <= 32 * W`.
      vocab_size: V, the number of ids to unpack (the logits width).

    Returns:
      bool `[B, V]`, True where the token is allowed.

    Raises:
      ValueError, TypeError: on a bad shape or dtype (at trace time).
    """
    if vocab_size < 1:
        raise ValueError(f"vocab_size must be >= 1, got {vocab_size}")
    bitmask = _check_bitmask(bitmask, None, vocab_size)
    batch = bitmask.shape[0]
    needed_words = -(-vocab_size // _BITS_PER_WORD)
    words = bitmask[:, :needed_words]
    shifts = jnp.arange(_BITS_PER_WORD, dtype=jnp.uint32)
    bits = (words[:, :, None] >> shifts) & jnp.uint32(1)
    return bits.reshape(batch, needed_words * _BITS_PER_WORD)[:, :vocab_size] != 0


def _allowed_mask(bitmask: jax.Array, logits: jax.Array,
                  constrained: jax.Array | None) -> jax.Array:
    batch, vocab_size = logits.shape
    bitmask = _check_bitmask(bitmask, batch, vocab_size)
    allowed = unpack_token_bitmask(bitmask, vocab_size)
    if constrained is not None:
        constrained = jnp.asarray(constrained)
        _check_row_vector("constrained", constrained, batch)
        allowed = allowed | ~constrained.astype(bool)[:, None]
    return allowed


@jax.jit
def _apply_token_bitmask(logits: jax.Array, bitmask: jax.Array,
                         constrained: jax.Array | None) -> jax.Array:
    allowed = _allowed_mask(bitmask, logits, constrained)
    return jnp.where(allowed, logits, jnp.array(-jnp.inf, logits.dtype))


def apply_token_bitmask(logits: jax.Array, bitmask: jax.Array, *,
                        constrained: jax.Array | None = None) -> jax.Array:
    """Sets the logits of tokens the bitmask does not allow to -inf.

    Args:
      logits: float `[B, V]` (any floating dtype; the result keeps it).
      bitmask: uint32 `[B, W]` with `V <= 32 * W`; token t is bit t % 32 of word t // 32. Bits
        for ids >= V are ignored (those ids are not in the logits). Bits for ids < V are
        authoritative, including ids of padding beyond the tokenizer's vocabulary, which the
        caller must leave at 0.
      constrained: optional bool `[B]`; rows marked False are left unmasked.

    Returns:
      `[B, V]` logits of the input dtype with disallowed entries at -inf.

    Raises:
      ValueError, TypeError: on bad shapes or dtypes (at trace time).
    """
    _check_logits(logits)
    return _apply_token_bitmask(logits, bitmask, constrained)


def _uses_temperature(config: SamplingConfig) -> bool:
    return not isinstance(config, Greedy)


def _check_config(config: SamplingConfig, temperature: jax.Array | None, batch: int) -> None:
    if not isinstance(config, _CONFIG_TYPES):
        raise TypeError(f"config must be one of Greedy, Temperature, TopK, TopP, MinP; "
                        f"got {type(config).__name__}")
    if temperature is not None:
        if isinstance(config, Greedy):
            raise ValueError("a per-row temperature needs a sampling config, not Greedy(): pass "
                             "e.g. Temperature() and 0 in the rows to decode greedily")
        _check_row_vector("temperature", jnp.asarray(temperature), batch)


def _truncate(x: jax.Array, config: SamplingConfig) -> jax.Array:
    """Applies top-k / top-p / min-p to f32 masked, tempered logits `[B, V]` (-inf = excluded)."""
    neg_inf = jnp.array(-jnp.inf, x.dtype)
    vocab_size = x.shape[-1]
    if isinstance(config, TopK):
        k = min(config.k, vocab_size)
        if k == vocab_size:
            return x
        kth = jax.lax.top_k(x, k)[0][:, -1:]
        return jnp.where(x >= kth, x, neg_inf)
    if isinstance(config, MinP):
        if config.p == 0.0:
            return x
        row_max = jnp.max(x, axis=-1, keepdims=True)
        return jnp.where(x >= row_max + math.log(config.p), x, neg_inf)
    if isinstance(config, TopP):
        if config.p == 1.0:
            return x
        row_max = jnp.max(x, axis=-1, keepdims=True)
        row_max = jnp.where(jnp.isfinite(row_max), row_max, 0.0)
        weights = jnp.exp(x - row_max)
        total = jnp.sum(weights, axis=-1, keepdims=True)
        probs = weights / jnp.where(total > 0.0, total, 1.0)
        descending = jnp.sort(probs, axis=-1, descending=True)
        mass_before = jnp.cumsum(descending, axis=-1) - descending
        in_nucleus = mass_before < config.p
        threshold = jnp.min(jnp.where(in_nucleus, descending, jnp.inf), axis=-1, keepdims=True)
        return jnp.where(probs >= threshold, x, neg_inf)
    return x


def _sampling_logits(logits: jax.Array, bitmask: jax.Array | None, config: SamplingConfig,
                     temperature: jax.Array | None,
                     constrained: jax.Array | None) -> tuple[jax.Array, jax.Array | None]:
    """Returns (f32 final logits [B, V], bool greedy rows [B] or None)."""
    x = logits.astype(jnp.float32)
    greedy_rows = None
    if temperature is not None:
        t = jnp.asarray(temperature).astype(jnp.float32)
        greedy_rows = ~(t > 0.0)
        x = x / jnp.where(greedy_rows, 1.0, t)[:, None]
    elif _uses_temperature(config) and config.temperature != 1.0:
        x = x / config.temperature
    if bitmask is not None:
        allowed = _allowed_mask(bitmask, logits, constrained)
        x = jnp.where(allowed, x, -jnp.inf)
    return _truncate(x, config), greedy_rows


@functools.partial(jax.jit, static_argnames=("config",))
def _sampling_logits_jit(logits, bitmask, config, temperature, constrained):
    return _sampling_logits(logits, bitmask, config, temperature, constrained)[0]


def sampling_logits(logits: jax.Array, bitmask: jax.Array | None, config: SamplingConfig, *,
                    temperature: jax.Array | None = None,
                    constrained: jax.Array | None = None) -> jax.Array:
    """The logits of the distribution `sample` draws from: masked, tempered, truncated.

    `softmax(sampling_logits(...))` is the distribution of `sample(...)` for rows sampled with a
    temperature > 0; for greedy rows `sample` returns the argmax of these logits. Useful for
    log-probabilities of constrained outputs and for testing.

    Args:
      logits: float `[B, V]`, any floating dtype (computed in float32).
      bitmask: uint32 `[B, W]` with `V <= 32 * W`, or None for no constraint.
      config: a `Greedy`, `Temperature`, `TopK`, `TopP` or `MinP` (static under jit).
      temperature: optional float `[B]` overriding the config's temperature per row; rows with
        a value <= 0 are greedy rows and are left unscaled.
      constrained: optional bool `[B]`; rows marked False ignore the bitmask.

    Returns:
      float32 `[B, V]`, -inf where a token cannot be drawn.

    Raises:
      ValueError, TypeError: on bad shapes, dtypes or config (at trace time).
    """
    _check_logits(logits)
    _check_config(config, temperature, logits.shape[0])
    return _sampling_logits_jit(logits, bitmask, config, temperature, constrained)


def _is_batched_key(key: jax.Array) -> bool:
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return key.ndim == 1
    return key.ndim == 2


def _gumbel_noise(key: jax.Array, shape: tuple[int, int]) -> jax.Array:
    batch, vocab_size = shape
    if _is_batched_key(key):
        if key.shape[0] != batch:
            raise ValueError(f"a batch of keys must have {batch} keys, got {key.shape[0]}")
        return jax.vmap(lambda k: jax.random.gumbel(k, (vocab_size,), jnp.float32))(key)
    return jax.random.gumbel(key, shape, jnp.float32)


def _argmax_or_sentinel(scores: jax.Array) -> jax.Array:
    token = jnp.argmax(scores, axis=-1).astype(jnp.int32)
    drawable = jnp.max(scores, axis=-1) != -jnp.inf
    return jnp.where(drawable, token, jnp.int32(NO_ALLOWED_TOKEN))


@functools.partial(jax.jit, static_argnames=("config",))
def _sample_jit(logits, bitmask, key, config, temperature, constrained):
    if isinstance(config, Greedy):
        if bitmask is None:
            return _argmax_or_sentinel(logits)
        # Selecting in the input dtype is exact: upcasting preserves order and ties.
        return _argmax_or_sentinel(_apply_token_bitmask(logits, bitmask, constrained))
    x, greedy_rows = _sampling_logits(logits, bitmask, config, temperature, constrained)
    noise = _gumbel_noise(key, x.shape)
    if greedy_rows is not None:
        noise = jnp.where(greedy_rows[:, None], 0.0, noise)
    return _argmax_or_sentinel(x + noise)


def sample(logits: jax.Array, bitmask: jax.Array | None, key: jax.Array | None,
           config: SamplingConfig, *, temperature: jax.Array | None = None,
           constrained: jax.Array | None = None) -> jax.Array:
    """Draws one allowed token per row.

    Jit-compiled with `config` static; it may also be called inside the caller's jitted decode
    step (where it is inlined). Shapes are static and nothing runs on the host, so a decode loop
    compiles it once.

    Args:
      logits: float `[B, V]` (float32, bfloat16, ...; sampling math runs in float32).
      bitmask: uint32 `[B, W]` with `V <= 32 * W` (token t is bit t % 32 of word t // 32; bits
        for ids >= V ignored, bits for ids < V authoritative), or None for an unconstrained
        step, which costs nothing beyond plain sampling.
      key: a PRNG key (`jax.random.key` or a raw uint32 `[2]` key), or a batch of `B` keys (one
        per row, making each row's draw independent of the rest of the batch). Unused, and may
        be None, for `Greedy()`.
      config: `Greedy()`, `Temperature(t)`, `TopK(k, t)`, `TopP(p, t)` or `MinP(p, t)`. Top-k,
        top-p and min-p are applied after masking, over the allowed tokens renormalized.
      temperature: optional float `[B]` overriding the config's scalar temperature row by row
        (data, so changing it never recompiles); rows with a value <= 0 are decoded greedily.
        Not allowed with `Greedy()`.
      constrained: optional bool `[B]`; rows marked False ignore their bitmask row.

    Returns:
      int32 `[B]` token ids, each allowed by its row's mask; `NO_ALLOWED_TOKEN` (-1) for a row
      in which no token can be drawn (nothing allowed below V, or every allowed logit -inf).

    Raises:
      ValueError, TypeError: on bad shapes, dtypes, key or config (at trace time).
    """
    _check_logits(logits)
    _check_config(config, temperature, logits.shape[0])
    if key is None and not isinstance(config, Greedy):
        raise ValueError(f"{type(config).__name__} sampling needs a PRNG key")
    if isinstance(config, Greedy):
        key = None
    return _sample_jit(logits, bitmask, key, config, temperature, constrained)
