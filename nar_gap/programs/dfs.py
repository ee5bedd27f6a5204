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

import dataclasses

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


@dataclasses.dataclass(frozen=True)
class _Terms:
    """What the rules read: the fed-back snapshot, ``pos`` and the definitions.

    The definitions (``act``, ``next``, ...) are sums of variables that the
    updates split into a part set now and a part kept, so that one ReLU each
    can set or keep them.
    """

    white: Expr
    grey: Expr
    black: Expr
    u: Expr
    s_last: Expr
    s: Expr
    v: Expr
    pos: Expr
    act: Expr
    nxt: Expr
    has_next: Expr
    clock: Expr
    pi: Expr
    s_prev: Expr


def _terms() -> _Terms:
    pos = inp("pos")
    return _Terms(
        white=hint("color", 0),
        grey=hint("color", 1),
        black=hint("color", 2),
        u=hint("u"),
        s_last=hint("s_last"),
        s=hint("s"),
        v=hint("v"),
        pos=pos,
        act=_sum("act_root", "act_push", "act_called"),
        nxt=_sum("next_new", "next_keep"),
        has_next=_sum("has_new", "has_keep"),
        clock=_sum("clock_root", "clock_disc", "clock_call"),
        pi=pos + _sum("pi_keep", "pi_new") - _sum("off_keep", "off_new"),
        s_prev=pos + _sum("sp_keep", "pi_new") - _sum("sp_off", "off_new"),
    )


def _variable(name: str, kind: str, doc: str) -> Variable:
    return Variable(name, kind, doc)  # type: ignore[arg-type]


def _variables() -> tuple[Variable, ...]:
    return (
        _variable("act_root", "flag", "a root discovered now: actor at the next hint"),
        _variable("act_push", "flag", "a pushed node discovered now: actor next"),
        _variable("act_called", "flag", "called by its finishing child: actor next"),
        _variable("next_new", "id", "lowest white out-neighbour (refreshed)"),
        _variable("next_keep", "id", "next, kept while the node is being called"),
        _variable("has_new", "flag", "it has one (refreshed)"),
        _variable("has_keep", "flag", "has_next, kept while called"),
        _variable("steps", "distance", "step counter t"),
        _variable("clock_root", "distance", "time at a new root's discovery"),
        _variable("clock_disc", "distance", "time at a pushed node's discovery"),
        _variable("clock_call", "distance", "time handed over by the caller"),
        _variable("fin", "flag", "finished now"),
        _variable("f_new", "distance", "the finish time set now"),
        _variable("pushed", "flag", "pushed now"),
        _variable("pi_new", "id", "the pusher's id, set now"),
        _variable("off_new", "id", "own id, set now (pi = pos + pi_* - off_*)"),
        _variable("pi_keep", "id", "the pusher's id, kept"),
        _variable("off_keep", "id", "own id, kept"),
        _variable("sp_keep", "id", "pi_keep until the node is popped"),
        _variable("sp_off", "id", "off_keep until the node is popped"),
        _variable("act_copy", "flag", "was the actor at this hint"),
        _variable("rank", "distance", "1 - pos on white nodes: the lowest wins"),
        _variable("keep_last", "flag", "s_last stays (not a finished node)"),
        _variable("keep_s", "flag", "s stays (its tree is not finished)"),
        _variable("keep_v_root", "flag", "v stays: a new root is discovered"),
        _variable("keep_v_push", "flag", "v stays: a pushed node is discovered"),
        _variable("last", "flag", "the node with pos (N - 1) / N"),
        _variable("count_v", "distance", "hints so far with v here"),
        _variable("tree_end", "flag", "node N - 1: the tree ended (it is not u)"),
    )


def _actor_updates(t: _Terms) -> tuple[Update, ...]:
    """Who acts next, and the ``next`` it will push (refreshed unless called)."""
    g = ID_GATE
    act, has_next = t.act, t.has_next
    return (
        Update("act_root", own=t.u + t.white - 1.0),
        Update("act_push", own=t.s_last - t.u),
        Update("act_called", own=-act, selected=act - has_next),
        Update("next_new", selected=t.pos - g * act),
        Update("next_keep", own=t.nxt - g, selected=g * act),
        Update("has_new", selected=t.white - t.u - g * act),
        Update("has_keep", own=has_next - g, selected=g * act),
    )


def _time_updates(t: _Terms, time_gate: float) -> tuple[Update, ...]:
    """The step counter, the clock handed along with the control, finishes."""
    act, has_next, clock = t.act, t.has_next, t.clock
    return (
        Update("steps", own=var("steps") + 1.0),
        Update(
            "clock_root",
            own=(0.02 / 3.0) * var("steps")
            + TICK
            + time_gate * (t.u + t.white)
            - 2.0 * time_gate,
        ),
        Update(
            "clock_disc", own=clock + TICK + time_gate * (t.s_last - t.u) - time_gate
        ),
        Update(
            "clock_call",
            own=-time_gate - time_gate * act,
            selected=clock + TICK * (act - has_next) + time_gate * act,
        ),
        Update("fin", own=act - has_next),
        Update("f_new", own=clock + TICK + time_gate * (act - has_next) - time_gate),
    )


def _parent_updates(t: _Terms) -> tuple[Update, ...]:
    """Pushes, and the pusher's id kept as ``pi`` (and ``s_prev`` until popped)."""
    g = ID_GATE
    act, has_next, pos, black = t.act, t.has_next, t.pos, t.black
    return (
        Update("pushed", own=-1.0 - act, selected=act + has_next),
        Update("pi_new", own=-2.0 * g - g * act, selected=pos + g * (act + has_next)),
        Update("off_new", own=pos - 2.0 * g - g * act, selected=g * (act + has_next)),
        Update("pi_keep", own=_sum("pi_keep", "pi_new")),
        Update("off_keep", own=_sum("off_keep", "off_new")),
        Update("sp_keep", own=_sum("pi_keep", "pi_new") - g * black),
        Update("sp_off", own=_sum("off_keep", "off_new") - g * black),
    )


def _cursor_updates(t: _Terms, n: float, count_gate: float) -> tuple[Update, ...]:
    """What the cursor decoders read, with node ``N - 1``'s tree-end count."""
    white, u, s_last, v = t.white, t.u, t.s_last, t.v
    # How many F snapshots so far, as node N - 1 counts them: it holds v at
    # each one, and at two more hints (its own R or P, and D) once visited.
    finishes = var("count_v") + v - 2.0 + 2.0 * white
    end_test = 3.0 * finishes - var("steps")  # 1 iff t + 1 = 3 #F; <= -1 if not
    closed_unless_v = -count_gate + count_gate * v
    return (
        Update("act_copy", own=t.act),
        Update("rank", own=white - t.pos),
        Update("keep_last", own=s_last - t.black),
        Update("keep_s", own=t.s - t.black),
        Update("keep_v_root", own=v + white + u - 2.0),
        Update("keep_v_push", own=v + s_last - u - 1.0),
        Update("last", own=n * t.pos - n + 2.0),
        Update("count_v", own=var("count_v") + v),
        # Not when node N - 1 is s_last: then it was a root, every other node
        # was black before it, and its tree's end is the trace's end, whose
        # next v no hint records.  (A second flag for that case, once here,
        # was found dead by the minimality search: notebook 01.)
        Update("tree_end", own=end_test + closed_unless_v - count_gate * s_last),
    )


def _decoders(t: _Terms) -> tuple[Decoder, ...]:
    """The hints, and the cursors as argmaxes of per-node scores."""
    rank = var("rank")
    discovered = _sum("act_root", "act_push")
    return (
        Decoder(("pi_h", "pi"), "pointer", t.pi),
        Decoder(("s_prev",), "pointer", t.s_prev),
        Decoder(
            ("color",),
            "categorical",
            classes=(
                t.white - var("act_root") - var("pushed"),
                t.grey - var("fin") + var("act_root") + var("pushed"),
                t.black + var("fin"),
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


def _selection(t: _Terms) -> Selection:
    """Pushed by an actor, else called by a child, else the lowest white one."""
    g = ID_GATE
    act, has_next = t.act, t.has_next
    return Selection(
        (
            Prefer(t.pos, sender_id=t.nxt + g * (2.0 - act - has_next)),
            Prefer(t.pos, sender_id=t.pi + g * (1.0 - act + has_next)),
            Eligible(t.white - t.u, edge="A"),
            Prefer(t.pos),
            LowestId(resolution="nodes"),
        )
    )


def make_dfs(num_nodes: int, max_weight: float = 1.0) -> GraphProgram:
    """The DFS program for graphs of ``num_nodes`` nodes (``v`` needs the size).

    ``max_weight`` is accepted like every builder's and ignored: DFS reads
    only whether an edge exists.
    """
    del max_weight
    if num_nodes < 1:
        raise ValueError(f"num_nodes must be >= 1, got {num_nodes}")
    n = float(num_nodes)
    time_gate = 2.0 + 0.04 * n  # > every time value, 0.02 N + 0.01
    count_gate = 8.0 * n + 8.0  # > every count the tree-end test reads
    t = _terms()
    return GraphProgram(
        name="dfs",
        algorithm="dfs",
        variables=_variables(),
        selection=_selection(t),
        updates=(
            *_actor_updates(t),
            *_time_updates(t, time_gate),
            *_parent_updates(t),
            *_cursor_updates(t, n, count_gate),
        ),
        decoders=_decoders(t),
        definitions=(
            ("actor", t.act),
            ("next", t.nxt),
            ("has_next", t.has_next),
            ("clock", t.clock),
            ("pi", t.pi),
            ("s_prev", t.s_prev),
        ),
        doc=__doc__ or "",
        num_nodes=num_nodes,
    )
