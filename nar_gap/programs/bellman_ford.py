"""Bellman-Ford as a graph program.

CLRS ``bellman_ford``: hints ``pi_h``, ``d``, ``msk``; output ``pi``.

One CLRS round: every node ``v`` looks at its neighbours ``u`` reached at the
start of the round and takes ``d[v] = min_u d[u] + A[u, v]`` if ``v`` was not
reached or the minimum is *strictly* smaller than ``d[v]``; ``pi[v]`` is the
smallest ``u`` reaching that minimum.  Self loops never improve a distance.

How one GATv2 step does it (with the paper's edge information, so the
selected value can carry ``d_u + A_uv``):

* ``msk = reached_not_source + s`` as in BFS.
* Selection: senders joined to ``v`` in the input graph first (CLRS's
  processor also attends along every decoded pointer, and a wrong pointer
  there would be an edge of length 0), then reached senders, then the
  smallest ``d_u + A_uv``, then
  the receiver's current predecessor (CLRS keeps ``pi`` unless strictly
  better; this also beats the receiver's own loop-less self pair, whose
  "score" ``d_v + 0`` ties with the parent's), then the lowest id among
  reached senders.  A node with no reached neighbour selects its
  predecessor, which is itself: the lowest-id preference is gated to reached
  senders so that it cannot pull an unreached node towards its many
  unreached low-id neighbours (each would leak e^{-tie_margin} into its id).
* ``d' = relu(d_sel + A_sel - K (1 - msk_sel) - K_src s)``: the selected
  path length; 0 when nothing reached was selected and for the source.
  ``d`` must sit on channel 0, the channel the edge information feeds.
* ``pi = pos + pi_up - pi_down``: the predecessor is stored as a signed
  offset from the node's own id, split into two non-negative channels.  All
  variables are 0 before step 0, so every node starts pointing to itself, as
  CLRS's ``pi`` does, and "prefer the current predecessor" already means
  "prefer yourself" at step 0.  A non-source node takes the selected id
  (``pi_up = relu(pos_sel - pos)``, ``pi_down = relu(pos - pos_sel)``); the
  source's offsets are clamped to 0 whatever it selects (its own self loop
  could otherwise win its selection), and so are the offsets of a node that
  selected nothing reached (``- K (1 - msk_sel)``, as for ``d``).  The
  size-free model never needs that gate (such a node selects itself); the
  paper's pre-attention-bias variant does, since its bias makes every node
  avoid itself (:func:`nar_gap.compiler.selection.bias_variant_channels`).
"""

from __future__ import annotations

from nar_gap.programs.common import REACHED_NOT_SOURCE, reached, reached_update
from nar_gap.programs.dsl import (
    Decoder,
    Eligible,
    GraphProgram,
    Linked,
    LowestId,
    Minimise,
    Prefer,
    Selection,
    Update,
    Variable,
    inp,
    var,
)

# Closes the distance ReLU when the selected sender is unreached: must exceed
# the largest edge weight, since an unreached sender has d = 0 and brings only
# A_ij; kept small because d is summed with it in float32 (see CompilerConfig).
DISTANCE_GATE = 2.0
# Closes id ReLUs (ids are < 1) and the source's distance (any size is exact
# there: the source's d is 0).
ID_GATE = 2.0
SOURCE_GATE = 1e4


def make_bellman_ford(max_weight: float = 1.0) -> GraphProgram:
    """The Bellman-Ford program: 4 hidden variables, edge values on channel 0.

    Args:
      max_weight: the largest edge weight the program handles (self loops
        included); sets the gate that zeroes a distance when nothing reached
        was selected (the receiver's own pair, whose ``A_ii`` is its self
        loop).  The compiler passes its ``CompilerConfig.max_weight``.
    """
    msk = reached()
    pi = inp("pos") + var("pi_up") - var("pi_down")
    distance_gate = max(DISTANCE_GATE, 2.0 * float(max_weight))
    return GraphProgram(
        name="bellman_ford",
        algorithm="bellman_ford",
        variables=(
            Variable("d", "distance", "distance from the source (CLRS d)"),
            REACHED_NOT_SOURCE,
            Variable("pi_up", "id", "predecessor id minus own id, if positive"),
            Variable("pi_down", "id", "own id minus predecessor id, if positive"),
        ),
        selection=Selection(
            (
                Linked("adj"),
                Eligible(msk),
                Minimise(var("d"), among=msk, edge="A"),
                Prefer(pi),
                LowestId(among=msk, resolution="ties"),
            )
        ),
        updates=(
            Update(
                "d",
                own=-SOURCE_GATE * inp("s"),
                selected=var("d") + distance_gate * msk - distance_gate,
                edge="A",
            ),
            reached_update(),
            Update(
                "pi_up",
                own=-inp("pos") - ID_GATE * inp("s"),
                selected=inp("pos") + ID_GATE * msk - ID_GATE,
            ),
            Update(
                "pi_down",
                own=inp("pos") - ID_GATE * inp("s"),
                selected=-inp("pos") + ID_GATE * msk - ID_GATE,
            ),
        ),
        decoders=(
            Decoder(("d",), "scalar", var("d")),
            Decoder(("msk",), "mask", msk),
            Decoder(("pi_h", "pi"), "pointer", pi),
        ),
        definitions=(("msk", msk), ("pi", pi)),
        doc=__doc__ or "",
    )
