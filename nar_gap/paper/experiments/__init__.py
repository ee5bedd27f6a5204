"""The paper's experiments, one module per notebook, and what they share.

Each notebook section calls one function here, which trains or resumes,
measures and writes its tables and figures; nothing in ``results/`` or
``figures/`` is written any other way (each sidecar names its notebook):

==================  ========================================  =======================
notebook            function                                  module
==================  ========================================  =======================
01_compile          ``compiled_figures``, ``exactness_table``, ``compilation.py``
                    ``minimal_table``, ``locality_table``
                    ``sweep_profile``                         ``size_sweep.py``
02_baselines        ``run_baselines``                         ``baselines.py``
                    ``measure_profile_plateaus``              ``plateau.py``
03_faithfulness     ``run_faithfulness``                      ``faithfulness_study.py``
04_ablations        ``run_ablations``                         ``ablations.py``
05_stability        ``run_stability``                         ``stability.py``
06_loss_landscapes  ``run_landscapes``                        ``landscape_study.py``
07_closing_the_gap  ``run_closing_gap``                       ``closing_gap.py``
                    ``run_profile_recipes``                   ``recipes.py``
                    ``run_profile_generalisation``            ``generalisation.py``
08_transnar         ``run_transnar``, ``write_question``        ``transnar.py``
==================  ========================================  =======================

Each of 01-06 ends with ``paper.write_comparison``: the paper's findings
against ours, computed from the results files (``paper.py``); 08 ends with
TransNAR's published trend against ours, the same way.

``profiles.py`` names the sizes, ``runs.py`` addresses shared training runs,
``naming.py`` names the per-algorithm figures (the paper's numbers for BFS's,
``figD2_`` for Bellman-Ford's, none for ours), :mod:`nar_gap.paper.plots` (the
layer below) draws, ``notebook.py`` displays in a notebook and
``notebook_runner.py`` executes one with papermill, and ``walkthrough.py``
holds what the notebooks' teaching cells call (an equation's code, the
hands-on knobs).
"""

from nar_gap.paper.experiments.ablations import run_ablations
from nar_gap.paper.experiments.baselines import run_baselines
from nar_gap.paper.experiments.closing_gap import run_closing_gap, verdict
from nar_gap.paper.experiments.compilation import (
    compiled_figures,
    exactness_table,
    example_graph,
    locality_table,
    minimal_table,
)
from nar_gap.paper.experiments.faithfulness_study import run_faithfulness
from nar_gap.paper.experiments.landscape_study import run_landscapes
from nar_gap.paper.experiments.naming import figure_stem, landscape_stem
from nar_gap.paper.experiments.stability import run_stability
from nar_gap.paper.experiments.transnar import run_transnar, write_question

__all__ = [
    "compiled_figures",
    "example_graph",
    "exactness_table",
    "figure_stem",
    "landscape_stem",
    "locality_table",
    "minimal_table",
    "run_ablations",
    "run_closing_gap",
    "run_baselines",
    "run_faithfulness",
    "run_landscapes",
    "run_stability",
    "run_transnar",
    "verdict",
    "write_question",
]
