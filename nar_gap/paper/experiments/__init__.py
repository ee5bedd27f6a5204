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
09_confirmation     ``run_confirmation``                      ``confirmation.py``
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

from nar_gap.system.lazy import lazy_exports

# Imported on first use (as nar_gap's own verbs are): the studies pull in
# matplotlib, scipy and every model, and run_all.sh's runner, nar-gap plan
# and the catalogue need only ``profiles`` and ``catalogue`` from here.
# Importing the runner took 2.8 s with every study imported here, 1.1 s
# without (a 2-core machine); every ./run_all.sh pays it before its first
# notebook, or before it refuses a bad argument.
_EXPORTS = {
    "compiled_figures": "nar_gap.paper.experiments.compilation",
    "example_graph": "nar_gap.paper.experiments.compilation",
    "exactness_table": "nar_gap.paper.experiments.compilation",
    "locality_table": "nar_gap.paper.experiments.compilation",
    "minimal_table": "nar_gap.paper.experiments.compilation",
    "figure_stem": "nar_gap.paper.experiments.naming",
    "landscape_stem": "nar_gap.paper.experiments.naming",
    "run_ablations": "nar_gap.paper.experiments.ablations",
    "run_baselines": "nar_gap.paper.experiments.baselines",
    "run_closing_gap": "nar_gap.paper.experiments.closing_gap",
    "run_confirmation": "nar_gap.paper.experiments.confirmation",
    "verdict": "nar_gap.paper.experiments.closing_gap",
    "run_faithfulness": "nar_gap.paper.experiments.faithfulness_study",
    "run_landscapes": "nar_gap.paper.experiments.landscape_study",
    "run_stability": "nar_gap.paper.experiments.stability",
    "run_transnar": "nar_gap.paper.experiments.transnar",
    "write_question": "nar_gap.paper.experiments.transnar",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, globals(), _EXPORTS)
