"""BatchMatcher: the masks of a whole batch, filled in parallel off the Python thread.

A decode step needs one mask row per sequence between two forward passes. `BatchMatcher` fills
the rows of a uint32 bitmask `[B, W]` for B matchers on a persistent native thread pool with the
GIL released, and returns at once with a `BatchFillHandle`; the Python thread meanwhile
dispatches the model, and `handle.wait()` (GIL released) returns when every row is written.
`MaskQueue.fill_async` (in `jaxguide.device`) does the same into a device queue's host buffer
and hands the filled buffer to the device (`PendingMask.submit()`).

Rows are claimed one at a time by the pool's workers (one mask can cost 1000x another), so the
tail of a batch is at most one mask. A row whose matcher fails (a work budget exceeded) gets an
EOS-only mask and its own error message; the other rows are unaffected.

While an operation runs it owns its matchers and bitmask rows: using one of the matchers from
Python (any `Matcher` method), or a matcher or row in another batch operation, raises
`MatcherBusyError` until the handle is done (a single `Matcher.fill_next_token_bitmask` into a
row in flight is not detected). The
handle keeps the bitmask and the matchers alive, and dropping an unfinished handle waits for it.

Thread pool: `BatchMatcher()` uses one pool per process (as many workers as the cores this
process may run on), shared by every default BatchMatcher and shut down at interpreter exit;
`BatchMatcher(num_threads=k)` owns a pool of k workers (`close()` or garbage collection joins
it). To keep the per-step handoff cheap, a BatchMatcher remembers the last batch of matchers
it was given (and keeps those objects alive): passing the same matchers again in the same order
costs no per-matcher conversion.
"""

from __future__ import annotations

import atexit
import operator
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from jaxguide.engine._core import _native
from jaxguide.engine.matcher import Matcher

BatchFillHandle = _native.BatchFillHandle
BatchFillHandle.__doc__ = """A batch mask fill in flight (from `BatchMatcher.fill_next_token_bitmask_async`).

Methods:
  done() -> bool: whether every row is written (never blocks).
  wait(timeout=None) -> dict[int, str]: blocks (GIL released) until every row is written;
    returns {bitmask row: error message} for the rows that got an EOS-only mask because their
    matcher failed (empty when all is well). Raises TimeoutError after `timeout` seconds.

Attributes (once done):
  errors: the same dict as wait() returns.
  accepted: bool `[B]`, whether each of the `tokens` passed to the fill was accepted (None when
    no tokens were passed).
  rows: int64 `[B]`, the bitmask row of each matcher.
  bitmask: the array being filled (kept alive by the handle).
"""


class BatchMatcher:
    """Fills masks, accepts tokens and rolls back for many matchers on a thread pool.

    Example (one decode step)::

        batch = jaxguide.BatchMatcher()
        bitmask = jaxguide.allocate_token_bitmask(len(matchers), info.logits_width)
        handle = batch.fill_next_token_bitmask_async(matchers, bitmask)
        ...                                   # dispatch the forward pass meanwhile
        errors = handle.wait()                # {row: message} of failed rows, usually {}
        tokens = sample(logits, bitmask, ...)
        batch.accept_tokens(matchers, tokens)
    """

    def __init__(self, num_threads: int | None = None):
        """Args:
          num_threads: None uses the process-wide shared pool (one worker per usable core);
            an integer >= 1 creates a pool of that many workers owned by this BatchMatcher.
        """
        if num_threads is not None and (isinstance(num_threads, bool)
                                        or not isinstance(num_threads, (int, np.integer))):
            raise TypeError(f"num_threads must be an int or None, got {num_threads!r}")
        self.native = _native.BatchMatcher(None if num_threads is None else int(num_threads))

    @property
    def num_threads(self) -> int:
        """Workers of the pool this BatchMatcher uses."""
        return self.native.num_threads

    @property
    def shared(self) -> bool:
        """Whether the pool is the process-wide shared one."""
        return self.native.shared

    def fill_next_token_bitmask_async(
            self, matchers: Sequence[Matcher], bitmask: np.ndarray,
            rows: Sequence[int] | np.ndarray | None = None,
            tokens: Sequence[int] | np.ndarray | None = None) -> BatchFillHandle:
        """Starts writing the allowed next tokens of `matchers[i]` into `bitmask[rows[i]]`.

        Args:
          matchers: B distinct matchers (`Matcher`), not in use by another batch operation.
          bitmask: numpy uint32 `[R, W]`, C-contiguous, writeable, W >= every matcher's
            `bitmask_width` (words beyond a matcher's width are cleared). Not copied: do not
            read or write it until the handle is done.
          rows: int `[B]`, distinct rows in [0, R); None means row i for matcher i (R == B).
            Rows not named are left untouched.
          tokens: optional int `[B]`: accept `tokens[i]` into matcher i first (the sampled
            token of the previous step), then fill. A token that is not allowed leaves its
            matcher unchanged and gives its row an EOS-only mask and an error.

        Returns:
          A `BatchFillHandle`; `wait()` returns {row: error} for rows whose matcher failed.

        Raises:
          ValueError: bad bitmask (dtype, shape, layout, read-only, too narrow), bad or
            duplicate rows, a matcher passed twice, wrong number of tokens.
          TypeError: an element of `matchers` is not a Matcher.
          MatcherBusyError: a matcher belongs to an unfinished batch operation.
        """
        return self.native.fill_next_token_bitmask_async(matchers, bitmask, rows, tokens)

    def fill_next_token_bitmask(self, matchers: Sequence[Matcher], bitmask: np.ndarray,
                                rows: Sequence[int] | np.ndarray | None = None
                                ) -> dict[int, str]:
        """`fill_next_token_bitmask_async(...).wait()`: fills and returns {row: error}."""
        return self.native.fill_next_token_bitmask_async(matchers, bitmask, rows, None).wait()

    def accept_tokens(self, matchers: Sequence[Matcher],
                      tokens: Sequence[int] | np.ndarray) -> npt.NDArray[np.bool_]:
        """Accepts `tokens[i]` into `matchers[i]` in parallel (GIL released).

        Returns:
          bool `[B]`: whether each token was allowed (a refused token changes nothing).

        Raises:
          ValueError: len(tokens) != len(matchers), a negative id, a matcher passed twice.
          MatcherBusyError: a matcher belongs to an unfinished batch operation.
        """
        return self.native.accept_tokens(matchers, tokens)

    def rollback(self, matchers: Sequence[Matcher],
                 num_tokens: int | Sequence[int] | np.ndarray) -> None:
        """Undoes the last `num_tokens` (one int for all, or int `[B]`) steps of each matcher."""
        if isinstance(num_tokens, np.integer) or (isinstance(num_tokens, np.ndarray)
                                                  and num_tokens.ndim == 0):
            num_tokens = int(num_tokens)
        # Counts past int64 (the native type) mean "all of the history", as for Matcher.
        if isinstance(num_tokens, int) and not isinstance(num_tokens, bool):
            num_tokens = min(num_tokens, 2**63 - 1)
        elif isinstance(num_tokens, (list, tuple)):
            num_tokens = [min(operator.index(k), 2**63 - 1) for k in num_tokens]
        self.native.rollback(matchers, num_tokens)

    def close(self) -> None:
        """Finishes pending work and joins an own pool's workers (no-op for the shared pool).

        Operations started afterwards run on the calling thread.
        """
        self.native.shutdown()

    def __enter__(self) -> BatchMatcher:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        kind = "shared" if self.shared else "own"
        return f"BatchMatcher(num_threads={self.num_threads}, {kind} pool)"


def shutdown_pools() -> None:
    """Joins every pool's workers at interpreter exit (pending operations finish first)."""
    _native._shutdown_batch_pools()


# Join the pools before the interpreter tears down (pending fills finish first).
atexit.register(shutdown_pools)
