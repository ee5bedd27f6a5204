"""The activation cache and interventions: names, shapes, and patches that must
(or must not) change the rollout, on the compiled BFS where the answer is known."""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import numpy as np
import pytest

import nar_gap
from nar_gap.model import activations, gatv2, network
from nar_gap.model.activations import Patch
from nar_gap.model.network import init_params
from nar_gap.model.seeds import each_seed, forward, stack_trees
from nar_gap.model.sites import SITES
from nar_gap.tasks.families import path

PATCHED_STEP = 2
ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def _compiled():
    """The compiled BFS and a 6-node path searched from one end (5 steps)."""
    model = nar_gap.compile("bfs", hidden_size=None)
    batch = nar_gap.data.batch_from_graph("bfs", path(6), source=0)
    return model, batch


@functools.cache
def _trained_shape():
    """A random-init two-head network on a sampled batch (every site's axes)."""
    config = nar_gap.NetworkConfig("bfs", hidden_size=8, num_heads=2)
    batch = nar_gap.data.sample_batch("bfs", num_nodes=5, batch_size=2, seed=0)
    return config, init_params(config, batch, seed=0), batch


def _tree_equal(a, b) -> bool:
    leaves = zip(
        jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True
    )
    same = jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b)
    return same and all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in leaves)


def test_every_site_is_cached_with_its_documented_rank_and_the_attention_returned():
    config, params, batch = _trained_shape()
    out, cache = activations.run_with_cache(config, params, batch)
    steps, size, nodes = out.attention.shape[0], 2, 5
    for found in SITES:
        value = cache[found.name]
        rank = found.shape.count(",") + 1
        assert value.ndim == rank, (found.name, value.shape, found.shape)
        assert value.shape[:2] == (steps, size), found.name
        if found.node_axis is not None:
            assert value.shape[found.node_axis] == nodes, found.name
        if found.head_axis is not None:
            assert value.shape[found.head_axis] == 2, found.name
    assert np.array_equal(cache["attention"], out.attention)
    assert np.array_equal(cache["hidden"], out.hiddens)
    assert set(cache) >= {f"hint.{k}" for k in out.hint_preds}
    assert set(cache) >= {f"output.{k}" for k in out.outputs}


def test_the_cached_run_returns_what_the_plain_forward_pass_returns():
    config, params, batch = _trained_shape()
    out, _ = activations.run_with_cache(config, params, batch)
    assert _tree_equal(out, forward(config)(params, batch))


def test_patching_a_model_s_own_values_back_reproduces_it_bit_for_bit():
    config, params, batch = _trained_shape()
    out, cache = activations.run_with_cache(config, params, batch)
    own = [Patch(s.name, cache[s.name]) for s in SITES if s.patchable]
    again, recached = activations.run_with_cache(config, params, batch, own)
    assert _tree_equal(again, out)
    assert _tree_equal(recached, cache)


def test_the_compiled_attention_patched_into_the_compiled_model_changes_nothing():
    model, batch = _compiled()
    out, cache = model.run_with_cache(batch)
    again, _ = model.run_with_cache(batch, [Patch("attention", cache["attention"])])
    assert _tree_equal(again, out)


def _random_attention(shape, seed: int = 0) -> np.ndarray:
    logits = 8.0 * jax.random.normal(jax.random.PRNGKey(seed), shape)
    return np.asarray(jax.nn.softmax(logits, axis=-1))


def test_a_random_attention_breaks_the_compiled_bfs_exactly_from_the_patched_step():
    model, batch = _compiled()
    out, cache = model.run_with_cache(batch)
    noise = _random_attention(cache["attention"].shape)
    patched, recached = model.run_with_cache(
        batch, [Patch("attention", noise, steps=(PATCHED_STEP,))]
    )
    for name in ("attention", "hidden", "hint.reach_h", "hint.pi_h"):
        before = slice(0, PATCHED_STEP)
        assert np.array_equal(recached[name][before], cache[name][before]), name
        assert not np.array_equal(
            recached[name][PATCHED_STEP], cache[name][PATCHED_STEP]
        )
    # the trace the compiled model predicts is dm-clrs's until the patch, not at it
    truth = np.asarray(batch.hints["pi_h"][1 : PATCHED_STEP + 2, 0])
    predicted = np.asarray(patched.hint_preds["pi_h"][: PATCHED_STEP + 1, 0]).argmax(-1)
    clean = np.asarray(out.hint_preds["pi_h"][: PATCHED_STEP + 1, 0]).argmax(-1)
    assert np.array_equal(clean, truth)
    assert np.array_equal(predicted[:PATCHED_STEP], truth[:PATCHED_STEP])
    assert not np.array_equal(predicted[PATCHED_STEP], truth[PATCHED_STEP])


def test_a_patch_limited_to_heads_and_nodes_leaves_the_others_alone():
    config, params, batch = _trained_shape()
    _, cache = activations.run_with_cache(config, params, batch)
    noise = _random_attention(cache["attention"].shape)
    _, recached = activations.run_with_cache(
        config,
        params,
        batch,
        [Patch("attention", noise, steps=(0,), heads=(1,), nodes=(2,))],
    )
    got, was = np.array(recached["attention"][0]), np.array(cache["attention"][0])
    assert np.array_equal(got[:, 1, 2], noise[0, :, 1, 2])
    got[:, 1, 2] = was[:, 1, 2]
    assert np.array_equal(got, was)


def test_a_function_of_the_original_is_applied_in_the_loop():
    model, batch = _compiled()
    out, cache = model.run_with_cache(batch)
    same, _ = model.run_with_cache(batch, [Patch("attention", lambda a: a * 1.0)])
    assert _tree_equal(same, out)
    uniform = lambda a: np.float32(1.0) / a.shape[-1] + 0.0 * a  # noqa: E731
    _, changed = model.run_with_cache(
        batch, [Patch("attention", uniform, steps=(PATCHED_STEP,))]
    )
    assert np.allclose(changed["attention"][PATCHED_STEP], 1.0 / 6)
    assert np.array_equal(changed["attention"][1], cache["attention"][1])


def test_teacher_forcing_holds_the_fed_hints_to_the_truth_after_a_patch():
    """On a network that feeds its hints back (the compiled BFS decodes them
    only: its state is in h), a wiped state changes what the free rollout
    feeds next, and not what the teacher-forced one feeds."""
    config, params, batch = _trained_shape()
    patch = [Patch("hidden", 0.0, steps=(0,))]
    run = functools.partial(activations.run_with_cache, config, params, batch)
    _, clean = run(teacher_forced=True)
    _, forced = run(patch, teacher_forced=True)
    assert np.array_equal(forced["node_fts"][1], clean["node_fts"][1])
    assert not np.array_equal(forced["hidden_in"][1], clean["hidden_in"][1])
    _, free_clean = run()
    _, free = run(patch)
    assert not np.array_equal(free["node_fts"][1], free_clean["node_fts"][1])


def test_the_cache_works_under_jit_and_over_seeds():
    config, params, batch = _trained_shape()
    stacked = stack_trees([params, init_params(config, batch, seed=1)])

    def attention(p):
        return activations.run_with_cache(config, p, batch)[1]["attention"]

    per_seed = jax.jit(each_seed(attention))(stacked)
    assert per_seed.shape[0] == 2
    assert np.array_equal(per_seed[0], attention(params))


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (dict(site="attn", value=0.0), "unknown site 'attn'"),
        (dict(site="pre_attention", value=0.0), "read only"),
        (dict(site="graph_fts", value=0.0, nodes=(0,)), "no node axis"),
        (dict(site="hidden", value=0.0, heads=(0,)), "no head axis"),
        (dict(site="fed_", value=0.0), "unknown site 'fed_'"),
    ],
)
def test_a_bad_patch_is_refused_in_one_line(patch, message):
    with pytest.raises(ValueError, match=message):
        Patch(**patch)


def _lowered_forward(config, params, batch) -> str:
    forward.cache_clear()
    return forward(config).lower(params, batch).as_text()


def test_the_sites_add_nothing_to_the_forward_pass_when_not_asked(monkeypatch):
    """The jitted forward pass with its sites is the same program as the one
    with every site an identity: off, the cache costs nothing by construction."""
    config, params, batch = _trained_shape()
    with_sites = _lowered_forward(config, params, batch)
    identity = lambda module, name, value, edits=(): value  # noqa: E731
    monkeypatch.setattr(gatv2, "site", identity)
    monkeypatch.setattr(network, "site", identity)
    without = _lowered_forward(config, params, batch)
    forward.cache_clear()
    assert with_sites == without


def test_the_docs_table_names_every_site_with_its_shape_and_symbol():
    table = (ROOT / "docs" / "activations.md").read_text()
    rows = {
        cells[0].strip("|` "): (cells[1].strip("` "), cells[2].strip("` "))
        for line in table.splitlines()
        if line.startswith("| `")
        for cells in [line.split(" | ")]
    }
    for found in SITES:
        assert rows.get(found.name) == (found.shape, found.symbol), found.name


def _dense_truth(batch, name: str) -> np.ndarray:
    """Hint ``name`` of ``batch`` as the encoder reads it: pointers one-hot."""
    hint = np.asarray(batch.hints[name])
    if name == "pi_h":
        return np.eye(batch.num_nodes)[hint.astype(int)]
    return hint


def test_the_fed_hints_are_cached_as_each_step_encoded_them():
    """The truth at step 0, then the previous prediction fed back soft; the
    truth at every step teacher-forced.  Seen failing with the site on the
    fed-back predictions before the truth is chosen at step 0."""
    config, params, batch = _trained_shape()
    _, cache = activations.run_with_cache(config, params, batch)
    fed, logits = np.asarray(cache["fed_pi_h"]), np.asarray(cache["hint.pi_h"])
    np.testing.assert_array_equal(fed[0], _dense_truth(batch, "pi_h")[0])
    np.testing.assert_allclose(fed[1:], jax.nn.softmax(logits[:-1], -1), atol=1e-6)
    reach = np.asarray(cache["fed_reach_h"])
    np.testing.assert_allclose(
        reach[1:], jax.nn.sigmoid(np.asarray(cache["hint.reach_h"])[:-1]), atol=1e-6
    )
    _, forced = activations.run_with_cache(config, params, batch, teacher_forced=True)
    steps = fed.shape[0]
    for name in ("pi_h", "reach_h"):
        truth = _dense_truth(batch, name)[:steps]
        np.testing.assert_array_equal(forced[f"fed_{name}"], truth)


def test_the_truth_patched_into_the_fed_hints_is_teacher_forcing():
    config, params, batch = _trained_shape()
    steps = batch.num_steps - 1
    truth = [Patch(f"fed_{n}", _dense_truth(batch, n)[:steps]) for n in batch.hints]
    patched, _ = activations.run_with_cache(config, params, batch, truth)
    forced, _ = activations.run_with_cache(config, params, batch, teacher_forced=True)
    for name, value in forced.hint_preds.items():
        np.testing.assert_allclose(patched.hint_preds[name], value, atol=1e-5)
    np.testing.assert_allclose(patched.outputs["pi"], forced.outputs["pi"], atol=1e-5)


def test_where_limits_an_in_loop_patch_to_the_chosen_cells():
    """Hardening the fed pointers of chosen (step, graph, node) cells only:
    those rows are the one-hot argmax of the prediction fed back, every
    other row its softmax, in the patched rollout itself.  Seen failing with
    ``where`` ignored."""
    config, params, batch = _trained_shape()
    _, cache = activations.run_with_cache(config, params, batch)
    shape = cache["fed_pi_h"].shape  # [S, B, N, N]
    chosen = np.zeros(shape[:3] + (1,), bool)
    chosen[1:, 0, 2:] = True  # graph 0, nodes 2.., every step after the first

    def harden(rows):
        return jax.nn.one_hot(rows.argmax(-1), rows.shape[-1])

    _, patched = activations.run_with_cache(
        config, params, batch, [Patch("fed_pi_h", harden, where=chosen)]
    )
    fed, logits = np.asarray(patched["fed_pi_h"]), np.asarray(patched["hint.pi_h"])
    soft = np.asarray(jax.nn.softmax(logits[:-1], -1))
    hard = np.eye(shape[-1])[soft.argmax(-1)]
    rows = np.broadcast_to(chosen[1:], soft.shape)
    np.testing.assert_allclose(fed[1:][rows], hard[rows], atol=1e-6)
    np.testing.assert_allclose(fed[1:][~rows], soft[~rows], atol=1e-6)
    assert not np.allclose(fed[1:][rows], soft[rows])


def test_a_fed_site_the_algorithm_lacks_is_refused_in_one_line():
    config, params, batch = _trained_shape()
    with pytest.raises(ValueError, match="no site 'fed_color'; its hints: fed_pi_h"):
        activations.run_with_cache(config, params, batch, [Patch("fed_color", 0.0)])


def test_selecting_nodes_of_a_graph_level_fed_hint_is_refused_in_one_line():
    """DFS's ``time`` hint is one number per graph: no node axis to select."""
    config = nar_gap.NetworkConfig("dfs", hidden_size=8)
    batch = nar_gap.data.sample_batch("dfs", num_nodes=4, batch_size=1, seed=0)
    params = init_params(config, batch, seed=0)
    patch = Patch("fed_time", 0.0, nodes=(0,))
    with pytest.raises(ValueError, match="'fed_time' of shape .* has no axis 2"):
        activations.run_with_cache(config, params, batch, [patch])
