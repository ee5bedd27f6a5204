"""Run a model with its activation cache, and with interventions on it.

``run_with_cache(config, params, batch)`` is the forward pass that also
returns every step's named intermediates (:data:`nar_gap.model.sites.SITES`,
each ``[S, B, ...]``), the hints' and outputs' decoder logits beside them
(``hint.<name>``, ``[S, B, ...]``; ``output.<name>``, ``[B, ...]``).  Given
:class:`Patch` es, the same run replaces named values at chosen steps, heads
and receiver nodes, with a value (an array, e.g. another model's cached
value on the same batch) or a function of the original, and the rollout goes
on from the replaced value: in the model's own rollout (the default, as
scores and Eq. 24 see it) or teacher-forced (``teacher_forced=True``: the
ground-truth hints fed at every step, so only the patch moves the trace).

This is the interpretability toolkits' ``run_with_cache`` and activation
patching, for a CLRS GATv2 whose reference computation (a compiled network)
can be patched in exactly.  It is pure and jit-compiled once per
``(config, rollout, precision, edits, patched sites)``; the patch values are
inputs, so patching another seed or batch does not compile again.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nar_gap.model.config import NetOutput, NetworkConfig
from nar_gap.model.network import Network
from nar_gap.model.sites import (
    ACTIVATIONS,
    FED,
    PATCHES,
    SITE_NAMES,
    Edits,
    find_site,
)
from nar_gap.tasks.batch import Batch

Cache = dict[str, jax.Array]


def teacher_forced(config: NetworkConfig) -> NetworkConfig:
    """``config`` fed the ground-truth hints at every step, without dropout.

    Run with ``repred=False``.  A model then attends on the true trace's
    state at every step, so its attention shows the mechanism without the
    compounding of its own earlier mistakes (the rollout that Eq. 24 uses).
    """
    return dataclasses.replace(config, hint_teacher_forcing=1.0, dropout_prob=0.0)


@dataclasses.dataclass(frozen=True)
class Patch:
    """Replace site ``site`` where ``steps``, ``heads`` and ``nodes`` say.

    Attributes:
      site: a name of :data:`~nar_gap.model.sites.SITES`, or ``fed_<hint>``
        (:func:`~nar_gap.model.sites.fed_site`: a hint as the step encodes it).
      value: an array broadcastable to the site's cached shape ``[S, B,
        ...]`` (another model's cache entry, a constant), or a function of
        the original value of one step (``[B, ...]`` in, the same out),
        applied in the loop.
      steps: the hint steps patched (None: every step).
      heads: the heads patched, at a site with a head axis (None: all).
      nodes: the receiver nodes patched, at a site with a node axis (None:
        all).
      where: booleans broadcastable to the cached shape, patched only where
        true (and where the selections above are; None: everywhere), for
        a selection that differs by step and graph (the nodes reached
        before each step, say).
    """

    site: str
    value: Any
    steps: tuple[int, ...] | None = None
    heads: tuple[int, ...] | None = None
    nodes: tuple[int, ...] | None = None
    where: Any = None

    def __post_init__(self) -> None:
        """Unknown sites and selections a site cannot have are errors here."""
        found = find_site(self.site)
        if found is None:
            raise ValueError(
                f"unknown site {self.site!r}; sites: {', '.join(SITE_NAMES)}, "
                f"{FED}<hint>"
            )
        if not found.patchable:
            raise ValueError(f"site {self.site!r} is read only (it cannot be patched)")
        if self.heads is not None and found.head_axis is None:
            raise ValueError(f"site {self.site!r} has no head axis to select")
        if self.nodes is not None and found.node_axis is None:
            raise ValueError(f"site {self.site!r} has no node axis to select")

    def mask(self, shape: tuple[int, ...]) -> np.ndarray:
        """``[S, B, ...]`` booleans: true where this patch applies."""
        found = find_site(self.site)
        chosen = np.ones(shape, bool)
        if self.where is not None:
            chosen &= np.broadcast_to(np.asarray(self.where, bool), shape)
        for axis, picked in (
            (0, self.steps),
            (found.head_axis, self.heads),
            (found.node_axis, self.nodes),
        ):
            if picked is None:
                continue
            if axis >= len(shape):  # a graph-level fed hint: no node axis
                raise ValueError(
                    f"site {self.site!r} of shape {shape} has no axis {axis}"
                )
            keep = np.zeros(shape[axis], bool)
            keep[list(picked)] = True
            view = [1] * len(shape)
            view[axis] = shape[axis]
            chosen &= keep.reshape(view)
        return chosen


def _module_path(name: str) -> tuple[str, ...]:
    """Where site ``name`` sits in the Flax collections."""
    return ("net",) if find_site(name).module == "step" else ("net", "processor")


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{site: leaf}`` -> the collection's nested tree."""
    tree: dict[str, Any] = {}
    for name, leaf in flat.items():
        node = tree
        for key in _module_path(name):
            node = node.setdefault(key, {})
        node[name] = leaf
    return tree


def _flatten(tree: Mapping[str, Any]) -> Cache:
    """The activations collection -> ``{site: [S, B, ...]}``."""
    cache = {}
    fed = [k for k in tree.get("net", {}) if k.startswith(FED)]
    for name in (*SITE_NAMES, *sorted(fed)):
        node: Any = tree
        for key in (*_module_path(name), name):
            node = node.get(key) if isinstance(node, Mapping) else None
        if node is not None:
            cache[name] = node
    return cache


@functools.lru_cache(maxsize=32)
def _runner(
    config: NetworkConfig,
    forced: bool,
    precision: str | None,
    edits: Edits,
) -> Callable[[Any, Batch, Any], tuple[NetOutput, Cache]]:
    network = Network(teacher_forced(config) if forced else config, edits=edits)

    def run(params: Any, batch: Batch, patches: Any) -> tuple[NetOutput, Cache]:
        variables = {"params": params}
        if patches:
            variables[PATCHES] = patches
        with jax.default_matmul_precision(precision):
            out, collected = network.apply(
                variables, batch, repred=not forced, mutable=[ACTIVATIONS]
            )
        cache = _flatten(collected.get(ACTIVATIONS, {}))
        cache.update({f"hint.{k}": v for k, v in out.hint_preds.items()})
        cache.update({f"output.{k}": v for k, v in out.outputs.items()})
        return out, cache

    return jax.jit(run)


def site_shapes(config: NetworkConfig, params: Any, batch: Batch) -> dict[str, tuple]:
    """Each cache entry's shape on ``batch`` (traced, not run)."""
    _, cache = jax.eval_shape(_runner(config, False, None, ()), params, batch, {})
    return {name: tuple(leaf.shape) for name, leaf in cache.items()}


def _patch_tree(
    config: NetworkConfig, params: Any, batch: Batch, patches: Sequence[Patch]
) -> tuple[dict[str, Any], Edits]:
    """The patches collection (values and masks) and the in-loop edits."""
    edits = []
    sites = [p.site for p in patches]
    if len(set(sites)) != len(sites):
        raise ValueError(f"one patch per site, got {sites}")
    shapes = site_shapes(config, params, batch) if patches else {}
    flat = {}
    for patch in patches:
        if patch.site not in shapes:
            fed = sorted(k for k in shapes if k.startswith(FED))
            raise ValueError(
                f"this network has no site {patch.site!r}; its hints: {', '.join(fed)}"
            )
        shape = shapes[patch.site]
        flat[patch.site] = {"mask": jnp.asarray(patch.mask(shape))}
        if callable(patch.value):  # applied in the loop: the patch holds its mask
            edits.append((patch.site, patch.value))
        else:
            flat[patch.site]["value"] = jnp.broadcast_to(
                jnp.asarray(patch.value), shape
            )
    return _nest(flat), tuple(edits)


def run_with_cache(
    config: NetworkConfig,
    params: Any,
    batch: Batch,
    patches: Sequence[Patch] = (),
    teacher_forced: bool = False,
    precision: str | None = None,
) -> tuple[NetOutput, Cache]:
    """The forward pass and its named activations, with ``patches`` applied.

    Evaluation mode: the model's own predictions fed back
    (``teacher_forced``: the ground truth at every step instead).  Returns
    the :class:`~nar_gap.model.config.NetOutput` and the cache: every site
    of :data:`~nar_gap.model.sites.SITES` (``[S, B, ...]``), ``fed_<hint>``
    (each hint as the step encoded it), ``hint.<name>`` and ``output.<name>``
    (decoder logits).  ``precision``: as
    :func:`~nar_gap.model.seeds.forward`'s (compiled models need
    ``"highest"`` on a GPU).
    """
    tree, edits = _patch_tree(config, params, batch, patches)
    return _runner(config, bool(teacher_forced), precision, edits)(params, batch, tree)
