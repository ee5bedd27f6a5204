"""Tools that run the project: the run planner and the notebook runner.

Not the paper's experiments (those are :mod:`nar_gap.paper.experiments`): ``nar-gap
plan`` counts what a profile will train and measures it on this device
(:mod:`~nar_gap.paper.tools.plan`), and ``./run_all.sh`` executes each notebook
through :mod:`~nar_gap.paper.tools.notebook_runner`.  Nothing below imports them.
"""
