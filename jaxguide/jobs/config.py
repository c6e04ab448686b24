"""Run configs: YAML files with `base_config:` inheritance and `key=value` overrides.

Design note. A config is a flat-or-nested mapping read from YAML (as in MaxText's base.yml):

    base_config: base.yml        # optional; resolved relative to this file, read first
    batch_size: 16               # keys here override the base's, nested mappings merge

`load_config(path, overrides)` reads the chain of bases (cycles are an error), merges each
file over its base (mappings key by key, everything else replaced), then applies the command
line's `key=value` overrides (`sampling.temperature=0.7` reaches into nested mappings). The
base file defines the schema: a key that no file of the chain defines is an error naming the
closest known keys (a typo must not silently run with defaults), and an override's value is
parsed as YAML and must have the type of the value it replaces (ints are accepted for floats;
null replaces and is replaced by anything; `any_type_keys` are left to the caller to check).
The result is a plain dict.

Paths. The values of `path_keys` (file names: a job's input and output) are relative to the
folder of the file that sets them, and are made absolute there, so a config runs the same from
any working directory; a `key=value` override names a path relative to the working directory
(it is typed there). `base_config:` is relative to its file too; absolute paths stay as they are.
"""

from __future__ import annotations

import difflib
import os
from typing import Any, Iterable

import yaml

_MAX_BASE_DEPTH = 32


class ConfigError(ValueError):
    """A config file or override is malformed; the message names the file and key."""


def _read_yaml(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: invalid YAML: {e}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config must be a YAML mapping, got "
                          f"{type(data).__name__}")
    return data


def _merge(base: dict[str, Any], top: dict[str, Any], where: str, prefix: str = "",
           any_type: frozenset[str] = frozenset()) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        if not isinstance(key, str):
            raise ConfigError(f"{where}: keys must be strings, got {key!r}")
        name = prefix + key
        if key in base:
            if name not in any_type:
                _check_type(name, base[key], value, where)
        elif base or prefix:  # a base exists: the key must be one of its keys
            raise ConfigError(_unknown_key_message(name, key, base, where))
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merged[key] = _merge(base[key], value, where, name + ".", any_type)
        else:
            merged[key] = value
    return merged


def _unknown_key_message(name: str, key: str, known: dict[str, Any], where: str) -> str:
    close = difflib.get_close_matches(key, list(known), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return f"{where}: unknown config key {name!r}{hint}"


def _check_type(name: str, old: Any, new: Any, where: str) -> None:
    if old is None or new is None:
        return
    if isinstance(old, bool) or isinstance(new, bool):
        ok = isinstance(old, bool) and isinstance(new, bool)
    elif isinstance(old, float):
        ok = isinstance(new, (int, float))
    elif isinstance(old, int):
        ok = isinstance(new, int)
    elif isinstance(old, dict):
        ok = isinstance(new, dict)
    elif isinstance(old, list):
        ok = isinstance(new, list)
    else:
        ok = isinstance(new, type(old))
    if not ok:
        raise ConfigError(f"{where}: {name} must be {type(old).__name__} like its default "
                          f"{old!r}, got {type(new).__name__} {new!r}")


def _resolve_paths(data: dict[str, Any], path: str, path_keys: Iterable[str]) -> None:
    """Makes the relative paths among `data[key]` (key in `path_keys`) absolute, relative to
    the folder of the file `path` they were read from."""
    folder = os.path.dirname(os.path.abspath(path))
    for key in path_keys:
        value = data.get(key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            data[key] = os.path.normpath(os.path.join(folder, os.path.expanduser(value)))


def _load_chain(path: str, depth: int, seen: tuple[str, ...], path_keys: tuple[str, ...],
                any_type: frozenset[str]) -> dict[str, Any]:
    real = os.path.realpath(path)
    if real in seen:
        raise ConfigError(f"base_config cycle: {' -> '.join(seen + (real,))}")
    if depth > _MAX_BASE_DEPTH:
        raise ConfigError(f"{path}: base_config chain deeper than {_MAX_BASE_DEPTH}")
    data = _read_yaml(path)
    _resolve_paths(data, path, path_keys)
    base_name = data.pop("base_config", None)
    if base_name is None:
        return data
    if not isinstance(base_name, str) or not base_name:
        raise ConfigError(f"{path}: base_config must be a file name, got {base_name!r}")
    base_path = base_name if os.path.isabs(base_name) else os.path.join(
        os.path.dirname(os.path.abspath(path)), base_name)
    base = _load_chain(base_path, depth + 1, seen + (real,), path_keys, any_type)
    return _merge(base, data, path, any_type=any_type)


def parse_override(text: str) -> tuple[list[str], Any]:
    """`"a.b=value"` -> (["a", "b"], value parsed as YAML)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"override {text!r} must look like key=value")
    parts = key.split(".")
    if any(not part for part in parts):
        raise ConfigError(f"override {text!r}: empty key component")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as e:
        raise ConfigError(f"override {text!r}: value is not valid YAML: {e}") from None
    return parts, value


def apply_overrides(config: dict[str, Any], overrides: Iterable[str],
                    any_type_keys: Iterable[str] = ()) -> dict[str, Any]:
    """Returns a copy of `config` with `key=value` overrides applied (keys must exist; values
    of the type of the value they replace, except for `any_type_keys`)."""
    config = _deep_copy(config)
    for text in overrides:
        parts, value = parse_override(text)
        node = config
        for depth, part in enumerate(parts):
            name = ".".join(parts[:depth + 1])
            if not isinstance(node, dict) or part not in node:
                known = node if isinstance(node, dict) else {}
                raise ConfigError(_unknown_key_message(name, part, known, "command line"))
            if depth == len(parts) - 1:
                if name not in any_type_keys:
                    _check_type(name, node[part], value, "command line")
                node[part] = value
            else:
                node = node[part]
    return config


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


def load_config(path: str, overrides: Iterable[str] = (), *, path_keys: Iterable[str] = (),
                any_type_keys: Iterable[str] = ()) -> dict[str, Any]:
    """Reads `path` with its base_config chain, then applies `key=value` overrides.

    Args:
      path_keys: top-level keys holding file paths, resolved relative to the file that sets
        them (overrides: relative to the working directory, left as given).
      any_type_keys: (dotted) keys whose values may change type (checked by the caller).

    Raises:
      ConfigError: a missing or malformed file, a base_config cycle, an unknown key, an
        override of the wrong type.
    """
    any_type = frozenset(any_type_keys)
    chain = _load_chain(path, 0, (), tuple(path_keys), any_type)
    return apply_overrides(chain, overrides, any_type)
