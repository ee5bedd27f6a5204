"""Section 4's figures (Figures 1-5, 10, 11), checked on the Figure objects.

Synthetic inputs only (no training), Agg backend: each test draws one figure
kind and reads back what a reader would see (titles, legends, tick labels,
colour limits, line colours).  The numbers a figure prints are computed in
nar_gap.analysis and passed in (Table 1's row, the means over seeds); the
figures print what they are given.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from figure_ticks import assert_whole_steps, labelled_ticks
from matplotlib.collections import LineCollection
from matplotlib.colors import to_rgba
from scipy.cluster import hierarchy
from scipy.spatial.distance import squareform

from nar_gap.analysis.curves import seed_curves
from nar_gap.analysis.stats import correlation_table, linear_fit_band
from nar_gap.paper import plots


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _seeds(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    measure = rng.uniform(0.4, 0.9, n)
    return measure, 1.0 - measure + rng.normal(0.0, 0.05, n)


def _measure_figure(n: int, correlation=None, **kwargs):
    """Figure 1 of ``n`` made-up seeds, with their Table 1 row unless given one."""
    measure, accuracy = _seeds(n)
    band = linear_fit_band(measure, accuracy)
    if correlation is None:
        correlation = correlation_table(accuracy, {"internal": measure})[0]
    fig = plots.plot_measure_vs_accuracy(
        measure, accuracy, band, "internal distance", "bfs", correlation, **kwargs
    )
    return fig, fig.axes[0]


# Figures 1 and 10 ------------------------------------------------------------


def test_measure_figure_gives_r_and_rho_but_no_p_below_ten_seeds():
    _, ax = _measure_figure(6)
    title = ax.get_title()
    assert "Pearson r =" in title and "Spearman \u03c1 =" in title
    assert "p not computed (n < 10)" in title
    assert "p =" not in title


def test_measure_figure_gives_table1_permutation_p_from_ten_seeds():
    measure, accuracy = _seeds(12)
    row = correlation_table(accuracy, {"internal": measure})[0]
    _, ax = _measure_figure(12)
    title = ax.get_title()
    assert f"Pearson r = {row['pearson_r']:.2f}" in title
    assert f"p = {row['pearson_p']:.2g}" in title
    assert "not computed" not in title


def test_measure_figure_is_given_its_correlations_and_computes_none():
    measure, accuracy = _seeds(6)
    band = linear_fit_band(measure, accuracy)
    with pytest.raises(TypeError, match="correlation"):
        plots.plot_measure_vs_accuracy(measure, accuracy, band, "d", "bfs")


def test_measure_figure_prints_the_row_it_is_given():
    row = {"n": 40, "pearson_r": 0.5, "pearson_p": 0.031, "spearman_rho": 0.25}
    _, ax = _measure_figure(12, correlation=row)
    assert "n = 40: Pearson r = 0.50, p = 0.031" in ax.get_title()
    assert "Spearman \u03c1 = 0.25" in ax.get_title()


@pytest.mark.parametrize("point", [(0.0, 1.0), (1.0, 1.0)])
def test_measure_figure_marks_the_compiled_model(point):
    _, ax = _measure_figure(6, compiled=point)
    handles, labels = ax.get_legend_handles_labels()
    assert "compiled" in labels
    star = handles[labels.index("compiled")]
    np.testing.assert_allclose(star.get_offsets(), [point])
    seeds = handles[labels.index("seeds")]
    assert star.get_paths()[0] is not seeds.get_paths()[0]  # another marker


def test_measure_figure_without_compiled_point_has_no_such_entry():
    _, ax = _measure_figure(6, compiled=None)
    assert "compiled" not in ax.get_legend_handles_labels()[1]


def _data():
    """Section 4's figure data of four made-up seeds (no model runs)."""
    from nar_gap.analysis.stats import cluster_solutions
    from nar_gap.paper.plots.faithfulness_section import FigureData

    rng = np.random.default_rng(0)
    seeds, steps, nodes = (3, 7, 11, 42), 3, 5
    internal, accuracy = _seeds(len(seeds))
    external = rng.uniform(0.3, 0.8, len(seeds))
    distances = np.abs(np.subtract.outer(internal, internal))
    clusters = cluster_solutions(distances)
    attention = rng.dirichlet(np.ones(nodes), size=(steps, nodes))
    return FigureData(
        algorithm="bfs",
        seeds=seeds,
        scalars={"internal": internal, "accuracy": accuracy, "external": external},
        series={
            "internal_along_time": rng.uniform(size=(len(seeds), steps)),
            "external_pi_along_time": rng.uniform(size=(len(seeds), steps)),
            "external_pi_uniform": rng.uniform(size=(len(seeds), 4)),
        },
        lengths=np.array([steps + 1]),
        distances=distances,
        linkage=clusters.linkage,
        cluster_threshold=clusters.threshold,
        cluster_count=clusters.count,
        correlations=correlation_table(
            accuracy, {"internal": internal, "external": external}
        ),
        reference={"internal": 0.0, "external": 1.0, "accuracy": 1.0},
        compiled_attention=attention,
        closest_attention=attention[::-1],
        source=-1,
    )


def test_faithfulness_call_sites_pass_table1_and_the_compiled_point():
    from nar_gap.paper.plots import faithfulness_section

    data = _data()
    figs = faithfulness_section.draw(data)
    for key, measure, point in (
        ((1, "internal_vs_accuracy"), "internal", (0.0, 1.0)),
        ((10, "external_vs_accuracy"), "external", (1.0, 1.0)),
    ):
        ax = figs[key].axes[0]
        row = next(r for r in data.correlations if r["measure"] == measure)
        assert f"Pearson r = {row['pearson_r']:.2f}" in ax.get_title()
        assert "p not computed (n < 10)" in ax.get_title()
        handles, labels = ax.get_legend_handles_labels()
        star = handles[labels.index("compiled")]
        np.testing.assert_allclose(star.get_offsets(), [point])
    leaves = figs[5, "solution_clusters"].axes[0].get_xticklabels()
    assert sorted(label.get_text() for label in leaves) == ["11", "3", "42", "7"]


def test_a_report_without_its_table1_row_prints_one_computed_as_table1_does():
    """The study, not the figure, fills in a missing row (from the seeds)."""
    import dataclasses

    from nar_gap.paper.plots import faithfulness_section

    data = dataclasses.replace(_data(), correlations=[])
    scalars = data.scalars
    expected = correlation_table(scalars["accuracy"], {"internal": scalars["internal"]})
    row = faithfulness_section.table1_row(data, "internal")
    assert row == expected[0]
    figs = faithfulness_section.draw(data)
    title = figs[1, "internal_vs_accuracy"].axes[0].get_title()
    assert f"Pearson r = {row['pearson_r']:.2f}" in title


# Figures 2 and 11: step axes ---------------------------------------------------


def test_series_over_steps_ticks_whole_steps():
    fig = plots.plot_series_over_time(
        {"internal": seed_curves(np.random.default_rng(0).uniform(size=(4, 3)))},
        "step",
        "distance",
        "bfs",
    )
    assert_whole_steps(fig.axes[0])


def test_series_over_a_fraction_keeps_fractional_ticks():
    bins = 4
    fig = plots.plot_series_over_time(
        {"pi": seed_curves(np.full((2, bins), 0.5))},
        "fraction of the trace",
        "trace accuracy",
        "bfs",
        x=(np.arange(bins) + 0.5) / bins,
    )
    locations = [loc for loc, _ in labelled_ticks(fig.axes[0])]
    assert any(not float(loc).is_integer() for loc in locations)


# Figures 2, 4 and 11: the whole [0, 1] range, and how many graphs a point holds


def _near_one(**kwargs):
    values = np.array([[1.0, 0.99, 0.995], [1.0, 0.985, 1.0]])
    return plots.plot_series_over_time(
        {"pi": seed_curves(values)}, "step", "trace accuracy", "bfs", **kwargs
    )


def test_series_over_time_shows_the_whole_unit_range():
    """A dip of a percent near 1 is drawn on [0, 1], not stretched to fill
    the axes."""
    assert _near_one().axes[0].get_ylim() == (0.0, 1.0)


def test_series_over_time_takes_a_given_range_or_none():
    assert _near_one(ylim=(0.5, 1.0)).axes[0].get_ylim() == (0.5, 1.0)
    low, high = _near_one(ylim=None).axes[0].get_ylim()
    assert low > 0.9 and high < 1.01  # matplotlib's own range


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_series_over_time_writes_each_point_s_graph_count():
    ax = _near_one(counts=[64, 40, 7]).axes[0]
    assert _texts(ax) == ["64", "40", "7"]
    assert "graphs counted" in ax.get_xlabel()
    # one count under each point, on the point's x
    assert [t.get_position()[0] for t in ax.texts] == [0, 1, 2]


def test_series_over_time_without_counts_writes_none():
    ax = _near_one().axes[0]
    assert _texts(ax) == [] and "graphs" not in ax.get_xlabel()


def test_series_over_time_draws_the_mean_it_is_given():
    """The bold line is the mean passed in (analysis.curves), not one of its own."""
    from nar_gap.analysis.curves import SeedCurves

    per_seed = np.array([[0.2, 0.4, 0.6], [0.4, 0.6, 0.8]])
    given = np.array([0.1, 0.5, 0.9])  # not the per-seed mean
    fig = plots.plot_series_over_time(
        {"pi": SeedCurves(per_seed, given)}, "step", "y", "bfs"
    )
    bold = [line for line in fig.axes[0].get_lines() if line.get_linewidth() == 2]
    assert len(bold) == 1
    np.testing.assert_array_equal(bold[0].get_ydata(), given)


def test_series_over_time_rejects_counts_of_another_length():
    with pytest.raises(ValueError, match="2 counts for 3 points"):
        _near_one(counts=[1, 2])


def test_trace_figures_count_the_graphs_at_each_step_and_bin():
    """Figures 4 and 11 count, per step and per bin of the trace's own clock,
    the graphs whose counted steps reach it (a step counts while t + 1 < L)."""
    import dataclasses

    from nar_gap.paper.plots import faithfulness_section

    lengths = np.array([4, 3, 2, 4, 1])  # counted steps: 3, 2, 1, 3, 0
    data = dataclasses.replace(_data(), lengths=lengths)  # 3 steps, 4 uniform bins
    figs = faithfulness_section.draw(data)
    over_time = figs[11, "trace_over_time"].axes[0]
    assert _texts(over_time) == ["4", "3", "2"]
    assert over_time.get_ylim() == (0.0, 1.0)
    # positions (t + 0.5) / m on 4 bins: m = 3 -> bins 0, 2, 3 (twice);
    # m = 2 -> bins 1, 3; m = 1 -> bin 2
    uniform = figs[4, "trace_uniform_time"].axes[0]
    assert _texts(uniform) == ["2", "1", "3", "3"]
    assert uniform.get_ylim() == (0.0, 1.0)


# Figure 3 ----------------------------------------------------------------------


def _attention(steps: int = 3, nodes: int = 7) -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.dirichlet(np.ones(nodes), size=(steps, nodes))


def test_attention_comparison_shares_one_scale_and_one_colour_bar():
    att = _attention()
    fig = plots.plot_attention_comparison(att, att[::-1], "seed 3")
    images = [im for ax in fig.axes for im in ax.get_images()]
    assert len(images) == 2 * len(att)
    assert {im.get_clim() for im in images} == {(0.0, 1.0)}
    bars = [im.colorbar for im in images if im.colorbar is not None]
    assert len(bars) == 1
    assert bars[0].ax.get_ylabel() == "attention weight"


def test_attention_comparison_numbers_nodes_and_names_axes():
    att = _attention()
    fig = plots.plot_attention_comparison(att, att, "seed 3")
    panels = [ax for ax in fig.axes if ax.get_images()]
    for ax in panels:
        assert_whole_steps(ax, "x")
        assert_whole_steps(ax, "y")
    assert {ax.get_xlabel() for ax in panels} == {"", "sender j"}
    assert all("receiver i" in ax.get_ylabel() for ax in panels[:: len(att)])


def _source_markers(fig) -> list:
    return [
        line
        for ax in fig.axes
        for line in ax.get_lines()
        if line.get_marker() in ("v", ">")
    ]


def test_attention_comparison_marks_the_source_only_when_given():
    att = _attention()
    assert not _source_markers(plots.plot_attention_comparison(att, att, "seed 3"))
    fig = plots.plot_attention_comparison(att, att, "seed 3", source=2)
    markers = _source_markers(fig)
    assert len(markers) == 2 * 2 * len(att)  # two per panel
    columns = {float(m.get_xdata()[0]) for m in markers if m.get_marker() == "v"}
    rows = {float(m.get_ydata()[0]) for m in markers if m.get_marker() == ">"}
    assert columns == rows == {2.0}


# Figure 5 ----------------------------------------------------------------------

SEEDS = ["3", "7", "11", "42", "5"]


def _clusters_figure():
    """Two tight pairs and one seed far from all: clusters {3, 7}, {11, 42}, {5}."""
    distances = np.array(
        [
            [0.0, 0.1, 0.9, 0.8, 1.5],
            [0.1, 0.0, 0.85, 0.9, 1.5],
            [0.9, 0.85, 0.0, 0.12, 1.5],
            [0.8, 0.9, 0.12, 0.0, 1.5],
            [1.5, 1.5, 1.5, 1.5, 0.0],
        ]
    )
    linkage = hierarchy.linkage(squareform(distances), "ward")
    return plots.plot_solution_clusters(distances, linkage, 0.6, SEEDS, "bfs")


def test_dendrogram_leaves_are_the_seeds():
    fig = _clusters_figure()
    leaves = [label.get_text() for label in fig.axes[0].get_xticklabels()]
    assert sorted(leaves) == sorted(SEEDS)
    matrix_rows = [label.get_text() for label in fig.axes[1].get_yticklabels()]
    assert matrix_rows == leaves  # the matrix in dendrogram order


def test_dendrogram_draws_a_singleton_in_the_neutral_colour():
    fig = _clusters_figure()
    colours = {
        tuple(colour)
        for collection in fig.axes[0].collections
        if isinstance(collection, LineCollection)
        for colour in collection.get_colors()
    }
    neutral = to_rgba(plots.NEUTRAL)
    assert neutral in colours
    assert len(colours - {neutral}) == 2  # the two pairs; seed 5 has none
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("single seeds" in text for text in legend)
