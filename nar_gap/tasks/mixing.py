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
reference trace.  Like every training batch, a pure function of ``(seed,
step)``.

:func:`mixed_train_batch` traces each family graph through dm-clrs
(:func:`~nar_gap.tasks.graphs.batch_from_graph`), one seed at a time; the
trainer's :func:`stacked_mixed_batches` draws the step whole, the family
graphs traced as arrays beside the sampled ones
(:mod:`~nar_gap.tasks.fast_sampling`), the same bytes at a tenth of the cost.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from nar_gap.tasks.batch import UNWEIGHTED, Batch, concat_batches
from nar_gap.tasks.defaults import BATCH_SIZE, TRAIN_LENGTHS, TRAIN_P
from nar_gap.tasks.families import FAMILIES, make_graph
from nar_gap.tasks.fast_graphs import Graphs
from nar_gap.tasks.fast_sampling import (
    ShapeFor,
    Step,
    even_positions,
    padded_stack,
    sampled_graphs,
    stacked_step,
    traced_batch,
)
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


@dataclasses.dataclass(frozen=True)
class FamilyDraws:
    """One seed's family graphs of one step, before any trace is run on them.

    Attributes:
        weights: [C, N, N] float64, ids shuffled: 0/1 for unweighted
            algorithms, dm-clrs's weights for Bellman-Ford (0 off the edges).
        sources: [C] int64 sources (None for algorithms without one).
        positions: [C, N] float64 sorted uniforms, None without random ``pos``.
    """

    weights: np.ndarray
    sources: np.ndarray | None
    positions: np.ndarray | None


def family_draws(
    algorithm: str,
    families: Sequence[str],
    seed: int,
    step: int,
    *,
    num_nodes: int,
    count: int,
    p: Sequence[float] = TRAIN_P,
    random_pos: bool = True,
) -> FamilyDraws:
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
    weights, sources = [], []
    for k in range(count):
        graph = make_graph(
            families[k % len(families)],
            num_nodes,
            seed=int(rng.integers(2**31)),
            weighted=weighted,
            clrs_law=True,
            law_p=float(rng.choice(p)),
        )
        order = rng.permutation(num_nodes)
        weights.append(graph[np.ix_(order, order)])
        if has_source(algorithm):
            sources.append(int(rng.integers(num_nodes)))
    positions = np.sort(rng.random((count, num_nodes)), axis=1) if random_pos else None
    return FamilyDraws(
        weights=np.stack(weights),
        sources=np.array(sources, dtype=np.int64) if sources else None,
        positions=positions,
    )


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
    """:func:`family_draws`'s graphs as a batch, traced by dm-clrs graph by graph.

    Raises:
      ValueError: an unknown family, or no family, or ``count`` < 1.
    """
    draws = family_draws(
        algorithm,
        families,
        seed,
        step,
        num_nodes=num_nodes,
        count=count,
        p=p,
        random_pos=random_pos,
    )
    sources = [None] * count if draws.sources is None else draws.sources.tolist()
    batch = concat_batches(
        [
            batch_from_graph(algorithm, weights, source)
            for weights, source in zip(draws.weights, sources, strict=True)
        ]
    )
    if draws.positions is not None:
        pos = draws.positions.astype(batch.inputs["pos"].dtype)
        batch = dataclasses.replace(batch, inputs={**batch.inputs, "pos": pos})
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


def _family_graphs(algorithm: str, draws: Sequence[FamilyDraws]) -> Graphs:
    """Every seed's :class:`FamilyDraws` as one [L, C] :class:`Graphs`."""
    weights = np.stack([d.weights for d in draws])
    sources = None if draws[0].sources is None else np.stack([d.sources for d in draws])
    return Graphs(
        edges=weights != 0,
        weights=None if algorithm in UNWEIGHTED else weights,
        sources=sources,
        exact=np.ones(len(draws), dtype=bool),
    )


def _joined(first: Graphs, second: Graphs) -> Graphs:
    """Each lane's graphs of ``first`` then ``second``, along the batch axis."""

    def join(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else np.concatenate([a, b], axis=1)

    return Graphs(
        edges=join(first.edges, second.edges),
        weights=join(first.weights, second.weights),
        sources=join(first.sources, second.sources),
        exact=first.exact & second.exact,
    )


def _traced_mixed(step: Step, count: int, families: Sequence[str]) -> Batch | None:
    """The mixed step drawn whole, or None if the sampler's replay lost a seed."""
    num_nodes = step.num_nodes
    draws = [
        family_draws(
            step.algorithm,
            families,
            seed,
            step.step,
            num_nodes=num_nodes,
            count=count,
            p=step.p,
            random_pos=step.random_pos,
        )
        for seed in step.seeds
    ]
    graphs = _family_graphs(step.algorithm, draws)
    positions = (
        np.stack([d.positions for d in draws])
        if step.random_pos
        else even_positions(len(step.seeds), count, num_nodes)
    )
    if count < step.batch_size:
        drawn = sampled_graphs(step, step.batch_size - count)
        if drawn is None:
            return None
        graphs = _joined(drawn[0], graphs)
        positions = np.concatenate([drawn[1], positions], axis=1)
    return traced_batch(step.algorithm, graphs, positions, step.shape_for)


def stacked_mixed_batches(
    algorithm: str,
    seeds: Sequence[int],
    step: int,
    *,
    families: Sequence[str],
    share: float,
    lengths: Sequence[int] = TRAIN_LENGTHS,
    batch_size: int = BATCH_SIZE,
    p: Sequence[float] = TRAIN_P,
    random_pos: bool = True,
    shape_for: ShapeFor | None = None,
) -> Batch:
    """Every seed's :func:`mixed_train_batch` of ``step``, padded and stacked.

    The same bytes as ``stack_seeds([pad_batch(mixed_train_batch(algorithm,
    seed, step, ...), *shape) for seed in seeds])`` with ``shape =
    shape_for(N, longest trace)``, as
    :func:`~nar_gap.tasks.fast_sampling.stacked_train_batches` is for
    ``train_batch``.  The family graphs are drawn as :func:`family_draws`
    draws them and traced as arrays beside the sampled ones, in one pass,
    instead of through dm-clrs graph by graph; where the sampled part would
    go through dm-clrs (no array builder, too many nodes, a stream the
    replay lost) so does the whole step.
    """
    checked = Step.checked(
        algorithm,
        seeds,
        step,
        lengths=lengths,
        batch_size=batch_size,
        p=p,
        random_pos=random_pos,
        shape_for=shape_for,
    )
    count = family_graphs(share, checked.batch_size) if families else 0
    if not count:
        return stacked_step(checked)
    stacked = _traced_mixed(checked, count, families) if checked.drawn_whole else None
    if stacked is not None:
        return stacked
    batches = [
        mixed_train_batch(
            algorithm,
            seed,
            checked.step,
            families=families,
            share=share,
            **checked.options,
        )
        for seed in checked.seeds
    ]
    return padded_stack(batches, checked.shape_for)
