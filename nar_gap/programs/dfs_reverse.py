"""``dfs_reverse`` as a graph program: the DFS program plus ``pi_rh``.

The fork's ``dfs_reverse`` (``LSaldyt/clrs``, branch ``dfs_reverse``,
``1b93c22``) is dm-clrs's DFS with one more node pointer hint: ``pi_rh[u]``
is the node ``u`` pushed last, ``u`` itself until it pushes.  The walk and
every other hint are ``dfs``'s, so this program is :func:`make_dfs`'s with
four more variables that hold ``pi_rh`` as an id.

**Who writes it.**  The pusher itself: at a push snapshot the actor ``u``
(``actor = 1``) has a white out-neighbour (``has_next = 1``) and holds its
id in ``next``, the id the pushed node matches when it selects its pusher.
So ``u`` stores its own ``next`` at the same step the pushed node stores
``u`` as ``pi``.

**One ReLU cannot keep or replace.**  The new value is ``next`` when
``actor`` and ``has_next`` are both 1 and the old value otherwise, and no
affine gate of two flags closes on exactly one of their four combinations
while staying open on the other three.  So the kept value is split: one
part kept while the node does not act, one while it acts without pushing.
A fourth part writes ``pos`` at step 0 (``steps = 0`` only then), since the
hidden state starts at zero and ``pi_rh`` starts at the identity.
"""

from __future__ import annotations

import dataclasses

from nar_gap.programs.dfs import ID_GATE, make_dfs
from nar_gap.programs.dsl import Decoder, Expr, GraphProgram, Update, Variable, var

_PARTS = ("rev_init", "rev_idle", "rev_hold", "rev_new")


def _reverse() -> Expr:
    """``pi_rh`` as an id: the sum of its four parts (one is nonzero at a time)."""
    total = Expr()
    for name in _PARTS:
        total = total + var(name)
    return total


def _reverse_variables() -> tuple[Variable, ...]:
    return (
        Variable("rev_init", "id", "own id, written at step 0 only (pi_rh = id)"),
        Variable("rev_idle", "id", "pi_rh, kept while the node does not act"),
        Variable("rev_hold", "id", "pi_rh, kept while it acts without pushing"),
        Variable("rev_new", "id", "the id it pushes now: its next"),
    )


def _reverse_updates(actor: Expr, has_next: Expr, nxt: Expr) -> tuple[Update, ...]:
    """Keep ``pi_rh`` unless the node pushes now; then write its ``next``.

    Ids are below 1 and ``ID_GATE`` is 2, so a closed gate takes any id to
    0; ``steps`` is 0 at step 0 and at least 1 after.
    """
    g = ID_GATE
    rev = _reverse()
    return (
        Update("rev_init", own=Expr.of({"pos": 1.0, "steps": -g})),
        Update("rev_idle", own=rev - g * actor),
        Update("rev_hold", own=rev + g * actor - g * has_next - g),
        Update("rev_new", own=nxt + g * actor + g * has_next - 2.0 * g),
    )


def make_dfs_reverse(num_nodes: int, max_weight: float = 1.0) -> GraphProgram:
    """The ``dfs_reverse`` program for graphs of ``num_nodes`` nodes.

    Built for one size, as the DFS program is (its ``v`` needs ``N``);
    ``max_weight`` is ignored (DFS reads only whether an edge exists).
    """
    dfs = make_dfs(num_nodes, max_weight=max_weight)
    terms = dict(dfs.definitions)
    return dataclasses.replace(
        dfs,
        name="dfs_reverse",
        algorithm="dfs_reverse",
        variables=(*dfs.variables, *_reverse_variables()),
        updates=(
            *dfs.updates,
            *_reverse_updates(terms["actor"], terms["has_next"], terms["next"]),
        ),
        decoders=(Decoder(("pi_rh",), "pointer", _reverse()), *dfs.decoders),
        definitions=(*dfs.definitions, ("pi_r", _reverse())),
        doc=__doc__ or "",
    )
