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

from nar_gap.benchmark.exactness import compare_with_clrs
from nar_gap.benchmark.sampling import sample_batch
from nar_gap.compiler import compile, compile_program
from nar_gap.compiler.validate import CompileError, readable_hints, validate
from nar_gap.programs.bfs import make_bfs_fed_back
from nar_gap.programs.dsl import Decoder, Update, hint, inp, var
from nar_gap.programs.interpreter import run_program

SIZES = (None, 128)


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
    plain = compile("bfs", hidden_size=None)
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
    problems = [str(p) for p in validate(reads_pointer)]
    assert any("cannot read hint 'pi_h'" in p for p in problems), problems
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
    problems = [str(p) for p in validate(undecoded)]
    assert any("cannot read hint 'nope'" in p for p in problems), problems
    with pytest.raises(CompileError, match="cannot read hint 'pi_h'"):
        compile_program(reads_pointer)
