"""MaskQueue: N-buffered host-to-device transfer of packed token bitmasks.

Design note
-----------
What. A decode step fills a host bitmask (uint32 `[B, W]`, see DESIGN.md) while the device runs
the forward pass, then copies it to the device for the sampler. `MaskQueue` owns `num_buffers`
host buffers so that the host can fill buffer k+1 while buffer k is still being copied, and it
hands a buffer out again only once the copy made from it has completed.

Contract (one producer thread; the queue is not thread-safe):
  1. `buf = queue.acquire()` returns a writable, C-contiguous, 64-byte aligned numpy uint32
     array of shape `[local_batch_size, width]`. Its contents are whatever was last written
     there: fill every row the sampler will read (the native filler writes whole rows).
     `acquire` prefers a free buffer, then one whose transfer has completed, and otherwise
     blocks until the transfer of the oldest in-flight buffer completes; buffers therefore
     come back in round-robin order (0, 1, ..., N-1, 0, ...) in a steady decode loop.
  2. `dev = queue.submit(buf)` starts the copy and returns the device `jax.Array` `[B, W]` at
     once (asynchronously, placed with the queue's sharding). From then on `buf` belongs to
     the queue: it is made read-only, so a stray write raises instead of racing the copy,
     and it is writable again only when `acquire` hands it back out.
  3. Do not donate `dev` to a jitted function (`donate_argnums`): the queue waits on it
     before reusing the host buffer, and a donated array cannot be waited on. The
     array is only B * W * 4 bytes.
  `put(mask)` does acquire + copy + submit for a mask that already lives in another array;
  `release(buf)` gives back an acquired buffer that will not be submitted.

Why the CPU path copies. On the CPU backend `jax.device_put` of a 64-byte aligned numpy array
(and `jax.make_array_from_process_local_data`, which calls it) aliases the host memory instead
of copying it, and `may_alias=False` is not honoured for numpy inputs (checked with jax 0.10),
so rewriting a reused buffer would silently change every device array made from it earlier.
For devices that address host memory (platform "cpu", or a host memory kind) the queue
therefore hands `device_put` a private copy of the rows: that memcpy *is* the transfer on
CPU. On GPU and TPU a host-to-device copy is always made from the buffer itself, and the
readiness of the device array marks its end.

Sharded placement. With a `jax.sharding.Sharding` for the global `[B, W]` array (typically
`NamedSharding(mesh, P("data"))`), each process only holds and sends the rows its own devices
address, as `jax.make_array_from_process_local_data` would: the host buffer has
`local_batch_size` rows, and local row i is global row `global_rows[i]` (ascending). Each
addressable device receives its slice with one batched `jax.device_put`, and the shards are
assembled with `jax.make_array_from_single_device_arrays`; nothing crosses hosts.

Overlap needs two programs. A jitted program starts only once all of its inputs are on the
device, so the forward pass and the sampler must be separate jitted calls: dispatch the
forward, fill and `submit` the mask, then call the sampler on (logits, mask). Fusing them
into one jitted step would make the forward wait for the mask.

Cost. Memory: num_buffers * local_batch_size * width * 4 bytes of host memory (2 x 256 x 4,096
words = 8 MiB for B = 256, V = 128k). Time: one host-to-device copy of the local rows per step,
overlapped with the forward pass when `submit` is called before waiting on the step's logits.
"""

from __future__ import annotations

import collections
import enum
from collections.abc import Sequence

import jax
import numpy as np

from jaxguide.engine.batch_matcher import BatchFillHandle, BatchMatcher
from jaxguide.engine.matcher import Matcher

_ALIGNMENT = 64
_HOST_MEMORY_KINDS = ("pinned_host", "unpinned_host")


class _State(enum.Enum):
    FREE = "free"
    ACQUIRED = "acquired"
    IN_FLIGHT = "in flight"


def _aligned_zeros(shape: tuple[int, int], dtype: np.dtype, alignment: int) -> np.ndarray:
    """A zeroed C-contiguous array whose data pointer is a multiple of `alignment` bytes."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.zeros(nbytes + alignment, dtype=np.uint8)
    offset = (-raw.ctypes.data) % alignment
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)


class MaskQueue:
    """N-buffered host-to-device queue of uint32 token bitmasks `[batch_size, width]`.

    Example (one decode step; the forward pass is already dispatched)::

        queue = MaskQueue(batch_size=B, width=W, sharding=NamedSharding(mesh, P("data")))
        buf = queue.acquire()               # numpy uint32 [queue.local_batch_size, W]
        matchers.fill_next_token_bitmask(buf)
        mask = queue.submit(buf)            # jax.Array [B, W], transfer in flight
        tokens = sample_step(logits, mask, key)

    Attributes:
      batch_size: B, rows of the global device array.
      width: W, uint32 words per row (>= ceil(logits width / 32)).
      num_buffers: number of host buffers.
      sharding: placement of the device arrays.
      local_batch_size: rows of each host buffer (rows addressed by this process).
      global_rows: int64 `[local_batch_size]`, the global row of each local row (ascending).
    """

    def __init__(self, batch_size: int, width: int, num_buffers: int = 2,
                 sharding: jax.sharding.Sharding | None = None):
        """Allocates the host buffers and plans the per-device placement.

        Args:
          batch_size: B >= 1.
          width: W >= 1 uint32 words per row.
          num_buffers: host buffers >= 1; 2 overlaps filling step t+1 with the copy of step t.
          sharding: sharding of the global `[B, W]` array; None places it on the first local
            device.

        Raises:
          ValueError: on a bad size, or a sharding that cannot hold a `[B, W]` array.
          TypeError: if `sharding` is not a `jax.sharding.Sharding`.
        """
        for name, value, minimum in (("batch_size", batch_size, 1), ("width", width, 1),
                                     ("num_buffers", num_buffers, 1)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                    or value < minimum:
                raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
        if sharding is None:
            sharding = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
        if not isinstance(sharding, jax.sharding.Sharding):
            raise TypeError(f"sharding must be a jax.sharding.Sharding, got {type(sharding)}")
        self.batch_size = int(batch_size)
        self.width = int(width)
        self.num_buffers = int(num_buffers)
        self.sharding = sharding
        self._global_shape = (self.batch_size, self.width)
        self._plan_placement()
        shape = (self.local_batch_size, self.width)
        self._buffers = [_aligned_zeros(shape, np.uint32, _ALIGNMENT)
                         for _ in range(self.num_buffers)]
        self._states = [_State.FREE] * self.num_buffers
        self._arrays: list[jax.Array | None] = [None] * self.num_buffers
        self._in_flight: collections.deque[int] = collections.deque()  # oldest first
        self._free: collections.deque[int] = collections.deque(range(self.num_buffers))

    def _plan_placement(self) -> None:
        try:
            self.sharding.shard_shape(self._global_shape)
            index_map = self.sharding.addressable_devices_indices_map(self._global_shape)
        except (ValueError, TypeError) as e:
            raise ValueError(f"sharding {self.sharding} cannot place a {self._global_shape} "
                             f"bitmask: {e}") from e
        spans = []
        for device, index in index_map.items():
            rows = range(*index[0].indices(self.batch_size))
            cols = index[1] if len(index) > 1 else slice(None)
            if rows.step != 1 or len(rows) == 0:
                raise ValueError(f"sharding {self.sharding} gives device {device} the rows "
                                 f"{rows}; a contiguous, non-empty row range is required")
            spans.append((device, rows, cols))
        self.global_rows = np.array(sorted({r for _, rows, _ in spans for r in rows}),
                                    dtype=np.int64)
        self.local_batch_size = len(self.global_rows)
        self._host_memory = self.sharding.memory_kind in _HOST_MEMORY_KINDS or any(
            device.platform == "cpu" for device, _, _ in spans)
        self._placement = []
        for device, rows, cols in spans:
            start = int(np.searchsorted(self.global_rows, rows.start))
            self._placement.append((device, slice(start, start + len(rows)), cols))

    @property
    def in_flight(self) -> int:
        """Number of submitted buffers whose transfer has not been observed to complete."""
        return len(self._in_flight)

    def _release(self, index: int, wait: bool) -> bool:
        """Marks in-flight buffer `index` free if its transfer is done (or after waiting)."""
        array = self._arrays[index]
        assert array is not None and self._states[index] is _State.IN_FLIGHT
        if array.is_deleted():
            raise RuntimeError(
                "a bitmask array returned by MaskQueue.submit was deleted (donated to a jitted "
                "function?) before its transfer could be waited on; do not donate mask arrays")
        if wait:
            array.block_until_ready()
        elif not array.is_ready():
            return False
        self._in_flight.remove(index)
        self._states[index] = _State.FREE
        self._arrays[index] = None
        self._free.append(index)
        return True

    def acquire(self) -> np.ndarray:
        """Hands out a writable host buffer, waiting for the oldest transfer if none is free.

        Returns:
          uint32 `[local_batch_size, width]`, C-contiguous, holding its previous contents.

        Raises:
          RuntimeError: if every buffer is acquired and none submitted (waiting would
            deadlock), or if a submitted array was deleted before its transfer was waited on.
        """
        if not self._free:
            for index in list(self._in_flight):
                self._release(index, wait=False)
        if not self._free:
            if not self._in_flight:
                raise RuntimeError(
                    f"all {self.num_buffers} MaskQueue buffers are acquired and none was "
                    "submitted; submit a buffer before acquiring another (or use more buffers)")
            self._release(self._in_flight[0], wait=True)
        index = self._free.popleft()
        self._states[index] = _State.ACQUIRED
        buffer = self._buffers[index]
        buffer.flags.writeable = True
        return buffer

    def _index_of(self, buffer: np.ndarray) -> int:
        for index, own in enumerate(self._buffers):
            if own is buffer:
                return index
        raise ValueError("submit() takes a buffer returned by this queue's acquire(), itself "
                         "(not a copy, view or slice of it); use put() for other arrays")

    def submit(self, buffer: np.ndarray) -> jax.Array:
        """Starts the host-to-device copy of an acquired buffer and returns the device array.

        Args:
          buffer: the array returned by `acquire()`, filled. It must not be written afterwards
            (it is made read-only until `acquire` hands it out again).

        Returns:
          uint32 `jax.Array` `[batch_size, width]` with the queue's sharding; the copy may
          still be in flight (JAX computations that consume it wait for it).

        Raises:
          ValueError: if `buffer` is not this queue's, is not currently acquired (never
            acquired, or already submitted), or had its shape or dtype changed.
        """
        index = self._index_of(buffer)
        if self._states[index] is not _State.ACQUIRED:
            raise ValueError(f"this buffer is {self._states[index].value}, not acquired: call "
                             "acquire() and submit each acquired buffer exactly once")
        expected = (self.local_batch_size, self.width)
        if buffer.dtype != np.uint32 or buffer.shape != expected \
                or not buffer.flags.c_contiguous:
            raise ValueError(f"buffer must stay uint32 {expected} C-contiguous, it is now "
                             f"{buffer.dtype} {buffer.shape}")
        buffer.flags.writeable = False
        pieces = [buffer[rows, cols] for _, rows, cols in self._placement]
        if self._host_memory:
            pieces = [np.array(piece, copy=True) for piece in pieces]
        shards = jax.device_put(pieces, [device for device, _, _ in self._placement])
        array = jax.make_array_from_single_device_arrays(self._global_shape, self.sharding,
                                                         shards)
        self._states[index] = _State.IN_FLIGHT
        self._arrays[index] = array
        self._in_flight.append(index)
        return array

    def release(self, buffer: np.ndarray) -> None:
        """Gives back an acquired buffer without submitting it (e.g. its fill failed to start).

        Raises:
          ValueError: if `buffer` is not this queue's or is not currently acquired.
        """
        index = self._index_of(buffer)
        if self._states[index] is not _State.ACQUIRED:
            raise ValueError(f"this buffer is {self._states[index].value}, not acquired")
        self._states[index] = _State.FREE
        self._free.append(index)

    def put(self, mask: np.ndarray) -> jax.Array:
        """Copies `mask` into a buffer and submits it: `acquire`, copy, `submit`.

        Args:
          mask: uint32 `[local_batch_size, width]`, this process's rows.

        Returns:
          uint32 `jax.Array` `[batch_size, width]`, as `submit`.

        Raises:
          TypeError: if `mask` is not a uint32 numpy array.
          ValueError: on a shape other than `[local_batch_size, width]`.
        """
        if not isinstance(mask, np.ndarray) or mask.dtype != np.uint32:
            raise TypeError(f"mask must be a numpy uint32 array, got "
                            f"{getattr(mask, 'dtype', type(mask).__name__)}")
        expected = (self.local_batch_size, self.width)
        if mask.shape != expected:
            raise ValueError(f"mask must have shape [local_batch_size, width] = {expected}, "
                             f"got {mask.shape}")
        buffer = self.acquire()
        np.copyto(buffer, mask)
        return self.submit(buffer)

    def fill_async(self, batch_matcher: BatchMatcher, matchers: Sequence[Matcher],
                   rows: Sequence[int] | np.ndarray | None = None,
                   tokens: Sequence[int] | np.ndarray | None = None) -> PendingMask:
        """Acquires a host buffer and starts filling it on `batch_matcher`'s pool (see
        `PendingMask`).

        Args:
          batch_matcher: the `jaxguide.BatchMatcher` whose threads fill the rows.
          matchers: B matchers; with rows=None, B == self.local_batch_size; their bitmask
            width must fit in self.width.
          rows: as in `BatchMatcher.fill_next_token_bitmask_async`. Rows not named keep the
            buffer's old contents: name every row the sampler reads.
          tokens: as in `BatchMatcher.fill_next_token_bitmask_async`.

        Returns:
          A `PendingMask`; its `submit()` waits for the fill and starts the device copy.
        """
        buffer = self.acquire()
        try:
            handle = batch_matcher.fill_next_token_bitmask_async(matchers, buffer, rows, tokens)
        except BaseException:
            self.release(buffer)
            raise
        return PendingMask(self, buffer, handle)

    def drain(self) -> None:
        """Waits until every submitted transfer has completed; afterwards all are free."""
        while self._in_flight:
            self._release(self._in_flight[0], wait=True)

    def __repr__(self) -> str:
        return (f"MaskQueue(batch_size={self.batch_size}, width={self.width}, "
                f"num_buffers={self.num_buffers}, local_batch_size={self.local_batch_size}, "
                f"in_flight={self.in_flight}, sharding={self.sharding})")


class PendingMask:
    """A `MaskQueue` host buffer being filled by a BatchMatcher; `submit()` sends it to device.

    The glue between the batch filler and the device queue: fill on the pool while the forward
    pass runs, then `submit()` waits for the last row (GIL released) and starts the
    host-to-device copy, returning the device array for the jitted sampler. Every PendingMask
    must be submitted (or its buffer given back with `queue.release(pending.buffer)` after
    `pending.handle.wait()`), or the queue runs out of buffers.
    """

    def __init__(self, queue: MaskQueue, buffer: np.ndarray, handle: BatchFillHandle):
        self.queue = queue
        self.buffer = buffer
        self.handle = handle
        self.errors: dict[int, str] | None = None
        self._array: jax.Array | None = None

    def done(self) -> bool:
        """Whether every row is written (never blocks)."""
        return self.handle.done()

    def submit(self) -> jax.Array:
        """Waits for the fill, submits the buffer to the queue and returns the device array.

        Returns:
          uint32 `jax.Array` `[queue.batch_size, W]` (the copy may still be in flight). Rows
          whose matcher failed hold EOS-only masks; `self.errors` maps them to messages.
          Calling submit() again returns the same array.
        """
        if self._array is None:
            self.errors = self.handle.wait()
            self._array = self.queue.submit(self.buffer)
        return self._array

    def __repr__(self) -> str:
        state = "submitted" if self._array is not None else (
            "filled" if self.handle.done() else "filling")
        return f"PendingMask({len(self.handle)} rows, {state})"
