"""Constrained decode loops: `generate` (the overlapped loop), `generate_speculative`, and
`ConstrainedBatch` (the same machinery as hooks for a decode loop someone else owns).

Data flow of `generate`: requests.py (what is asked) -> prefill.py (prompt ids, buckets, cache;
shared with speculative.py) -> generate.py (the step loop) over constrained_batch.py (matchers,
mask fills and the device mask of each step) -> requests.Result.
"""

from jaxguide.decode.constrained_batch import (
                                               ConstrainedBatch,
                                               ended_by_grammar,
                                               results_of,
                                               row_matchers,
)
from jaxguide.decode.generate import generate
from jaxguide.decode.requests import FINISH_REASONS, DecodeStats, Request, Result

__all__ = ["FINISH_REASONS", "ConstrainedBatch", "DecodeStats", "Request", "Result",
           "ended_by_grammar", "generate", "results_of", "row_matchers"]
