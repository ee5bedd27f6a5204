"""Graph programs (the DSL) and one builder per compilable algorithm."""

from nar_gap.programs.bellman_ford import make_bellman_ford
from nar_gap.programs.bfs import make_bfs
from nar_gap.programs.dfs import make_dfs
from nar_gap.programs.dsl import GraphProgram
from nar_gap.programs.registry import PROGRAMS, get_program

__all__ = [
    "GraphProgram",
    "PROGRAMS",
    "get_program",
    "make_bellman_ford",
    "make_bfs",
    "make_dfs",
]
