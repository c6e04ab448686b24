"""The values of a generation job's config and of a request's `sampling` / token limits,
checked before anything runs.

Design note. `config_problems(config)` returns one line per bad value of a loaded config
(`configs/base.yml`'s keys), each naming the key, the allowed values and what it got; the job
refuses to start while there is any (`tpu_scripts/generate.py` prints them and exits 2).
`sampling_problems(spec, where)` is the same check for a sampling block, used for the config's
`sampling:` and for every request's own `sampling` (merged over the config's), so a bad value
in a request fails that request alone. `sampling_config` turns a checked block into the
sampler's config (`jaxguide.device.sampling`).
"""

from __future__ import annotations

import math
from typing import Any

from jaxguide.device.sampling import (
    Greedy,
    MinP,
    SamplingConfig,
    Temperature,
    TopK,
    TopP,
)

SAMPLING_KINDS = ("greedy", "temperature", "top_k", "top_p", "min_p")
SAMPLING_KEYS = ("kind", "temperature", "top_k", "top_p", "min_p")
MODELS = ("smollm2",)
DTYPES = ("float32", "bfloat16")
JSON_WHITESPACE = ("flexible", "compact")
JSON_FORMATS = ("assert", "annotation")
JSON_PROPERTY_ORDERS = ("declared", "any")
BOOL_KEYS = ("resume", "retry_failed", "lenient", "fast_forward", "shard_batch", "progress")
MAX_JSON_INDENT = 16


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def positive_int_problem(value: Any, where: str) -> str | None:
    """A line saying why `value` is not an integer >= 1, or None."""
    if _is_int(value) and value >= 1:
        return None
    return f"{where} must be an integer >= 1, got {value!r}"


def sampling_problems(spec: dict[str, Any], where: str = "sampling") -> list[str]:
    """Lines naming each bad value of a sampling block (empty: usable). Every value is
    checked whatever the kind (the config's block holds the defaults of every kind)."""
    problems = []
    unknown = sorted(set(spec) - set(SAMPLING_KEYS))
    if unknown:
        problems.append(f"{where}: unknown keys {unknown} (known: {', '.join(SAMPLING_KEYS)})")
    kind = spec.get("kind", "greedy")
    if kind not in SAMPLING_KINDS:
        problems.append(f"{where}.kind must be one of {', '.join(SAMPLING_KINDS)}, got "
                        f"{kind!r}")
    temperature = spec.get("temperature", 1.0)
    if not _is_number(temperature) or temperature < 0:
        problems.append(f"{where}.temperature must be a finite number >= 0 (> 0 for the "
                        f"random kinds), got {temperature!r}")
    elif temperature == 0 and kind in SAMPLING_KINDS and kind != "greedy":
        problems.append(f"{where}.temperature must be > 0 for kind {kind} (use kind greedy "
                        "for argmax decoding), got 0")
    top_k = spec.get("top_k", 40)
    if not (_is_int(top_k) or (_is_number(top_k) and float(top_k).is_integer())) or top_k < 1:
        problems.append(f"{where}.top_k must be an integer >= 1, got {top_k!r}")
    top_p = spec.get("top_p", 0.9)
    if not _is_number(top_p) or not 0 < top_p <= 1:
        problems.append(f"{where}.top_p must be a number in (0, 1], got {top_p!r}")
    min_p = spec.get("min_p", 0.05)
    if not _is_number(min_p) or not 0 <= min_p <= 1:
        problems.append(f"{where}.min_p must be a number in [0, 1], got {min_p!r}")
    return problems


def sampling_config(spec: dict[str, Any], where: str = "sampling") -> SamplingConfig:
    """The sampler's config for a sampling block; ValueError naming the bad values."""
    problems = sampling_problems(spec, where)
    if problems:
        raise ValueError("; ".join(problems))
    kind = spec.get("kind", "greedy")
    temperature = spec.get("temperature", 1.0)
    if kind == "greedy":
        return Greedy()
    if kind == "temperature":
        return Temperature(temperature)
    if kind == "top_k":
        return TopK(int(spec.get("top_k", 40)), temperature=temperature)
    if kind == "top_p":
        return TopP(spec.get("top_p", 0.9), temperature=temperature)
    return MinP(spec.get("min_p", 0.05), temperature=temperature)


def json_whitespace_problem(value: Any) -> str | None:
    """A line saying why `value` is not a JSON whitespace mode, or None."""
    if value in JSON_WHITESPACE or (_is_int(value) and 0 <= value <= MAX_JSON_INDENT):
        return None
    return (f"json_whitespace must be one of {', '.join(JSON_WHITESPACE)} or an indent "
            f"0..{MAX_JSON_INDENT}, got {value!r}")


def config_problems(config: dict[str, Any]) -> list[str]:
    """One line per bad value of a job config (empty: the job may start)."""
    problems = []
    if config.get("model") not in MODELS:
        problems.append(f"model must be one of {', '.join(MODELS)}, got {config.get('model')!r}")
    if config.get("dtype") not in DTYPES:
        problems.append(f"dtype must be one of {', '.join(DTYPES)}, got {config.get('dtype')!r}")
    for key in ("input", "output"):
        if not isinstance(config.get(key), str) or not config.get(key):
            problems.append(f"{key} must be a file path, got {config.get(key)!r}")
    for key in ("batch_size", "max_new_tokens"):
        problem = positive_int_problem(config.get(key), key)
        if problem:
            problems.append(problem)
    for key in ("max_forced_per_step", "threads"):
        value = config.get(key)
        if not _is_int(value) or value < 0:
            problems.append(f"{key} must be an integer >= 0, got {value!r}")
    for key in BOOL_KEYS:
        if not isinstance(config.get(key), bool):
            problems.append(f"{key} must be true or false, got {config.get(key)!r}")
    seed = config.get("seed")
    if not _is_int(seed) or not 0 <= seed < 2**32:
        problems.append(f"seed must be an integer in [0, 2**32), got {seed!r}")
    problem = json_whitespace_problem(config.get("json_whitespace"))
    if problem:
        problems.append(problem)
    if config.get("json_formats") not in JSON_FORMATS:
        problems.append(f"json_formats must be one of {', '.join(JSON_FORMATS)}, got "
                        f"{config.get('json_formats')!r}")
    if config.get("json_property_order") not in JSON_PROPERTY_ORDERS:
        problems.append(f"json_property_order must be one of "
                        f"{', '.join(JSON_PROPERTY_ORDERS)}, got "
                        f"{config.get('json_property_order')!r}")
    sampling = config.get("sampling")
    if isinstance(sampling, dict):
        problems += sampling_problems(sampling)
    else:
        problems.append(f"sampling must be a mapping of {', '.join(SAMPLING_KEYS)}, got "
                        f"{sampling!r}")
    return problems
