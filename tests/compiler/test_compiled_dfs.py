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

from nar_gap.compiler import compile_program
from nar_gap.compiler.validate import validate
from nar_gap.programs.dfs import make_dfs
from nar_gap.programs.interpreter import run_program
from nar_gap.tasks.batch import concat_batches
from nar_gap.tasks.graphs import batch_from_graph
from nar_gap.tasks.sampling import sample_batch

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


# 64 nodes under -m slow with the larger graphs below: at both widths it was
# 26 s of CI (traces of about 190 steps), and 4-32 nodes run the same checks.
@pytest.mark.parametrize("size", SIZES, ids=["minimal", "h128"])
@pytest.mark.parametrize("n", [4, 8, 16, 32, pytest.param(64, marks=pytest.mark.slow)])
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


def _every_directed_graph(n: int) -> object:
    """All 2^(n^2) adjacency matrices on ``n`` nodes, self loops included."""
    graphs = []
    for bits in range(2 ** (n * n)):
        a = ((bits >> np.arange(n * n)) & 1).reshape(n, n).astype(float)
        graphs.append(batch_from_graph("dfs", a))
    return concat_batches(graphs)


def test_compiled_dfs_is_exact_on_every_graph_of_three_nodes(programs):
    """Exhaustive at N = 3 (512 graphs): ``tree_end`` alone ends the trees.

    A second flag for node N - 1's own tree, dropped after the minimality
    search found it dead, was also unneeded on every directed graph of 4
    nodes (4 096, without self loops; measured once, too slow to keep).  The
    negative control: without ``tree_end`` the same check fails.
    """
    from nar_gap.compiler import minimal

    model = compile_program(programs[3], hidden_size=None)
    batch = _every_directed_graph(3)
    assert not model.check(batch)
    k = model.layout.hidden_index("tree_end")
    without = minimal.drop_dimensions(model, [k], batch)
    assert without.check(batch)


def test_the_minimal_size_and_parameter_count(programs):
    model = compile_program(programs[16], hidden_size=None)
    assert model.layout.hidden_size == len(programs[16].variables) == 29
    count = sum(np.size(leaf) for leaf in jax.tree.leaves(model.params))
    assert count == 28_348


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


def test_compile_dfs_runs_a_users_graph_of_any_size():
    """``nar_gap.compile("dfs").run(A)``: no source, a directed graph, any size.

    The model is built for 16 nodes; ``run`` compiles the program again for
    the graph's size, and the result has the fields BFS's and
    Bellman-Ford's have.
    """
    import nar_gap
    from nar_gap.compiler.compiled_model import CompiledRun

    model = nar_gap.compile("dfs")
    assert model.program.num_nodes == 16 and model.layout.hidden_size == 128
    for a in (HAND_CASES["several_roots"][0], HAND_CASES["cycle_back_edges"][0]):
        result = model.run(a)
        assert isinstance(result, CompiledRun)
        assert not result.mismatches
        reference = batch_from_graph("dfs", a)
        np.testing.assert_array_equal(result.outputs["pi"], reference.outputs["pi"][0])
        assert result.hints["color"].shape == (3 * len(a), len(a), 3)
        assert result.hints["time"].shape == (3 * len(a),)
        assert result.compiler_config.resolution_nodes == len(a)
    assert nar_gap.compile("dfs", num_nodes=6).program.num_nodes == 6


def test_a_perturbed_dfs_model_is_not_recompiled_for_another_size():
    import nar_gap
    from nar_gap.compiler.compiled_model import CompiledModel
    from nar_gap.tasks.graphs import GraphInputError

    model = nar_gap.compile("dfs", hidden_size=None, num_nodes=5)
    params = jax.tree.map(np.array, model.params)
    params["net"]["encoder_color"]["kernel"][0, 0] += 1e-3
    edited = CompiledModel(
        model.config,
        params,
        model.program,
        model.layout,
        model.scales,
        model.compiler_config,
    )
    assert edited.run(HAND_CASES["path"][0]) is not None  # its own size: runs
    with pytest.raises(GraphInputError, match="built for 5"):
        edited.run(HAND_CASES["several_roots"][0])
    mixed = concat_batches(
        [
            batch_from_graph("dfs", HAND_CASES["path"][0]),
            batch_from_graph("dfs", HAND_CASES["path"][0]),
        ]
    )
    assert model.fitted(mixed) is model


def test_a_batch_of_two_sizes_is_refused_in_one_line():
    import nar_gap
    from nar_gap.tasks.batch import pad_batch
    from nar_gap.tasks.graphs import GraphInputError

    model = nar_gap.compile("dfs", hidden_size=None, num_nodes=5)
    batches = [
        batch_from_graph("dfs", HAND_CASES[name][0])
        for name in ("path", "several_roots")
    ]
    mixed = concat_batches([pad_batch(b, num_nodes=6) for b in batches])
    with pytest.raises(GraphInputError, match=r"graphs of \[5, 6\] nodes"):
        model.fitted(mixed)


def test_its_pi_and_colour_are_dfs_light_plus_the_pushed_discoveries():
    """The closest exact variant of ``dfs_light`` (which no network runs).

    Dropping from the compiled DFS's trace the discovery snapshot that
    follows each push (``s_last`` is not ``u`` before it) leaves dm-clrs's
    ``dfs_light`` trace of ``pi_h`` and ``color``, snapshot for snapshot.
    """
    import nar_gap

    model = nar_gap.compile("dfs", hidden_size=None)
    for name in ("cycle_back_edges", "several_roots", "star_out", "self_loops"):
        a = HAND_CASES[name][0]
        hints = model.run(a).hints
        after_push = [
            t
            for t in range(1, len(hints["u"]))
            if np.argmax(hints["s_last"][t - 1]) != np.argmax(hints["u"][t - 1])
        ]
        keep = [t for t in range(len(hints["u"])) if t not in after_push]
        light = batch_from_graph("dfs_light", a)
        np.testing.assert_array_equal(
            hints["pi_h"][keep], np.asarray(light.hints["pi_h"][:, 0]), err_msg=name
        )
        np.testing.assert_array_equal(
            hints["color"][keep], np.asarray(light.hints["color"][:, 0]), err_msg=name
        )


def test_dfs_has_no_distance_range_to_fit():
    """DFS's ``A`` gates eligibility only, and its ``d`` is a time, not a distance.

    On 401 isolated nodes the last discovery is at time 8.01, beyond the
    default ``max_distance`` of 8; the model stays as it is, since only
    programs that add weights up as lengths fit a range.
    """
    import nar_gap

    model = nar_gap.compile("dfs", hidden_size=None, num_nodes=401)
    batch = model.graph_batch(np.zeros((401, 401)))
    assert float(np.max(batch.hints["d"])) > model.compiler_config.max_distance
    assert not model.program.measures_distances
    assert model.fitted(batch) is model
