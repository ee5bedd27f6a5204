"""The smallest exact network of a compiled program, found by search.

The compiler gives every variable, input and criterion a dimension of its
own and asks nothing about whether the network needs it.  This module asks
by experiment: which dimensions and which weights can go while the network
still reproduces dm-clrs on every hint and output of a set of *check*
graphs.  Two greedy passes, each decision re-checked against dm-clrs:

1. **Dimensions.**  Index ``k`` of the D-wide spaces (a hidden variable, a
   node input, an edge input and a pre-attention channel share it) is
   deleted at once.  Without layer norm, zeroing every weight that reads or
   writes index ``k`` computes what the network without it computes, so a
   trial costs one forward pass, not a compile; the deletions kept are then
   sliced out (:func:`drop_dimensions`) and the smaller network checked.
2. **Weights.**  Each non-zero parameter of the smaller network is set to 0
   in turn and left there if the network stays exact (the paper variant's
   N x N bias by part: its diagonal, the rest).

Greedy means *a* minimal network, not *the* minimum: the order decides
which of two interchangeable weights goes.  And exact on the check graphs
is an empirical claim: a weight that matters only on graphs the check set
lacks (a rare tie, a size it does not have) can go.  Measured: pruned
against 16 graphs of 16 nodes alone, BFS's paper variant and DFS failed on
other graphs of 16 nodes and size-free Bellman-Ford on 64 nodes.  So the
search is guided by counterexamples: the result is run on a pool of other
graphs, any batch it fails joins the check set, and the search starts again
from the compiled network (at most ``rounds`` times).  The caller then
checks the result on *held-out* graphs that neither set contained.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from nar_gap.compiler.compiled_model import CompiledModel
from nar_gap.compiler.layout import Layout
from nar_gap.model.model import parameter_counts
from nar_gap.model.network import param_shapes
from nar_gap.tasks.batch import Batch, concat_batches, pad_batch
from nar_gap.tasks.families import tie_graphs
from nar_gap.tasks.graphs import batch_from_graph
from nar_gap.tasks.specs import has_source

Params = Any
ExactCheck = Callable[[CompiledModel, Params, Sequence[Batch]], bool]


def is_exact(model: CompiledModel, params: Params, batches: Sequence[Batch]) -> bool:
    """Whether ``model`` with ``params`` matches dm-clrs on every batch."""
    return all(model.agrees(batch, params) for batch in batches)


def _axes(model: CompiledModel, batch: Batch) -> list[list[int]]:
    """Per leaf, the multiple ``m`` of D of each axis (0: not D-indexed).

    Read from the shapes of the same architecture one dimension narrower:
    an axis that shrinks by ``m`` is ``m`` D-wide blocks (``z = [n ; h]``
    is two, the decoders' ``[n ; h ; h']`` three).
    """
    d = model.config.hidden_size
    narrower = dataclasses.replace(model.config, hidden_size=d - 1)
    wide = jax.tree_util.tree_leaves(model.params)
    thin = jax.tree_util.tree_leaves(param_shapes(narrower, batch))
    return [
        [(a - b) if a != b else 0 for a, b in zip(w.shape, t.shape, strict=True)]
        for w, t in zip(wide, thin, strict=True)
    ]


def _index_of(axis_multiple: int, d: int, k: int) -> list[int]:
    return [k + block * d for block in range(axis_multiple)]


def zero_dimensions(
    params: Params, axes: list[list[int]], d: int, dims: Sequence[int]
) -> Params:
    """``params`` with every entry that reads or writes an index in ``dims`` zeroed."""
    leaves, tree = jax.tree_util.tree_flatten(params)
    out = []
    for leaf, multiples in zip(leaves, axes, strict=True):
        array = np.array(leaf)
        for axis, m in enumerate(multiples):
            if m:
                rows = [i for k in dims for i in _index_of(m, d, k)]
                index = [slice(None)] * array.ndim
                index[axis] = rows
                array[tuple(index)] = 0
        out.append(array)
    return jax.tree_util.tree_unflatten(tree, out)


def _layout_without(layout: Layout, dims: Sequence[int]) -> Layout:
    keep = [k for k in range(layout.hidden_size) if k not in set(dims)]
    channels = tuple(
        c
        for k, c in enumerate(layout.channels)
        if k not in set(dims)  # channel k lives at pre-attention index k
    )
    return dataclasses.replace(
        layout,
        hidden_size=len(keep),
        hidden=tuple(layout.hidden[k] for k in keep),
        node=tuple(layout.node[k] for k in keep),
        edge=tuple(layout.edge[k] for k in keep),
        pre_attention=tuple(layout.pre_attention[k] for k in keep),
        graph=tuple(layout.graph[k] for k in keep),
        channels=channels,
    )


def drop_dimensions(
    model: CompiledModel, dims: Sequence[int], batch: Batch
) -> CompiledModel:
    """``model`` without the indices ``dims`` of its D-wide spaces (D shrinks)."""
    d = model.config.hidden_size
    axes = _axes(model, batch)
    leaves, tree = jax.tree_util.tree_flatten(model.params)
    out = []
    for leaf, multiples in zip(leaves, axes, strict=True):
        array = np.asarray(leaf)
        for axis, m in enumerate(multiples):
            if m:
                gone = {i for k in dims for i in _index_of(m, d, k)}
                keep = [i for i in range(array.shape[axis]) if i not in gone]
                array = np.take(array, keep, axis=axis)
        out.append(array.astype(np.asarray(leaf).dtype))
    params = jax.tree_util.tree_unflatten(tree, out)
    config = dataclasses.replace(model.config, hidden_size=d - len(set(dims)))
    return dataclasses.replace(
        model, config=config, params=params, layout=_layout_without(model.layout, dims)
    )


@dataclasses.dataclass(frozen=True)
class Minimal:
    """What the search found for one compiled network.

    Attributes:
      model: the smallest network found (dimensions dropped, weights zeroed).
      removed: the deleted indices' names, ``hidden/node/edge/pre_attention``
        joined by ``/`` (``-`` where the space had nothing there).
      zeroed: how many non-zero weights the weight pass set to 0.
      trials: exactness checks the search ran.
      rounds: searches run (one more per round of counterexamples).
    """

    model: CompiledModel
    removed: tuple[str, ...]
    zeroed: int
    trials: int
    rounds: int = 1


def _label(layout: Layout, k: int) -> str:
    spaces = (layout.hidden, layout.node, layout.edge, layout.pre_attention)
    return "/".join("-" if s[k] == "unused" else s[k] for s in spaces)


def search(
    model: CompiledModel,
    check: Sequence[Batch],
    exact: ExactCheck = is_exact,
    prune_weights: bool = True,
    counterexamples: Sequence[Batch] = (),
    rounds: int = 4,
) -> Minimal:
    """The smallest exact network of ``model`` that greedy removal finds.

    Args:
      model: a compiled network that is exact on ``check``.
      check: the batches every removal is checked on.
      exact: the re-check (``is_exact``); a test swaps it to show that it is
        what keeps the result exact.
      prune_weights: run the weight pass after the dimension pass.
      counterexamples: other batches the result must also run exactly; one
        it fails joins ``check`` and the search starts again.
      rounds: at most this many searches; the last one's result is returned
        even if a counterexample still fails (the caller's held-out check
        then says so).

    Raises:
      ValueError: if ``model`` is not exact on ``check`` to begin with.
    """
    if not exact(model, model.params, check):
        raise ValueError(
            f"{model.program.name}: the compiled network is not exact on the "
            "check graphs, so there is nothing to keep exact while removing"
        )
    check, pool, trials = list(check), list(counterexamples), 0
    for round_ in range(1, rounds + 1):
        found = _search_once(model, check, exact, prune_weights)
        trials += found.trials
        failing = [b for b in pool if not exact(found.model, found.model.params, [b])]
        if not failing or round_ == rounds:
            return dataclasses.replace(found, trials=trials, rounds=round_)
        check += failing
        pool = [b for b in pool if not any(b is f for f in failing)]
    raise AssertionError("unreachable")  # pragma: no cover


def _search_once(
    model: CompiledModel,
    check: Sequence[Batch],
    exact: ExactCheck,
    prune_weights: bool,
) -> Minimal:
    """One greedy pass over dimensions, then over weights, against ``check``."""
    d = model.config.hidden_size
    axes = _axes(model, check[0])
    trials, dropped = 0, []
    for k in range(d):
        if len(dropped) == d - 1:
            break
        trial = zero_dimensions(model.params, axes, d, [*dropped, k])
        trials += 1
        if exact(model, trial, check):
            dropped.append(k)
    removed = tuple(_label(model.layout, k) for k in dropped)
    smaller = drop_dimensions(model, dropped, check[0]) if dropped else model
    zeroed = 0
    if prune_weights:
        smaller, zeroed, more = _prune_weights(smaller, check, exact)
        trials += more
    return Minimal(smaller, removed, zeroed, trials)


def _is_bias(path: Any) -> bool:
    return any(getattr(k, "key", None) == "pre_att_bias" for k in path)


def _prune_weights(
    model: CompiledModel, check: Sequence[Batch], exact: ExactCheck
) -> tuple[CompiledModel, int, int]:
    """Zero each non-zero weight in turn; keep the zero where still exact.

    The paper variant's N x N bias is pruned by part, its diagonal and the
    rest each as a whole, never entry by entry: an entry belongs to one
    (receiver, sender) pair, and a check set exercises only the pairs its
    edges and ties make matter.  Entry by entry, BFS's pruned bias kept
    passing its counterexamples and failed held-out graphs of the same size.
    """
    paths_leaves, tree = jax.tree_util.tree_flatten_with_path(model.params)
    arrays = [np.array(leaf) for _, leaf in paths_leaves]
    params = lambda: jax.tree_util.tree_unflatten(tree, arrays)  # noqa: E731
    zeroed = trials = 0
    for (path, _), array in zip(paths_leaves, arrays, strict=True):
        if _is_bias(path):
            diagonal = np.eye(array.shape[0], dtype=bool)
            groups = [diagonal & (array != 0), ~diagonal & (array != 0)]
        else:
            groups = []
            for index in zip(*np.nonzero(array), strict=True):
                group = np.zeros(array.shape, bool)
                group[index] = True
                groups.append(group)
        for group in groups:
            if not group.any():
                continue
            kept = array[group].copy()
            array[group] = 0
            trials += 1
            if exact(model, params(), check):
                zeroed += int(group.sum())
            else:
                array[group] = kept
    return dataclasses.replace(model, params=params()), zeroed, trials


def summary(found: Minimal, compiled: CompiledModel) -> dict[str, Any]:
    """One row of ``compiled_minimal.csv`` (without the held-out check)."""
    before, after = (
        parameter_counts(compiled.params),
        parameter_counts(found.model.params),
    )
    return {
        "hidden_size": compiled.config.hidden_size,
        "parameters": before["total"],
        "nonzero_parameters": before["nonzero"],
        "minimal_hidden_size": found.model.config.hidden_size,
        "removed_dimensions": "; ".join(found.removed),
        "minimal_parameters": after["total"],
        "minimal_nonzero_parameters": after["nonzero"],
        "weights_zeroed": found.zeroed,
        "trials": found.trials,
        "rounds": found.rounds,
    }


def tie_batches(model: CompiledModel, n: int, seeds: Sequence[int]) -> tuple[list, int]:
    """Unit-weight graphs of every family (exact ties) the compiled model runs.

    One batch per seed, every family's graph in it, all padded to one trace
    length (one compiled shape for the search's many re-checks).
    Bellman-Ford's weights are halved until the longest possible distance
    (n - 1 edges) fits the model's distance range (halving keeps every tie
    exact).  Graphs the compiled network itself does not reproduce exactly
    are left out and counted in the second value (exact ties on graphs larger
    than ``tie_nodes`` may split: ``CompilerConfig``), since a removal cannot
    be judged on them.
    """
    algorithm = model.program.algorithm
    scale = 1.0
    if algorithm == "bellman_ford":
        while (n - 1) * scale > model.compiler_config.max_distance:
            scale /= 2.0
    graphs = {}
    for seed in seeds:
        graphs[seed] = []
        for k, weights in enumerate(tie_graphs(n, seed)):
            source = (seed + k) % n if has_source(algorithm) else None
            graphs[seed].append(batch_from_graph(algorithm, weights * scale, source))
    steps = max(b.num_steps for made in graphs.values() for b in made)
    batches, left_out = [], 0
    for made in graphs.values():
        batch = concat_batches([pad_batch(b, num_steps=steps) for b in made])
        failed = {m.sample for m in model.check(batch)}
        if failed:
            left_out += len(failed)
            kept = [b for i, b in enumerate(made) if i not in failed]
            batch = concat_batches([pad_batch(b, num_steps=steps) for b in kept])
        batches.append(batch)
    return batches, left_out
