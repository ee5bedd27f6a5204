"""The CLRS vocabulary, spelled once: the algorithms, probe stages, locations and types.

The values are dm-clrs's own strings (``clrs.Stage.HINT == "hint"``), so a
spec from dm-clrs and a spec of ours compare equal; ``tests`` check that they
still are.  This module imports nothing, so the model layer can speak CLRS
without importing dm-clrs.
"""

from __future__ import annotations

ALGORITHMS: tuple[str, ...] = (
    "bfs",
    "bfs_seq",
    "bellman_ford",
    "dfs",
    "dfs_light",
    "dfs_reverse",
)
"""The six algorithms nar_gap knows: dm-clrs's three and the fork's three variants."""


class Stage:
    """When a probe is seen: before the algorithm, along its trace, or after."""

    INPUT = "input"
    OUTPUT = "output"
    HINT = "hint"


class Location:
    """What a probe is attached to (it sets the number of node axes: 1, 2, 0)."""

    NODE = "node"
    EDGE = "edge"
    GRAPH = "graph"


class Type:
    """How a probe is encoded, decoded and scored."""

    SCALAR = "scalar"
    CATEGORICAL = "categorical"
    MASK = "mask"
    MASK_ONE = "mask_one"
    POINTER = "pointer"
    SHOULD_BE_PERMUTATION = "should_be_permutation"
    PERMUTATION_POINTER = "permutation_pointer"
    SOFT_POINTER = "soft_pointer"


NODE_AXES: dict[str, int] = {Location.NODE: 1, Location.EDGE: 2, Location.GRAPH: 0}
"""How many node axes a probe at each location has after its batch axes."""

MASKED = -1.0
"""dm-clrs's ``OutputClass.MASKED``: a categorical entry that does not count."""
