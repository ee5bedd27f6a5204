"""Building blocks graph programs share: the "reached" flag of a search from a source.

A search from a source keeps one flag per node.  The source's flag is the
input ``s`` itself (right at step 0, when the hidden state is still zero), so
the hidden variable counts only the *other* reached nodes and the two never
count the source twice:

* :data:`REACHED_NOT_SOURCE`, the variable;
* :func:`reached`, the expression ``reached_not_source + s`` (1 iff reached);
* :func:`reached_update`, ``reached_not_source' = relu(reached_j* - s_i)``:
  1 iff the selected sender is reached -- the receiver itself if it was
  reached before, or a reached neighbour now.
"""

from __future__ import annotations

from nar_gap.programs.dsl import Expr, Update, Variable, inp, var

REACHED_NOT_SOURCE = Variable(
    "reached_not_source", "flag", "reached, not counting the source"
)


def reached() -> Expr:
    """``reached_not_source + s``: 1 for every reached node, the source included."""
    return var(REACHED_NOT_SOURCE.name) + inp("s")


def reached_update() -> Update:
    """The flag's update: reached iff the selected sender is."""
    return Update(REACHED_NOT_SOURCE.name, own=-inp("s"), selected=reached())
