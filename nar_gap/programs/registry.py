"""Program builders by name; unknown names list the known ones."""

from __future__ import annotations

from collections.abc import Callable

from nar_gap.programs.bellman_ford import make_bellman_ford
from nar_gap.programs.bfs import make_bfs
from nar_gap.programs.dfs import make_dfs
from nar_gap.programs.dfs_reverse import make_dfs_reverse
from nar_gap.programs.dsl import GraphProgram


class UnknownProgramError(ValueError):
    """A name with no graph program (the message lists the known ones)."""


def _size_free(builder: Callable[..., GraphProgram]) -> Callable[..., GraphProgram]:
    """A builder that runs every graph size: ``num_nodes`` is ignored."""

    def build(max_weight: float = 1.0, num_nodes: int | None = None) -> GraphProgram:
        del num_nodes
        return builder(max_weight=max_weight)

    build.__doc__ = builder.__doc__
    return build


def _sized(builder: Callable[..., GraphProgram]) -> Callable[..., GraphProgram]:
    """A builder for one graph size, :data:`DEFAULT_NUM_NODES` when none is given."""

    def build(max_weight: float = 1.0, num_nodes: int | None = None) -> GraphProgram:
        size = DEFAULT_NUM_NODES if num_nodes is None else int(num_nodes)
        return builder(size, max_weight=max_weight)

    build.__doc__ = builder.__doc__
    return build


# A program built for one size (DFS and dfs_reverse: their v needs N) is
# built for CLRS's training size unless told; CompiledModel.run compiles it
# again for the size of the graph it is given.
DEFAULT_NUM_NODES = 16

# Every builder takes the largest edge weight its program must handle (the
# compiler's ``max_weight``: Bellman-Ford's gates depend on it) and the graph
# size (DFS's program is built for one).
_SIZE_FREE_BUILDERS = {"bfs": make_bfs, "bellman_ford": make_bellman_ford}
_SIZED_BUILDERS = {"dfs": make_dfs, "dfs_reverse": make_dfs_reverse}
PROGRAMS: dict[str, Callable[..., GraphProgram]] = {
    **{name: _size_free(build) for name, build in _SIZE_FREE_BUILDERS.items()},
    **{name: _sized(build) for name, build in _SIZED_BUILDERS.items()},
}
# The programs whose one compilation runs every graph size: what training
# supervision and the landscapes' compiled centres use.
SIZE_FREE_PROGRAMS: tuple[str, ...] = tuple(_SIZE_FREE_BUILDERS)


def get_program(
    name: str, max_weight: float = 1.0, num_nodes: int | None = None
) -> GraphProgram:
    """The graph program for ``name`` (``bfs``, ``bellman_ford``, ``dfs``, ...).

    ``max_weight``: the largest edge weight (self loops included) the program
    must handle; BFS and DFS read no weights and ignore it.  ``num_nodes``:
    the graph size, for ``dfs`` and ``dfs_reverse`` (default 16); the others
    ignore it.
    """
    if name not in PROGRAMS:
        raise UnknownProgramError(
            f"no graph program for {name!r}; compilable algorithms: "
            + ", ".join(sorted(PROGRAMS))
        )
    return PROGRAMS[name](max_weight=max_weight, num_nodes=num_nodes)
