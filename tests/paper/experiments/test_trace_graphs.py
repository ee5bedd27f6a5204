"""Notebook 03's other graphs: long traces, the training distribution."""

from __future__ import annotations

import dataclasses
import types

import jax
import numpy as np
import pytest

from nar_gap.analysis.models import Models
from nar_gap.compiler import DEFAULT_HIDDEN_SIZE, compile_algorithm
from nar_gap.paper.experiments import faithfulness_study as fs
from nar_gap.paper.experiments import profiles, runs
from nar_gap.paper.experiments import trace_graphs as tg
from nar_gap.paper.report.walkthrough import perturbed
from nar_gap.tasks.counted_steps import external_steps

ALGORITHMS = ("bfs", "bellman_ford", "dfs")
# One batch with both families: a path of 35 counted steps, a grid of 10.
BOTH = profiles.LongTraces(num_nodes=36, families=("path", "grid"), graphs=1)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_profiles_long_traces_have_the_promised_counted_steps(algorithm):
    specs = {p.long_traces for p in profiles.PROFILES.values()}
    for spec in specs:
        graphs = tg.long_trace_graphs(algorithm, spec)
        assert graphs.batch.batch_size == len(spec.families) * spec.graphs
        assert list(graphs.families) == [
            f for f in spec.families for _ in range(spec.graphs)
        ]
        assert set(graphs.num_nodes.tolist()) == {spec.num_nodes}
        assert graphs.counted_steps.min() >= tg.MIN_COUNTED_STEPS, graphs.label()
        # what the sidecar says is what the batch holds
        described = graphs.describe()
        assert described["counted_steps"] == (graphs.batch.lengths - 1).tolist()
        assert described["families"] == list(graphs.families)


def test_a_long_trace_starts_at_an_end_of_a_shuffled_path():
    graphs = tg.long_trace_graphs("bfs", profiles.LongTraces(12, ("path",), 2))
    adjacency = np.asarray(graphs.batch.inputs["A"])
    sources = np.asarray(graphs.batch.inputs["s"]).argmax(-1)
    degrees = adjacency.sum(-1)
    assert [int(degrees[b, s]) for b, s in enumerate(sources)] == [1, 1]
    # ids do not run along the path, and the two graphs differ
    assert not np.array_equal(adjacency[0], adjacency[1])
    assert graphs.counted_steps.tolist() == [11, 11]  # N - 1 rounds from an end
    assert graphs.label() == "path N=12 x2 (11 counted steps)"


def test_a_set_of_short_traces_is_refused():
    with pytest.raises(ValueError, match="fewer than 10 counted steps"):
        tg.long_trace_graphs("bfs", profiles.LongTraces(16, ("grid",), 1))


@pytest.fixture(scope="module")
def compiled_bfs():
    return compile_algorithm("bfs", hidden_size=DEFAULT_HIDDEN_SIZE)


def _moved(model, delta: float = 1e-3):
    """The compiled model with one processor weight moved (no longer exact)."""
    params = perturbed(model.params, "processor/value/kernel", (0, 0), delta)
    return dataclasses.replace(model, params=params)


def test_the_compiled_model_predicts_every_long_trace_step(compiled_bfs):
    graphs = tg.long_trace_graphs("bfs", BOTH)
    exact = fs.long_trace_study(
        Models.from_models([compiled_bfs]), compiled_bfs, graphs
    )
    for ev in (exact.evaluation, exact.reference):
        assert ev.scalars["external"][0] == 1.0
        assert ev.scalars["external_pre_output"][0] == 1.0
        assert ev.scalars["accuracy"][0] == 1.0
    assert exact.evaluation.scalars["internal"][0] == 0.0
    # Figure 4's series on the long traces: every bin is filled, all ones
    uniform = exact.evaluation.series["external_pi_h_uniform"]
    assert uniform.shape == (1, 10) and np.all(uniform == 1.0)
    along = exact.evaluation.series["internal_along_time"]
    assert along.shape[1] >= 35 and np.all(along[0, :35] == 0.0)
    # the check can fail: one weight moved breaks the trace before the output
    moved = _moved(compiled_bfs)
    broken = fs.long_trace_study(Models.from_models([moved]), moved, graphs)
    assert broken.reference.scalars["external_pre_output"][0] < 1.0


TWO_SIZES = runs.baseline_config(profiles.get("smoke"), "bfs")
TWO_SIZES = dataclasses.replace(TWO_SIZES, train_lengths=(4, 7), batch_size=4)


def test_training_graphs_follow_the_config_and_are_drawn_again_byte_for_byte():
    graphs = tg.training_graphs(TWO_SIZES)
    again = tg.training_graphs(TWO_SIZES)
    assert graphs.num_nodes.tolist() == [4] * 4 + [7] * 4  # one batch per size
    assert graphs.batch.num_nodes == 7  # padded to the largest
    assert tg.TRAINING_GRAPHS_SEED not in TWO_SIZES.seeds
    leaves = jax.tree_util.tree_leaves(graphs.batch)
    for first, second in zip(
        leaves, jax.tree_util.tree_leaves(again.batch), strict=True
    ):
        np.testing.assert_array_equal(first, second)
    assert tg.training_graphs(TWO_SIZES, cycles=2).batch.batch_size == 16


def test_the_training_set_study_reruns_to_the_same_numbers(compiled_bfs):
    """A moved compiled model's numbers depend on the graphs: drawn again,
    they are the same; the exact model scores 1 with padded nodes."""
    moved = Models.from_models([_moved(compiled_bfs, 0.1)], seeds=[7])
    exact = Models.from_models([compiled_bfs], seeds=[7])
    graphs = tg.training_graphs(TWO_SIZES)
    first = fs.training_set_study(moved, graphs, final_models=exact)
    second = fs.training_set_study(moved, tg.training_graphs(TWO_SIZES), exact)
    for name, values in first.evaluation.scalars.items():
        np.testing.assert_array_equal(values, second.evaluation.scalars[name], name)
    assert first.evaluation.scalars["external"][0] < 1.0
    assert first.final.scalars["external"][0] == 1.0
    # the columns and the summary the report writes from them
    report = types.SimpleNamespace(long_traces=None, training_set=first)
    row = fs.graph_set_columns(report, 0)
    assert row["train_external"] == first.evaluation.scalars["external"][0]
    assert row["final_train_external"] == 1.0
    assert {"train_external_pi_h", "train_external_pre_output_reach_h"} <= set(row)
    assert not any(k.startswith("long_") or "strict" in k for k in row)
    summary = fs.graph_set_summary(None, first)
    assert summary["max_final_train_external"] == 1.0
    assert summary["train_graphs"] == graphs.label()
    assert np.isfinite(summary["mean_train_external_pre_output"])


def test_the_long_trace_columns_and_arrays_name_the_graphs(compiled_bfs):
    graphs = tg.long_trace_graphs("bfs", profiles.get("smoke").long_traces)
    on = fs.long_trace_study(Models.from_models([compiled_bfs]), compiled_bfs, graphs)
    report = types.SimpleNamespace(long_traces=on, training_set=None)
    row = fs.graph_set_columns(report, 0)
    assert [k for k in row][:4] == [
        "long_accuracy",
        "long_internal",
        "long_external",
        "long_external_pre_output",
    ]
    arrays = fs._long_arrays(report)
    assert arrays["long_families"].tolist() == ["path", "path"]
    assert arrays["long_series_internal_along_time"].shape == (1, 11)
    assert arrays["long_series_external_pi_h_uniform"].shape == (1, 10)
    steps = np.asarray(external_steps(arrays["long_lengths"], 11)).sum(0)
    assert steps.tolist() == graphs.counted_steps.tolist()
    summary = fs.graph_set_summary(on, None)
    assert summary["long_min_counted_steps"] == 11
    assert summary["reference_long_external"] == 1.0
