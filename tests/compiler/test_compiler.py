"""Compiled BFS and Bellman-Ford reproduce dm-clrs exactly, three ways.

interpreter (the program, numpy) == compiled network (the weights, JAX) ==
dm-clrs (``clrs._src.algorithms``, via the batch's ground truth), on every
hint at every step and on every output, plus the attention: the network's
selected sender equals the interpreter's at every step.
"""

from __future__ import annotations

import dataclasses

import cases
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nar_gap.compiler import (
    CompileError,
    CompilerConfig,
    compile,
    compile_program,
    load_compiled,
    save_compiled,
)
from nar_gap.compiler.selection import LEAK
from nar_gap.compiler.validate import validate
from nar_gap.model.network import init_params
from nar_gap.programs import get_program
from nar_gap.programs.dsl import (
    Decoder,
    GraphProgram,
    Minimise,
    Selection,
    Update,
    Variable,
    inp,
    var,
)
from nar_gap.programs.registry import UnknownProgramError
from nar_gap.tasks.batch import pad_batch
from nar_gap.tasks.exactness import (
    agrees_with_clrs,
    compare_with_clrs,
    format_mismatches,
)
from nar_gap.tasks.graphs import GraphInputError, batch_from_graph
from nar_gap.tasks.sampling import sample_batch

SIZES = (None, 128)  # minimal, and the benchmark's hidden size


@pytest.fixture(scope="module")
def models():
    return {
        (alg, size): compile(alg, hidden_size=size)
        for alg in cases.COMPILED_ALGORITHMS
        for size in SIZES
    }


@pytest.mark.parametrize("size", SIZES, ids=["minimal", "h128"])
@pytest.mark.parametrize("case", cases.SAMPLED_CASES, ids=cases.case_id)
def test_compiled_network_reproduces_every_clrs_probe(case, size, models):
    cases.three_way(models[(case.algorithm, size)], case.batch())


@pytest.mark.parametrize("size", SIZES, ids=["minimal", "h128"])
@pytest.mark.parametrize("algorithm", cases.COMPILED_ALGORITHMS)
def test_hand_made_cases_are_exact(algorithm, size, models):
    cases.three_way(models[(algorithm, size)], cases.hand_batch(algorithm))


@pytest.mark.parametrize("size", SIZES, ids=["minimal", "h128"])
@pytest.mark.parametrize("case", cases.LARGE_CASES, ids=cases.case_id)
def test_graphs_of_128_and_256_nodes_are_exact(case, size, models):
    cases.three_way(models[(case.algorithm, size)], case.batch())


SLOW = pytest.mark.slow


# BFS per push; Bellman-Ford's two (14 s of CI, its sparse graph's trace the
# longest) under -m slow, beside the 4 096-node graphs of test_compiled_range.
@pytest.mark.parametrize(
    "algorithm",
    [
        algorithm if algorithm == "bfs" else pytest.param(algorithm, marks=SLOW)
        for algorithm in cases.COMPILED_ALGORITHMS
    ],
)
@pytest.mark.parametrize("p", [0.5, 0.05])
def test_graphs_of_1024_nodes_are_exact(algorithm, p, models):
    batch = cases.SampledCase(algorithm, 1024, p, seed=7, batch_size=1).batch()
    wrong = models[(algorithm, None)].check(batch)
    assert not wrong, format_mismatches(wrong)


# ------------------------------------------------------------ negative controls


def _with(params, path: tuple[str, ...], edit):
    params = jax.tree.map(np.array, params)
    node = params
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = edit(node[path[-1]])
    return params


def test_a_corrupted_value_block_is_reported_with_probe_and_step(models):
    model = models[("bfs", None)]
    batch = cases.SampledCase("bfs", 16, 0.5, seed=1).batch()
    assert not model.check(batch)
    # Drop the sender's id from the values: pi_open no longer receives it.
    row = model.layout.node_index("pos")
    col = model.layout.hidden_index("pi_open")

    def cut(kernel):
        kernel[row, col] = 0.0
        return kernel

    broken = _with(model.params, ("net", "processor", "value", "kernel"), cut)
    wrong = model.check(batch, broken)
    assert wrong
    assert any(m.probe == "pi_h" and m.step == 1 for m in wrong)
    assert "pi_h (hint step 1" in format_mismatches(wrong)


def test_a_corrupted_attention_head_is_reported(models):
    model = models[("bellman_ford", None)]
    batch = cases.SampledCase("bellman_ford", 16, 0.5, seed=2).batch()
    channel = model.layout.pre_attention.index("minimise")
    broken = _with(
        model.params,
        ("net", "processor", "head_0", "kernel"),
        lambda k: np.where(np.arange(len(k))[:, None] == channel, 0.0, k),
    )
    wrong = model.check(batch, broken)
    assert {m.probe for m in wrong} >= {"d", "pi_h"}


def test_margins_are_a_resolution_not_a_size_limit():
    """Beyond resolution_nodes the id margins shrink as resolution / N: with a
    resolution of 2 nodes, BFS's parent choice on 64 nodes mixes neighbours.
    """
    model = compile("bfs", hidden_size=None, resolution_nodes=2, margin=2.0)
    batch = cases.SampledCase("bfs", 64, 0.5, seed=3).batch()
    assert model.check(batch)


# ------------------------------------------------------------------- structure


@pytest.mark.parametrize("algorithm", cases.COMPILED_ALGORITHMS)
@pytest.mark.parametrize("size", SIZES, ids=["minimal", "h128"])
def test_parameters_have_the_trained_networks_tree(algorithm, size, models):
    model = models[(algorithm, size)]
    batch = cases.SampledCase(algorithm, 8, 0.5, seed=0).batch()
    fresh = init_params(model.config, batch, seed=0)
    assert jax.tree_util.tree_structure(fresh) == jax.tree_util.tree_structure(
        model.params
    )
    for a, b in zip(
        jax.tree_util.tree_leaves(fresh),
        jax.tree_util.tree_leaves(model.params),
        strict=True,
    ):
        assert a.shape == b.shape and a.dtype == b.dtype


@pytest.mark.parametrize("algorithm", cases.COMPILED_ALGORITHMS)
def test_no_parameter_depends_on_the_graph_size(algorithm, models):
    """The default compiled model has no N x N bias: every array's shape is
    a function of the hidden size only, and one model runs every size.
    """
    model = models[(algorithm, None)]
    assert not model.config.use_pre_att_bias
    d = model.layout.hidden_size
    for leaf in jax.tree_util.tree_leaves(model.params):
        assert set(leaf.shape) <= {1, d, 2 * d, 3 * d}, leaf.shape


def test_minimal_sizes_are_as_documented(models):
    assert models[("bfs", None)].layout.hidden_size == 7
    assert models[("bellman_ford", None)].layout.hidden_size == 9
    assert compile("bfs", None, pre_att_bias_nodes=16).layout.hidden_size == 3
    assert compile("bellman_ford", None, pre_att_bias_nodes=16).layout.hidden_size == 4


def test_layout_round_trips_and_names_every_dimension(models):
    layout = models[("bellman_ford", 128)].layout
    labels = layout.labels()
    assert len(labels["z"]) == 2 * layout.hidden_size
    assert len(labels["h_t"]) == 3 * layout.hidden_size
    assert layout.hidden[: len(layout.variables)] == layout.variables
    assert layout.hidden[0] == "d"  # the channel the edge information feeds
    values = {name: np.arange(5.0) + k for k, name in enumerate(layout.variables)}
    decoded = layout.decode(layout.encode(values))
    assert all(np.array_equal(decoded[n], values[n]) for n in values)


def test_compiling_twice_gives_identical_parameters():
    a, b = compile("bellman_ford", None), compile("bellman_ford", None)
    for x, y in zip(
        jax.tree_util.tree_leaves(a.params),
        jax.tree_util.tree_leaves(b.params),
        strict=True,
    ):
        assert np.array_equal(x, y)


def test_every_criterion_dominates_the_ones_after_it(models):
    """The scales satisfy the inequalities the compiler states."""
    cfg = CompilerConfig()
    scales = models[("bfs", None)].scales
    eligible, lowest, prefer = scales
    assert (1 - LEAK) * prefer.scale >= cfg.margin
    assert (1 - LEAK) * lowest.scale / cfg.resolution_nodes >= cfg.margin + prefer.span
    assert eligible.scale >= cfg.margin + lowest.span + prefer.span


# ------------------------------------------------------------------ validation


def _tiny(**changes) -> GraphProgram:
    base = GraphProgram(
        name="tiny",
        algorithm="bfs",
        variables=(Variable("r", "flag", "reached"),),
        selection=Selection((Minimise(var("r"), among=var("r")),)),
        updates=(Update("r", selected=var("r") + inp("s")),),
        decoders=(
            Decoder(("reach_h",), "mask", var("r")),
            Decoder(("pi_h", "pi"), "pointer", inp("pos")),
        ),
    )
    return dataclasses.replace(base, **changes)


def test_a_valid_program_has_no_problems():
    assert validate(_tiny()) == []


@pytest.mark.parametrize(
    ("changes", "where", "words"),
    [
        ({"updates": ()}, "r", "no update"),
        (
            {"updates": (Update("r"), Update("r"))},
            "r",
            "more than one update",
        ),
        ({"updates": (Update("r", selected=var("ghost")),)}, "r (selected)", "ghost"),
        ({"updates": (Update("r", own=inp("A")),)}, "r (own)", "edge input"),
        (
            {
                "variables": (
                    Variable("r", "flag", ""),
                    Variable("d", "distance", ""),
                ),
                "updates": (Update("r"), Update("d", edge="A")),
            },
            "d",
            "first variable",
        ),
        (
            {"decoders": (Decoder(("reach_h",), "mask", var("r")),)},
            "pi_h",
            "no decoder",
        ),
        (
            {
                "decoders": (
                    Decoder(("reach_h",), "scalar", var("r")),
                    Decoder(("pi_h", "pi"), "pointer", inp("pos")),
                )
            },
            "reach_h",
            "CLRS has a node mask",
        ),
        ({"selection": Selection(())}, "selection", "at least one"),
    ],
)
def test_validation_names_the_variable(changes, where, words):
    problems = validate(_tiny(**changes))
    assert any(p.where == where and words in p.message for p in problems), problems


def test_validation_reports_every_problem_at_once():
    program = _tiny(
        updates=(Update("r", selected=var("ghost"), own=var("phantom")),),
        decoders=(),
    )
    with pytest.raises(CompileError) as error:
        compile_program(program)
    text = str(error.value)
    for word in ("ghost", "phantom", "reach_h", "pi_h", "pi:"):
        assert word in text


def test_too_small_a_hidden_size_says_what_needs_the_room():
    with pytest.raises(CompileError, match=r"needs hidden_size >= 9"):
        compile("bellman_ford", hidden_size=4)


def test_unknown_programs_list_the_known_ones():
    with pytest.raises(UnknownProgramError, match="bellman_ford, bfs, dfs"):
        get_program("dfs_light")


# ------------------------------------------------------------ the paper's bias


def test_the_papers_pre_attention_bias_variant_is_exact_up_to_its_size():
    model = compile("bfs", hidden_size=None, pre_att_bias_nodes=16)
    assert model.config.use_pre_att_bias
    for n in (5, 16):
        batch = cases.SampledCase("bfs", n, 0.5, seed=n).batch()
        assert not model.check(batch)
    with pytest.raises(ValueError, match="only runs on graphs up to"):
        model.check(cases.SampledCase("bfs", 17, 0.5, seed=1).batch())


def _bias_batches(num_nodes: int, graphs: int = 16):
    """``graphs`` sampled graphs per edge probability of the acceptance (0.1, 0.5)."""
    return [
        cases.SampledCase(
            "bellman_ford", num_nodes, p, seed=num_nodes, batch_size=graphs
        ).batch()
        for p in (0.1, 0.5)
    ]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_papers_bellman_ford_variant_has_hidden_4_and_is_exact(dtype):
    """App. C.1: Bellman-Ford in hidden 4 with the N x N bias and edge information.

    32 graphs at N = 16 (16 per edge probability): every hint, step and output
    equal to dm-clrs's, near-ties reported as such (none here).
    """
    model = compile(
        "bellman_ford", hidden_size=None, pre_att_bias_nodes=16, dtype=dtype
    )
    assert model.layout.hidden_size == 4
    assert model.config.use_pre_att_bias and model.config.use_edge_info
    assert [c.label for c in model.layout.channels] == ["cost"]
    for batch in _bias_batches(16):
        assert not model.check(batch)


@pytest.mark.parametrize("num_nodes", [5, 32])
def test_the_bellman_ford_variant_is_exact_at_the_size_it_is_compiled_for(num_nodes):
    model = compile("bellman_ford", hidden_size=None, pre_att_bias_nodes=num_nodes)
    for batch in _bias_batches(num_nodes, graphs=4):
        assert not model.check(batch)


def test_the_bellman_ford_variant_needs_its_diagonal():
    """Without ``b`` on B's diagonal a reached node without a self loop ties
    its own pair (score ``d_i + 0``) with its parent's and takes a mixture:
    the check must see it."""
    model = compile("bellman_ford", hidden_size=None, pre_att_bias_nodes=16)
    proc = model.params["net"]["processor"]
    bias = np.asarray(proc["pre_att_bias"])
    broken = bias - np.diag(np.diag(bias))
    params = jax.tree_util.tree_map(lambda x: x, model.params)
    params["net"]["processor"]["pre_att_bias"] = jnp.asarray(broken, jnp.float32)
    broken_model = dataclasses.replace(model, params=params)
    assert any(broken_model.check(batch) for batch in _bias_batches(16))


def test_the_bias_variant_is_refused_for_dfs():
    with pytest.raises(CompileError, match="BFS's selection"):
        compile("dfs", pre_att_bias_nodes=16)


# ----------------------------------------------------------------- run and IO


def test_run_returns_clrs_encoded_hints_outputs_and_attention(models):
    model = models[("bellman_ford", None)]
    weights = cases._undirected(4, [(0, 1, 0.5), (1, 2, 0.25), (0, 3, 1.0)])
    result = model.run(weights, source=0, keep_attention=True)
    reference = batch_from_graph("bellman_ford", weights, 0)
    steps = int(reference.lengths[0])
    assert not result.mismatches
    np.testing.assert_array_equal(result.outputs["pi"], reference.outputs["pi"][0])
    for name in ("pi_h", "msk", "d"):
        assert result.hints[name].shape == (steps, 4)
        np.testing.assert_array_equal(
            result.hints[name][0], reference.hints[name][0, 0]
        )
    assert result.hints["pi_h"].dtype == np.int64
    np.testing.assert_allclose(result.hints["d"], reference.hints["d"][:, 0], atol=1e-5)
    assert result.attention.shape == (max(1, steps - 1), 4, 4)
    np.testing.assert_allclose(result.attention.sum(-1), 1.0, atol=1e-6)


@pytest.mark.parametrize(
    ("weights", "source", "words"),
    [
        (np.array([[0, 1.0], [0, 0]]), 0, "undirected"),
        (np.array([[0, np.inf], [np.inf, 0]]), 0, "finite"),
        (np.ones((3, 3)), 7, "source"),
        (np.array([[0, -1.0], [-1.0, 0]]), 0, "negative"),
    ],
)
def test_run_refuses_graphs_it_cannot_handle(weights, source, words, models):
    with pytest.raises(GraphInputError, match=words):
        models[("bellman_ford", None)].run(weights, source)


def test_run_fits_the_distance_range_to_the_graph(models):
    """No fixed cap: a graph beyond the compiled range (distance 11 > 8, weight
    2 > 1) runs exactly with the program compiled for its range; the model's
    own constants are untouched, and graphs inside the range keep them."""
    model = models[("bellman_ford", None)]
    path = cases._undirected(12, [(k, k + 1, 1.0) for k in range(11)])
    far = model.run(path, 0)
    assert not far.mismatches
    assert far.compiler_config.max_distance == 16.0
    assert model.compiler_config.max_distance == 8.0
    heavy = model.run(np.array([[0, 2.5], [2.5, 0]]), 0)
    assert not heavy.mismatches and heavy.compiler_config.max_weight == 4.0
    near = model.run(cases._undirected(3, [(0, 1, 0.5), (1, 2, 0.5)]), 0)
    assert near.compiler_config == model.compiler_config


def test_saved_models_load_and_run_identically(models, tmp_path):
    model = models[("bfs", None)]
    path = save_compiled(model, tmp_path / "bfs.msgpack")
    loaded = load_compiled(path)
    batch = cases.SampledCase("bfs", 16, 0.5, seed=4).batch()
    a, b = model.apply(batch), loaded.apply(batch)
    np.testing.assert_array_equal(np.asarray(a.attention), np.asarray(b.attention))


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford"])
def test_programs_and_layouts_print_as_readable_tables(algorithm, models):
    model = models[(algorithm, None)]
    text = str(model.program)
    for section in ("variables:", "selection", "updates", "decoders:"):
        assert section in text
    for variable in model.program.variable_names():
        assert f"  {variable} " in text
    lines = text.splitlines()
    assert len(lines) > 10 and max(map(len, lines)) < 160
    layout = str(model.layout).splitlines()
    assert layout[0].split() == ["dim", "hidden", "node", "edge", "pre_attention"]
    assert len(layout) == model.layout.hidden_size + 2  # minimal: every dim used
    for shown in (model.program, model.layout):
        assert "<table>" in shown._repr_html_()


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford"])
def test_weight_figures_draw_without_warnings(algorithm, models):
    import warnings

    from nar_gap.paper import plots

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plots.plot_compiled_weights(models[(algorithm, None)])
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert ("edges W_e" in titles) is (algorithm == "bellman_ford")  # none for BFS
    plots.close(fig)


def test_every_kind_of_criterion_has_a_meaning_a_check_and_a_lowering():
    """Adding a criterion to the language takes all three tables."""
    import typing

    from nar_gap.compiler.selection import LOWERINGS
    from nar_gap.compiler.validate import CRITERION_CHECKS
    from nar_gap.programs.dsl import Criterion
    from nar_gap.programs.interpreter import SORT_KEYS

    kinds = set(typing.get_args(Criterion))
    assert kinds and set(SORT_KEYS) == kinds
    assert set(CRITERION_CHECKS) == kinds
    assert set(LOWERINGS) == kinds


def test_perturbed_parameters_are_never_refitted(models):
    """A model whose weights are not its program's compilation (edited, or a
    corrupted file) runs graphs inside its range only: refitting would hide
    the change behind a fresh compilation."""
    model = models[("bellman_ford", None)]
    leaves, tree = jax.tree_util.tree_flatten(model.params)
    leaves[0] = np.asarray(leaves[0]) + 1e-3
    edited = dataclasses.replace(
        model, params=jax.tree_util.tree_unflatten(tree, leaves)
    )
    path = cases._undirected(12, [(k, k + 1, 1.0) for k in range(11)])
    with pytest.raises(GraphInputError, match="not a compilation of a named program"):
        edited.run(path, 0)
    edited.run(cases._undirected(3, [(0, 1, 0.5), (1, 2, 0.5)]), 0)  # inside: runs


def test_heavy_self_loops_keep_unreached_distances_at_zero(models):
    """An unreached node selects its own pair, whose A_ii is its self loop: the
    gate that zeroes its distance must exceed every weight, so the program is
    built for the compiler's weight range (a self loop of 3 against the old
    fixed gate of 2 gave d = 1 at an unreached node)."""
    weights = cases._undirected(4, [(0, 1, 0.5), (1, 2, 0.5), (2, 3, 0.5)])
    weights[3, 3] = 3.0
    assert not models[("bellman_ford", None)].run(weights, 0).mismatches
    assert not compile("bellman_ford", None, max_weight=4.0).run(weights, 0).mismatches


def _near_tie_graph(gap: float) -> np.ndarray:
    """Two paths to node 3: via 1 (0.7) and via 2 (0.7 - gap); dm-clrs takes 2."""
    return cases._undirected(
        4, [(0, 1, 0.4), (1, 3, 0.3), (0, 2, 0.3), (2, 3, 0.4 - gap)]
    )


def test_near_ties_are_told_apart_from_errors(models):
    """dm-clrs decides node 3's parent by a float64 gap of 2e-6, below compiled
    Bellman-Ford's resolution (5e-5): the model takes the lowest id instead,
    and the run reports a tie with its gap, not a mismatch.  A gap above the
    resolution is decided like dm-clrs."""
    from nar_gap.compiler.ties import classify, minimise_resolution

    model = models[("bellman_ford", None)]
    resolution = minimise_resolution(model.scales)
    assert 1e-5 < resolution < 1e-4
    run = model.run(_near_tie_graph(2e-6), 0)
    assert not run.mismatches
    assert {(t.probe, t.node, t.expected, t.found) for t in run.ties} == {
        ("pi_h", 3, 2, 1),
        ("pi", 3, 2, 1),
    }
    assert all(abs(t.gap - 2e-6) < 1e-12 for t in run.ties)  # dm-clrs float64
    assert "tie within" in str(run.ties[0])
    clear = model.run(_near_tie_graph(2e-3), 0)
    assert not clear.mismatches and not clear.ties

    # The same disagreement with a gap above the resolution stays an error.
    batch = model.graph_batch(_near_tie_graph(2e-3), 0)
    trace = model.trace(batch)
    preds = {k: np.array(v) for k, v in trace.hint_preds.items()}
    preds["pi_h"][1, 0, 3] = 1  # node 3 takes the worse parent
    mismatches = compare_with_clrs(preds, trace.outputs, batch)
    errors, ties = classify(
        model.program, resolution, preds, trace.outputs, batch, mismatches
    )
    assert errors and not ties
    # ... and BFS, which minimises nothing, has no near-ties at all.
    assert minimise_resolution(models[("bfs", None)].scales) == 0.0


def test_a_parameter_tree_of_another_shape_is_refused_in_one_line(models):
    """A tree that is not the program's (a layer missing) is not its
    compilation: refused with the one-line error, not a tree_map ValueError."""
    model = models[("bellman_ford", None)]
    net = dict(model.params["net"])
    net.pop("decoder_d")
    other = dataclasses.replace(model, params={"net": net})
    path = cases._undirected(12, [(k, k + 1, 1.0) for k in range(11)])
    with pytest.raises(GraphInputError, match="not a compilation of a named program"):
        other.run(path, 0)


def test_exactness_compares_categories_and_graph_scalars():
    """DFS's color (categorical) and time (graph scalar), for a compiled DFS.

    dm-clrs's own trace, shifted by one step, is exact; one wrong class or
    one wrong time is a mismatch that names it.
    """
    batch = sample_batch("dfs", 8, 3, seed=2, p=(0.3,))
    preds = {name: np.asarray(v)[1:] for name, v in batch.hints.items()}
    assert not compare_with_clrs(preds, dict(batch.outputs), batch)
    color = preds["color"].copy()
    color[2, 1, 3] = np.roll(color[2, 1, 3], 1)
    time = preds["time"].copy()
    time[4, 0] += 0.01
    wrong = compare_with_clrs(
        {**preds, "color": color, "time": time}, dict(batch.outputs), batch
    )
    assert [(m.probe, m.step, m.sample) for m in wrong] == [
        ("color", 3, 1),
        ("time", 5, 0),
    ]
    assert wrong[0].nodes == (3,)
    assert np.argmax(batch.hints["color"][3, 1, 3]) == wrong[0].expected[0]


def test_exactness_skips_padding_and_the_steps_past_a_sample_s_length():
    """The comparison runs all samples and steps at once: a change at a padded
    node or past a sample's last counted step is no mismatch, one at a real
    node is, and ``agrees_with_clrs`` answers as the full report does."""
    batch = pad_batch(sample_batch("bfs", 6, 4, seed=3), num_nodes=8, num_steps=9)
    lengths = np.asarray(batch.lengths)
    preds = {name: np.asarray(v)[1:].copy() for name, v in batch.hints.items()}
    outputs = {name: np.asarray(v).copy() for name, v in batch.outputs.items()}
    assert agrees_with_clrs(preds, outputs, batch)
    preds["reach_h"][0, 2, 7] = 1 - preds["reach_h"][0, 2, 7]  # a padded node
    b = int(np.argmax(lengths))  # a sample with steps to spare
    late = int(lengths[b]) - 1  # step t predicts hint t + 1: past the last one
    assert 2 <= late < len(preds["pi_h"])
    preds["pi_h"][late, b, 0] = 5
    outputs["pi"][3, 6] = 2  # a padded node's output
    assert not compare_with_clrs(preds, outputs, batch)
    assert agrees_with_clrs(preds, outputs, batch)
    preds["pi_h"][late - 1, b, 0] = (preds["pi_h"][late - 1, b, 0] + 1) % 6
    outputs["pi"][3, 5] = (outputs["pi"][3, 5] + 1) % 6
    wrong = compare_with_clrs(preds, outputs, batch)
    assert [(m.probe, m.step, m.sample, m.nodes) for m in wrong] == [
        ("pi", -1, 3, (5,)),  # in the spec's order: BFS's output comes first
        ("pi_h", late, b, (0,)),
    ]
    assert not agrees_with_clrs(preds, outputs, batch)
