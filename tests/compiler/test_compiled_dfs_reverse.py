"""Compiled ``dfs_reverse`` (issue 47): the fork's DFS with ``pi_rh``, every hint.

Exact three ways (interpreter = compiled network = nar_gap's reference) on
every hint, step and output, on sampled directed graphs at several sizes
and on hand-made ones; built for one graph size, as the DFS program is.
"""

from __future__ import annotations

import cases
import jax
import numpy as np
import pytest

import nar_gap
from nar_gap.compiler import compile_program
from nar_gap.compiler.validate import validate
from nar_gap.programs.dfs import make_dfs
from nar_gap.programs.dfs_reverse import make_dfs_reverse
from nar_gap.programs.registry import get_program
from nar_gap.tasks.batch import concat_batches
from nar_gap.tasks.graphs import batch_from_graph
from nar_gap.tasks.sampling import sample_batch


def _graph(n: int, edges: list[tuple[int, int]]) -> np.ndarray:
    a = np.zeros((n, n))
    for u, v in edges:
        a[u, v] = 1.0
    return a


# name -> (adjacency, what it pins down about pi_rh)
HAND_CASES: dict[str, tuple[np.ndarray, str]] = {
    "one_node": (_graph(1, []), "N = 1: pi_rh stays the identity"),
    "path": (_graph(3, [(0, 1), (1, 2)]), "each node's one child"),
    "back_edge": (
        _graph(4, [(0, 1), (0, 3), (1, 2), (2, 0)]),
        "a back edge pushes nothing; 0's pi_rh moves from 1 to 3",
    ),
    "isolated_and_a_tree": (_graph(4, [(1, 2)]), "roots 0, 1, 3; only 1 pushes"),
    "star_out": (
        _graph(5, [(0, 1), (0, 2), (0, 3), (0, 4)]),
        "the root's pi_rh moves four times",
    ),
    "self_loops": (
        _graph(5, [(0, 0), (0, 1), (1, 1), (1, 2), (3, 3)]),
        "a self loop never pushes its own node",
    ),
    "several_roots": (
        _graph(6, [(0, 1), (2, 3), (3, 2), (4, 5), (5, 4)]),
        "three trees; a child's edge back to its parent pushes nothing",
    ),
    "down_to_lower_ids": (
        _graph(6, [(0, 5), (5, 2), (5, 1), (2, 4)]),
        "children with lower ids than their parents",
    ),
}


def _hand_batches() -> dict[int, object]:
    sizes: dict[int, list] = {}
    for a, _ in HAND_CASES.values():
        sizes.setdefault(len(a), []).append(batch_from_graph("dfs_reverse", a))
    return {n: concat_batches(batches) for n, batches in sizes.items()}


def test_the_program_is_dfs_with_four_more_variables_and_a_decoder():
    program, dfs = make_dfs_reverse(16), make_dfs(16)
    assert not validate(program)
    assert (program.name, program.algorithm, program.num_nodes) == (
        "dfs_reverse",
        "dfs_reverse",
        16,
    )
    assert program.variables[: len(dfs.variables)] == dfs.variables
    assert len(program.variables) == len(dfs.variables) + 4
    assert program.selection == dfs.selection
    assert [d.probes for d in program.decoders] == [
        ("pi_rh",),
        *(d.probes for d in dfs.decoders),
    ]
    assert get_program("dfs_reverse", num_nodes=5) == make_dfs_reverse(5)


@pytest.mark.parametrize("n", [4, 8, 16, 32])
def test_compiled_dfs_reverse_is_exact_three_ways_on_sampled_graphs(n):
    model = compile_program(make_dfs_reverse(n), hidden_size=None)
    batch = sample_batch("dfs_reverse", n, 4, seed=40 + n, p=(0.05, 0.2, 0.5))
    cases.three_way(model, batch)


def test_compiled_dfs_reverse_is_exact_at_hidden_128():
    model = compile_program(make_dfs_reverse(16), hidden_size=128)
    cases.three_way(model, sample_batch("dfs_reverse", 16, 4, seed=7, p=(0.2,)))


@pytest.mark.slow
@pytest.mark.parametrize("size", [None, 128], ids=["minimal", "h128"])
def test_compiled_dfs_reverse_is_exact_at_64_nodes(size):
    model = compile_program(make_dfs_reverse(64), hidden_size=size)
    batch = sample_batch("dfs_reverse", 64, 4, seed=64, p=(0.02, 0.05, 0.2))
    cases.three_way(model, batch)


def test_compiled_dfs_reverse_is_exact_on_the_hand_made_cases():
    for n, batch in _hand_batches().items():
        cases.three_way(compile_program(make_dfs_reverse(n), hidden_size=None), batch)


def test_run_on_a_users_graph_equals_the_reference():
    """``nar_gap.compile("dfs_reverse").run(A)``, recompiled for the graph's size.

    A disconnected graph of 40 nodes: a few paths and many isolated roots.
    """
    a = np.zeros((40, 40))
    for u, v in [(0, 7), (7, 3), (3, 39), (7, 12), (20, 21), (21, 20), (30, 2)]:
        a[u, v] = 1.0
    model = nar_gap.compile("dfs_reverse", hidden_size=None)
    assert model.program.num_nodes == 16
    result = model.run(a)
    assert not result.mismatches
    reference = batch_from_graph("dfs_reverse", a)
    for name, truth in reference.hints.items():
        if name in ("d", "f", "time"):  # float32 times, within exactness tolerance
            np.testing.assert_allclose(result.hints[name], truth[:, 0], atol=1e-5)
        else:
            np.testing.assert_array_equal(result.hints[name], truth[:, 0], name)
    np.testing.assert_array_equal(result.outputs["pi"], reference.outputs["pi"][0])
    assert result.hints["pi_rh"][-1][[0, 7, 3, 20, 30]].tolist() == [7, 12, 39, 21, 30]


def test_a_closed_push_gate_breaks_pi_rh_only():
    """The negative control: ``rev_new`` never opens, so no push is recorded.

    Every other hint stays exact; ``pi_rh`` is first wrong at the first push,
    hint 2 (the root's discovery is hint 1).
    """
    model = compile_program(make_dfs_reverse(8), hidden_size=None)
    batch = sample_batch("dfs_reverse", 8, 2, seed=3, p=(0.5,))
    assert not model.check(batch)
    params = jax.tree.map(np.array, model.params)
    # The skip path carries each update's own() part, constant included.
    skip_bias = params["net"]["processor"]["skip"]["bias"]
    skip_bias[model.layout.hidden_index("rev_new")] -= 4.0
    wrong = model.check(batch, params)
    assert wrong and {m.probe for m in wrong} == {"pi_rh"}
    assert min(m.step for m in wrong) == 2
