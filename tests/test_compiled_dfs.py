"""Compiled DFS (issue 19): dm-clrs's ``dfs``, every hint, one GATv2 step per hint.

Exact three ways (interpreter = compiled network = dm-clrs) on every hint,
step and output, on sampled directed graphs and on hand-made ones, minimal
and at hidden 128.  The program is built for one graph size (dm-clrs's
``v = N - 1`` after a failed scan needs it; see ``test_locality.py``), so
each size is compiled on its own.
"""

from __future__ import annotations

import cases
import jax
import numpy as np
import pytest

from nar_gap.benchmark.batch import concat_batches
from nar_gap.benchmark.graphs import batch_from_graph
from nar_gap.benchmark.sampling import sample_batch
from nar_gap.compiler import compile_program
from nar_gap.compiler.validate import validate
from nar_gap.programs.dfs import make_dfs
from nar_gap.programs.interpreter import run_program

SIZES = (None, 128)


def _graph(n: int, edges: list[tuple[int, int]]) -> np.ndarray:
    a = np.zeros((n, n))
    for u, v in edges:
        a[u, v] = 1.0
    return a


# name -> (adjacency, what it pins down); grouped by size below.
HAND_CASES: dict[str, tuple[np.ndarray, str]] = {
    "one_node": (_graph(1, []), "N = 1: R, D, F; v = N - 1 = 0"),
    "two_cycle": (_graph(2, [(0, 1), (1, 0)]), "the only out-edge leads back"),
    "cross_edges": (
        _graph(3, [(0, 1), (2, 0), (2, 1)]),
        "a late root whose out-neighbours are all black",
    ),
    "cycle_back_edges": (
        _graph(4, [(0, 1), (1, 2), (2, 0), (2, 3), (3, 1)]),
        "back edges to grey ancestors are not pushed",
    ),
    "isolated_nodes": (_graph(5, []), "five roots, each R, D, F"),
    "path": (_graph(5, [(0, 1), (1, 2), (2, 3), (3, 4)]), "one deep stack"),
    "reversed_path": (
        _graph(5, [(4, 3), (3, 2), (2, 1), (1, 0)]),
        "every node a root; each finds its out-neighbour black",
    ),
    "star_out": (
        _graph(5, [(0, 1), (0, 2), (0, 3), (0, 4)]),
        "the root pushes four times, popping back in between",
    ),
    "star_in": (_graph(5, [(1, 0), (2, 0), (3, 0), (4, 0)]), "leaves into a hub"),
    "self_loops": (
        _graph(5, [(0, 0), (0, 1), (1, 1), (1, 2), (3, 3)]),
        "a self loop at a root, on the stack and at an isolated node",
    ),
    "several_roots": (
        _graph(6, [(0, 1), (2, 3), (3, 2), (4, 5), (5, 4)]),
        "three trees; the next root after each",
    ),
}


def _hand_batches() -> dict[int, object]:
    """Every hand-made case in one batch per size."""
    sizes: dict[int, list] = {}
    for a, _ in HAND_CASES.values():
        sizes.setdefault(len(a), []).append(batch_from_graph("dfs", a))
    return {n: concat_batches(batches) for n, batches in sizes.items()}


@pytest.fixture(scope="module")
def programs():
    return {n: make_dfs(n) for n in (1, 2, 3, 4, 5, 6, 8, 16, 32, 64)}


def test_the_program_is_valid_and_reads_its_own_hints(programs):
    program = programs[16]
    assert not validate(program)
    assert {"hint:u", "hint:s_last", "hint:color#0"} <= set(program.hint_inputs())
    assert program.graph_hint_inputs() == ("graph_hint:time",)


@pytest.mark.parametrize("size", SIZES, ids=["minimal", "h128"])
@pytest.mark.parametrize("n", [4, 8, 16, 32, 64])
def test_compiled_dfs_is_exact_three_ways_on_sampled_graphs(n, size, programs):
    model = compile_program(programs[n], hidden_size=size)
    batch = sample_batch("dfs", n, 4, seed=20 + n, p=(0.05, 0.2, 0.5))
    cases.three_way(model, batch)


@pytest.mark.parametrize("size", SIZES, ids=["minimal", "h128"])
def test_compiled_dfs_is_exact_on_the_hand_made_cases(size, programs):
    for n, batch in _hand_batches().items():
        cases.three_way(compile_program(programs[n], hidden_size=size), batch)


@pytest.mark.slow
@pytest.mark.parametrize("n", [96, 128])
def test_compiled_dfs_is_exact_on_larger_graphs(n):
    model = compile_program(make_dfs(n), hidden_size=None)
    cases.three_way(model, sample_batch("dfs", n, 1, seed=n, p=(0.05,)))


def test_the_minimal_size_and_parameter_count(programs):
    model = compile_program(programs[16], hidden_size=None)
    assert model.layout.hidden_size == len(programs[16].variables) == 30
    count = sum(np.size(leaf) for leaf in jax.tree.leaves(model.params))
    assert count == 30_255


def test_a_zeroed_colour_feedback_breaks_it(programs):
    """The negative control: the check fails when one weight block is off.

    Without the fed-back colour no node knows it is white: nothing is
    discovered or pushed, and the first mismatch is at hint 1.
    """
    model = compile_program(programs[8], hidden_size=None)
    batch = sample_batch("dfs", 8, 2, seed=3, p=(0.5,))
    assert not model.check(batch)
    params = jax.tree.map(np.array, model.params)
    params["net"]["encoder_color"]["kernel"][:] = 0.0
    wrong = model.check(batch, params)
    assert wrong and min(m.step for m in wrong if m.step > 0) == 1


def test_a_program_built_for_one_size_refuses_another(programs):
    """``v`` needs the size, so a DFS program runs graphs of its own size only."""
    batch = sample_batch("dfs", 8, 1, seed=0)
    with pytest.raises(ValueError, match="built for graphs of 16 nodes, got 8"):
        run_program(programs[16], batch)
    with pytest.raises(ValueError, match="built for graphs of 16 nodes, got 8"):
        compile_program(programs[16], hidden_size=None).trace(batch)
    with pytest.raises(ValueError, match="num_nodes must be >= 1"):
        make_dfs(0)
