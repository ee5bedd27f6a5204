"""Figures 6-7: a compiled model's weights, named, readable at their saved size."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.text import Text

from nar_gap.paper import plots


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def compiled_models():
    from nar_gap.compiler import compile_algorithm

    return {a: compile_algorithm(a, hidden_size=None) for a in ("bfs", "bellman_ford")}


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford"])
def test_weight_figure_text_is_readable_at_its_saved_size(algorithm, compiled_models):
    fig = plots.plot_compiled_weights(compiled_models[algorithm])
    fig.canvas.draw()
    # Shown about as large as saved: a 23-inch figure was shrunk to a third.
    assert fig.get_size_inches()[0] <= 9.0
    sizes = [
        text.get_fontsize()
        for text in fig.findobj(Text)
        if text.get_visible() and text.get_text().strip()
    ]
    assert sizes and min(sizes) >= plots.MIN_FONT


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford"])
def test_weight_figure_labels_each_layers_bias(algorithm, compiled_models):
    model = compiled_models[algorithm]
    fig = plots.plot_compiled_weights(model)
    proc = model.params["net"]["processor"]
    labels = model.layout.labels()
    panels = {ax.get_title(): ax for ax in fig.axes if ax.get_images()}
    assert "biases" not in panels
    for title, name, outputs in (
        ("values W_m", "value", "hidden"),
        ("senders W_1", "sender", "pre_attention"),
    ):
        ax = panels[title]
        shown = ax.get_images()[0].get_array()
        used = [not label.endswith(plots.UNUSED) for label in labels[outputs]]
        np.testing.assert_allclose(shown[-1], np.asarray(proc[name]["bias"])[used])
    rows = [label.get_text() for label in panels["values W_m"].get_yticklabels()]
    assert rows[-1] == "bias"


def test_fig7_names_every_encoder_and_decoder_block_it_draws():
    import nar_gap

    model = nar_gap.compile("bellman_ford", hidden_size=None)
    fig = plots.plot_compiled_encoders_decoders(model)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert {"node encoders", "edge encoders", "value decoders", "pi: W1 h_i"} <= set(
        titles
    )
    assert "encoders and decoders" in fig._suptitle.get_text()
    for ax in fig.axes:  # no all-zero row or column is drawn
        for image in ax.get_images():
            data = np.abs(np.asarray(image.get_array()))
            assert (data.sum(0) > 0).all() and (data.sum(1) > 0).all()
    plots.close(fig)


def _titles_overlapping(fig) -> list[tuple[str, str]]:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    titles = [a.title for a in fig.axes if a.get_title()]
    boxes = [t.get_window_extent(renderer) for t in titles]
    return [
        (titles[i].get_text(), titles[j].get_text())
        for i in range(len(boxes))
        for j in range(i + 1, len(boxes))
        if boxes[i].overlaps(boxes[j])
    ]


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford"])
def test_no_two_panel_titles_overlap_in_the_paper_variant(algorithm):
    """Figure 6 (the paper's variant, hidden 4): its one-column sender,
    receiver and edge panels had titles running into each other (seen
    failing: "senders W_1" over "receivers W_2")."""
    from nar_gap.compiler import compile_algorithm

    model = compile_algorithm(algorithm, hidden_size=None, pre_att_bias_nodes=16)
    assert _titles_overlapping(plots.plot_compiled_weights(model)) == []
