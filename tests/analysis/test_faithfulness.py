"""Faithfulness measures with known answers, and the whole chain on a smoke sweep."""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from clrs_models import DM_CLRS_GROUP
from scipy import stats

import nar_gap
from nar_gap.analysis import faithfulness as fa
from nar_gap.analysis import models as models_lib
from nar_gap.analysis import stats as st
from nar_gap.model.config import NetworkConfig
from nar_gap.paper.experiments import faithfulness_study as fs
from nar_gap.paper.experiments import profiles, runs
from nar_gap.paper.experiments.naming import figure_stem
from nar_gap.paper.plots import faithfulness_section as ff
from nar_gap.system.files import read_table, save_figure
from nar_gap.tasks import counted_steps as steps_lib
from nar_gap.tasks.sampling import sample_batch
from nar_gap.training import run_dir

ALGORITHMS = ("bfs", "bellman_ford")


@pytest.fixture(scope="module")
def compiled():
    return {a: nar_gap.compile(a, hidden_size=None) for a in ALGORITHMS}


@pytest.fixture(scope="module")
def batches():
    return {a: sample_batch(a, 16, 8, seed=11) for a in ALGORITHMS}


def _neighbourhood(batch) -> np.ndarray:
    """``[B, N, N]``: whom each receiver may attend to (edges both ways, self)."""
    adj = np.asarray(batch.inputs["adj"]) > 0
    n = adj.shape[-1]
    return adj | np.swapaxes(adj, 1, 2) | np.eye(n, dtype=bool)[None]


# --------------------------------------------------------------------------- #
# Internal faithfulness: derived by hand.
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_the_compiled_model_against_itself_is_distance_0_and_faithfulness_1(
    algorithm, compiled, batches
):
    model, batch = compiled[algorithm], batches[algorithm]
    ref = models_lib.reference_attention(model, batch)
    result = models_lib.measure_models(
        models_lib.Models.from_models([model]), batch, ref
    )
    assert result.scalars["internal"][0] == 0.0
    assert result.scalars["external"][0] == 1.0
    assert result.scalars["external_strict"][0] == 1.0
    assert result.scalars["external_pre_output"][0] == 1.0
    assert result.scalars["accuracy"][0] == 1.0


def _uniform_model(model):
    """The compiled network with its attention head zeroed: constant logits."""
    params = jax.tree_util.tree_map(lambda x: x, model.params)
    net = dict(params["net"])
    processor = dict(net["processor"])
    for name in list(processor):
        if name.startswith("head_"):
            processor[name] = jax.tree_util.tree_map(jnp.zeros_like, processor[name])
    if "pre_att_bias" in processor:
        processor["pre_att_bias"] = jax.tree_util.tree_map(
            jnp.zeros_like, processor["pre_att_bias"]
        )
    net["processor"] = processor
    return models_lib.Models(
        model.config,
        jax.tree_util.tree_map(lambda x: x[None], {**params, "net": net}),
        (0,),
    )


def test_uniform_attention_has_the_hand_derived_distance(compiled, batches):
    # The compiled attention is one-hot inside each receiver's support of k
    # senders; a uniform one puts 1/k on each.  Their L1 is (1 - 1/k) + (k - 1)/k
    # = 2 (k - 1)/k, so the normalised distance is the mean, over receivers and
    # counted steps, of (k - 1)/k.  The support is the graph's edges and self
    # loops at step 0; later, as in CLRS, also every pair that a fed-back
    # pointer prediction links (the soft pi_h joins the adjacency), so k is read
    # off the uniform model's own attention.
    model, batch = compiled["bfs"], batches["bfs"]
    ref = models_lib.reference_attention(model, batch)
    assert np.allclose(ref.max(-1), 1.0)  # one-hot, as the derivation assumes
    uniform = models_lib.measure_models(_uniform_model(model), batch, ref)
    att = uniform.attention[0].astype(np.float64)  # [S, B, N, N]
    support = att > 0
    k = support.sum(-1)
    assert np.allclose(att, support / k[..., None], atol=1e-6)  # uniform on support
    assert np.all(np.take_along_axis(support, ref.argmax(-1)[..., None], -1))
    assert np.array_equal(support[0], _neighbourhood(batch))  # step 0: the graph
    counted = np.maximum(1, np.asarray(batch.lengths) - 1)
    per_sample = [
        ((k[: counted[b], b] - 1) / k[: counted[b], b]).mean()
        for b in range(batch.batch_size)
    ]
    assert uniform.scalars["internal"][0] == pytest.approx(
        np.mean(per_sample), abs=1e-5
    )


def test_permuted_attention_is_disjoint_and_a_half_mix_is_halfway(compiled, batches):
    model, batch = compiled["bellman_ford"], batches["bellman_ford"]
    ref = models_lib.reference_attention(model, batch)  # [S, B, N, N] one-hot rows
    shifted = np.roll(ref, 1, axis=-1)  # every receiver attends one id higher
    args = (batch.lengths, batch.node_mask)
    assert float(fa.internal_distance(ref, shifted, *args)["distance"]) == 1.0
    mix = 0.5 * ref + 0.5 * shifted
    assert float(fa.internal_distance(ref, mix, *args)["distance"]) == pytest.approx(
        0.5
    )
    # permuting receivers *and* senders of both series together changes nothing
    perm = np.random.default_rng(0).permutation(ref.shape[-1])
    both = fa.internal_distance(
        ref[..., perm, :][..., perm], mix[..., perm, :][..., perm], *args
    )
    assert float(both["distance"]) == pytest.approx(0.5)


def test_padding_steps_and_padded_nodes_never_count():
    rng = np.random.default_rng(3)
    s, b, n = 5, 3, 6
    a = rng.dirichlet(np.ones(n), size=(s, b, n))
    c = rng.dirichlet(np.ones(n), size=(s, b, n))
    lengths = np.array([2, 4, 6])  # counted steps 1, 3, 5
    mask = np.ones((b, n), bool)
    mask[0, 4:] = False
    base = fa.internal_distance(a, c, lengths, mask)
    noisy = c.copy()
    noisy[1:, 0] = rng.dirichlet(np.ones(n), size=(s - 1, n))  # past sample 0's step
    noisy[:, 0, 4:] = rng.dirichlet(np.ones(n), size=(s, 2))  # its padded receivers
    again = fa.internal_distance(a, noisy, lengths, mask)
    assert float(again["distance"]) == pytest.approx(float(base["distance"]))
    by_hand = np.abs(a - c).sum(-1)[:1, 0, :4].sum() / (2 * 1 * 4)
    assert float(base["per_sample"][0]) == pytest.approx(by_hand, rel=1e-6)
    assert np.isnan(np.asarray(base["along_time"])).sum() == 0
    assert 0.0 <= float(base["distance"]) <= 1.0


@pytest.mark.parametrize("seed", range(5))
def test_distances_stay_in_their_bounds(seed):
    rng = np.random.default_rng(seed)
    s, b, n = 4, 2, 5
    a = rng.dirichlet(np.full(n, 0.2), size=(s, b, n))
    c = rng.dirichlet(np.full(n, 0.2), size=(s, b, n))
    out = fa.internal_distance(a, c, np.array([5, 3]), np.ones((b, n), bool))
    values = np.concatenate([[out["distance"]], out["along_time"], out["per_sample"]])
    assert np.all((values >= 0) & (values <= 1 + 1e-6))


def test_pairwise_distances_are_symmetric_with_zero_diagonal(compiled, batches):
    model, batch = compiled["bfs"], batches["bfs"]
    ref = models_lib.reference_attention(model, batch)
    stack = np.stack([ref, np.roll(ref, 1, -1), 0.5 * ref + 0.5 * np.roll(ref, 1, -1)])
    matrix = fa.pairwise_internal_distances(stack, batch.lengths, batch.node_mask)
    assert np.allclose(matrix, matrix.T) and np.all(np.diag(matrix) == 0)
    assert matrix[0, 1] == pytest.approx(1.0)
    assert matrix[0, 2] == pytest.approx(0.5)
    assert matrix[1, 2] == pytest.approx(0.5)


# --------------------------------------------------------------------------- #
# External faithfulness.
# --------------------------------------------------------------------------- #


def _perfect_logits(batch, config):
    """Hint predictions that decode exactly to ``hint[t + 1]``."""
    preds = {}
    n = batch.num_nodes
    for name, stage, _, typ in config.spec_entries():
        if stage != "hint":
            continue
        truth = np.asarray(batch.hints[name])[1:]
        if typ == "pointer":
            preds[name] = 10.0 * np.eye(n)[truth.astype(int)]
        elif typ == "mask":
            preds[name] = np.where(truth > 0.5, 10.0, -10.0)
        else:
            preds[name] = truth.astype(np.float64)
    return preds


def test_external_matches_count_nodes_and_respect_margins(batches):
    batch = batches["bellman_ford"]
    config = NetworkConfig("bellman_ford")
    preds = _perfect_logits(batch, config)
    valid = np.asarray(fa.external_steps(batch.lengths, preds["d"].shape[0]))
    b = int(np.argmax(np.asarray(batch.lengths)))  # a sample with several steps
    n_real = int(np.asarray(batch.node_mask)[b].sum())
    preds["d"][0, b, 0] += 0.04  # inside the margin ε = 0.05
    preds["d"][0, b, 1] += 0.06  # outside it
    preds["msk"][0, b, :2] *= -1  # two mask errors
    matches = fa.step_matches(config, preds, batch)
    fraction, every = (np.asarray(x) for x in matches["d"])
    assert fraction[0, b] == pytest.approx((n_real - 1) / n_real)
    assert every[0, b] == 0.0
    other = np.ones_like(valid)
    other[0, b] = False
    assert np.all(fraction[valid & other] == 1.0)
    msk_fraction = np.asarray(matches["msk"][0])
    assert msk_fraction[0, b] == pytest.approx((n_real - 2) / n_real)
    assert np.all(np.asarray(matches["pi_h"][0])[valid] == 1.0)
    # strict margins: the 0.04 error also counts
    strict = fa.step_matches(config, preds, batch, fa.Margins(scalar=0.01))
    assert np.asarray(strict["d"][0])[0, b] == pytest.approx((n_real - 2) / n_real)


def test_trace_mean_averages_steps_within_each_trace_first():
    values = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])  # [S=3, B=2]
    valid = np.array([[True, True], [True, False], [True, False]])
    # sample 0: mean(1, 0, 0) = 1/3; sample 1: 0 -> overall 1/6
    assert float(fa._trace_mean(values, valid)) == pytest.approx(1 / 6)


def test_uniform_timescale_places_steps_on_each_traces_own_clock():
    values = np.array([[1.0, 0.0], [0.5, 0.0], [0.0, 9.0]])  # [S, B]
    valid = np.array([[True, True], [True, True], [True, False]])
    out = fa.uniform_timescale(values, valid, bins=2)
    assert fa.uniform_bins(valid) == 3
    # sample 0 (3 steps) at 1/6, 1/2, 5/6; sample 1 (2 steps) at 1/4, 3/4
    assert out[0] == pytest.approx((1.0 + 0.0) / 2)
    assert out[1] == pytest.approx((0.5 + 0.0 + 0.0) / 3)


def test_margins_are_validated():
    with pytest.raises(ValueError, match="mask_threshold"):
        fa.Margins(mask_threshold=1.5)
    with pytest.raises(ValueError, match="scalar"):
        fa.Margins(scalar=-1)


# --------------------------------------------------------------------------- #
# Eq. 25 before the output: the window that leaves the output's copy out.
# --------------------------------------------------------------------------- #


def test_the_pre_output_window_on_a_hand_made_trace():
    """Three samples, T = 4 hint slots, N = 3 nodes (node 2 of sample 0 is
    padding, its values differ on purpose).  Step t predicts hint t + 1.

    - sample 0, L = 4: hints 1 and 3 equal the output, hint 2 does not; the
      last equal one is 3, so steps 0 and 1 (hints 1, 2) count, step 2 not.
    - sample 1, L = 3: no hint equals the output: every external step counts.
    - sample 2, L = 2: hint 1 equals the output, and the zero padding past L
      equals its all-zero output too but must not count: no step is left.
    """
    out = np.array([[1, 0, 7], [2, 2, 2], [0, 0, 0]])
    hint = np.zeros((4, 3, 3), int)
    hint[:, 0] = [[0, 1, 9], [1, 0, 5], [1, 1, 7], [1, 0, 6]]
    hint[:3, 1] = [[0, 1, 2], [1, 1, 2], [2, 1, 2]]
    hint[:2, 2] = [[1, 1, 1], [0, 0, 0]]
    lengths = np.array([4, 3, 2])
    real = np.array([[True, True, False], [True] * 3, [True] * 3])
    last = np.asarray(steps_lib.last_equal_step(hint, out, lengths, real))
    np.testing.assert_array_equal(last, [3, -1, 1])
    window = np.asarray(steps_lib.pre_output_steps(lengths, last, 3))  # [S, B]
    np.testing.assert_array_equal(
        window, [[True, True, False], [True, True, False], [False, False, False]]
    )
    # [S, B]: what the variant drops from Eq. 25's steps
    external = np.asarray(steps_lib.external_steps(lengths, 3))
    np.testing.assert_array_equal(
        external & ~window,
        [[False, False, True], [False, False, False], [True, False, False]],
    )
    # with the padded node compared, no hint of sample 0 matches (5, 7, 6 vs 7
    # at hints 1-3, and hint 2 differs on node 1): it keeps every step
    unmasked = np.asarray(steps_lib.last_equal_step(hint, out, lengths))
    np.testing.assert_array_equal(unmasked, [-1, -1, 1])


@pytest.mark.parametrize("algorithm", ("bfs", "bellman_ford", "dfs"))
def test_the_last_hint_is_the_output_and_only_its_step_is_left_out(algorithm):
    """In dm-clrs's traces ``pi_h`` is ``pi``'s twin and its final value is a
    copy of the output, so the variant drops exactly step ``L_b - 2``."""
    batch = sample_batch(algorithm, 8, 8, seed=5)
    config = NetworkConfig(algorithm)
    assert fa.output_twins(config) == {"pi_h": "pi"}
    lengths = np.asarray(batch.lengths)
    num_steps = int(lengths.max()) - 1
    window = np.asarray(fa.pre_output_window(config, batch, num_steps))
    external = np.asarray(fa.external_steps(batch.lengths, num_steps))
    dropped = external & ~window
    assert not np.any(window & ~external)
    for b, length in enumerate(lengths):
        expected = np.zeros(num_steps, bool)
        if length >= 2:
            expected[length - 2] = True
        np.testing.assert_array_equal(dropped[:, b], expected)


def test_pre_output_differs_from_external_exactly_on_the_excluded_step(batches):
    """Hand-made predictions on BFS graphs: perfect everywhere, then wrong on
    every node at one step of every sample.  Wrong at the excluded step
    ``L_b - 2`` lowers ``external`` only; wrong at step 0 of a sample with
    three or more hints lowers both."""
    batch = batches["bfs"]
    config = NetworkConfig("bfs")
    lengths = np.asarray(batch.lengths)
    assert np.any(lengths >= 3)  # some sample keeps a step
    perfect = _perfect_logits(batch, config)
    base = fa.external_scores(config, perfect, batch)
    assert float(base["external"]) == 1.0
    assert float(base["external_pre_output"]) == 1.0

    def wrong_at(step_of: np.ndarray) -> dict:
        preds = {k: v.copy() for k, v in perfect.items()}
        for b, t in enumerate(step_of):
            if t >= 0:
                preds["pi_h"][t, b] = np.roll(preds["pi_h"][t, b], 1, axis=-1)
                preds["reach_h"][t, b] *= -1
        return {
            k: float(v)
            for k, v in fa.external_scores(config, preds, batch).items()
            if np.ndim(v) == 0
        }

    last = wrong_at(np.where(lengths >= 2, lengths - 2, -1))
    assert last["external_pre_output"] == 1.0
    assert last["external_pre_output_pi_h"] == 1.0
    # by hand: a sample with m counted steps scores (m - 1) / m on each hint
    counted = lengths[lengths >= 2] - 1
    expected = float(np.mean((counted - 1) / counted))
    assert last["external"] == pytest.approx(expected, abs=1e-6)
    assert last["external_pi_h"] < 1.0
    early = wrong_at(np.where(lengths >= 3, 0, -1))
    assert early["external_pre_output"] < 1.0
    assert early["external"] < 1.0


def test_a_batch_of_two_hint_traces_has_no_pre_output_score():
    """The equality is read off the trace, not assumed: BFS traces cut to two
    hints (hint 1 is then not the output) keep their one step; once hint 1 is
    the output's copy, no step is left and the score is NaN, not 0 or 1."""
    batch = sample_batch("bfs", 8, 8, seed=11)
    short = dataclasses.replace(batch, lengths=np.full_like(batch.lengths, 2))
    config = NetworkConfig("bfs")
    external = np.asarray(fa.external_steps(short.lengths, 3))
    cut = np.asarray(batch.lengths) > 2  # the others' hint 1 is the output
    assert cut.any() and not cut.all()
    window = np.asarray(fa.pre_output_window(config, short, 3))
    np.testing.assert_array_equal(window[:, cut], external[:, cut])
    assert not window[:, ~cut].any()
    pi_h = np.array(short.hints["pi_h"])
    pi_h[1] = short.outputs["pi"]
    copied = dataclasses.replace(short, hints={**short.hints, "pi_h": pi_h})
    assert not np.any(np.asarray(fa.pre_output_window(config, copied, 3)))
    scores = fa.external_scores(config, _perfect_logits(copied, config), copied)
    assert np.isnan(float(scores["external_pre_output"]))
    assert float(scores["external"]) == 1.0


# --------------------------------------------------------------------------- #
# The selected step per seed, and Table 1 under selection rules.
# --------------------------------------------------------------------------- #


def test_the_selected_step_comes_from_the_metrics():
    assert models_lib.selected_step({"selected_step": 150}) == 150
    with pytest.raises(KeyError, match="selected_step"):
        models_lib.selected_step({"steps": 200})


def test_models_from_a_run_carry_each_seeds_selected_step(compiled):
    model = compiled["bfs"]
    params = jax.tree_util.tree_map(lambda x: np.stack([x, x]), model.params)
    config = runs.baseline_config(profiles.get("smoke"), "bfs")
    fake = run_dir.TrainResult(
        config=dataclasses.replace(config, network=model.config, seeds=(3, 4)),
        metrics=[{"selected_step": 50}, {"selected_step": 200}],
        params=params,
        out_dir=None,
    )
    models = models_lib.Models.from_run(fake)
    assert models.selected_steps == (50, 200)
    joined = models_lib.Models.from_runs([fake])
    assert joined.selected_steps == (50, 200)
    with pytest.raises(ValueError, match="selected steps"):
        models_lib.Models(model.config, params, (3, 4), selected_steps=(1,))


def test_table1_has_the_paper_rows_then_the_partial_and_final_ones():
    rng = np.random.default_rng(0)
    k = 12
    step = rng.choice([50.0, 100.0, 150.0, 200.0], k)
    scalars = {
        "accuracy": 0.5 + step / 400 + rng.normal(0, 0.01, k),
        **{n: rng.uniform(0, 1, k) for n in fs.TABLE1_MEASURES},
    }
    scalars["internal"] = 1 - step / 200 + rng.normal(0, 0.01, k)  # step-driven
    final = {n: rng.uniform(0, 1, k) for n in ("accuracy", *fs.FINAL_MEASURES)}
    rows = fs.table1(scalars, step, final)
    by = {}
    for row in rows:
        by.setdefault(row["selection"], []).append(row["measure"])
    assert list(by) == ["first_best", "first_best_partial", "final"]
    assert by["first_best"] == list(fs.TABLE1_MEASURES)
    assert by["first_best_partial"] == list(fs.TABLE1_MEASURES)
    assert by["final"] == list(fs.FINAL_MEASURES)
    assert "external_pre_output" in by["final"]
    raw = next(r for r in rows if r["measure"] == "internal")
    partial = next(
        r
        for r in rows
        if r["measure"] == "internal" and r["selection"] == "first_best_partial"
    )
    assert raw["pearson_r"] < -0.9  # both follow the selected step
    assert abs(partial["pearson_r"]) < 0.5
    assert partial["pearson_r"] == pytest.approx(
        st.partial_correlation(
            scalars["internal"], scalars["accuracy"], step, "pearson"
        )
    )
    assert list(fs.table1(scalars)[0])[:2] == ["selection", "measure"]
    assert {r["selection"] for r in fs.table1(scalars)} == {"first_best"}


def test_the_study_measures_final_parameters_against_the_same_reference(batches):
    """A tiny fake: four untrained seeds as the "selected" parameters, the
    same seeds scaled as the "final" ones.  The final pass is its own
    evaluation; Figures 1 and 10 still print the first_best row."""
    from nar_gap.model.seeds import init_stacked

    batch = batches["bfs"]
    config = NetworkConfig("bfs", hidden_size=16)
    seeds = (0, 1, 2, 3)
    params = init_stacked(config, batch, seeds)
    models = models_lib.Models(config, params, seeds, selected_steps=(50, 100, 0, 200))
    final = models_lib.Models(
        config, jax.tree_util.tree_map(lambda x: 1.3 * x, params), seeds
    )
    reference = nar_gap.compile("bfs")
    report = fs.faithfulness_study(
        models, reference, batch, progress=False, final_models=final
    )
    assert report.final_evaluation is not None
    assert not np.allclose(
        report.final_evaluation.scalars["internal"],
        report.evaluation.scalars["internal"],
    )
    alone = models_lib.measure_models(
        final, batch, models_lib.reference_attention(reference, batch)
    )
    np.testing.assert_allclose(
        report.final_evaluation.scalars["internal"], alone.scalars["internal"]
    )
    rows = report.seed_rows()
    assert [r["selected_step"] for r in rows] == [50, 100, 0, 200]
    assert all("external_pre_output" in r and "final_internal" in r for r in rows)
    assert {r["selection"] for r in report.correlations} == {
        "first_best",
        "first_best_partial",
        "final",
    }
    # the figures print the first selection's rows (faithfulness_section.table1_row)
    assert report.correlations[0]["selection"] == "first_best"
    assert "mean_external_pre_output" in report.summary
    with pytest.raises(ValueError, match="same seeds"):
        fs.faithfulness_study(
            models,
            reference,
            batch,
            progress=False,
            final_models=models_lib.Models(
                config, jax.tree_util.tree_map(lambda x: x[:2], params), (0, 1)
            ),
        )


# --------------------------------------------------------------------------- #
# Statistics.
# --------------------------------------------------------------------------- #


def test_correlations_equal_scipys():
    rng = np.random.default_rng(7)
    accuracy = rng.uniform(0.8, 1.0, 40)
    internal = 0.3 - 0.5 * accuracy + rng.normal(0, 0.05, 40)
    rows = st.correlation_table(accuracy, {"internal": internal})
    pearson = stats.pearsonr(internal, accuracy)
    spearman = stats.spearmanr(internal, accuracy)
    assert rows[0]["pearson_r"] == pytest.approx(pearson.statistic)
    assert rows[0]["spearman_rho"] == pytest.approx(spearman.statistic)
    # p-values are two-sided permutation p-values, seeded: scipy's own test
    ranks = (stats.rankdata(internal), stats.rankdata(accuracy))
    cases = (
        ("pearson_p", pearson, (internal, accuracy)),
        ("spearman_p", spearman, ranks),
    )
    for column, statistic, (x_values, y_values) in cases:
        expected = stats.permutation_test(
            (x_values,),
            lambda x, y=y_values: np.corrcoef(x, y)[0, 1],
            permutation_type="pairings",
            n_resamples=st.RESAMPLES,
            random_state=np.random.default_rng(st.RESAMPLING_SEED),
        )
        assert expected.statistic == pytest.approx(statistic.statistic)
        assert rows[0][column] == pytest.approx(expected.pvalue, abs=2e-3), column


def test_a_constant_measure_has_no_correlation_and_says_so():
    rows = st.correlation_table(np.array([0.9, 1.0, 0.8]), {"x": np.ones(3)})
    assert np.isnan(rows[0]["pearson_r"]) and "constant" in rows[0]["note"]


def test_fit_band_is_scipys_line_and_contains_it():
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, 30)
    y = 2 * x + rng.normal(0, 0.1, 30)
    band = st.linear_fit_band(x, y)
    assert band.slope == pytest.approx(stats.linregress(x, y).slope)
    assert np.all(band.lower <= band.fit) and np.all(band.fit <= band.upper)
    widths = band.upper - band.lower
    assert widths[len(widths) // 2] < widths[0]  # narrowest near the mean of x


def _three_groups(rng, sizes=(5, 4, 6)):
    centres = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]])
    points = np.concatenate(
        [c + rng.normal(0, 0.1, (k, 2)) for c, k in zip(centres, sizes, strict=True)]
    )
    return np.linalg.norm(points[:, None] - points[None], axis=-1)


def test_cluster_count_finds_separated_groups_and_ignores_seed_order():
    rng = np.random.default_rng(0)
    distances = _three_groups(rng)
    clusters = st.cluster_solutions(distances)
    assert clusters.count == 3
    for trial in range(5):
        perm = np.random.default_rng(trial).permutation(len(distances))
        again = st.cluster_solutions(distances[np.ix_(perm, perm)])
        assert again.count == clusters.count
        # the same partition, up to the names of the clusters
        same = clusters.labels[perm][:, None] == clusters.labels[perm][None]
        assert np.array_equal(same, again.labels[:, None] == again.labels[None])


def test_identical_solutions_are_one_cluster():
    assert st.cluster_solutions(np.zeros((4, 4))).count == 1


def test_models_need_one_config_and_a_seed_axis(compiled):
    with pytest.raises(ValueError, match="one NetworkConfig"):
        models_lib.Models.from_models([compiled["bfs"], compiled["bellman_ford"]])
    with pytest.raises(ValueError, match="leading axis"):
        models_lib.Models(compiled["bfs"].config, compiled["bfs"].params, (0, 1))


def test_a_reference_of_another_algorithm_is_refused(compiled, batches):
    models = models_lib.Models.from_models([compiled["bfs"]])
    with pytest.raises(ValueError, match="reference is a 'bellman_ford' model"):
        fs.faithfulness_study(
            models, compiled["bellman_ford"], batches["bfs"], progress=False
        )


# --------------------------------------------------------------------------- #
# Any parameters: imported from dm-clrs.
# --------------------------------------------------------------------------- #


@pytest.mark.parity
@pytest.mark.xdist_group(DM_CLRS_GROUP)  # one worker imports TensorFlow
def test_a_dm_clrs_model_is_measured_like_any_other(compiled, batches):
    from clrs_models import clrs_baseline as _baseline

    from nar_gap.tasks.feedback import to_clrs_feedback
    from nar_gap.tasks.specs import get_spec

    batch = batches["bfs"]
    model = _baseline("bfs", to_clrs_feedback(batch), get_spec("bfs"))
    imported = nar_gap.from_clrs(model.params, "bfs")
    ref = models_lib.reference_attention(compiled["bfs"], batch)
    result = models_lib.measure_models(
        models_lib.Models.from_models([imported]), batch, ref
    )
    assert 0.0 < result.scalars["internal"][0] <= 1.0
    assert 0.0 <= result.scalars["external"][0] <= 1.0
    # the same numbers as for the same parameters handed over directly
    direct = models_lib.Models(
        imported.config,
        jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], imported.params),
        (0,),
    )
    again = models_lib.measure_models(direct, batch, ref)
    assert again.scalars["internal"][0] == result.scalars["internal"][0]


# --------------------------------------------------------------------------- #
# The whole chain: train, evaluate, compare, correlate, cluster, write.
# --------------------------------------------------------------------------- #

# The smoke profile's BFS baseline: the run the notebook tests reuse.
SMOKE_SWEEP = runs.baseline_config(profiles.get("smoke"), "bfs")


# With notebooks 03 and 05 in one pytest-xdist worker: they study these very
# runs (shared_runs, one folder for every worker, resumes them), and their
# programs are compiled in that worker's process already.
SHARED_RUNS = pytest.mark.xdist_group("chain_baselines")


@pytest.fixture(scope="module")
def smoke_report(shared_runs, compiled):
    run = runs.train_once(SMOKE_SWEEP, shared_runs, progress=False)
    batch = sample_batch("bfs", 8, 8, seed=3)
    models = models_lib.Models.from_run(run.out_dir)
    report = fs.faithfulness_study(
        models, nar_gap.compile("bfs"), batch, progress=False
    )
    return run, report, batch


@pytest.fixture(scope="module")
def written_report(smoke_report, tmp_path_factory):
    """The smoke report written once (tables, arrays, figures) and its folder."""
    _, report, _ = smoke_report
    folder = tmp_path_factory.mktemp("written_report")
    meta = {"profile": "test", "config": SMOKE_SWEEP.to_dict()}
    written = fs.write_report(report, folder / "results", folder / "figures", meta)
    return written, folder


@SHARED_RUNS
def test_the_chain_runs_end_to_end_and_writes_its_files(smoke_report, written_report):
    run, report, _ = smoke_report
    written, tmp_path = written_report
    names = {p.name for p in written}
    assert {
        "faithfulness_bfs.csv",
        "table1_correlations_bfs.csv",
        "faithfulness_summary_bfs.csv",
        "faithfulness_reference_points_bfs.csv",
        "faithfulness_bfs.npz",
        "fig1_bfs_internal_vs_accuracy.png",
        "fig1_bfs_internal_vs_accuracy.pdf",
        "fig2_bfs_internal_over_time.png",
        "fig3_bfs_closest_attention.png",
        "fig4_bfs_trace_uniform_time.png",
        "fig5_bfs_solution_clusters.png",
        "fig_bfs_cluster_sensitivity.png",
        "fig10_bfs_external_vs_accuracy.png",
        "fig11_bfs_trace_over_time.png",
    } <= names
    rows = read_table(tmp_path / "results" / "faithfulness_bfs.csv")
    assert [int(r["seed"]) for r in rows] == list(SMOKE_SWEEP.seeds)
    metrics = run_dir.load_run(run.out_dir).metrics
    assert [int(r["selected_step"]) for r in rows] == [
        models_lib.selected_step(m) for m in metrics
    ]
    for row in rows:
        for key in ("accuracy", "internal", "external", "external_reach_h"):
            assert 0.0 <= float(row[key]) <= 1.0, (key, row)
        assert "external_pre_output" in row
    table = read_table(tmp_path / "results" / "table1_correlations_bfs.csv")
    assert [r["measure"] for r in table if r["selection"] == "first_best"] == [
        *fs.GAP_MEASURES,
        *models_lib.FORCED_MEASURES,
        "external",
        "external_pre_output",
    ]
    assert {r["selection"] for r in table} == {"first_best", "first_best_partial"}
    points = read_table(tmp_path / "results" / "faithfulness_reference_points_bfs.csv")
    assert [p["point"] for p in points] == [
        "compiled",
        "uniform neighbourhood",
        "self only",
        "random init",
    ]
    assert float(points[0]["internal"]) == 0.0
    assert float(points[0]["argmax_agreement"]) == 1.0
    for point in points[1:]:
        assert 0.0 < float(point["internal"]) <= 1.0, point
        assert 0.0 <= float(point["argmax_agreement"]) < 1.0, point
    assert {"pearson_r", "pearson_p", "spearman_rho", "spearman_p"} <= set(table[0])
    sidecar = json.loads(
        (tmp_path / "results" / "faithfulness_bfs.csv.json").read_text()
    )
    assert sidecar["profile"] == "test" and sidecar["seeds"] == list(SMOKE_SWEEP.seeds)
    assert "jax" in sidecar["versions"]
    arrays = np.load(tmp_path / "results" / "faithfulness_bfs.npz")
    assert arrays["distances"].shape == (len(SMOKE_SWEEP.seeds),) * 2
    assert arrays["compiled_attention"].shape == arrays["closest_attention"].shape
    _, _, batch = smoke_report
    sources = np.asarray(batch.inputs["s"]).argmax(-1)
    np.testing.assert_array_equal(report.sources, sources)  # Fig. 3 marks it
    assert int(arrays["source"]) in set(sources.tolist())


def _figure_data_in_memory(report) -> ff.FigureData:
    """What the figures draw, taken from the report itself, not from its files."""
    ev, arrays = report.evaluation, fs._report_arrays(report, 0)
    return ff.FigureData(
        algorithm=report.algorithm,
        seeds=ev.seeds,
        scalars=ev.scalars,
        series=ev.series,
        lengths=ev.lengths,
        distances=report.distances,
        linkage=report.clusters.linkage,
        cluster_threshold=report.clusters.threshold,
        cluster_count=report.clusters.count,
        correlations=report.correlations,
        reference={m: report.summary[f"reference_{m}"] for m in fs.FIGURE_SCALARS},
        compiled_attention=arrays["compiled_attention"],
        closest_attention=arrays["closest_attention"],
        source=int(arrays["source"]),
    )


@SHARED_RUNS
def test_each_figure_drawn_from_the_files_is_the_report_s_own(
    smoke_report, written_report, tmp_path
):
    """write_report draws every figure from the files it has just written;
    drawn instead from the report in memory, each is the same PNG byte for
    byte: the tables and arrays hold everything a figure shows, so a
    notebook reading another machine's results draws that machine's figures."""
    _, report, _ = smoke_report
    _, folder = written_report
    drawn = ff.draw(_figure_data_in_memory(report))
    assert len(drawn) == 8
    for (number, what), fig in drawn.items():
        stem = figure_stem(number, "bfs", what)
        save_figure(fig, tmp_path / stem, formats=("png",))
        written = folder / "figures" / f"{stem}.png"
        assert written.read_bytes() == (tmp_path / f"{stem}.png").read_bytes(), stem
        sidecar = json.loads((folder / "figures" / f"{stem}.json").read_text())
        assert sidecar["drawn_from"] == [
            "faithfulness_bfs.csv",
            "table1_correlations_bfs.csv",
            "faithfulness_summary_bfs.csv",
            "faithfulness_bfs.npz",
        ]


@SHARED_RUNS
def test_reading_results_draws_the_figures_again_from_them(written_report, tmp_path):
    """Notebook 03 reading results (dirs.reading) measures nothing and draws
    each figure again from the tables, byte for byte; without them it says
    which file is missing, in one line."""
    _, folder = written_report
    dirs = profiles.OutputDirs(
        runs=tmp_path / "no_runs",
        results=folder / "results",
        figures=tmp_path / "figures",
        reading=True,
    )
    assert fs.run_faithfulness(profiles.get("smoke"), "bfs", dirs) is None
    again = sorted(p.name for p in (tmp_path / "figures").glob("*.png"))
    assert len(again) == 8
    for name in again:
        assert (tmp_path / "figures" / name).read_bytes() == (
            folder / "figures" / name
        ).read_bytes(), name
    assert not (tmp_path / "no_runs").exists()  # nothing trained
    (tmp_path / "partial").mkdir()
    for name in ("faithfulness_bfs.csv", "faithfulness_summary_bfs.csv"):
        (tmp_path / "partial" / name).write_bytes(
            (folder / "results" / name).read_bytes()
        )
    with pytest.raises(FileNotFoundError, match="lacks table1_correlations_bfs.csv"):
        fs.read_figure_data(tmp_path / "partial", "bfs")


@SHARED_RUNS
def test_the_chain_agrees_with_the_training_metrics(smoke_report):
    run, report, batch = smoke_report
    # accuracy is the CLRS output score, by the same code as training's score
    accuracy = report.evaluation.scalars["accuracy"]
    assert np.all((accuracy > 0) & (accuracy <= 1))
    summary = report.summary
    assert summary["reference_internal"] == 0.0
    assert summary["reference_external"] == 1.0
    assert 1 <= summary["num_clusters"] <= len(run.config.seeds)
    assert 0.0 < summary["closest_internal"] <= summary["mean_internal"] <= 1.0
    assert summary["closest_seed"] in run.config.seeds
    fixed = [k for k in summary if k.startswith("clusters average linkage at ")]
    assert len(fixed) == 5
    counts = [summary[k] for k in fixed]  # finer cuts never give fewer clusters
    assert counts == sorted(counts, reverse=True)
    assert all(1 <= c <= len(run.config.seeds) for c in counts)


@SHARED_RUNS
def test_the_chain_is_reproducible(smoke_report):
    run, report, batch = smoke_report
    again = fs.faithfulness_study(
        models_lib.Models.from_run(run.out_dir),
        nar_gap.compile("bfs"),
        batch,
        progress=False,
    )
    assert again.seed_rows() == report.seed_rows()
    assert again.summary == report.summary
    assert np.array_equal(again.distances, report.distances)


@SHARED_RUNS
def test_the_final_step_parameters_of_the_run_give_table1s_final_rows(smoke_report):
    """What run_faithfulness does: the last-step parameters from the run
    directory, measured against the same compiled attention."""
    run, report, batch = smoke_report
    final = models_lib.Models.from_run(
        run_dir.load_run(run.out_dir, parameters="final")
    )
    assert final.seeds == report.evaluation.seeds
    assert final.selected_steps == report.selected_steps
    measured = models_lib.measure_models(final, batch, report.reference_attention)
    rows = fs.table1(report.evaluation.scalars, report.selected_steps, measured.scalars)
    assert [r["measure"] for r in rows if r["selection"] == "final"] == list(
        fs.FINAL_MEASURES
    )
    at_end = [s == run.config.steps for s in report.selected_steps]
    same = measured.scalars["accuracy"] == report.evaluation.scalars["accuracy"]
    assert all(same[at_end])  # a seed selected at its last step is its final one


@SHARED_RUNS
def test_runs_trained_apart_join_into_one_sweep(smoke_report):
    run, _, _ = smoke_report
    with pytest.raises(ValueError, match="repeated seeds"):
        models_lib.Models.from_runs([run.out_dir, run.out_dir])
    single = models_lib.Models.from_runs([run.out_dir])
    assert single.seeds == run.config.seeds


def test_seeds_are_scored_and_measured_alike_mapped_or_vmapped(compiled, batches):
    """Scoring and measuring run seeds with ``lax.map`` on a CPU, vmapped on an
    accelerator: both give every seed the same numbers (float32 reassociation:
    1e-5), and each seed its own (the third seed is a perturbed copy)."""
    from nar_gap.model.seeds import init_stacked, score_seeds

    config = NetworkConfig("bfs", hidden_size=16)
    batch = batches["bfs"]
    trained = init_stacked(config, batch, (0, 1))
    shifted = jax.tree_util.tree_map(lambda x: x[:1] * 1.5, trained)
    params = jax.tree_util.tree_map(
        lambda a, b: np.concatenate([a, b]), trained, shifted
    )
    mapped = score_seeds(config, params, batch, strategy="map")
    vmapped = score_seeds(config, params, batch, strategy="vmap")
    for name in mapped:
        np.testing.assert_allclose(mapped[name], vmapped[name], rtol=1e-5, atol=1e-6)
    models = models_lib.Models(config, params, (0, 1, 2))
    ref = models_lib.reference_attention(compiled["bfs"], batch)
    by_map = models_lib.measure_models(models, batch, ref, strategy="map")
    by_vmap = models_lib.measure_models(models, batch, ref, strategy="vmap")
    for name, values in by_map.scalars.items():
        np.testing.assert_allclose(values, by_vmap.scalars[name], rtol=1e-5, atol=1e-6)
    assert by_map.scalars["internal"][0] != by_map.scalars["internal"][2]
    np.testing.assert_allclose(by_map.attention, by_vmap.attention, atol=1e-6)


# --------------------------------------------------------------------------- #
# Calibrated gap measures: known answers on hand-built attention.
# --------------------------------------------------------------------------- #


def _counted_cells(batch) -> np.ndarray:
    """[B]: counted steps x real receivers of each sample."""
    steps = np.maximum(1, np.asarray(batch.lengths) - 1)
    return steps * np.asarray(batch.node_mask).sum(-1)


def _measures(att, ref, batch):
    out = fa.calibrated_measures(
        jnp.asarray(att), jnp.asarray(ref), batch.lengths, batch.node_mask
    )
    return {k: float(v) for k, v in out.items()}


def test_identical_attention_is_zero_on_every_measure(compiled, batches):
    model, batch = compiled["bfs"], batches["bfs"]
    ref = models_lib.reference_attention(model, batch)
    got = _measures(ref, ref, batch)
    assert got["argmax_agreement"] == 1.0
    for name in ("internal", "internal_argmax", "internal_t0.5", "internal_t0.1"):
        assert got[name] == pytest.approx(0.0, abs=1e-6), name
    assert got["l1_unnormalised"] == pytest.approx(0.0, abs=1e-4)


def test_permuted_attention_disagrees_everywhere(compiled, batches):
    model, batch = compiled["bellman_ford"], batches["bellman_ford"]
    ref = models_lib.reference_attention(model, batch)
    shifted = np.roll(ref, 1, axis=-1)
    got = _measures(shifted, ref, batch)
    assert got["argmax_agreement"] == 0.0
    assert got["internal"] == pytest.approx(1.0)
    assert got["internal_argmax"] == pytest.approx(1.0)
    # disjoint one-hot rows: |a - b| sums to 2 in every counted cell
    assert got["l1_unnormalised"] == pytest.approx(2 * _counted_cells(batch).mean())


def test_a_soft_row_on_the_right_sender_is_far_only_before_sharpening(
    compiled, batches
):
    """0.7 on the compiled choice, 0.3 on another sender: Eq. 24 says 0.3, the
    argmax agrees everywhere, and at temperature T the row is
    (0.7^(1/T), 0.3^(1/T)) normalised, so the distance is the second share."""
    model, batch = compiled["bellman_ford"], batches["bellman_ford"]
    ref = models_lib.reference_attention(model, batch)
    soft = 0.7 * ref + 0.3 * np.roll(ref, 1, axis=-1)
    got = _measures(soft, ref, batch)
    assert got["internal"] == pytest.approx(0.3, abs=1e-5)
    assert got["argmax_agreement"] == 1.0
    assert got["internal_argmax"] == pytest.approx(0.0, abs=1e-6)
    for t in (0.5, 0.1):
        share = 0.3 ** (1 / t) / (0.7 ** (1 / t) + 0.3 ** (1 / t))
        assert got[f"internal_t{t:g}"] == pytest.approx(share, abs=1e-5), t
    assert got["l1_unnormalised"] == pytest.approx(0.6 * _counted_cells(batch).mean())


def test_uniform_and_self_only_reference_points_have_hand_derived_values(
    compiled, batches
):
    """Against a one-hot reference: uniform rows over k neighbours are (k-1)/k
    away and agree 1/k of the time (a tie is a random pick); self-only rows
    are 0 away exactly where the compiled receiver attends to itself, else 1."""
    model, batch = compiled["bfs"], batches["bfs"]
    ref = models_lib.reference_attention(model, batch)
    num_steps = ref.shape[0]
    counted = np.maximum(1, np.asarray(batch.lengths) - 1)
    real = np.asarray(batch.node_mask, bool)

    def by_hand(cell_values):  # [S, B, N] -> mean over samples of counted cells
        return np.mean(
            [cell_values[: counted[b], b, real[b]].mean() for b in range(len(counted))]
        )

    uniform = fa.uniform_attention(batch, num_steps)
    k = fa.neighbourhood(batch).sum(-1).astype(np.float64)  # [B, N]
    k = np.broadcast_to(k, ref.shape[:-1])
    got = _measures(uniform, ref[:, :, :, :], batch)
    # the compiled attention stays inside the graph's neighbourhood on this batch
    assert np.all((ref > 0) <= (uniform > 0) | ~real[None, :, :, None])
    assert got["internal"] == pytest.approx(by_hand((k - 1) / k), abs=1e-5)
    assert got["argmax_agreement"] == pytest.approx(by_hand(1 / k), abs=1e-5)

    self_only = fa.self_attention(batch, num_steps)
    picks_self = np.diagonal(ref, axis1=-2, axis2=-1) > 0.5  # [S, B, N]
    got = _measures(self_only, ref, batch)
    assert got["internal"] == pytest.approx(by_hand(1.0 - picks_self), abs=1e-5)
    assert got["argmax_agreement"] == pytest.approx(by_hand(picks_self), abs=1e-5)


def test_sharpening_keeps_rows_distributions_and_zeros(batches):
    batch = batches["bfs"]
    rng = np.random.default_rng(0)
    support = fa.neighbourhood(batch)[None].repeat(3, 0)
    raw = rng.random(support.shape) * support
    att = raw / np.maximum(raw.sum(-1, keepdims=True), 1e-12)
    for t in (0.0, 0.1, 0.5, 1.0):
        sharp = np.asarray(fa.sharpened(jnp.asarray(att, jnp.float32), t))
        rows = sharp.sum(-1)[support.any(-1)]
        assert np.allclose(rows, 1.0, atol=1e-5), t
        assert np.all(sharp[~support] == 0), t
    np.testing.assert_allclose(
        np.asarray(fa.sharpened(jnp.asarray(att, jnp.float32), 1.0)), att, atol=1e-6
    )


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_teacher_forced_attention_of_the_compiled_model_is_its_own_rollouts(
    compiled, batches, algorithm
):
    """The compiled model executes the trace exactly, so feeding it the true
    hints changes nothing on the steps that count: its forced attention is its
    rollout's, and measured teacher-forced against itself it is at distance 0.
    (Past a trace's end the true hints are padding, zeros, so a forced model
    attends elsewhere there; those steps never count.)"""
    model, batch = compiled[algorithm], batches[algorithm]
    rollout = models_lib.reference_attention(model, batch)
    forced = models_lib.reference_attention(model, batch, forced=True)
    counted = np.asarray(fa.internal_steps(batch.lengths, rollout.shape[0]))
    np.testing.assert_allclose(forced[counted], rollout[counted], atol=1e-6)
    own = models_lib.Models.from_models([model], seeds=[0], source="compiled")
    measured = models_lib.measure_models(own, batch, forced, forced=True)
    assert measured.scalars["internal"][0] == pytest.approx(0.0, abs=1e-6)
    assert measured.scalars["argmax_agreement"][0] == 1.0


def test_teacher_forcing_changes_what_an_untrained_model_attends_to(compiled, batches):
    """An untrained model's later steps depend on the hints it is fed: its own
    (wrong) predictions, or the true trace.  Step 0 sees the same inputs."""
    from nar_gap.model.seeds import init_stacked

    batch = batches["bfs"]
    config = NetworkConfig("bfs", hidden_size=16)
    models = models_lib.Models(config, init_stacked(config, batch, (0,)), (0,))
    ref = models_lib.reference_attention(compiled["bfs"], batch)
    rollout = models_lib.measure_models(models, batch, ref).attention[0]
    forced = models_lib.measure_models(models, batch, ref, forced=True).attention[0]
    np.testing.assert_allclose(forced[0], rollout[0], atol=1e-6)
    assert np.abs(forced[1:] - rollout[1:]).max() > 1e-3


def test_a_mask_one_hint_is_one_choice_per_sample():
    """DFS's cursors (``u``, ``s_last``, ...) are one argmax over the nodes.

    Their match is one element per sample, as a graph hint's; counting it per
    node broke on DFS (``[S, B]`` against the ``[B, N]`` node mask).
    """
    batch = sample_batch("dfs", 5, 3, seed=0)
    config = NetworkConfig("dfs")
    preds = _perfect_logits(batch, config)
    preds["u"] = preds["u"].copy()
    preds["u"][0, 1] = np.roll(preds["u"][0, 1], 1)  # step 0, sample 1: wrong node
    matches = fa.step_matches(config, preds, batch)
    fraction, every = (np.asarray(x) for x in matches["u"])
    assert fraction.shape == every.shape == preds["u"].shape[:2]
    assert fraction[0, 1] == 0.0 and every[0, 1] == 0.0
    assert fraction[0, 0] == 1.0 and np.all(fraction[1:] == 1.0)
    colour = np.asarray(matches["color"][0])
    assert colour.shape == preds["u"].shape[:2] and np.all(colour == 1.0)


def test_measures_in_parts_are_the_whole_batchs():
    """Accuracy is exact in parts; internal and agreement too, on a model
    that is not the reference (the compiled model perturbed)."""
    import jax

    from nar_gap.analysis.models import (
        AGAINST_COMPILED,
        Models,
        measure_against_compiled,
        measure_models,
        reference_attention,
    )
    from nar_gap.compiler import compile_algorithm
    from nar_gap.model.model import Model
    from nar_gap.tasks.sampling import sample_batch

    compiled = compile_algorithm("bfs", hidden_size=None)
    nudged = Model(
        compiled.config,
        jax.tree_util.tree_map(lambda x: x * 1.01, compiled.params),
    )
    models = Models.from_models([compiled, nudged], seeds=[0, 1])
    batch = sample_batch("bfs", 16, 32, 2)
    whole = measure_models(models, batch, reference_attention(compiled, batch))
    parts = measure_against_compiled(
        models, batch, compiled, graphs_per_part=5
    )  # 6 x 5 + 2
    np.testing.assert_allclose(parts["accuracy"], whole.scalars["accuracy"], rtol=1e-6)
    one = measure_against_compiled(models, batch, compiled, graphs_per_part=32)
    for measure in AGAINST_COMPILED:
        np.testing.assert_allclose(one[measure], whole.scalars[measure], rtol=1e-6)
    assert one["internal"][0] == 0.0 and one["internal"][1] > 0
