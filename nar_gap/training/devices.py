"""The seed axis over devices: one ``NamedSharding``, no ``pmap``.

JAX's SPMD partitioner splits the jitted step along the sharded seed axis, so
the same code fills one CPU, one GPU or several accelerators.  Only this
process's devices are used: over several processes
(:mod:`nar_gap.training.hosts`) each trains its own seeds on its own devices,
and no step waits for another machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def seed_sharding(
    num_seeds: int, devices: Sequence[Any] | None = None
) -> NamedSharding:
    """Shard axis 0 (seeds) over as many local devices as divide the seed count."""
    devices = list(devices if devices is not None else jax.local_devices())
    count = max(d for d in range(1, len(devices) + 1) if num_seeds % d == 0)
    mesh = Mesh(np.array(devices[:count]), ("seeds",))
    return NamedSharding(mesh, PartitionSpec("seeds"))


def put_on_devices(tree: Any, sharding: NamedSharding) -> Any:
    """Place ``tree`` on the devices with the seed axis sharded."""
    return jax.device_put(tree, sharding)
