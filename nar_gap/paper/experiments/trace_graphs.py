"""The graphs notebook 03 measures on besides the test split.

Two sets, each a :class:`GraphSet` (one batch, and what each graph is):

* **Long traces** (:func:`long_trace_graphs`).  On CLRS's test graphs (N = 64,
  p = 0.5) a BFS trace has 2-3 counted steps, so "before the output" is one
  or two steps of ``pi_h`` and Figures 2 and 4 end on the output's twin.  The
  size sweep's families (:mod:`nar_gap.tasks.families`) whose diameter grows
  with N give tens: a path searched from one end (N - 1 steps), a grid from
  a corner (about 2 sqrt(N)).  Node ids are shuffled, differently in each
  graph, so ids do not run along the path and BFS's lowest-id ties differ.
* **Training graphs** (:func:`training_graphs`).  Section 4.6 says trained
  models do not predict traces "even on the training set".  CLRS samples
  training graphs on the fly, so the training set is its distribution: here
  one batch per training size of a :class:`~nar_gap.training.TrainConfig`,
  drawn by :func:`~nar_gap.tasks.sampling.train_batch` with that config's
  sizes, edge probabilities and ``pos`` randomisation, from a fixed seed no
  run trains on (:data:`TRAINING_GRAPHS_SEED`): every seed is scored on the
  same graphs, and a rerun draws them again byte for byte.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np

from nar_gap.paper.experiments.profiles import LongTraces
from nar_gap.tasks.batch import Batch, concat_batches, pad_batch
from nar_gap.tasks.families import make_graph
from nar_gap.tasks.graphs import batch_from_graph
from nar_gap.tasks.sampling import train_batch
from nar_gap.tasks.specs import has_source
from nar_gap.training import TrainConfig

# The fewest counted steps (Eq. 25's, L - 1) a long trace must have.
MIN_COUNTED_STEPS = 10
# Draws the training distribution's graphs: no run trains on this seed.
TRAINING_GRAPHS_SEED = 20_000
TRAINING_FAMILY = "training sampler"


@dataclasses.dataclass(frozen=True)
class GraphSet:
    """One batch of graphs, with each graph's family.

    Attributes:
      name: what the set is for (``long traces``, ``training graphs``).
      batch: the graphs, padded to one node count and trace length.
      families: ``[B]`` each graph's family (or the sampler that drew it).
    """

    name: str
    batch: Batch
    families: tuple[str, ...]

    @property
    def num_nodes(self) -> np.ndarray:
        """``[B]`` real nodes per graph."""
        return np.asarray(self.batch.node_mask).sum(-1).astype(int)

    @property
    def counted_steps(self) -> np.ndarray:
        """``[B]`` the steps Eq. 25 counts per graph (``L - 1``)."""
        return np.asarray(self.batch.lengths).astype(int) - 1

    def describe(self) -> dict[str, Any]:
        """Per graph: family, N and counted steps (for a results sidecar)."""
        return {
            "name": self.name,
            "families": list(self.families),
            "num_nodes": self.num_nodes.tolist(),
            "counted_steps": self.counted_steps.tolist(),
        }

    def label(self) -> str:
        """One line per family and size: ``path N=12 x2 (11 counted steps)``."""
        groups = Counter(zip(self.families, self.num_nodes.tolist(), strict=True))
        parts = []
        for (family, n), count in groups.items():
            steps = [
                int(s)
                for f, m, s in zip(
                    self.families, self.num_nodes, self.counted_steps, strict=True
                )
                if (f, m) == (family, n)
            ]
            low, high = min(steps), max(steps)
            span = f"{low}" if low == high else f"{low}-{high}"
            parts.append(f"{family} N={n} x{count} ({span} counted steps)")
        return "; ".join(parts)


def shuffled_graph(algorithm: str, family: str, num_nodes: int, seed: int) -> Batch:
    """``family``'s graph of ``num_nodes``, ids shuffled, searched from node 0's place.

    Node 0 of every family is where its longest searches start (a path's
    end, a grid's corner); after the shuffle the source is wherever node 0
    went.  Bellman-Ford's graphs are weighted as the size sweep weights them.
    """
    weights = make_graph(family, num_nodes, seed, weighted=algorithm == "bellman_ford")
    order = np.random.default_rng([seed, num_nodes, 11]).permutation(num_nodes)
    shuffled = weights[np.ix_(order, order)]
    source = int(np.flatnonzero(order == 0)[0]) if has_source(algorithm) else None
    return batch_from_graph(algorithm, shuffled, source)


def long_trace_graphs(algorithm: str, spec: LongTraces, seed: int = 0) -> GraphSet:
    """``spec.graphs`` graphs of each of ``spec.families``, at ``spec.num_nodes``.

    Raises:
      ValueError: a graph's trace is shorter than :data:`MIN_COUNTED_STEPS`
        (the set would not be what it promises; pick a larger size).
    """
    batches, families = [], []
    for family in spec.families:
        for k in range(spec.graphs):
            batches.append(shuffled_graph(algorithm, family, spec.num_nodes, seed + k))
            families.append(family)
    graphs = GraphSet("long traces", concat_batches(batches), tuple(families))
    short = graphs.counted_steps < MIN_COUNTED_STEPS
    if np.any(short):
        raise ValueError(
            f"{algorithm} on {graphs.label()}: traces of fewer than "
            f"{MIN_COUNTED_STEPS} counted steps; use more nodes"
        )
    return graphs


def training_graphs(config: TrainConfig, cycles: int = 1) -> GraphSet:
    """Graphs of ``config``'s training distribution: one batch per training size.

    ``cycles`` rounds through ``config.train_lengths`` (the sizes at the end
    of training, after any curriculum), each batch ``config.batch_size``
    graphs from :data:`TRAINING_GRAPHS_SEED`'s stream, padded to the largest
    size (padded nodes are masked exactly, as in training) and joined.
    """
    steps = range(cycles * len(config.train_lengths))
    batches = [
        train_batch(
            config.network.algorithm,
            TRAINING_GRAPHS_SEED,
            step,
            lengths=config.train_lengths,
            batch_size=config.batch_size,
            p=config.edge_probabilities,
            random_pos=config.random_pos,
        )
        for step in steps
    ]
    largest = max(b.num_nodes for b in batches)
    joined = concat_batches([pad_batch(b, num_nodes=largest) for b in batches])
    families = (TRAINING_FAMILY,) * joined.batch_size
    return GraphSet("training graphs", joined, families)
