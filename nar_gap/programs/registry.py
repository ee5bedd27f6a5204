"""Program builders by name; unknown names list the known ones."""

from __future__ import annotations

from collections.abc import Callable

from nar_gap.programs.bellman_ford import make_bellman_ford
from nar_gap.programs.bfs import make_bfs
from nar_gap.programs.dsl import GraphProgram


class UnknownProgramError(ValueError):
    """A name with no graph program (the message lists the known ones)."""


# Every builder takes the largest edge weight its program must handle (the
# compiler's ``max_weight``): Bellman-Ford's gates depend on it.
PROGRAMS: dict[str, Callable[..., GraphProgram]] = {
    "bfs": make_bfs,
    "bellman_ford": make_bellman_ford,
}


def get_program(name: str, max_weight: float = 1.0) -> GraphProgram:
    """The graph program for ``name`` (``bfs`` or ``bellman_ford``).

    ``max_weight``: the largest edge weight (self loops included) the program
    must handle; BFS reads no weights and ignores it.
    """
    if name not in PROGRAMS:
        raise UnknownProgramError(
            f"no graph program for {name!r}; compilable algorithms: "
            + ", ".join(sorted(PROGRAMS))
        )
    return PROGRAMS[name](max_weight=max_weight)
