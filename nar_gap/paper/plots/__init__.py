"""Figures: one function per figure kind; data in, matplotlib Figure out.

Nothing here computes a number: statistics (Table 1's correlations, fitted
bands, means over seeds) come from :mod:`nar_gap.analysis` and are passed in.
One module per subject (``compilation``: Figures 6-7; ``faithfulness``:
Section 4; ``causal_gap``: notebook 03's interventions; ``training``;
``landscapes``; ``size_sweep``; ``closing_gap``; ``transnar``), and one
look for all, set by the style sheet ``nar_gap.mplstyle`` and
:mod:`nar_gap.paper.plots.style`.  Figures are drawn with the Agg backend:
files, not windows; notebooks display the saved files.
"""

import matplotlib

matplotlib.use("Agg")  # before any submodule imports pyplot

from matplotlib.figure import Figure  # noqa: E402

from nar_gap.paper.plots.causal_gap import plot_causal_gap  # noqa: E402
from nar_gap.paper.plots.closing_gap import plot_closing_gap, plot_generalisation  # noqa: E402
from nar_gap.paper.plots.compilation import (  # noqa: E402
    BIAS,
    ROW_LABEL_WIDTH,
    UNUSED,
    WEIGHT_CELL,
    WEIGHT_COLUMNS_PER_LINE,
    Panel,
    plot_attention_steps,
    plot_compiled_encoders_decoders,
    plot_compiled_weights,
)
from nar_gap.paper.plots.faithfulness import (  # noqa: E402
    plot_attention_comparison,
    plot_cluster_sensitivity,
    plot_measure_vs_accuracy,
    plot_series_over_time,
    plot_solution_clusters,
)
from nar_gap.paper.plots.landscapes import log_loss_range, plot_landscape  # noqa: E402
from nar_gap.paper.plots.size_sweep import plot_size_sweep  # noqa: E402
from nar_gap.paper.plots.style import (  # noqa: E402
    MIN_FONT,
    NEUTRAL,
    OVERFLOW_COLOUR,
    close,
    figure_style,
)
from nar_gap.paper.plots.training import plot_stability, plot_validation_curves  # noqa: E402
from nar_gap.paper.plots.transnar import plot_transnar_scores  # noqa: E402

__all__ = [
    "BIAS",
    "MIN_FONT",
    "NEUTRAL",
    "OVERFLOW_COLOUR",
    "ROW_LABEL_WIDTH",
    "UNUSED",
    "WEIGHT_CELL",
    "WEIGHT_COLUMNS_PER_LINE",
    "Figure",
    "Panel",
    "close",
    "figure_style",
    "log_loss_range",
    "plot_attention_comparison",
    "plot_attention_steps",
    "plot_causal_gap",
    "plot_closing_gap",
    "plot_cluster_sensitivity",
    "plot_compiled_encoders_decoders",
    "plot_compiled_weights",
    "plot_generalisation",
    "plot_landscape",
    "plot_measure_vs_accuracy",
    "plot_series_over_time",
    "plot_size_sweep",
    "plot_solution_clusters",
    "plot_stability",
    "plot_transnar_scores",
    "plot_validation_curves",
]
