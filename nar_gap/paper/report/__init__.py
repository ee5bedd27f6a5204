"""What the results say to a reader: the paper against ours, docs, notebooks.

The paper against ours, the rendered docs, and the notebooks' teaching cells.

Above :mod:`nar_gap.paper.experiments`, which writes the results files; this layer
only reads them.  ``paper.py`` holds the paper's claims and judges each from
the files (every notebook ends with :func:`write_comparison`);
``readme_results.py`` renders docs/results.md and the README's headline from
them; ``walkthrough.py`` holds what the notebooks' teaching cells call (an
equation's code, the hands-on knobs, reading statistics) and ``notebook.py``
sets a notebook up and displays in it.
"""

from nar_gap.paper.report.paper import verdict_sentence, write_comparison

__all__ = ["verdict_sentence", "write_comparison"]
