"""A minimal, strict reader of GGUF metadata (the key/value header, not the tensors).

Design note: the tokenizer of a GGUF model lives in its metadata (`tokenizer.ggml.*`). Reading
only the header keeps `TokenizerInfo.from_gguf` fast (no tensor index, no numpy views of
weights) and lets every malformed byte turn into a `TokenizerError` naming the offset, instead
of a struct error or a huge allocation. Format (little-endian): magic b"GGUF", u32 version
(2 or 3), u64 tensor count, u64 key/value count, then per pair a string key, a u32 value type
and the value; strings are u64 length + UTF-8 bytes; arrays are u32 element type, u64 count,
elements. Cost: linear in the metadata size; arrays of numbers are read as numpy views.
"""

from __future__ import annotations

import mmap
import os
import struct
from typing import Any

import numpy as np

from jaxguide.errors import TokenizerError

_MAGIC = b"GGUF"
_SCALARS: dict[int, tuple[str, int]] = {
    0: ("<B", 1), 1: ("<b", 1), 2: ("<H", 2), 3: ("<h", 2), 4: ("<I", 4), 5: ("<i", 4),
    6: ("<f", 4), 7: ("<?", 1), 10: ("<Q", 8), 11: ("<q", 8), 12: ("<d", 8),
}
_NUMPY_DTYPES = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4",
                 7: "?", 10: "<u8", 11: "<i8", 12: "<f8"}
_STRING, _ARRAY = 8, 9
# Refuse counts that cannot be real instead of allocating for them.
_MAX_KEY_VALUES = 1 << 20


class _Cursor:
    def __init__(self, data: memoryview, path: str):
        self.data = data
        self.pos = 0
        self.path = path

    def fail(self, what: str) -> TokenizerError:
        return TokenizerError(f"corrupt GGUF file {self.path!r}: {what} at byte {self.pos}")

    def take(self, size: int) -> memoryview:
        if size < 0 or self.pos + size > len(self.data):
            raise self.fail(f"truncated data (wanted {size} bytes)")
        view = self.data[self.pos:self.pos + size]
        self.pos += size
        return view

    def scalar(self, fmt: str, size: int) -> Any:
        return struct.unpack(fmt, self.take(size))[0]

    def string(self) -> str:
        length = self.scalar("<Q", 8)
        raw = self.take(length)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError:
            # Token strings may hold arbitrary bytes (some SentencePiece vocabularies do);
            # keep them losslessly.
            return str(raw, "utf-8", "surrogateescape")

    def value(self, value_type: int) -> Any:
        if value_type in _SCALARS:
            return self.scalar(*_SCALARS[value_type])
        if value_type == _STRING:
            return self.string()
        if value_type == _ARRAY:
            element_type = self.scalar("<I", 4)
            count = self.scalar("<Q", 8)
            if element_type in _NUMPY_DTYPES:
                dtype = np.dtype(_NUMPY_DTYPES[element_type])
                if count * dtype.itemsize > len(self.data) - self.pos:
                    raise self.fail(f"array of {count} elements runs past the end of the file")
                return np.frombuffer(self.take(count * dtype.itemsize), dtype=dtype).copy()
            if element_type == _STRING:
                if count * 8 > len(self.data) - self.pos:
                    raise self.fail(f"array of {count} strings runs past the end of the file")
                return [self.string() for _ in range(count)]
            if element_type == _ARRAY:
                return [self.value(_ARRAY) for _ in range(count)]
            raise self.fail(f"unknown array element type {element_type}")
        raise self.fail(f"unknown value type {value_type}")


def read_gguf_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Reads the key/value metadata of a GGUF file.

    Args:
      path: the .gguf file.

    Returns:
      A dict from key (e.g. "tokenizer.ggml.tokens") to value: int/float/bool/str scalars, numpy
      arrays for numeric arrays, lists of str for string arrays.

    Raises:
      TokenizerError: the file is missing, not GGUF, of an unsupported version, or corrupt.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < 24:
                raise TokenizerError(f"{path!r} is not a GGUF file (only {size} bytes)")
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                view = memoryview(mapped)
                try:
                    return _parse(view, path)
                finally:
                    view.release()
    except FileNotFoundError as e:
        raise TokenizerError(f"GGUF file not found: {path!r}") from e
    except IsADirectoryError as e:
        raise TokenizerError(f"GGUF path is a directory: {path!r}") from e


def _parse(view: memoryview, path: str) -> dict[str, Any]:
    cursor = _Cursor(view, path)
    if bytes(cursor.take(4)) != _MAGIC:
        raise TokenizerError(f"{path!r} is not a GGUF file (bad magic)")
    version = cursor.scalar("<I", 4)
    if version not in (2, 3):
        raise TokenizerError(f"{path!r}: unsupported GGUF version {version} (2 and 3 are)")
    cursor.scalar("<Q", 8)  # tensor count: not needed for metadata
    num_pairs = cursor.scalar("<Q", 8)
    if num_pairs > _MAX_KEY_VALUES:
        raise cursor.fail(f"implausible key/value count {num_pairs}")
    metadata: dict[str, Any] = {}
    for _ in range(num_pairs):
        key = cursor.string()
        metadata[key] = cursor.value(cursor.scalar("<I", 4))
    return metadata
