"""What a compiled model's run on one graph needs in memory, said before it starts.

A compiled run (:meth:`~nar_gap.compiler.compiled_model.CompiledModel.run`)
steps the network one hint step at a time, so its peak is a fixed process
floor, plus one step's ``N x N`` working set (the processor's and the
pointer decoders' ``[N, N, D]`` pair tensors, the encoded edges), plus what
grows with the trace: dm-clrs's hints and the decoded ones (``T x N`` values
per node probe), and, when asked for, every step's attention (``S x N^2``).
:func:`run_memory` adds these up; its constants are fitted to peak resident
memory measured on a CPU (``benchmarks/compiled_memory.py``, which prints
the estimate's ratio to the measured peak; the table is in docs/using.md).
:func:`check_fits` refuses, in one line, a run that would not fit.
"""

from __future__ import annotations

import dataclasses

from nar_gap.model.config import NetworkConfig
from nar_gap.tasks.graphs import GraphInputError
from nar_gap.tasks.vocabulary import Location, Stage, Type

GIB = 2**30
# The resident floor of a run: Python, JAX, dm-clrs and XLA's compiled chunk.
PROCESS_FLOOR = int(0.35 * GIB)
# Bytes per node pair held whatever the width: the input matrices in the
# user's graph, dm-clrs's trace, the batch, the model's copy and the
# network's dense inputs.
PAIR_BYTES = 60
# Floats per pair and channel (hidden size plus edge scalars) of one step's
# working set: the pair tensors XLA keeps alive at once, in the model's float.
PAIR_TENSORS = 2
# The attention of one chunk of steps, when a run hands it out (ties, or kept):
# at most stepping.ATTENTION_CHUNK_BYTES.
CHUNK_ATTENTION_BYTES = 64 * 2**20
# Bytes per stored hint value: dm-clrs's trace, the decoded one (float64 or
# int64), the run's copy with the initial hint, and the comparison's work.
HINT_BYTES = 30
# Bytes per value written as JSON by ``nar-gap run``: a Python float or int
# (24 to 32 bytes), its list slot, and its digits in the printed text.
JSON_BYTES = 40


class RunTooLargeError(GraphInputError):
    """A run whose estimated memory exceeds what it may use."""


@dataclasses.dataclass(frozen=True)
class MemoryEstimate:
    """A run's estimated peak resident memory, in bytes, by part."""

    floor: int
    step: int
    trace: int
    attention: int

    @property
    def total(self) -> int:
        """The estimated peak."""
        return self.floor + self.step + self.trace + self.attention


def hint_values(config: NetworkConfig, num_nodes: int) -> int:
    """Values one hint step stores, over every hint probe (categoricals: 3)."""
    size = {Location.NODE: num_nodes, Location.EDGE: num_nodes**2, Location.GRAPH: 1}
    total = 0
    for _, stage, location, typ in config.spec_entries():
        if stage == Stage.HINT:
            total += size[location] * (3 if typ == Type.CATEGORICAL else 1)
    return total


def edge_scalars(config: NetworkConfig) -> int:
    """``K``: per-pair scalars the edge encoders read (pointer hints included)."""
    return sum(
        1
        for _, _, location, typ in config.spec_entries()
        if location == Location.EDGE or typ == Type.POINTER
    )


def run_memory(
    num_nodes: int,
    steps: int,
    config: NetworkConfig,
    itemsize: int = 4,
    keep_attention: bool = False,
    as_json: bool = False,
) -> MemoryEstimate:
    """The estimated peak resident memory of one compiled run on one graph.

    Fitted to peaks measured on a CPU (``benchmarks/compiled_memory.py``):
    DFS at 100 to 600 nodes, BFS and Bellman-Ford to 1000.

    Args:
      num_nodes: N.
      steps: the hint steps ``S`` (dm-clrs's trace length minus one).
      config: the network (its hidden size D, hint probes and edge scalars).
      itemsize: bytes of the model's float (4: float32, 8: float64).
      keep_attention: every step's attention kept (``S x N^2`` floats).
      as_json: the hints (and attention) also written out as JSON text, as
        ``nar-gap run`` does.
    """
    pairs = num_nodes**2
    channels = config.hidden_size + edge_scalars(config)
    one_step = pairs * (PAIR_BYTES + PAIR_TENSORS * channels * itemsize)
    one_step += min(CHUNK_ATTENTION_BYTES, steps * pairs * itemsize)
    values = (steps + 1) * hint_values(config, num_nodes)
    kept = steps * pairs if keep_attention else 0
    per_value = JSON_BYTES if as_json else 0
    return MemoryEstimate(
        floor=PROCESS_FLOOR,
        step=int(one_step),
        trace=int(values * (HINT_BYTES + per_value)),
        attention=int(kept * (itemsize + per_value)),
    )


def steps_before_trace(algorithm: str, num_nodes: int) -> int:
    """The hint steps a run will take, as far as is known before dm-clrs runs.

    DFS's trace is always ``3N`` hints long (every node is discovered, then
    finished, a tick each, and the clock starts ``N`` ticks in:
    ``tasks/fast_dfs.py`` frames it so), so a run is ``3N - 1`` steps.  The
    others stop when nothing changes: one step is the lower bound, and the
    whole run is checked again once the trace is made.
    """
    return 3 * num_nodes - 1 if algorithm == "dfs" else 1


def available_memory() -> int:
    """Bytes this process may still take: MemAvailable (Linux), else psutil's."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import psutil

    return int(psutil.virtual_memory().available)


def check_fits(estimate: MemoryEstimate, max_memory: int | None = None) -> None:
    """Raise :class:`RunTooLargeError` (one line) if ``estimate`` exceeds the limit.

    ``max_memory`` bytes, default :func:`available_memory`.
    """
    limit = available_memory() if max_memory is None else int(max_memory)
    if estimate.total > limit:
        where = "available" if max_memory is None else "allowed (max_memory)"
        raise RunTooLargeError(
            f"this run needs about {_gib(estimate.total)} of memory (one step "
            f"{_gib(estimate.step)}, the trace {_gib(estimate.trace)}, kept "
            f"attention {_gib(estimate.attention)}) and {_gib(limit)} is {where}; "
            "run a smaller graph, or leave out the attention"
        )


def parse_memory(text: str) -> int:
    """``"8G"``, ``"512M"``, ``"2.5GiB"`` or a byte count -> bytes."""
    units = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    cleaned = text.strip().lower().removesuffix("ib").removesuffix("b")
    scale = units.get(cleaned[-1:], 1)
    number = cleaned[:-1] if cleaned[-1:] in units else cleaned
    try:
        value = float(number) * scale
    except ValueError:
        raise ValueError(
            f"memory {text!r}: expected bytes or a size such as 8G or 512M"
        ) from None
    if not value > 0:
        raise ValueError(f"memory {text!r}: must be > 0")
    return int(value)


def _gib(size: int) -> str:
    return f"{size / GIB:.2f} GiB"
