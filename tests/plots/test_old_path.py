"""``nar_gap.experiments.plots``, the figures' old path, until nar_gap 0.3.0."""

from __future__ import annotations

import json
import subprocess
import sys

from nar_gap.system import legacy

# Every name the old module had (its dir() before the move, less imports).
OLD_NAMES = (
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
    "log_loss_range",
    "plot_attention_comparison",
    "plot_attention_steps",
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
)


def test_the_old_path_warns_once_and_is_nar_gap_plots():
    code = (
        "import json, warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from nar_gap.experiments import plots as old\n"
        "    import nar_gap.experiments.plots\n"
        "import nar_gap.plots as new\n"
        f"names = {OLD_NAMES!r}\n"
        "same = old is new and all(getattr(old, n) is getattr(new, n) for n in names)\n"
        "print(json.dumps([same, [(w.category.__name__, str(w.message))"
        " for w in caught]]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    same, caught = json.loads(done.stdout)
    assert same, "the old path is not nar_gap.plots with every old name"
    caught = [w for w in caught if "nar_gap.experiments.plots" in w[1]]
    assert len(caught) == 1, caught  # once, for two imports
    category, message = caught[0]
    assert category == "DeprecationWarning"
    assert "nar_gap.plots" in message and legacy.REMOVAL in message


def test_nar_gap_plots_has_every_old_name():
    from nar_gap import plots

    assert [n for n in OLD_NAMES if not hasattr(plots, n)] == []
    assert set(OLD_NAMES) <= set(plots.__all__)
