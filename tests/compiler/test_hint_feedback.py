"""Programs that read the hints CLRS feeds back (issue 19's first language feature).

``hint("reach_h")`` reads, at step t, the ``reach_h`` the program decoded at
step t - 1; the compiler gives that hint's encoder a node dimension.  The
example is BFS with its reach flag kept in the fed-back hint
(:func:`~nar_gap.programs.bfs.make_bfs_fed_back`), checked three ways like
every compiled program, and shown to depend on the feedback loop.
"""

from __future__ import annotations

import dataclasses

import cases
import jax
import numpy as np
import pytest

from nar_gap.compiler import compile_algorithm, compile_program
from nar_gap.compiler.validate import CompileError, readable_hints, validate
from nar_gap.programs.bfs import make_bfs_fed_back
from nar_gap.programs.dsl import (
    ZERO,
    Decoder,
    GraphProgram,
    Prefer,
    Selection,
    Update,
    Variable,
    graph_hint,
    hint,
    inp,
    var,
)
from nar_gap.programs.interpreter import AmbiguousSelectionError, run_program
from nar_gap.tasks.exactness import compare_with_clrs
from nar_gap.tasks.sampling import sample_batch

SIZES = (None, 128)


def _assert_refused(program: GraphProgram, words: str) -> None:
    """The validator names a problem containing ``words``."""
    problems = [str(p) for p in validate(program)]
    assert any(words in p for p in problems), problems


def _with_decoder(program: GraphProgram, replacement: Decoder) -> GraphProgram:
    """``program`` with the decoder of ``replacement``'s probes swapped for it."""
    return dataclasses.replace(
        program,
        decoders=tuple(
            replacement if d.probes == replacement.probes else d
            for d in program.decoders
        ),
    )


@pytest.fixture(scope="module")
def models():
    program = make_bfs_fed_back()
    return {size: compile_program(program, hidden_size=size) for size in SIZES}


@pytest.mark.parametrize("size", SIZES, ids=["minimal", "h128"])
@pytest.mark.parametrize(
    "case",
    [c for c in cases.SAMPLED_CASES if c.algorithm == "bfs"],
    ids=cases.case_id,
)
def test_bfs_from_its_fed_back_hint_is_exact_three_ways(case, size, models):
    cases.three_way(models[size], case.batch())


@pytest.mark.parametrize("size", SIZES, ids=["minimal", "h128"])
def test_bfs_from_its_fed_back_hint_is_exact_on_the_hand_made_cases(size, models):
    cases.three_way(models[size], cases.hand_batch("bfs"))


def test_the_hint_has_a_node_dimension_and_an_encoder(models):
    model = models[None]
    assert "hint:reach_h" in model.layout.node
    kernel = np.asarray(model.params["net"]["encoder_reach_h"]["kernel"])
    assert kernel[0, model.layout.node_index("hint:reach_h")] == 1.0
    assert np.count_nonzero(kernel) == 1
    # The registry's BFS keeps its state in the hidden vector: no hint encoder.
    plain = compile_algorithm("bfs", hidden_size=None)
    assert not np.asarray(plain.params["net"]["encoder_reach_h"]["kernel"]).any()


def test_without_the_feedback_loop_it_stops_at_the_source(models):
    """The negative control: zero the hint's encoder and BFS never spreads."""
    model = models[None]
    batch = sample_batch("bfs", 16, 4, seed=3, p=(0.3,))
    assert not model.check(batch)
    params = jax.tree.map(np.array, model.params)
    params["net"]["encoder_reach_h"]["kernel"][:] = 0.0
    wrong = model.check(batch, params=params)
    assert {m.probe for m in wrong} >= {"reach_h", "pi_h", "pi"}


def test_the_interpreter_feeds_back_what_it_decoded():
    """Step t reads the decoded hint t: feed a wrong hint[0] and it spreads it."""
    program = make_bfs_fed_back()
    batch = sample_batch("bfs", 8, 2, seed=1, p=(0.5,))
    assert not compare_with_clrs(*_preds(run_program(program, batch)), batch)
    wrong_start = dataclasses.replace(
        batch, hints={**batch.hints, "reach_h": np.zeros_like(batch.hints["reach_h"])}
    )
    trace = run_program(program, wrong_start)
    assert not trace.hint_preds["reach_h"].any()  # nothing reached, ever


def _preds(trace):
    return trace.hint_preds, trace.outputs


def test_only_hints_the_program_decodes_can_be_read():
    program = make_bfs_fed_back()
    assert readable_hints(program) == {"hint:reach_h"}
    reads_pointer = dataclasses.replace(
        program,
        updates=(
            Update("reach", selected=hint("reach_h") + hint("pi_h")),
            *program.updates[1:],
        ),
    )
    _assert_refused(reads_pointer, "cannot read hint 'pi_h'")
    undecoded = dataclasses.replace(
        program,
        decoders=(
            Decoder(("reach_h",), "mask", inp("s")),
            Decoder(("pi_h", "pi"), "pointer", var("pi_open") + var("pi_closed")),
        ),
        updates=(
            Update("reach", selected=hint("reach_h") + hint("nope")),
            *program.updates[1:],
        ),
    )
    _assert_refused(undecoded, "cannot read hint 'nope'")
    with pytest.raises(CompileError, match="cannot read hint 'pi_h'"):
        compile_program(reads_pointer)


# ----------------------------------------------------------- decoders over nodes


def _dfs_skeleton() -> GraphProgram:
    """Every DFS probe, decoded by every decoder kind from a trivial state.

    Not DFS: dm-clrs disagrees everywhere.  It pins down that the compiled
    decoders compute what the interpreter says they do, including a
    ``mask_one`` hint read back (``u`` moves to the highest id that is not
    the fed-back ``u``).
    """
    x, z = var("x"), var("z")
    return GraphProgram(
        name="dfs_skeleton",
        algorithm="dfs",
        variables=(
            Variable("x", "id", "own id"),
            Variable("z", "flag", "the fed-back u"),
            Variable("g", "flag", "the fed-back color's class 1 (grey)"),
        ),
        selection=Selection((Prefer(inp("pos")),)),
        updates=(
            Update("x", own=inp("pos")),
            Update("z", own=hint("u")),
            Update("g", own=hint("color", 1)),
        ),
        decoders=(
            Decoder(("pi_h", "pi"), "pointer", x),
            Decoder(("s_prev",), "pointer", x),
            Decoder(("color",), "categorical", classes=(x, 2.0 * z, 0.7011 - x)),
            Decoder(("d",), "scalar", x + z),
            Decoder(("f",), "scalar", z + var("g")),
            Decoder(("s",), "mask_one", x),
            Decoder(("u",), "mask_one", x - z),
            Decoder(("v",), "mask_one", -1.0 * x),
            Decoder(("s_last",), "mask_one", x - 2.0 * z),
            Decoder(("time",), "graph_scalar", x + 0.5 * z + 0.25),
        ),
    )


@pytest.mark.parametrize("size", SIZES, ids=["minimal", "h128"])
def test_compiled_decoders_over_nodes_are_what_the_interpreter_says(size):
    program = _dfs_skeleton()
    assert not validate(program)
    model = compile_program(program, hidden_size=size)
    for n in (4, 9, 33):
        batch = sample_batch("dfs", n, 3, seed=n, p=(0.3,))
        want, got = run_program(program, batch), model.trace(batch)
        real = np.asarray(batch.node_mask)
        for name, expected in want.hint_preds.items():
            found = np.asarray(got.hint_preds[name])
            assert found.shape == expected.shape, name
            if name in ("d", "f", "time"):
                np.testing.assert_allclose(found, expected, atol=1e-5, err_msg=name)
            else:
                np.testing.assert_array_equal(found, expected, err_msg=name)
        np.testing.assert_array_equal(
            got.outputs["pi"] * real, want.outputs["pi"] * real
        )
        # g reads back the grey class the program decoded a step before.
        g = want.state[..., want.variables.index("g")]
        assert g[0].max() == 0 and g[1:].max() == 1
        # u moves between the two highest ids, reading back where it was.
        u = np.argmax(want.hint_preds["u"], -1)[:, 0]
        assert set(u.tolist()) == {n - 1, n - 2}
        # Every class is used: 1 where z (u at hint 0 is node 0), then by id.
        assert np.argmax(want.hint_preds["color"][0, 0], -1).tolist() == [1] + [
            2 if k / n < 0.35055 else 0 for k in range(1, n)
        ]


def test_a_decoder_over_nodes_refuses_a_tie_a_softmax_would_split():
    tied = _with_decoder(_dfs_skeleton(), Decoder(("s",), "mask_one", ZERO))
    with pytest.raises(AmbiguousSelectionError, match="tie"):
        run_program(tied, sample_batch("dfs", 4, 1, seed=0))


def test_decoders_must_match_the_probes_type_and_place():
    program = _dfs_skeleton()
    wrong = dataclasses.replace(
        program,
        decoders=tuple(
            Decoder(("time",), "scalar", var("x"))
            if d.probes == ("time",)
            else Decoder(("color",), "categorical", var("x"))
            if d.probes == ("color",)
            else d
            for d in program.decoders
        ),
    )
    problems = [str(p) for p in validate(wrong)]
    assert any(
        "time: decoded as scalar but CLRS has a graph scalar" in p for p in problems
    )
    assert any("only it, has classes" in p for p in problems), problems
    two_classes = _with_decoder(
        program, Decoder(("color",), "categorical", classes=(var("x"), var("z")))
    )
    with pytest.raises(CompileError, match="CLRS has 3 classes, the program gives 2"):
        compile_program(two_classes)


def test_a_categorical_hint_is_read_one_class_at_a_time():
    program = _dfs_skeleton()
    assert {"hint:color#0", "hint:color#1", "hint:color#2"} <= readable_hints(program)
    for wrong, name in ((hint("color", 3), "color#3"), (hint("color"), "color")):
        bad = dataclasses.replace(
            program, updates=(*program.updates[:2], Update("g", own=wrong))
        )
        _assert_refused(bad, f"cannot read hint {name!r}")
    model = compile_program(program, hidden_size=None)
    kernel = np.asarray(model.params["net"]["encoder_color"]["kernel"])
    assert kernel[1, model.layout.node_index("hint:color#1")] == 1.0
    assert np.count_nonzero(kernel) == 1


def test_a_dfs_program_has_no_source_input():
    program = _dfs_skeleton()
    assert "s" not in compile_program(program, hidden_size=None).layout.node
    reads_s = dataclasses.replace(
        program, updates=(Update("x", own=inp("s")), *program.updates[1:])
    )
    _assert_refused(reads_s, "the algorithm has no input 's'")


# ------------------------------------------------------------ graph hints


def _clock() -> GraphProgram:
    """The skeleton with ``time' = graph_hint(time) + 0.01 * max_i z_i``.

    ``z`` is the fed-back ``u``, which is 1 at exactly one node, so the graph
    decoder adds 0.01 every step to the ``time`` the network fed back: a clock
    kept in CLRS's own feedback loop (graph features -> graph decoder).
    """
    clock = graph_hint("time") + 0.01 * var("z")
    program = _with_decoder(_dfs_skeleton(), Decoder(("time",), "graph_scalar", clock))
    return dataclasses.replace(program, name="dfs_clock")


@pytest.mark.parametrize("size", SIZES, ids=["minimal", "h128"])
def test_a_graph_decoder_reads_the_graph_hint_fed_back(size):
    program = _clock()
    assert not validate(program)
    model = compile_program(program, hidden_size=size)
    assert "graph_hint:time" in str(model.layout)
    for n in (4, 9, 33):
        batch = sample_batch("dfs", n, 3, seed=n, p=(0.3,))
        want, got = run_program(program, batch), model.trace(batch)
        start = np.asarray(batch.hints["time"][0])
        steps = want.hint_preds["time"].shape[0]
        clock = start[None, :] + 0.01 * np.arange(1, steps + 1)[:, None]
        np.testing.assert_allclose(want.hint_preds["time"], clock, atol=1e-12)
        np.testing.assert_allclose(got.hint_preds["time"], clock, atol=1e-4)


def test_without_its_encoder_the_clock_stops():
    """The check can fail: zero the ``time`` encoder and the network's clock
    reads 0 back every step (0.01 at every step, not 0.01 t)."""
    model = compile_program(_clock())
    params = jax.tree.map(np.array, model.params)
    params["net"]["encoder_time"]["kernel"][:] = 0.0
    batch = sample_batch("dfs", 9, 2, seed=9, p=(0.3,))
    got = model.trace(batch, params=params)
    np.testing.assert_allclose(got.hint_preds["time"], 0.01, atol=1e-6)


def test_graph_hints_are_read_only_by_graph_decoders():
    program = _clock()
    in_a_node = dataclasses.replace(
        program,
        updates=(
            Update("x", own=inp("pos") + graph_hint("time")),
            *program.updates[1:],
        ),
    )
    _assert_refused(in_a_node, "graph features reach only")
    unknown = _with_decoder(
        program, Decoder(("time",), "graph_scalar", graph_hint("nope"))
    )
    _assert_refused(unknown, "cannot read graph hint 'nope'")


def test_a_dfs_program_runs_on_a_users_directed_graph():
    """``run(A)`` with no source, on a directed graph as DFS's sampler draws
    them: every DFS probe comes back in CLRS's encoding (the skeleton is not
    DFS, so the run lists its mismatches with dm-clrs)."""
    model = compile_program(_clock())
    directed = np.zeros((5, 5))
    directed[[0, 0, 2, 3], [1, 2, 4, 1]] = 1.0  # 0->1, 0->2, 2->4, 3->1
    done = model.run(directed)
    length = int(done.reference.lengths[0])
    assert length == 3 * 5  # T = 3N for every DFS trace
    assert done.hints["color"].shape == (length, 5, 3)
    assert done.hints["time"].shape == (length,)
    clock = 0.01 * np.arange(1, length)  # float32 sums: off by ~2e-8 at step 14
    np.testing.assert_allclose(done.hints["time"][1:], clock, atol=1e-6)
    assert done.outputs["pi"].shape == (5,)
    assert {m.probe for m in done.mismatches} >= {"pi_h", "color"}
    with pytest.raises(ValueError, match="source"):
        model.run(directed, source=0)
    bfs = compile_program(make_bfs_fed_back())
    with pytest.raises(ValueError, match="undirected"):
        bfs.run(directed, source=0)
