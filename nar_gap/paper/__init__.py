"""The paper's studies, built on the core: what the notebooks run, draw and report.

``experiments`` (one module per notebook, and the profiles that size them),
``plots`` (every figure), ``report`` (the paper's claims against ours, the
rendered results, what the notebooks' teaching cells call), ``tools`` (the
runner behind ``./run_all.sh``, ``nar-gap plan`` and ``nar-gap job``, the
offline bundle) and ``transnar`` (TransNAR on CLRS-Text).  Everything here
may use the core (``nar_gap.tasks`` ... ``nar_gap.analysis``); nothing in the
core uses this package (import-linter's contract, pyproject.toml).
"""
