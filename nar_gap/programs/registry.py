"""Program builders by name; unknown names list the known ones."""

from __future__ import annotations

from collections.abc import Callable

from nar_gap.programs.bellman_ford import make_bellman_ford
from nar_gap.programs.bfs import make_bfs
from nar_gap.programs.dsl import GraphProgram


class UnknownProgramError(ValueError):
    """A name with no graph program (the message lists the known ones)."""


PROGRAMS: dict[str, Callable[[], GraphProgram]] = {
    "bfs": make_bfs,
    "bellman_ford": make_bellman_ford,
}


def get_program(name: str) -> GraphProgram:
    """The graph program for ``name`` (``bfs`` or ``bellman_ford``)."""
    if name not in PROGRAMS:
        raise UnknownProgramError(
            f"no graph program for {name!r}; compilable algorithms: "
            + ", ".join(sorted(PROGRAMS))
        )
    return PROGRAMS[name]()
