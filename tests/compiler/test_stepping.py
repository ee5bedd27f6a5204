"""A compiled run one step at a time (issue 47): the whole trace's numbers, less memory.

``CompiledModel.run`` steps the network in chunks and keeps decoded hints,
near-tie verdicts and, only when asked, the attention.  These tests hold it
to the whole-trace forward pass (``Network`` scanned over every step, decoded
by ``decode_trace``) bit for bit, and check the memory estimate and the
refusal of runs that would not fit.
"""

from __future__ import annotations

import dataclasses

import cases
import jax
import numpy as np
import pytest

from nar_gap.compiler import compile
from nar_gap.compiler.compiled_model import (
    CompiledModel,
    decode_trace,
    trace_steps,
)
from nar_gap.compiler.memory import RunTooLargeError, steps_before_trace
from nar_gap.compiler.stepping import Stepper
from nar_gap.compiler.ties import SplitRecorder, classify, minimise_resolution
from nar_gap.tasks.exactness import compare_with_clrs
from nar_gap.tasks.sampling import sample_batch

ALGORITHMS = ("bfs", "bellman_ford", "dfs")


@pytest.fixture(scope="module")
def models():
    return {algorithm: compile(algorithm, hidden_size=None) for algorithm in ALGORITHMS}


def _graphs(algorithm: str) -> dict[str, np.ndarray]:
    """A path with a branch, a graph in two parts, and a near-tie (Bellman-Ford)."""
    weighted = algorithm == "bellman_ford"
    connected = cases._undirected(
        7, [(0, 1, 0.5), (1, 2, 0.25), (1, 3, 0.75), (3, 4, 1.0), (2, 5, 0.5)]
    )  # node 6 alone
    apart = cases._undirected(7, [(0, 1, 0.5), (1, 2, 0.25), (4, 5, 1.0), (5, 6, 0.3)])
    graphs = {"connected": connected, "disconnected": apart}
    if weighted:  # node 3's parent decided by 2e-6, below the resolution: a tie
        graphs["near_tie"] = cases._undirected(
            4, [(0, 1, 0.4), (1, 3, 0.3), (0, 2, 0.3), (2, 3, 0.4 - 2e-6)]
        )
    else:
        graphs = {name: (a > 0).astype(np.float64) for name, a in graphs.items()}
    return graphs


def _whole_trace(model: CompiledModel, batch):
    """What ``run_batch`` computed before it streamed: one scan, then classify."""
    model = model.fitted(batch)
    out = model.apply(batch)
    with model.numerics():
        trace = decode_trace(out, model.layout, model.program.algorithm)
    resolution = minimise_resolution(model.scales)
    recorder = SplitRecorder(model.program, resolution, batch)
    attention = np.asarray(out.attention, np.float64)  # [S, B, H, N, N]
    for t in range(attention.shape[0]):
        hints = {n: v[t] for n, v in trace.hint_preds.items()}
        recorder.hint_step(t, hints, lambda b, t=t: attention[t, b].mean(0))
    last = np.asarray(batch.lengths) - 2
    recorder.output(trace.outputs, lambda b: attention[last[b], b].mean(0))
    mismatches = compare_with_clrs(trace.hint_preds, trace.outputs, batch)
    errors, ties = classify(
        model.program,
        resolution,
        trace.hint_preds,
        trace.outputs,
        batch,
        mismatches,
        recorder.splits,
    )
    return trace, np.asarray(out.attention), errors, ties


def _assert_same_run(model: CompiledModel, batch) -> None:
    run = model.run_batch(batch, keep_attention=True)
    trace, attention, errors, ties = _whole_trace(model, batch)
    steps = int(batch.lengths[0]) - 1
    for name, values in trace.hint_preds.items():
        found = run.hints[name][1:]
        np.testing.assert_array_equal(found, values[:steps, 0].astype(found.dtype))
    for name, values in trace.outputs.items():
        np.testing.assert_array_equal(run.outputs[name], values[0])
    np.testing.assert_array_equal(run.attention, attention[:, 0, 0])
    assert run.attention.dtype == attention.dtype
    assert [str(m) for m in run.mismatches] == [str(m) for m in errors]
    assert [str(t) for t in run.ties] == [str(t) for t in ties]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_streamed_run_equals_the_whole_trace_bit_for_bit(algorithm, models):
    model = models[algorithm]
    source = None if algorithm == "dfs" else 0
    for weights in _graphs(algorithm).values():
        _assert_same_run(model, model.graph_batch(weights, source))
    # A batch of several graphs of different lengths: each sample's outputs
    # are decoded at its own output step.  (7 nodes, as the graphs above:
    # DFS is compiled again for each size.)
    batch = sample_batch(algorithm, 4, 7, seed=3, p=(0.3,))
    if algorithm != "dfs":
        assert len(set(np.asarray(batch.lengths).tolist())) > 1
    _assert_same_run(model, batch)


def _scaled(model: CompiledModel, layer: str, factor: float) -> CompiledModel:
    net = jax.tree.map(np.array, model.params)
    kernel = net["net"]["processor"][layer]["kernel"]
    kernel[...] = kernel * factor
    return dataclasses.replace(model, params=net)


def test_a_broken_model_streams_the_same_errors(models):
    """A weight scaled by 0.9: pointers that differ from dm-clrs's are judged
    on the attention rows of their own step, as the whole trace judges them."""
    broken = _scaled(models["bellman_ford"], "skip", 0.9)
    batch = broken.graph_batch(_graphs("bellman_ford")["connected"], 0)
    assert broken.run_batch(batch).mismatches
    _assert_same_run(broken, batch)


def test_split_near_ties_are_judged_on_their_own_steps_attention(models):
    """Node 6's parents 1 and 5 tie within 1e-6; with the sender weights
    scaled down the attention splits over both and the stored pointer names
    node 3, between them: a split near-tie, at a hint step and at the output
    (judged on the attention of each sample's output step)."""
    broken = _scaled(models["bellman_ford"], "sender", 0.1)
    weights = cases._undirected(
        7, [(0, 1, 0.5), (0, 5, 0.5), (1, 6, 0.5), (5, 6, 0.5 - 1e-6), (2, 3, 0.1)]
    )
    batch = broken.graph_batch(weights, 0)
    run = broken.run_batch(batch)
    assert not run.mismatches
    assert {(t.probe, t.node, t.expected, t.found, t.split) for t in run.ties} == {
        ("pi_h", 6, 5, 3, 2),
        ("pi", 6, 5, 3, 2),
    }
    _assert_same_run(broken, batch)


def test_attention_is_kept_only_when_asked(models):
    model = models["bfs"]
    weights = _graphs("bfs")["connected"]
    assert model.run(weights, 0).attention is None
    kept = model.run(weights, 0, keep_attention=True)
    steps = int(kept.reference.lengths[0]) - 1
    assert kept.attention.shape == (steps, 7, 7)
    np.testing.assert_allclose(kept.attention.sum(-1), 1.0, atol=1e-6)


def test_dfs_steps_are_known_before_the_trace(models):
    """The refusal before dm-clrs runs counts on DFS's 3N - 1 steps."""
    model = models["dfs"]
    for weights in _graphs("dfs").values():
        batch = model.graph_batch(weights)
        assert trace_steps(batch) == steps_before_trace("dfs", len(weights))


def test_a_run_too_large_is_refused_before_any_compute(models, monkeypatch):
    def no_compute(*args, **kwargs):
        raise AssertionError("computed before refusing")

    monkeypatch.setattr(CompiledModel, "graph_batch", no_compute)
    monkeypatch.setattr(Stepper, "__iter__", no_compute)
    with pytest.raises(RunTooLargeError, match="needs about .* GiB") as refused:
        models["dfs"].run(np.zeros((600, 600)), max_memory=2**20)
    assert "\n" not in str(refused.value)
