"""Placing a decode batch on a mesh: one process or many, each host owning its own rows.

Design note. The decode loop is data parallel: the batch dimension is sharded over every device
of a mesh (all its axes flattened), the model's parameters are replicated, and each JAX process
holds the rows of its addressable devices ("local rows", contiguous and in global order, as
`jax.make_array_from_process_local_data` lays them out). Each process builds the inputs of its
own rows, fills their masks on its own threads, and reads back only its own sampled tokens; the
only cross-process traffic besides the jitted programs is `agree_max`, one tiny all-gather per
step (loop control: whether any row anywhere still runs, the width of the next extend step),
because every process must launch the same programs with the same shapes.

`BatchPlacement(None, B)` is the single-device case (numpy inputs handed to jit as they are,
`np.asarray` outputs, no collectives), so the loop has one code path.

Limits: model parallelism is not supported (parameters are replicated on every device); every
process must hold the same number of rows; the batch must be a multiple of the device count.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


class BatchPlacement:
    """Where the rows of a `[B, ...]` decode batch live.

    Attributes:
      mesh: the mesh, or None for the first local device.
      local_batch: rows held by this process.
      global_batch: rows over all processes (local_batch x process count with a mesh).
      global_rows: int64 `[local_batch]`, the global index of each local row.
      multi_process: True when the mesh spans several processes (collectives per step).
    """

    def __init__(self, mesh: Mesh | None, local_batch: int):
        if local_batch < 1:
            raise ValueError("a batch needs at least one row")
        self.mesh = mesh
        self.local_batch = int(local_batch)
        if mesh is None:
            self.global_batch = self.local_batch
            self.global_rows = np.arange(self.local_batch, dtype=np.int64)
            self.multi_process = False
            return
        if not isinstance(mesh, Mesh):
            raise TypeError(f"mesh must be a jax.sharding.Mesh, got {type(mesh).__name__}")
        processes = {d.process_index for d in mesh.devices.flat}
        self.multi_process = len(processes) > 1
        if jax.process_index() not in processes:
            raise ValueError("the mesh has no device of this process")
        self.global_batch = self.local_batch * len(processes)
        if self.global_batch % mesh.devices.size:
            raise ValueError(f"the batch of {self.global_batch} rows "
                             f"({self.local_batch} per process) is not a multiple of the "
                             f"mesh's {mesh.devices.size} devices")
        self._batch_axes = tuple(mesh.axis_names)
        index_map = self.row_sharding().addressable_devices_indices_map((self.global_batch,))
        rows = sorted({r for index in index_map.values()
                       for r in range(*index[0].indices(self.global_batch))})
        if len(rows) != self.local_batch:
            raise ValueError(f"this process holds {len(rows)} rows of the mesh's batch, not "
                             f"{self.local_batch}: every process must pass the same number")
        self.global_rows = np.array(rows, np.int64)

    # ------------------------------------------------------------------------- shardings

    def sharding(self, ndim: int, batch_dim: int = 0) -> jax.sharding.Sharding | None:
        """Sharding of an array whose dimension `batch_dim` is the batch (None: one device)."""
        if self.mesh is None:
            return None
        spec = [None] * ndim
        spec[batch_dim] = self._batch_axes
        return NamedSharding(self.mesh, PartitionSpec(*spec))

    def row_sharding(self) -> NamedSharding:
        assert self.mesh is not None
        return NamedSharding(self.mesh, PartitionSpec(self._batch_axes))

    def replicated(self) -> jax.sharding.Sharding | None:
        return None if self.mesh is None else NamedSharding(self.mesh, PartitionSpec())

    # ------------------------------------------------------------------------- data

    def put(self, local: np.ndarray) -> jax.Array | np.ndarray:
        """This process's rows `[local_batch, ...]` -> the global `[global_batch, ...]` array.

        Without a mesh the numpy array itself: a jitted call moves numpy arguments to the device
        on its C++ path (~10 us for a step's small inputs, where an explicit `jnp.asarray` costs
        ~70 us each). Callers must not modify the array afterwards (it may be read
        asynchronously, and on CPU aliased)."""
        local = np.asarray(local)
        if local.shape[0] != self.local_batch:
            raise ValueError(f"expected {self.local_batch} local rows, got {local.shape[0]}")
        if self.mesh is None:
            return local
        return jax.make_array_from_process_local_data(
            self.sharding(local.ndim), local, (self.global_batch,) + local.shape[1:])

    def local(self, array: jax.Array) -> np.ndarray:
        """The rows of a batch-sharded global array that this process holds, in order."""
        if self.mesh is None or not self.multi_process:
            full = np.asarray(array)
            return full if self.mesh is None else full[self.global_rows]
        pieces: dict[int, np.ndarray] = {}
        for shard in array.addressable_shards:
            start = shard.index[0].start or 0
            if start not in pieces:
                pieces[start] = np.asarray(shard.data)
        return np.concatenate([pieces[s] for s in sorted(pieces)])

    def agree_max(self, values: Any) -> np.ndarray:
        """Element-wise max of an int vector over all processes (identity with one)."""
        values = np.asarray(values, np.int64)
        if not self.multi_process:
            return values
        from jax.experimental import multihost_utils

        gathered = multihost_utils.process_allgather(values)
        return np.asarray(gathered).reshape(-1, values.size).max(axis=0)

    def place_params(self, params: Any) -> Any:
        """Replicates a parameter tree on every device of the mesh (no-op without a mesh or
        when it is already placed so)."""
        if self.mesh is None:
            return params
        target = self.replicated()
        leaves = jax.tree_util.tree_leaves(params)
        if leaves and all(isinstance(x, jax.Array) and x.sharding.is_equivalent_to(target, x.ndim)
                          for x in leaves):
            return params

        def place(x: Any) -> jax.Array:
            host = np.asarray(x)
            return jax.make_array_from_callback(host.shape, target, lambda index: host[index])

        return jax.tree_util.tree_map(place, params)
