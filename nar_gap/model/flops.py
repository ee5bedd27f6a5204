"""An analytic FLOP count of one training step of the CLRS GATv2.

Why here: ``nar-gap plan`` prices a profile on an accelerator it does not
have (``--target``) from this count, and the benchmarks compare measured
throughput against it; both need the same arithmetic.

The count follows the network as :mod:`nar_gap.model` computes it (dm-clrs's
GATv2 model with factorised edge features), for a batch of ``B`` graphs of
``N`` nodes and ``T`` hint time steps, hidden size ``D``, ``K`` edge scalars
per pair (inputs and pointer hints that are encoded on edges):

Per hint step (there are ``S = T - 1``), forward:

* processor, per message-passing step: four ``2D -> D`` linears on
  ``z = [node features; hidden]`` (values, skip, sender, receiver):
  ``4 * 2 B N (2D) D = 16 B N D^2``; the edge projection in factorised form
  ``2 B N^2 K D``; the pre-activation sum, LeakyReLU and the head's
  contraction ``7 B N^2 D``; aggregation ``2 B N^2 D``; the graph linear
  ``2 B D^2``.
* each decoded hint: a node pointer ``2 * 2 B N (3D) D = 12 B N D^2`` (two
  ``3D -> D`` linears on ``[node features; previous; new hidden]``) plus
  ``2 B N^2 K D`` (edge projection) and ``5 B N^2 D`` (sum, max,
  contraction); a node mask, scalar or categorical with ``C`` classes
  ``2 B N (3D) C``; a graph value ``2 B (3D + D) C``.
* outputs: decoded once per sample, after the loop (the same per-probe
  counts, once instead of ``S`` times).

Backward is counted as twice the forward (a matmul's input and weight
gradients each cost one forward matmul), so a training step is ``3x`` the
forward.  Encoders (``2 B N C D`` per probe), softmaxes, layer norm and the
optimiser are left out: below 1 % at the paper's sizes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nar_gap.model.config import NetworkConfig
from nar_gap.tasks.vocabulary import Location, Stage, Type


def _probe_flops(loc: str, typ: str, b: int, n: int, d: int, k: int, c: int) -> int:
    """Forward FLOPs of one decoder (see the module docstring)."""
    if loc == Location.NODE and typ == Type.POINTER:
        return 12 * b * n * d * d + 2 * b * n * n * k * d + 5 * b * n * n * d
    if loc == Location.NODE:
        return 2 * b * n * 3 * d * c
    return 2 * b * (3 * d + d) * c


def edge_scalars(config: NetworkConfig) -> int:
    """``K``: the scalars per pair the edge encoders read (pointer hints included)."""
    k = 0
    for _, stage, loc, typ in config.spec_entries():
        on_edges = loc == Location.EDGE or (
            loc == Location.NODE and typ == Type.POINTER
        )
        encoded = stage == Stage.INPUT or (stage == Stage.HINT and config.encode_hints)
        k += int(on_edges and encoded)
    return max(k, 1)


def train_step_flops(
    config: NetworkConfig,
    batch_size: int,
    num_nodes: int,
    num_steps: int,
    class_sizes: dict[str, int] | None = None,
) -> dict[str, float]:
    """FLOPs of one training step of one seed: ``{"total", "matmul", "pairwise"}``.

    ``num_steps`` is ``T``, the hint time axis of the (padded) batch.
    """
    b, n, d = batch_size, num_nodes, config.hidden_size
    k = edge_scalars(config)
    sizes = class_sizes or {}
    steps = max(1, num_steps - 1)
    mp = config.msg_passing_steps
    processor_mm = mp * (16 * b * n * d * d + 2 * b * d * d)
    processor_pair = mp * (2 * b * n * n * k * d + 9 * b * n * n * d)
    hint_mm = hint_pair = out_mm = out_pair = 0
    for name, stage, loc, typ in config.spec_entries():
        if stage == Stage.INPUT or (stage == Stage.HINT and not config.decode_hints):
            continue
        total = _probe_flops(loc, typ, b, n, d, k, sizes.get(name, 1))
        pair = (
            2 * b * n * n * k * d + 5 * b * n * n * d
            if loc == Location.NODE and typ == Type.POINTER
            else 0
        )
        if stage == Stage.HINT:
            hint_mm, hint_pair = hint_mm + total - pair, hint_pair + pair
        else:
            out_mm, out_pair = out_mm + total - pair, out_pair + pair
    matmul = 3 * (steps * (processor_mm + hint_mm) + out_mm)
    pairwise = 3 * (steps * (processor_pair + hint_pair) + out_pair)
    return {
        "total": float(matmul + pairwise),
        "matmul": float(matmul),
        "pairwise": float(pairwise),
    }


def mean_flops(
    config: NetworkConfig, batch_size: int, shapes: Sequence[tuple[int, int]]
) -> float:
    """Mean FLOPs per seed-step over the padded ``(nodes, steps)`` shapes a run used."""
    return float(
        np.mean(
            [train_step_flops(config, batch_size, n, t)["total"] for n, t in shapes]
        )
    )
