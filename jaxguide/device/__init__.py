"""The JAX side: the mask queue that moves host bitmasks to the device (and the glue that fills
its buffers on the engine's threads: `MaskQueue.fill_async`, `PendingMask`), the jitted samplers
that consume packed bitmasks (`device.sampling`), and the placement of a batch over a mesh and
several processes (`device.distributed`)."""

from jaxguide.device.distributed import BatchPlacement
from jaxguide.device.mask_queue import MaskQueue, PendingMask

__all__ = ["BatchPlacement", "MaskQueue", "PendingMask"]
