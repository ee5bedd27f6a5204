"""Training batches with structured graph families mixed into CLRS's draw.

CLRS trains on Erdős–Rényi graphs of 4 to 16 nodes, whose BFS traces are
short: few nodes are reached four or more steps before the trace ends, so a
trained decoder is rarely asked to keep a pointer for long (notebook 07,
section 6b).  Paths, trees and grids ask for it at every size.  A run that
names ``TrainConfig.train_families`` draws ``family_graphs(share, B)`` of each
batch's ``B`` graphs from those families (:mod:`~nar_gap.tasks.families`, at
the step's size) and the rest from dm-clrs's sampler as before.

Each family graph is drawn as dm-clrs would draw the rest of a training graph:
self-loops and weights by dm-clrs's law (:func:`~nar_gap.tasks.families.
with_clrs_law`, at an edge probability drawn from the run's grid), node ids
shuffled (a path's ids would otherwise run along it, and ``pos`` keeps id
order), a uniform source, ``pos`` randomised as ``process_random_pos`` does
(sorted uniforms) when the run randomises it; hints and outputs are dm-clrs's
reference trace (:func:`~nar_gap.tasks.graphs.batch_from_graph`).  Like every
training batch, a pure function of ``(seed, step)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from nar_gap.tasks.batch import UNWEIGHTED, Batch, concat_batches
from nar_gap.tasks.defaults import BATCH_SIZE, TRAIN_LENGTHS, TRAIN_P
from nar_gap.tasks.families import FAMILIES, make_graph
from nar_gap.tasks.graphs import batch_from_graph
from nar_gap.tasks.sampling import step_size, train_batch
from nar_gap.tasks.specs import has_source

_FAMILY_STREAM = 0x66616D  # "fam": the family graphs' stream, not the sampler's


def family_graphs(share: float, batch_size: int) -> int:
    """How many of a batch's ``batch_size`` graphs a ``share`` of families takes.

    At least one when ``share`` > 0, so a small batch still sees the families.
    """
    if share <= 0:
        return 0
    return min(batch_size, max(1, round(share * batch_size)))


def unknown_families(families: Sequence[str]) -> list[str]:
    """The names in ``families`` that :data:`~nar_gap.tasks.families.FAMILIES` lacks."""
    return [name for name in families if name not in FAMILIES]


def family_train_batch(
    algorithm: str,
    families: Sequence[str],
    seed: int,
    step: int,
    *,
    num_nodes: int,
    count: int,
    p: Sequence[float] = TRAIN_P,
    random_pos: bool = True,
) -> Batch:
    """Seed ``seed``'s ``count`` family graphs of ``step``, ``families`` in turn.

    Graph ``k`` is of ``families[k % len(families)]``; everything else about
    it is drawn from ``(seed, step)`` as the module docstring says.

    Raises:
      ValueError: an unknown family, or no family, or ``count`` < 1.
    """
    if not families or unknown_families(families):
        raise ValueError(
            f"expected graph families among {', '.join(FAMILIES)}, got {families!r}"
        )
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    rng = np.random.default_rng([seed, step, _FAMILY_STREAM])
    weighted = algorithm not in UNWEIGHTED
    graphs = []
    for k in range(count):
        weights = make_graph(
            families[k % len(families)],
            num_nodes,
            seed=int(rng.integers(2**31)),
            weighted=weighted,
            clrs_law=True,
            law_p=float(rng.choice(p)),
        )
        order = rng.permutation(num_nodes)
        weights = weights[np.ix_(order, order)]
        source = int(rng.integers(num_nodes)) if has_source(algorithm) else None
        graphs.append(batch_from_graph(algorithm, weights, source))
    batch = concat_batches(graphs)
    if random_pos:
        pos = np.sort(rng.random((count, num_nodes)), axis=1)
        inputs = {**batch.inputs, "pos": pos.astype(batch.inputs["pos"].dtype)}
        batch = dataclasses.replace(batch, inputs=inputs)
    return batch


def mixed_train_batch(
    algorithm: str,
    seed: int,
    step: int,
    *,
    families: Sequence[str],
    share: float,
    lengths: Sequence[int] = TRAIN_LENGTHS,
    batch_size: int = BATCH_SIZE,
    p: Sequence[float] = TRAIN_P,
    random_pos: bool = True,
) -> Batch:
    """:func:`~nar_gap.tasks.sampling.train_batch` with a ``share`` of family graphs.

    The first ``batch_size - k`` graphs are ``train_batch``'s draw at that
    batch size, the last ``k`` (:func:`family_graphs`) :func:`family_train_batch`'s
    at the step's size; with ``share`` 0 (or no families) it is ``train_batch``.
    """
    count = family_graphs(share, batch_size) if families else 0
    options = {"lengths": lengths, "p": p, "random_pos": random_pos}
    if not count:
        return train_batch(algorithm, seed, step, batch_size=batch_size, **options)
    part = family_train_batch(
        algorithm,
        families,
        seed,
        step,
        num_nodes=step_size(lengths, step),
        count=count,
        p=p,
        random_pos=random_pos,
    )
    if count == batch_size:
        return part
    drawn = train_batch(algorithm, seed, step, batch_size=batch_size - count, **options)
    return concat_batches([drawn, part])
