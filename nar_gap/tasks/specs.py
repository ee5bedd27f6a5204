"""The algorithm registry: the six algorithms nar_gap knows, with specs and references.

Three algorithms come from dm-clrs unchanged (``bfs``, ``bellman_ford``, ``dfs``);
three are variants from the author's fork ``LSaldyt/clrs`` (the paper's
``bfs_seq`` and ``dfs_light``, and ``dfs_reverse`` from the fork's branch of
that name), implemented in :mod:`nar_gap.tasks.algorithms`
(which also says which function defines each algorithm's data). Every other
module asks this one for a spec, so the names and their order are decided once.

A spec maps each probe name to ``(stage, location, type)`` in the vocabulary of
:mod:`nar_gap.tasks.vocabulary` (dm-clrs's own strings), in dm-clrs's dict
order: inputs, then outputs, then hints.
"""

from __future__ import annotations

import types
from collections.abc import Mapping

from nar_gap.tasks._clrs import clrs_samplers, clrs_specs
from nar_gap.tasks.vocabulary import ALGORITHMS, Location, Stage, Type

__all__ = [  # the vocabulary is re-exported: one import for a spec and its words
    "ALGORITHMS",
    "Location",
    "ProbeSpec",
    "Spec",
    "Stage",
    "Type",
    "UnknownAlgorithmError",
    "check_algorithm",
    "get_spec",
    "has_source",
    "sampler_class",
]

ProbeSpec = tuple[str, str, str]
"""``(stage, location, type)`` of one probe, e.g. ``("hint", "node", "pointer")``."""

Spec = dict[str, ProbeSpec]
"""Probe name -> :data:`ProbeSpec`, in dm-clrs order (inputs, outputs, hints)."""


# The hints dfs_light keeps from dfs (the fork drops times, stack, u/v and s).
_DFS_LIGHT_HINTS = ("pi_h", "color")


class UnknownAlgorithmError(ValueError):
    """An algorithm name that is not in :data:`ALGORITHMS`."""

    def __init__(self, algorithm: object) -> None:
        """Builds the message from the bad name and the known ones."""
        super().__init__(
            f"unknown algorithm {algorithm!r}; expected one of {', '.join(ALGORITHMS)}"
        )
        self.algorithm = algorithm


def _dfs_light_spec() -> Spec:
    """DFS's inputs and outputs, and only the hints ``pi_h`` and ``color``.

    Filtering dm-clrs's DFS spec (rather than writing the dict out) keeps the
    order and the types identical to DFS's, as in the fork's ``specs.py``.
    """
    return {
        name: probe
        for name, probe in clrs_specs.SPECS["dfs"].items()
        if probe[0] != Stage.HINT or name in _DFS_LIGHT_HINTS
    }


def _dfs_reverse_spec() -> Spec:
    """DFS's spec with the node pointer hint ``pi_rh`` just before ``pi_h``.

    That is where the fork's ``specs.py`` (branch ``dfs_reverse``, ``1b93c22``)
    lists it, and the order of a spec is the order of a batch's hints.
    """
    spec: Spec = {}
    for name, probe in clrs_specs.SPECS["dfs"].items():
        if name == "pi_h":
            spec["pi_rh"] = (Stage.HINT, Location.NODE, Type.POINTER)
        spec[name] = probe
    return spec


_SPECS: Mapping[str, Mapping[str, ProbeSpec]] = types.MappingProxyType(
    {
        "bfs": types.MappingProxyType(dict(clrs_specs.SPECS["bfs"])),
        # The fork gives bfs_seq exactly BFS's spec; only the hint cadence differs.
        "bfs_seq": types.MappingProxyType(dict(clrs_specs.SPECS["bfs"])),
        "bellman_ford": types.MappingProxyType(dict(clrs_specs.SPECS["bellman_ford"])),
        "dfs": types.MappingProxyType(dict(clrs_specs.SPECS["dfs"])),
        "dfs_light": types.MappingProxyType(_dfs_light_spec()),
        "dfs_reverse": types.MappingProxyType(_dfs_reverse_spec()),
    }
)

_HAS_SOURCE: Mapping[str, bool] = types.MappingProxyType(
    {
        "bfs": True,
        "bfs_seq": True,
        "bellman_ford": True,
        "dfs": False,
        "dfs_light": False,
        "dfs_reverse": False,
    }
)

# The fork samples its variants with the sampler of the algorithm they vary.
_SAMPLER_CLASSES: Mapping[str, type[clrs_samplers.Sampler]] = types.MappingProxyType(
    {
        "bfs": clrs_samplers.BfsSampler,
        "bfs_seq": clrs_samplers.BfsSampler,
        "bellman_ford": clrs_samplers.BellmanFordSampler,
        "dfs": clrs_samplers.DfsSampler,
        "dfs_light": clrs_samplers.DfsSampler,
        "dfs_reverse": clrs_samplers.DfsSampler,
    }
)


def check_algorithm(algorithm: str) -> str:
    """Returns ``algorithm`` unchanged if it is known.

    Raises:
        UnknownAlgorithmError: if ``algorithm`` is not in :data:`ALGORITHMS`.
    """
    if not isinstance(algorithm, str) or algorithm not in _SPECS:
        raise UnknownAlgorithmError(algorithm)
    return algorithm


def get_spec(algorithm: str) -> Spec:
    """The spec of ``algorithm``: probe name -> (stage, location, type).

    Returns a fresh dict each call, so a caller that edits it cannot change the
    registry (or dm-clrs's ``SPECS``) for everyone else.

    Args:
        algorithm: one of :data:`ALGORITHMS`.

    Returns:
        The spec in dm-clrs order (inputs, outputs, hints).

    Raises:
        UnknownAlgorithmError: if ``algorithm`` is not known.
    """
    return dict(_SPECS[check_algorithm(algorithm)])


def has_source(algorithm: str) -> bool:
    """Whether ``algorithm`` takes a source node ``s`` (BFS and Bellman-Ford do).

    Raises:
        UnknownAlgorithmError: if ``algorithm`` is not known.
    """
    return _HAS_SOURCE[check_algorithm(algorithm)]


# Whether dm-clrs's sampler draws directed graphs (DfsSampler: directed=True;
# the BFS and Bellman-Ford samplers draw symmetric matrices).
_SAMPLES_DIRECTED: Mapping[str, bool] = types.MappingProxyType(
    {
        "bfs": False,
        "bfs_seq": False,
        "bellman_ford": False,
        "dfs": True,
        "dfs_light": True,
        "dfs_reverse": True,
    }
)


def samples_directed(algorithm: str) -> bool:
    """Whether ``algorithm``'s CLRS sampler draws directed graphs (DFS does).

    Raises:
        UnknownAlgorithmError: if ``algorithm`` is not known.
    """
    return _SAMPLES_DIRECTED[check_algorithm(algorithm)]


def sampler_class(algorithm: str) -> type[clrs_samplers.Sampler]:
    """The dm-clrs sampler class that draws ``algorithm``'s graphs.

    The variants reuse the sampler of the algorithm they vary (as in the fork),
    so ``bfs_seq`` sees exactly the graphs and sources that ``bfs`` sees.

    Raises:
        UnknownAlgorithmError: if ``algorithm`` is not known.
    """
    return _SAMPLER_CLASSES[check_algorithm(algorithm)]
