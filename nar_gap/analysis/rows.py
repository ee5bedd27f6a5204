"""Eq. 24 taken apart by receiver row: which rows hold a trained model's distance.

The internal distance averages, over the counted (step, graph, receiver)
cells, how far each trained attention row lies from the compiled one.  A
mean says how far, not where.  Notebook 07 found BFS's supervised recipe at
the attention bar on new dense structure drawn by our generator and off it
once the same graphs carry dm-clrs's self-loops; to say why, the cells are
kept apart here and labelled by what could decide them: what the compiled
row does (attend to the receiver itself, or to another node), whether the
receiver's own edge is in the graph (a self-loop changes only the edge
feature of the edge every GATv2 receiver already attends over), a hint flag
of the receiver (BFS's ``reach_h``) and how many of its neighbours carry it.

A cell's distance here is half the L1 distance of its row, in [0, 1]: the
attention mass the trained row puts where the compiled row does not.
Class means weigh every cell alike, unlike Eq. 24's per-graph normalisation,
so a class's mean is not a column of the recipe table; its share of the
summed distance is.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np

from nar_gap.analysis.models import Models, measure_models
from nar_gap.analysis.stats import finite_summary
from nar_gap.analysis.verdicts import UNIT, paired_higher, t_interval
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.counted_steps import internal_steps


@dataclasses.dataclass(frozen=True)
class RowCells:
    """Every counted cell of one batch, flattened to ``M`` cells.

    Attributes:
      distance: ``[K, M]`` per model, half the L1 distance of the cell's row
        from the compiled row.
      self_weight: ``[K, M]`` per model, the attention on the receiver itself.
      compiled_self: ``[M]`` the compiled row attends to the receiver itself.
      self_loop: ``[M]`` the receiver's own edge is in the graph (``A_ii != 0``).
      flagged: ``[M]`` the hint flag is set on the receiver at the step's input.
      flagged_neighbours: ``[M]`` neighbours (``j != i``, ``A_ij != 0``) whose
        flag is set at that step.
    """

    distance: np.ndarray
    self_weight: np.ndarray
    compiled_self: np.ndarray
    self_loop: np.ndarray
    flagged: np.ndarray
    flagged_neighbours: np.ndarray


def row_cells(
    trained: np.ndarray, compiled: np.ndarray, batch: Batch, flag: str
) -> RowCells:
    """The counted cells of ``trained`` against ``compiled`` on ``batch``.

    Args:
      trained: ``[K, S, B, N, N]`` head-averaged attention of K models.
      compiled: ``[S, B, N, N]`` the compiled model's (one-hot rows).
      batch: the graphs both ran on; ``batch.inputs["A"]`` gives the edges.
      flag: a mask hint of ``batch`` (BFS: ``"reach_h"``); step ``t``'s
        attention reads hint ``t``.

    Raises:
      ValueError: shapes that do not match, or no such hint.
    """
    trained, compiled = np.asarray(trained), np.asarray(compiled)
    if trained.ndim != 5 or trained.shape[1:] != compiled.shape:
        raise ValueError(
            f"trained attention {trained.shape} is not [K, *{compiled.shape}]"
        )
    if flag not in batch.hints:
        raise ValueError(f"no hint {flag!r}; the batch has {sorted(batch.hints)}")
    steps, _, nodes = compiled.shape[:3]
    counted = (
        np.asarray(internal_steps(batch.lengths, steps))[:, :, None]
        & np.asarray(batch.node_mask)[None]
    )
    edges = np.asarray(batch.inputs["A"]) != 0  # [B, N, N]
    own = np.eye(nodes, dtype=bool)
    flags = np.asarray(batch.hints[flag])[:steps] > 0.5  # [S, B, N]
    neighbours = np.einsum(
        "bij,sbj->sbi", (edges & ~own).astype(np.int32), flags.astype(np.int32)
    )
    s, b, i = np.nonzero(counted)
    diagonal = np.arange(nodes)
    return RowCells(
        distance=np.abs(trained - compiled[None]).sum(-1)[:, s, b, i] / 2,
        self_weight=trained[..., diagonal, diagonal][:, s, b, i],
        compiled_self=compiled[s, b, i, i] > 0.5,
        self_loop=edges[b, i, i],
        flagged=flags[s, b, i],
        flagged_neighbours=neighbours[s, b, i],
    )


def cell_mean(values: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """``[K]``: each model's mean of ``values`` ``[K, M]`` over ``cells``.

    NaN where ``cells`` holds none.
    """
    if not np.any(cells):
        return np.full(values.shape[0], np.nan)
    return values[:, cells].mean(axis=1)


NO_DISTANCE = 1e-6
"""A mean cell distance below this is float rounding, not a distance to share
(the compiled network against itself reads about 1e-12)."""


def distance_share(rows: RowCells, cells: np.ndarray) -> float:
    """The share of the summed distance (all models, all cells) in ``cells``.

    NaN where there is no distance to share (:data:`NO_DISTANCE`): a share
    of rounding noise would read as a finding.
    """
    if not rows.distance.size or rows.distance.mean() < NO_DISTANCE:
        return np.nan
    return float(rows.distance[:, cells].sum() / rows.distance.sum())


def class_summary(rows: RowCells, cells: np.ndarray) -> dict[str, float]:
    """One class of cells: its count, share of the distance, distance and leak.

    ``distance`` and ``leak`` (the attention off the receiver itself) are
    means over the models of each model's cell mean, each with a t-interval
    over the models (``*_low``, ``*_high``).
    """
    summary: dict[str, float] = {
        "cells": int(cells.sum()),
        "share": distance_share(rows, cells),
    }
    for name, values in (("distance", rows.distance), ("leak", 1 - rows.self_weight)):
        over_models = finite_summary(cell_mean(values, cells))
        low, high = t_interval(over_models, within=UNIT)
        summary |= {name: over_models.mean, f"{name}_low": low, f"{name}_high": high}
    return summary


def binned(counts: np.ndarray, edges: tuple[int, ...]) -> list[tuple[str, np.ndarray]]:
    """``[(label, mask)]``: ``counts`` in ``[edges[k], edges[k + 1])``; the last open.

    ``binned(c, (1, 4, 8))`` gives ``"1-3"``, ``"4-7"`` and ``"8+"``.
    """
    bins = []
    for low, high in zip(edges, (*edges[1:], None), strict=True):
        label = f"{low}+" if high is None else f"{low}-{high - 1}"
        above = counts >= low
        bins.append((label, above if high is None else above & (counts < high)))
    return bins


def model_rows(
    models: Models,
    reference: np.ndarray,
    batch: Batch,
    flag: str,
    position_scale: float = 1.0,
    position_offset: float = 0.0,
) -> RowCells:
    """:func:`row_cells` of ``models`` against ``reference`` on ``batch``.

    ``reference``: the compiled model's attention on ``batch``
    (:func:`~nar_gap.analysis.models.reference_attention`), computed once by
    the caller for every intervention on the same graphs.  The models read
    every ``pos`` input times ``position_scale`` plus ``position_offset``: an
    intervention on what tells nodes apart (the scale crowds them, the
    offset moves the crowded range, so that spacing and the size of the
    values can be told apart); the trace, and so the reference and every
    label, stay those of ``batch``.
    """
    pos = np.asarray(batch.inputs["pos"]) * position_scale + position_offset
    moved = dataclasses.replace(batch, inputs={**batch.inputs, "pos": pos})
    trained = measure_models(models, moved, reference).attention
    return row_cells(trained, reference, batch, flag)


def class_rows(rows: RowCells) -> list[dict[str, Any]]:
    """:func:`class_summary` of every non-empty class of cells.

    A class: what the compiled row attends to (``itself`` or ``another
    node``), the receiver's flag (``flagged``) and its ``self_loop``.
    """
    table = []
    for target, flag, loop in itertools.product((True, False), repeat=3):
        cells = (rows.compiled_self == target) & (rows.flagged == flag)
        cells &= rows.self_loop == loop
        if cells.any():
            attends = "itself" if target else "another node"
            table.append(
                {"compiled_attends": attends, "flagged": flag, "self_loop": loop}
                | class_summary(rows, cells)
            )
    return table


def self_selected(rows: RowCells, self_loop: bool) -> np.ndarray:
    """The flagged receivers whose compiled row attends to themselves."""
    return rows.compiled_self & rows.flagged & (rows.self_loop == self_loop)


def self_selected_leak(rows: RowCells, self_loop: bool) -> np.ndarray:
    """``[K]``: each model's mean leak over the :func:`self_selected` cells."""
    return cell_mean(1 - rows.self_weight, self_selected(rows, self_loop))


def leak_rows(rows: RowCells, edges: tuple[int, ...]) -> list[dict[str, Any]]:
    """:func:`class_summary` of :func:`self_selected` cells, by self-loop.

    Within each, all of them (``"all"``), then by flagged neighbours in the
    :func:`binned` ``edges``.
    """
    table = []
    for loop in (True, False):
        chosen = self_selected(rows, loop)
        bins = [("all", chosen), *binned(rows.flagged_neighbours, edges)]
        for label, cells in bins:
            if (cells := cells & chosen).any():
                table.append(
                    {"self_loop": loop, "flagged_neighbours": label}
                    | class_summary(rows, cells)
                )
    return table


def leak_change(
    before: RowCells, after: RowCells, label: str, flagged: str = "flagged"
) -> str:
    """Does the leak of :func:`self_selected` receivers rise ``before`` to ``after``?

    The same cells, e.g. under an intervention; paired by model, one-sided
    (:func:`~nar_gap.analysis.verdicts.paired_higher`), for receivers with a
    self-loop and without.
    """
    said = []
    for loop, name in ((True, "with a self-loop"), (False, "without")):
        first, last = (self_selected_leak(r, loop) for r in (before, after))
        judged = paired_higher(last - first)
        said.append(
            f"{name} from {finite_summary(first).mean:.4f} to "
            f"{finite_summary(last).mean:.4f} "
            f"(higher? {judged.verdict}: {judged.evidence})"
        )
    return f"{label}: the leak of {flagged} receivers goes {said[0]}, and {said[1]}."


def self_loop_sentence(by_graphs: dict[str, RowCells], flagged: str = "flagged") -> str:
    """Per graph set: self-looped :func:`self_selected` receivers' share and leak."""
    said = []
    for label, rows in by_graphs.items():
        leak = {
            loop: finite_summary(self_selected_leak(rows, loop)).mean
            for loop in (True, False)
        }
        share = distance_share(rows, self_selected(rows, True))
        said.append(
            f"{label}: {flagged} receivers with a self-loop hold {share:.3f} of "
            f"the distance and leak {leak[True]:.3f}, those without {leak[False]:.4f}"
        )
    return "; ".join(said) + "."
