"""Figure file names: the paper's number where it gives one, none where it does not.

One rule, here and nowhere else, for the stems of the per-algorithm figures
(``figures/<stem>.{png,pdf}``):

- **BFS** takes the paper's own figure number: Section 4's Figures 1-5, 10
  and 11 are BFS's (``fig1_bfs_internal_vs_accuracy``), and so is D.11's
  Figure 17, its learned vs compiled loss landscapes
  (``fig17_bfs_landscape_compiled``).
- **Bellman-Ford**'s faithfulness figures are in Appendix D.2, whose numbers
  the paper's extracted text lost: they are named by section
  (``figD2_bellman_ford_internal_vs_accuracy``), never with BFS's numbers.
- **Everything else** is ours, with no number from the paper: DFS's
  faithfulness figures (``fig_dfs_internal_vs_accuracy``), the like-for-like
  ``bellman_ford_edge_info`` arm (``fig_bellman_ford_edge_info_...``), and the
  Bellman-Ford and DFS loss landscapes (``fig_landscape_<a>_<centre>``; D.11
  shows them, but numbers only BFS's).

A figure the paper does not draw at all (the cluster-count sensitivity next to
Figure 5) passes ``number=None`` and is ``fig_<a>_<what>`` for every
algorithm.
"""

from __future__ import annotations

# The paper's sections whose figures carry no recoverable number, by algorithm.
UNNUMBERED_SECTIONS = {"bellman_ford": "D2"}
# BFS's loss landscapes are the paper's Figure 17 (D.11).
LANDSCAPE_FIGURE = 17


def figure_stem(number: int | None, algorithm: str, what: str) -> str:
    """The stem of ``algorithm``'s figure ``what``, which is BFS's Figure ``number``.

    ``number`` is the paper's number for BFS's figure of this kind (``None``:
    the paper has none). BFS: ``fig<number>_bfs_<what>``; Bellman-Ford:
    ``figD2_bellman_ford_<what>`` (its section, the numbers being lost);
    any other algorithm or arm, or no number: ``fig_<algorithm>_<what>``.
    """
    if number is None:
        return f"fig_{algorithm}_{what}"
    if algorithm == "bfs":
        return f"fig{number}_{algorithm}_{what}"
    if algorithm in UNNUMBERED_SECTIONS:
        return f"fig{UNNUMBERED_SECTIONS[algorithm]}_{algorithm}_{what}"
    return f"fig_{algorithm}_{what}"


def landscape_stem(algorithm: str, centre: str) -> str:
    """The stem of ``algorithm``'s loss landscape around ``centre`` (D.11).

    BFS's are the paper's Figure 17 (``fig17_bfs_landscape_<centre>``);
    the others are unnumbered (``fig_landscape_<a>_<centre>``).
    """
    if algorithm == "bfs":
        return f"fig{LANDSCAPE_FIGURE}_{algorithm}_landscape_{centre}"
    return f"fig_landscape_{algorithm}_{centre}"
