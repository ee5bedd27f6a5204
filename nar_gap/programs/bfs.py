"""BFS as a graph program (CLRS ``bfs``: hints ``reach_h``, ``pi_h``; output ``pi``).

One CLRS round: every node ``j`` not yet reached whose neighbour ``i`` was
reached at the start of the round is reached now, with ``pi[j]`` the
*smallest* such ``i`` (CLRS scans ``i`` in id order).  The source keeps
``pi = s``; unreached nodes keep ``pi = self``.

How one GATv2 step does it:

* ``reached = reached_not_source + s``.  The source's flag is the input ``s``
  (so it is right at step 0, when the hidden state is still zero) and the
  hidden flag never counts it twice.
* Selection: reached senders first; an *unreached* receiver then takes the
  lowest id among them (this is the BFS parent choice); every other receiver
  (already reached, or with no reached neighbour) selects itself.
* ``reached_not_source' = relu(reached_sel - s)``: 1 iff the selected sender
  is reached, i.e. the receiver was reached before (it selected itself) or
  has a reached neighbour now.
* The predecessor id is split over two channels whose sum is ``pi``:
  ``pi_open`` holds the selected sender's id while the node is not yet a
  reached non-source node (the parent when it is reached this round, itself
  otherwise, the source's own id for the source), and ``pi_closed`` keeps the
  id once the node is reached: ``relu(pi - K (1 - reached_not_source))``.
"""

from __future__ import annotations

from nar_gap.programs.common import REACHED_NOT_SOURCE, reached, reached_update
from nar_gap.programs.dsl import (
    Decoder,
    Eligible,
    GraphProgram,
    LowestId,
    Prefer,
    Selection,
    Update,
    Variable,
    hint,
    inp,
    var,
)

# Any constant > 1 (the largest id value) closes a ReLU gate on an id channel.
ID_GATE = 2.0


def make_bfs(max_weight: float = 1.0) -> GraphProgram:
    """The BFS program: 3 hidden variables, one round per GATv2 step.

    ``max_weight`` is accepted like every builder's and ignored: BFS reads no
    weights.
    """
    del max_weight
    is_reached = reached()
    pi = var("pi_open") + var("pi_closed")
    return GraphProgram(
        name="bfs",
        algorithm="bfs",
        variables=(
            REACHED_NOT_SOURCE,
            Variable("pi_open", "id", "selected id until the node is reached"),
            Variable("pi_closed", "id", "predecessor id once reached"),
        ),
        selection=Selection(
            (
                Eligible(is_reached),
                LowestId(
                    among=is_reached, unless_receiver=is_reached, resolution="nodes"
                ),
                Prefer(inp("pos")),
            )
        ),
        updates=(
            reached_update(),
            Update(
                "pi_open",
                own=-ID_GATE * var("reached_not_source"),
                selected=inp("pos"),
            ),
            Update(
                "pi_closed",
                own=pi + ID_GATE * var("reached_not_source") - ID_GATE,
            ),
        ),
        decoders=(
            Decoder(("reach_h",), "mask", is_reached),
            Decoder(("pi_h", "pi"), "pointer", pi),
        ),
        definitions=(("reach_h", is_reached), ("pi", pi)),
        doc=__doc__ or "",
    )


def make_bfs_fed_back(max_weight: float = 1.0) -> GraphProgram:
    """BFS that keeps its reach flag in the hint CLRS feeds back, not in a variable.

    The program of :func:`make_bfs` with ``reached_not_source + s`` replaced
    by ``hint("reach_h")``: step ``t`` reads the ``reach_h`` it decoded at step
    ``t - 1`` (dm-clrs's ``hint[0]``, the source alone, at step 0), so the
    source needs no special case.  The hidden ``reach`` only carries the new
    flag to the decoder.  It is the smallest program that needs the feedback
    loop: zero the ``reach_h`` encoder and it stops at the source.  Not in the
    registry (``nar_gap.compile("bfs")`` is :func:`make_bfs`); the DFS work
    of issue 19 builds on it.
    """
    del max_weight
    fed = hint("reach_h")
    not_source = fed - inp("s")  # 1 for a reached node other than the source
    pi = var("pi_open") + var("pi_closed")
    return GraphProgram(
        name="bfs_fed_back",
        algorithm="bfs",
        variables=(
            Variable("reach", "flag", "reached after this round (decoded as reach_h)"),
            Variable("pi_open", "id", "selected id until the node is reached"),
            Variable("pi_closed", "id", "predecessor id once reached"),
        ),
        selection=Selection(
            (
                Eligible(fed),
                LowestId(among=fed, unless_receiver=fed, resolution="nodes"),
                Prefer(inp("pos")),
            )
        ),
        updates=(
            Update("reach", selected=fed),
            Update("pi_open", own=-ID_GATE * not_source, selected=inp("pos")),
            Update("pi_closed", own=pi + ID_GATE * not_source - ID_GATE),
        ),
        decoders=(
            Decoder(("reach_h",), "mask", var("reach")),
            Decoder(("pi_h", "pi"), "pointer", pi),
        ),
        definitions=(("reach_h at step t", fed), ("pi", pi)),
        doc=make_bfs_fed_back.__doc__ or "",
    )
