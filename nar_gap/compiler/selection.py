"""Lower a program's selection criteria to pre-attention channels.

GATv2's logit for receiver ``i`` and sender ``j`` is ``Σ_c a_c LReLU(P_ijc)``
with ``P_ij = W_1 z_j + W_2 z_i + W_e e_ij`` (+ bias).  Each criterion becomes
a few channels ``c`` whose summed contribution is an exact, known function of
the criterion (LReLU(x) = x for x >= 0 and 0.01 x below):

* ``Eligible(f)``: one channel ``E f_j`` >= 0, head +1: eligible senders
  gain ``E``.  ``Eligible(f, edge)``: ``u = E (f_j + e_ij - 1)`` (head +1)
  and ``u + 2E`` (head -0.01) sum to ``0.99 E relu(f_j + e_ij - 1)`` minus
  a constant: the leak cancelled, so ``f`` may be -1 too.
* ``LowestId``: one channel ``mu (1 - pos_j)`` >= 0, head +1.  Gated by
  ``among``/``unless_receiver``: channel ``u = mu (1 - pos_j) - K (1 -
  among_j) - K unless_i`` (head +1) plus ``mu (1 - pos_j)`` (head -0.01):
  when active (u >= 0) the sum is ``0.99 mu (1 - pos_j)``; when not, the
  LReLU leak ``0.01 u`` is cancelled to a constant ``-0.01 K`` per violated
  gate, the same for every sender id.
* ``Minimise(v, among, A)``: ``s = lambda (v_j + A_ij)``; channels
  ``s - K (1 - among_j)`` (head -1) and ``s`` (head +0.01): ``-0.99 s`` for
  senders in ``among``, the constant ``+0.01 K`` for the others.
* ``Prefer(x, sender_id=w)``: ``y = C (w_j - x_i)`` (``w = pos`` unless
  given); channels ``y``, ``-y`` (head -1)
  and ``y - b``, ``-y - b`` (head +1) sum to ``-0.99 min(|y|, b) - 0.02 b``:
  a bump that is ``0.99 b`` higher for the sender whose ``w_j`` equals ``x_i`` and
  flat for every other sender once ``C / N >= b`` (``C = b N_res``).  This is
  the size-free self-preference: no N x N matrix, no dependence on N beyond
  the id spacing 1/N.

Scales are set from the last criterion to the first: each must separate its
candidates by its margin plus the *span* of all later criteria.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from nar_gap.compiler.config import CompilerConfig
from nar_gap.programs.dsl import (
    Criterion,
    Eligible,
    Expr,
    Linked,
    LowestId,
    Minimise,
    Prefer,
    Selection,
    edge,
    inp,
)

LEAK = 0.01  # jax.nn.leaky_relu's slope, used by the CLRS GATv2.
ZERO = Expr()


@dataclasses.dataclass(frozen=True)
class Channel:
    """One pre-attention channel: ``P = sender(z_j) + receiver(z_i) + edge(e_ij)``."""

    label: str
    head: float
    sender: Expr = ZERO
    receiver: Expr = ZERO
    edge: Expr = ZERO


@dataclasses.dataclass(frozen=True)
class CriterionScale:
    """The logit scale chosen for one criterion, and why it is enough."""

    criterion: str
    scale: float
    span: float
    requirement: str
    resolution: float = 0.0  # Minimise: the smallest score gap it decides


def _one_minus_pos(mu: float) -> Expr:
    return mu - mu * inp("pos")


def _lower_eligible(
    c: Eligible, needed: float, config: CompilerConfig
) -> tuple[list[Channel], CriterionScale]:
    if c.edge is None:
        scale = needed
        channels = [Channel("eligible", 1.0, sender=scale * c.flag)]
        return channels, CriterionScale(
            "Eligible", scale, scale, "E >= margin + span after"
        )
    # u = E (flag_j + edge_ij - 1) >= -2E (flag >= -1), head +1, and u + 2E
    # >= 0, head -0.01: LReLU(u) - 0.01 (u + 2E) = 0.99 E relu(flag + edge - 1)
    # - 0.02 E, so eligible senders gain 0.99 E and every other one the same.
    scale = needed / (1.0 - LEAK)
    sender = scale * c.flag - scale
    along = scale * edge(c.edge)
    channels = [
        Channel("eligible", 1.0, sender=sender, edge=along),
        Channel("eligible_leak", -LEAK, sender=sender + 2.0 * scale, edge=along),
    ]
    return channels, CriterionScale(
        "Eligible", scale, scale, "0.99 E >= margin + span after (edge-gated)"
    )


def _lower_linked(
    c: Linked, needed: float, config: CompilerConfig
) -> tuple[list[Channel], CriterionScale]:
    scale = needed
    # P = L (1 - edge_ij) >= 0, head -1: senders off the input graph lose L;
    # joined ones get exactly 0 (L - L * 1), so their logits are unchanged.
    channels = [Channel("linked", -1.0, edge=scale - scale * edge(c.edge))]
    return channels, CriterionScale("Linked", scale, scale, "L >= margin + span after")


def _lower_lowest_id(
    c: LowestId, needed: float, config: CompilerConfig
) -> tuple[list[Channel], CriterionScale]:
    ids = config.resolution_nodes if c.resolution == "nodes" else config.tie_nodes
    gates = [g for g in (c.among, c.unless_receiver) if g is not None]
    if not gates:
        mu = needed * ids
        channels = [Channel("lowest_id", 1.0, sender=_one_minus_pos(mu))]
        return channels, CriterionScale(
            "LowestId", mu, mu, f"mu / {ids} >= margin + span after"
        )
    mu = needed * ids / (1.0 - LEAK)
    gate = 2.0 * mu  # K > mu: a closed gate makes the channel negative
    sender = _one_minus_pos(mu)
    receiver = ZERO
    if c.among is not None:
        sender = sender - gate + gate * c.among
    if c.unless_receiver is not None:
        receiver = -gate * c.unless_receiver
    channels = [
        Channel("lowest_id", 1.0, sender=sender, receiver=receiver),
        Channel("lowest_id_leak", -LEAK, sender=_one_minus_pos(mu)),
    ]
    span = mu + LEAK * gate * len(gates)
    return channels, CriterionScale(
        "LowestId", mu, span, f"0.99 mu / {ids} >= margin + span after; K = 2 mu"
    )


def _lower_minimise(
    c: Minimise, needed: float, config: CompilerConfig
) -> tuple[list[Channel], CriterionScale]:
    lam = config.score_scale
    gate = 2.0 * lam * config.max_weight  # senders outside `among` score only A
    score_sender = lam * c.value
    score_edge = lam * Expr.of({c.edge: 1.0}) if c.edge else ZERO
    channels = [
        Channel(
            "minimise",
            -1.0,
            sender=score_sender - gate + gate * c.among,
            edge=score_edge,
        ),
        Channel("minimise_leak", LEAK, sender=score_sender, edge=score_edge),
    ]
    span = (1 - LEAK) * lam * (config.max_distance + config.max_weight) + LEAK * gate
    resolution = needed / ((1 - LEAK) * lam)
    return channels, CriterionScale(
        "Minimise",
        lam,
        span,
        f"scores closer than {resolution:.2g} are decided by later criteria "
        "(distance resolution)",
        resolution,
    )


def _lower_prefer(c: Prefer, needed: float, config: CompilerConfig):
    bump = needed / (1.0 - LEAK)
    slope = bump * config.resolution_nodes  # C / N >= b up to resolution_nodes
    y_sender = slope * c.sender_id
    y_receiver = -slope * c.receiver_id
    channels = [
        Channel("prefer+", -1.0, sender=y_sender, receiver=y_receiver),
        Channel("prefer-", -1.0, sender=-y_sender, receiver=-y_receiver),
        Channel("prefer+cap", 1.0, sender=y_sender - bump, receiver=y_receiver),
        Channel("prefer-cap", 1.0, sender=-y_sender - bump, receiver=-y_receiver),
    ]
    return channels, CriterionScale(
        "Prefer", bump, (1 + LEAK) * bump, "0.99 b >= margin + span after; C = b N_res"
    )


# One lowering per criterion kind; tests/compiler/test_compiler.py checks every kind of
# the language is here.
LOWERINGS: dict[type, Callable[..., tuple[list[Channel], CriterionScale]]] = {
    Linked: _lower_linked,
    Eligible: _lower_eligible,
    LowestId: _lower_lowest_id,
    Minimise: _lower_minimise,
    Prefer: _lower_prefer,
}


def _without_cancelled_leak(channels: list[Channel]) -> list[Channel]:
    """The last criterion's channels, a gated ``LowestId``'s leak channel dropped.

    That channel cancels the LReLU leak ``0.01 u`` of senders whose gate is
    closed, so that they all get one constant and a *later* criterion orders
    them.  After the last criterion nothing orders them: with the leak left
    in, they keep a small lower-id preference (``0.01 mu (1 - pos_j)`` minus a
    constant, still below every sender the gate lets in), where cancelled
    they tie exactly.  The senders the gate lets in score ``mu (1 - pos_j)``
    instead of ``0.99 mu (1 - pos_j)``, within the criterion's declared span,
    so every margin the compiler guarantees still holds.  One graph of the
    size sweep (``er_sparse``, 4 096 nodes, float64) relied on the 1 % it
    took: there a pointer fed back into ``Prefer`` needs more than
    ``tie_margin`` past ``resolution_nodes`` (docs/compilation.md, "Where
    exactness ends").  Found by the minimality search (notebook 01) on Bellman-Ford,
    whose ``LowestId(among=msk)`` is last: size-free hidden 10 -> 9.  BFS's
    ``LowestId`` comes before its ``Prefer`` and keeps it.
    """
    return [ch for ch in channels if ch.label != "lowest_id_leak"]


def lower_selection(
    selection: Selection, config: CompilerConfig
) -> tuple[tuple[Channel, ...], tuple[CriterionScale, ...]]:
    """Channels (in criterion order) and the scale chosen for each criterion.

    Criteria after a ``Minimise`` only break exact ties of its score and use
    ``tie_margin``; all others use ``margin``.
    """
    criteria: tuple[Criterion, ...] = selection.criteria
    first_minimise = next(
        (k for k, c in enumerate(criteria) if isinstance(c, Minimise)), len(criteria)
    )
    lowered: list[tuple[list[Channel], CriterionScale]] = []
    span_after = 0.0
    for k in reversed(range(len(criteria))):
        c = criteria[k]
        margin = config.tie_margin if k > first_minimise else config.margin
        needed = margin + span_after
        lower = LOWERINGS.get(type(c))
        if lower is None:
            raise TypeError(f"unknown criterion {c!r}")
        result = lower(c, needed, config)
        if k == len(criteria) - 1:
            result = (_without_cancelled_leak(result[0]), result[1])
        lowered.append(result)
        span_after += result[1].span
    lowered.reverse()
    channels = tuple(ch for chs, _ in lowered for ch in chs)
    scales = tuple(scale for _, scale in lowered)
    return channels, scales


def bias_variant_channels(
    selection: Selection, config: CompilerConfig, nodes: int
) -> tuple[tuple[Channel, ...], tuple[CriterionScale, ...], np.ndarray]:
    """The paper's variant of a selection: ``(channels, scales, B)``.

    The criteria that only the receiver-sender *pair* decides (prefer or
    avoid oneself, prefer lower ids) move into the learned ``N_B x N_B``
    pre-attention bias ``B`` (``N_B = nodes``), which GATv2 adds to every
    pre-attention channel.  That frees the pre-attention channels the
    size-free model spends on them, and ties the model to graphs of up to
    ``N_B`` nodes.  Two selections have a variant, as in the paper's
    Appendix C: BFS's (:func:`_bfs_bias_variant`) and Bellman-Ford's
    (:func:`_bellman_ford_bias_variant`).

    Raises:
      ValueError: for any other selection.
    """
    kinds = [type(c) for c in selection.criteria]
    if kinds == [Eligible, LowestId, Prefer] and selection.criteria[2] == Prefer(
        inp("pos")
    ):
        return _bfs_bias_variant(selection, config, nodes)
    if kinds == [Linked, Eligible, Minimise, Prefer, LowestId]:
        return _bellman_ford_bias_variant(selection, config, nodes)
    raise ValueError(
        "the pre-attention-bias variant is defined for BFS's selection "
        "(Eligible, LowestId, Prefer(pos)) and Bellman-Ford's (Linked, "
        "Eligible, Minimise, Prefer, LowestId) only"
    )


def _bfs_bias_variant(
    selection: Selection, config: CompilerConfig, nodes: int
) -> tuple[tuple[Channel, ...], tuple[CriterionScale, ...], np.ndarray]:
    """BFS: ``B = beta I + mu (1 - j / N_B)``; one channel, head +1.

    Only ``Eligible`` stays a channel; self-preference ``beta I`` and the
    lowest-id preference ``mu (1 - j / N_B)`` move into ``B``, which reaches
    the logit through the eligible channel's head +1 (the channel is >= 0)
    and nothing through the zero-head ones.  Logit = ``E f_j + beta [i = j]
    + mu (1 - j / N_B)``: a reached receiver keeps itself (beta > mu + G); an
    unreached one takes the lowest-id reached neighbour (E > beta + mu + G),
    else itself.
    """
    g = config.margin
    mu = g * nodes
    beta = mu + 2.0 * g
    elig = beta + mu + 2.0 * g
    eligible = selection.criteria[0]
    assert isinstance(eligible, Eligible)
    channels = (Channel("eligible", 1.0, sender=elig * eligible.flag),)
    scales = (
        CriterionScale("Eligible", elig, elig, "E >= beta + mu + 2 margin"),
        CriterionScale("B: lowest id", mu, mu, f"mu / {nodes} >= margin"),
        CriterionScale("B: self", beta, beta, "beta >= mu + 2 margin"),
    )
    ids = np.arange(nodes)
    bias = beta * np.eye(nodes) + mu * (1.0 - ids[None, :] / nodes)
    return channels, scales, bias


def _bellman_ford_bias_variant(
    selection: Selection, config: CompilerConfig, nodes: int
) -> tuple[tuple[Channel, ...], tuple[CriterionScale, ...], np.ndarray]:
    """Bellman-Ford: one *cost* channel, head -1; ``B = b I + mu j / N_B``.

    The channel is ``P_ij = L (1 - adj_ij) + K (1 - f_j) + lambda (v_j +
    A_ij) + G + B_ij``, every term >= 0, so LeakyReLU is the identity on it
    and the logit is ``-P_ij``.  The size-free program's criteria, in their
    order, become its terms: senders joined in the input graph first (``L``),
    then reached ones (``K``), then the smallest ``v_j + A_ij`` (``lambda``);
    exact score ties go to the lowest id (``mu / N_B`` per id), and the
    receiver's own pair pays ``b`` (the paper's Figure 6: "large negative
    values on the diagonal"), so a reached receiver takes its best neighbour
    rather than itself, whose loop-less score ``d_i + 0`` ties with its
    parent's.  The constant ``G`` keeps the channel positive when ``f`` is a
    hair above 1.

    So the program's ``Prefer(pi)`` and ``LowestId`` move into ``B``.  The
    price of a static bias is one exact-tie case: a reached receiver whose
    best score equals its distance on two senders keeps its predecessor in
    dm-clrs and takes the lower id here.  That choice has score gap 0, below
    the model's resolution, so :mod:`~nar_gap.compiler.ties` reports it as a
    near-tie, never as an error.  Where nothing reached is selected the
    program's updates read 0 whatever is selected (they are gated by the
    selected sender's flag).

    Constants: ``mu = tie_margin tie_nodes`` (as the size-free program's tie
    criteria: every exact tie is broken on graphs of up to ``tie_nodes`` nodes,
    and ties between ids at least ``N_B / tie_nodes`` apart on larger ones; ``mu
    = tie_margin N_B`` cost the distance resolution a factor ``N_B / tie_nodes``
    and, at ``N_B = 256``, split near-ties into wrong pointers on sampled
    graphs), ``b = mu + margin`` (a lower-id rival's ``mu`` cannot save the
    receiver's own pair), ``lambda = config.score_scale``, ``K = lambda
    (max_distance + max_weight) + b + mu + margin`` (every reached sender beats
    every unreached one) and ``L = 2 K`` (every joined sender beats every
    other). Two reached senders are decided by their score when it differs by at
    least ``(margin + mu) / lambda``: the distance resolution.
    """
    linked, eligible, minimise, _, _ = selection.criteria
    assert isinstance(linked, Linked)
    assert isinstance(eligible, Eligible) and isinstance(minimise, Minimise)
    g = config.margin
    mu = config.tie_margin * config.tie_nodes
    b = mu + g
    lam = config.score_scale
    reach = lam * (config.max_distance + config.max_weight)
    gate = reach + b + mu + g
    joined = 2.0 * gate
    sender = lam * minimise.value + gate - gate * eligible.flag + g
    along = joined - joined * edge(linked.edge)
    if minimise.edge:
        along = along + lam * edge(minimise.edge)
    channels = (Channel("cost", -1.0, sender=sender, edge=along),)
    scales = (
        CriterionScale("Linked", joined, joined, "L >= K + lambda (d + A) + b + mu"),
        CriterionScale("Eligible", gate, gate, "K >= lambda (d + A) + b + mu + margin"),
        CriterionScale(
            "Minimise",
            lam,
            reach,
            f"scores closer than {(g + mu) / lam:.2g} are decided by the id "
            "(distance resolution)",
            (g + mu) / lam,
        ),
        CriterionScale(
            "B: lowest id", mu, mu, f"mu / {config.tie_nodes} >= tie margin"
        ),
        CriterionScale("B: self", b, b, "b >= mu + margin"),
    )
    sender_ids = np.broadcast_to(np.arange(nodes)[None, :] / nodes, (nodes, nodes))
    bias = b * np.eye(nodes) + mu * sender_ids
    return channels, scales, bias
