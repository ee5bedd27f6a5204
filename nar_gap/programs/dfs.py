"""DFS as a graph program (CLRS ``dfs``: every hint, one GATv2 step per hint step).

dm-clrs's DFS (clrs-semantics.md §2.3) is a stack machine; each hint is a
snapshot after one event: a new root ``R``, a discovery ``D``, a push ``P``
or a finish ``F``.  The next snapshot follows from the current one:
``R(x) -> D(x)``; ``D(y)`` -> ``y`` pushes its lowest white out-neighbour
(``P``) or finishes (``F(y)``); ``P(v) -> D(v)``; ``F(c)`` -> its parent
pushes or finishes, or, when ``c`` was the root, the lowest white node is
the next root.  Every node reads the snapshot it can see (its own hints fed
back: colour, ``d``, ``f`` and the cursors ``s``, ``u``, ``v``,
``s_last``, which CLRS decodes over all nodes) and keeps a little state.

**Who acts.**  The *actor* at a hint is the node that scans at that step:
``u`` after ``D(u)``, the parent of ``u`` after ``F(u)``.  A node knows it
is the actor from the step before: it was discovered then
(``R``/``P`` -> ``D``, read from its own cursors), or its child, finishing,
*called* it.

**One selection per step.**  Each receiver selects, in this order:

1. the sender that *pushes* it: an actor with a white out-neighbour whose
   stored ``next`` is the receiver's id;
2. the sender that *calls* it as parent: an actor without one, whose
   parent id ``pi`` is the receiver's;
3. otherwise its lowest white out-neighbour that is not ``u``
   (``Eligible(W - U, edge="A")``), or itself.

So a node not called this step refreshes ``next``/``has_next``; an actor
reads the ``next`` it stored the step before, which is still right: between
the two hints only the actor's own snapshot changed (a white node turned
grey is the node itself, excluded, or a grey node turned black).

**Time** travels with the control: the caller's ``clock`` (the time at its
hint) moves to the node it calls, +0.01 for a finish.  A new root cannot
be called; it reads a step counter instead (``time = 0.02 t / 3`` at a new
root's hint ``t``: every finished tree of ``k`` nodes took ``3k`` hints and
``0.02 k`` of time).

**The cursors** are decoded as argmaxes over nodes of per-node scores: the
node a rule names scores 2 or 4, and ``relu(W - pos)`` (at most 1) makes the
lowest white node the default, the next root after a tree ends.

**``v`` needs the graph size.**  After a failed scan dm-clrs leaves ``v`` at
``N - 1``; when a tree ends it moves to the next root.  No network whose
weights serve every size tells these apart
(``locality.find_argmax_witness``).  This program is built for one ``N``:
node ``N - 1`` knows it is last from its ``pos`` and bids 1.5 for ``v``,
and withdraws at the end of a tree, which it detects by counting: it holds
``v`` at every ``F`` snapshot, and a tree ends at hint ``t`` exactly when
``t + 1 = 3 · #F``.
"""

from __future__ import annotations

from nar_gap.programs.dsl import (
    Decoder,
    Eligible,
    Expr,
    GraphProgram,
    LowestId,
    Prefer,
    Selection,
    Update,
    Variable,
    graph_hint,
    hint,
    inp,
    var,
)

ID_GATE = 2.0  # > 1, the largest id or flag: closes a ReLU gate on one
TICK = 0.01  # dm-clrs's time step


def _sum(*names: str) -> Expr:
    total = Expr()
    for name in names:
        total = total + var(name)
    return total


def make_dfs(num_nodes: int, max_weight: float = 1.0) -> GraphProgram:
    """The DFS program for graphs of ``num_nodes`` nodes (``v`` needs the size).

    ``max_weight`` is accepted like every builder's and ignored: DFS reads
    only whether an edge exists.
    """
    del max_weight
    if num_nodes < 1:
        raise ValueError(f"num_nodes must be >= 1, got {num_nodes}")
    n = float(num_nodes)
    g = ID_GATE
    time_gate = 2.0 + 0.04 * n  # > every time value, 0.02 N + 0.01
    count_gate = 8.0 * n + 8.0  # > every count the tree-end test reads

    white, grey, black = hint("color", 0), hint("color", 1), hint("color", 2)
    u, s_last, s, v = hint("u"), hint("s_last"), hint("s"), hint("v")
    pos = inp("pos")

    act = _sum("act_root", "act_push", "act_called")
    nxt = _sum("next_new", "next_keep")
    has_next = _sum("has_new", "has_keep")
    clock = _sum("clock_root", "clock_disc", "clock_call")
    pi = pos + _sum("pi_keep", "pi_new") - _sum("off_keep", "off_new")
    s_prev = pos + _sum("sp_keep", "pi_new") - _sum("sp_off", "off_new")
    rank = var("rank")

    def variable(name: str, kind: str, doc: str) -> Variable:
        return Variable(name, kind, doc)  # type: ignore[arg-type]

    variables = (
        variable("act_root", "flag", "a root discovered now: actor at the next hint"),
        variable("act_push", "flag", "a pushed node discovered now: actor next"),
        variable("act_called", "flag", "called by its finishing child: actor next"),
        variable("next_new", "id", "lowest white out-neighbour (refreshed)"),
        variable("next_keep", "id", "next, kept while the node is being called"),
        variable("has_new", "flag", "it has one (refreshed)"),
        variable("has_keep", "flag", "has_next, kept while called"),
        variable("steps", "distance", "step counter t"),
        variable("clock_root", "distance", "time at a new root's discovery"),
        variable("clock_disc", "distance", "time at a pushed node's discovery"),
        variable("clock_call", "distance", "time handed over by the caller"),
        variable("fin", "flag", "finished now"),
        variable("f_new", "distance", "the finish time set now"),
        variable("pushed", "flag", "pushed now"),
        variable("pi_new", "id", "the pusher's id, set now"),
        variable("off_new", "id", "own id, set now (pi = pos + pi_* - off_*)"),
        variable("pi_keep", "id", "the pusher's id, kept"),
        variable("off_keep", "id", "own id, kept"),
        variable("sp_keep", "id", "pi_keep until the node is popped"),
        variable("sp_off", "id", "off_keep until the node is popped"),
        variable("act_copy", "flag", "was the actor at this hint"),
        variable("rank", "distance", "1 - pos on white nodes: the lowest wins"),
        variable("keep_last", "flag", "s_last stays (not a finished node)"),
        variable("keep_s", "flag", "s stays (its tree is not finished)"),
        variable("keep_v_root", "flag", "v stays: a new root is discovered"),
        variable("keep_v_push", "flag", "v stays: a pushed node is discovered"),
        variable("last", "flag", "the node with pos (N - 1) / N"),
        variable("count_v", "distance", "hints so far with v here"),
        variable("tree_end", "flag", "node N - 1: the tree ended (it is not u)"),
    )

    # How many F snapshots so far, as node N - 1 counts them: it holds v at
    # each one, and at two more hints (its own R or P, and D) once visited.
    finishes = var("count_v") + v - 2.0 + 2.0 * white
    end_test = 3.0 * finishes - var("steps")  # 1 iff t + 1 = 3 #F; <= -1 if not
    closed_unless_v = -count_gate + count_gate * v

    updates = (
        Update("act_root", own=u + white - 1.0),
        Update("act_push", own=s_last - u),
        Update("act_called", own=-act, selected=act - has_next),
        Update("next_new", selected=pos - g * act),
        Update("next_keep", own=nxt - g, selected=g * act),
        Update("has_new", selected=white - u - g * act),
        Update("has_keep", own=has_next - g, selected=g * act),
        Update("steps", own=var("steps") + 1.0),
        Update(
            "clock_root",
            own=(0.02 / 3.0) * var("steps")
            + TICK
            + time_gate * (u + white)
            - 2.0 * time_gate,
        ),
        Update("clock_disc", own=clock + TICK + time_gate * (s_last - u) - time_gate),
        Update(
            "clock_call",
            own=-time_gate - time_gate * act,
            selected=clock + TICK * (act - has_next) + time_gate * act,
        ),
        Update("fin", own=act - has_next),
        Update("f_new", own=clock + TICK + time_gate * (act - has_next) - time_gate),
        Update("pushed", own=-1.0 - act, selected=act + has_next),
        Update("pi_new", own=-2.0 * g - g * act, selected=pos + g * (act + has_next)),
        Update("off_new", own=pos - 2.0 * g - g * act, selected=g * (act + has_next)),
        Update("pi_keep", own=_sum("pi_keep", "pi_new")),
        Update("off_keep", own=_sum("off_keep", "off_new")),
        Update("sp_keep", own=_sum("pi_keep", "pi_new") - g * black),
        Update("sp_off", own=_sum("off_keep", "off_new") - g * black),
        Update("act_copy", own=act),
        Update("rank", own=white - pos),
        Update("keep_last", own=s_last - black),
        Update("keep_s", own=s - black),
        Update("keep_v_root", own=v + white + u - 2.0),
        Update("keep_v_push", own=v + s_last - u - 1.0),
        Update("last", own=n * pos - n + 2.0),
        Update("count_v", own=var("count_v") + v),
        # Not when node N - 1 is s_last: then it was a root, every other node
        # was black before it, and its tree's end is the trace's end, whose
        # next v no hint records.  (A second flag for that case, once here,
        # was found dead by the minimality search: notebook 01.)
        Update("tree_end", own=end_test + closed_unless_v - count_gate * s_last),
    )
    discovered = _sum("act_root", "act_push")
    decoders = (
        Decoder(("pi_h", "pi"), "pointer", pi),
        Decoder(("s_prev",), "pointer", s_prev),
        Decoder(
            ("color",),
            "categorical",
            classes=(
                white - var("act_root") - var("pushed"),
                grey - var("fin") + var("act_root") + var("pushed"),
                black + var("fin"),
            ),
        ),
        Decoder(("d",), "scalar", hint("d") + _sum("clock_root", "clock_disc")),
        Decoder(("f",), "scalar", hint("f") + var("f_new")),
        Decoder(("s",), "mask_one", 2.0 * var("keep_s") + rank),
        Decoder(("u",), "mask_one", 2.0 * (var("act_copy") + discovered) + rank),
        Decoder(
            ("s_last",),
            "mask_one",
            4.0 * var("pushed") + 2.0 * (var("fin") + var("keep_last")) + rank,
        ),
        Decoder(
            ("v",),
            "mask_one",
            4.0 * var("pushed")
            + 2.0 * _sum("keep_v_root", "keep_v_push")
            + 1.5 * (var("last") - var("tree_end"))
            + rank,
        ),
        Decoder(
            ("time",),
            "graph_scalar",
            graph_hint("time") + TICK * _sum("act_root", "act_push", "fin"),
        ),
    )
    selection = Selection(
        (
            Prefer(pos, sender_id=nxt + g * (2.0 - act - has_next)),
            Prefer(pos, sender_id=pi + g * (1.0 - act + has_next)),
            Eligible(white - u, edge="A"),
            Prefer(pos),
            LowestId(resolution="nodes"),
        )
    )
    return GraphProgram(
        name="dfs",
        algorithm="dfs",
        variables=variables,
        selection=selection,
        updates=updates,
        decoders=decoders,
        definitions=(
            ("actor", act),
            ("next", nxt),
            ("has_next", has_next),
            ("clock", clock),
            ("pi", pi),
            ("s_prev", s_prev),
        ),
        doc=__doc__ or "",
        num_nodes=num_nodes,
    )
