"""The JAX side: the mask queue that moves host bitmasks to the device (and the glue that fills
its buffers on the engine's threads), the jitted samplers that consume packed bitmasks, and the
placement of a batch over a mesh / several processes."""

from jaxguide.device.distributed import BatchPlacement
from jaxguide.device.mask_queue import MaskQueue, PendingMask
from jaxguide.device.sampling import (
                                      NO_ALLOWED_TOKEN,
                                      Greedy,
                                      MinP,
                                      SamplingConfig,
                                      Temperature,
                                      TopK,
                                      TopP,
                                      apply_token_bitmask,
                                      sample,
                                      sampling_logits,
                                      unpack_token_bitmask,
)

__all__ = ["NO_ALLOWED_TOKEN", "BatchPlacement", "Greedy", "MaskQueue", "MinP", "PendingMask",
           "SamplingConfig", "Temperature", "TopK", "TopP", "apply_token_bitmask", "sample",
           "sampling_logits", "unpack_token_bitmask"]
