"""``Eligible(flag, edge="A")``: a sender across an out-edge (issue 19).

DFS scans the *out*-neighbours of the current node, but CLRS's processor
attends over ``sym(adj)``, both directions.  The edge input ``A_ij`` (the
edge ``i -> j``) gates eligibility; the flag here is ``1 - 2 u_j`` (1, or -1
on the fed-back ``u``), the form DFS's "white and not the current node"
takes.  The program is not DFS: every node selects its lowest eligible
out-neighbour, itself when it is eligible, or itself when none is.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from nar_gap.compiler import compile_program
from nar_gap.compiler.validate import validate
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
from nar_gap.programs.interpreter import run_program
from nar_gap.tasks.graphs import batch_from_graph
from nar_gap.tasks.sampling import sample_batch

NOT_U = 1.0 - 2.0 * hint("u")
OUT_EDGE = Eligible(NOT_U, edge="A")


def _lowest_out_neighbour(eligible: Eligible = OUT_EDGE, self_first: bool = True):
    x, z = var("x"), var("z")
    after = (Prefer(inp("pos")), LowestId()) if self_first else (LowestId(),)
    return GraphProgram(
        name="lowest_out_neighbour",
        algorithm="dfs",
        variables=(
            Variable("x", "id", "the selected sender's id"),
            Variable("z", "flag", "the fed-back u"),
        ),
        selection=Selection((eligible, *after)),
        updates=(Update("x", selected=inp("pos")), Update("z", own=hint("u"))),
        decoders=(
            Decoder(("pi_h", "pi"), "pointer", x),
            Decoder(("s_prev",), "pointer", x),
            Decoder(("color",), "categorical", classes=(x, 2.0 * z, 0.7011 - x)),
            Decoder(("d",), "scalar", x),
            Decoder(("f",), "scalar", z),
            Decoder(("s",), "mask_one", inp("pos")),
            Decoder(("u",), "mask_one", x + 0.001 * inp("pos")),
            Decoder(("v",), "mask_one", inp("pos")),
            Decoder(("s_last",), "mask_one", inp("pos")),
            Decoder(("time",), "graph_scalar", x),
        ),
    )


def _expected(batch, trace, self_first: bool) -> np.ndarray:
    """The rule, from the graph and the ``u`` fed back at every step.

    Without ``self_first``, a node with no eligible sender takes its lowest
    candidate (``sym(adj) | I``): the ineligible senders, whose flags differ
    (1 and -1), must tie exactly for that.
    """
    a = np.asarray(batch.inputs["A"]) != 0
    attend = np.asarray(batch.inputs["adj"]) != 0
    attend = attend | attend.transpose(0, 2, 1)
    steps, size, n = trace.selected.shape
    fed_u = np.concatenate(
        [np.asarray(batch.hints["u"][:1]), trace.hint_preds["u"][: steps - 1]]
    )
    want = np.empty((steps, size, n), np.int64)
    for t in range(steps):
        for b in range(size):
            for i in range(n):
                eligible = [j for j in range(n) if a[b, i, j] and fed_u[t, b, j] < 0.5]
                if not self_first:
                    fallback = int(
                        np.flatnonzero(attend[b, i] | (np.arange(n) == i))[0]
                    )
                    want[t, b, i] = eligible[0] if eligible else fallback
                else:
                    want[t, b, i] = i if i in eligible or not eligible else eligible[0]
    return want


# Width 128 under -m slow (13 s of CI, three compiles a case): the same
# program padded wider, as tests/compiler/test_compiler.py checks every
# algorithm at both widths per push.
@pytest.mark.parametrize("self_first", [True, False], ids=["self", "lowest"])
@pytest.mark.parametrize(
    "size", [None, pytest.param(128, marks=pytest.mark.slow)], ids=["minimal", "h128"]
)
def test_a_node_selects_across_its_out_edges_only(size, self_first):
    program = _lowest_out_neighbour(self_first=self_first)
    assert not validate(program)
    assert "A_ij = 1" in str(program)
    model = compile_program(program, hidden_size=size)
    asymmetric = 0
    for n in (4, 9, 33):  # and 64 nodes in the hand-made case below
        batch = sample_batch("dfs", n, 3, seed=n, p=(0.2,))
        want, got = run_program(program, batch), model.trace(batch)
        np.testing.assert_array_equal(want.selected, _expected(batch, want, self_first))
        np.testing.assert_array_equal(got.selected, want.selected)
        a = np.asarray(batch.inputs["A"])
        asymmetric += int((a != a.transpose(0, 2, 1)).any())
    assert asymmetric == 3  # directed graphs: the direction is tested


def test_an_in_neighbour_is_not_eligible():
    """0 -> 1 only: node 1 may not take node 0; node 0 takes node 1 (not u)."""
    a = np.zeros((3, 3))
    a[0, 1] = 1
    batch = batch_from_graph("dfs", a)
    trace = run_program(_lowest_out_neighbour(), batch)
    assert trace.selected[0, 0].tolist() == [1, 1, 2]
    compiled = compile_program(_lowest_out_neighbour()).trace(batch)
    assert compiled.selected[0, 0].tolist() == [1, 1, 2]


def test_without_the_edge_gate_the_selection_differs():
    """The check can fail: the same flag without the edge takes in-neighbours."""
    gated = _lowest_out_neighbour()
    plain = _lowest_out_neighbour(Eligible(1.0 - hint("u")))
    batch = sample_batch("dfs", 9, 3, seed=9, p=(0.2,))
    want = run_program(gated, batch)
    got = compile_program(plain).trace(batch)
    assert (got.selected != want.selected).any()


def test_the_edge_must_be_an_edge_input():
    wrong = dataclasses.replace(
        _lowest_out_neighbour(),
        selection=Selection((Eligible(NOT_U, edge="B"), Prefer(inp("pos")))),
    )
    assert any("unknown edge input 'B'" in str(p) for p in validate(wrong))


@pytest.mark.parametrize("size", [None, 128], ids=["minimal", "h128"])
def test_ineligible_senders_tie_whatever_their_flag(size):
    """The leak cancelled: an ineligible ``u`` (flag -1) is not pushed back.

    On 64 nodes with the edges 0 -> 1 and 2 -> 1, node 1 has no out-edge,
    so no sender is eligible and the lowest id wins: node 0, which is ``u``
    at hint 0 (flag -1).  An uncancelled leak would cost it ``0.02 E``, more
    than one id's step ``mu / 64``, and node 1 would take itself.
    """
    a = np.zeros((64, 64))
    a[0, 1] = a[2, 1] = 1
    batch = batch_from_graph("dfs", a)
    program = _lowest_out_neighbour(self_first=False)
    want = run_program(program, batch)
    got = compile_program(program, hidden_size=size).trace(batch)
    assert want.selected[0, 0, 1] == 0
    assert got.selected[0, 0, 1] == 0
