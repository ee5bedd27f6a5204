"""Where everything lives: a name for every dimension the compiler uses.

The CLRS GATv2 works in four D-wide spaces, and a compiled model uses a few
named dimensions of each; the rest are ``unused`` (zero weights):

* ``hidden``: the program's variables, in program order (channel 0 first:
  it is the one the paper's edge information feeds);
* ``node``: encoded node inputs (``pos``, ``s``) and fed-back hints the
  program reads (``hint:<probe>``), the ``n_i`` half of ``z_i = [n_i ; h_i]``;
* ``edge``: encoded edge inputs (``A``);
* ``pre_attention``: the channels of ``P_ij`` built from the selection;
* ``graph``: fed-back graph hints the graph decoders read
  (``graph_hint:<probe>``), the graph features ``g`` (only when used).

``Layout.labels()`` labels every heat map of weights and hidden states.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from nar_gap.compiler.selection import Channel
from nar_gap.compiler.validate import Problem, node_inputs
from nar_gap.programs.dsl import GraphProgram

UNUSED = "unused"
POINTER_DECODER_CHANNELS = 2  # max(x, pos) and max(-x, -pos)


@dataclasses.dataclass(frozen=True)
class Layout:
    """Named dimensions of the hidden, node, edge and pre-attention spaces."""

    hidden_size: int
    hidden: tuple[str, ...]
    node: tuple[str, ...]
    edge: tuple[str, ...]
    pre_attention: tuple[str, ...]
    channels: tuple[Channel, ...]
    graph: tuple[str, ...] = ()

    def hidden_index(self, name: str) -> int:
        """The hidden dimension that holds variable ``name``."""
        return self.hidden.index(name)

    def node_index(self, name: str) -> int:
        """The encoded node-input dimension of input ``name``."""
        return self.node.index(name)

    def edge_index(self, name: str) -> int:
        """The encoded edge-input dimension of input ``name``."""
        return self.edge.index(name)

    def graph_index(self, name: str) -> int:
        """The graph-feature dimension of fed-back graph hint ``name``."""
        return self.graph.index(name)

    def _spaces(self) -> dict[str, tuple[str, ...]]:
        """The spaces shown in tables: ``graph`` only when a program uses it."""
        spaces = {
            "hidden": self.hidden,
            "node": self.node,
            "edge": self.edge,
            "pre_attention": self.pre_attention,
        }
        if any(name != UNUSED for name in self.graph):
            spaces["graph"] = self.graph
        return spaces

    @property
    def variables(self) -> tuple[str, ...]:
        """The program's variables, in hidden-layout order."""
        return tuple(n for n in self.hidden if n != UNUSED)

    def encode(self, values: dict[str, np.ndarray]) -> np.ndarray:
        """Variables ``{name: [..., N]}`` -> hidden states ``[..., N, D]``."""
        first = np.asarray(next(iter(values.values())))
        out = np.zeros(first.shape + (self.hidden_size,))
        for name, value in values.items():
            out[..., self.hidden_index(name)] = value
        return out

    def decode(self, hidden: np.ndarray) -> dict[str, np.ndarray]:
        """Hidden states ``[..., N, D]`` -> ``{variable: [..., N]}``."""
        hidden = np.asarray(hidden)
        return {name: hidden[..., self.hidden_index(name)] for name in self.variables}

    def labels(self) -> dict[str, tuple[str, ...]]:
        """Row and column labels of every weight block and state.

        ``z`` (= node + hidden), ``h_t`` (decoder input: node, previous hidden,
        new hidden), and the four spaces.
        """
        return {
            **self._spaces(),
            "z": tuple(f"n:{n}" for n in self.node)
            + tuple(f"h:{h}" for h in self.hidden),
            "h_t": tuple(f"n:{n}" for n in self.node)
            + tuple(f"h:{h}" for h in self.hidden)
            + tuple(f"h':{h}" for h in self.hidden),
        }

    def table(self) -> list[tuple[str, ...]]:
        """``(dim, hidden, node, edge, pre_attention[, graph])`` per used dimension."""
        spaces = tuple(self._spaces().values())
        used = [
            k for k in range(self.hidden_size) if any(s[k] != UNUSED for s in spaces)
        ]
        return [
            (str(k), *("" if s[k] == UNUSED else s[k] for s in spaces)) for k in used
        ]

    def __str__(self) -> str:
        """The used dimensions of the four spaces, as an aligned table."""
        header = ("dim", *self._spaces())
        rows = [header, *self.table()]
        widths = [max(len(r[k]) for r in rows) for k in range(len(header))]
        lines = [
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            for r in rows
        ]
        unused = self.hidden_size - len(rows) + 1
        lines.append(f"hidden size {self.hidden_size}; {unused} dimensions unused")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from html import escape

        header = ("dim", *(s.replace("_", "-") for s in self._spaces()))
        head = "".join(f"<th>{h}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>"
            for row in self.table()
        )
        return (
            f"<table><tr>{head}</tr>{body}</table><p>hidden size {self.hidden_size}</p>"
        )

    def minimal_hidden_size(self) -> int:
        """The smallest hidden size this layout's names fit in."""
        return minimal_hidden_size(
            len(self.variables),
            sum(n != UNUSED for n in self.node),
            sum(n != UNUSED for n in self.edge),
            len(self.channels),
            sum(n != UNUSED for n in self.graph),
        )


def minimal_hidden_size(
    num_variables: int,
    num_node_inputs: int,
    num_edge_inputs: int,
    num_channels: int,
    num_graph_inputs: int = 0,
) -> int:
    """The smallest D that holds every space's named dimensions."""
    return max(
        num_variables,
        num_node_inputs,
        num_edge_inputs,
        num_channels,
        num_graph_inputs,
        POINTER_DECODER_CHANNELS,
    )


def _pad(names: list[str], size: int) -> tuple[str, ...]:
    return tuple(names + [UNUSED] * (size - len(names)))


def lay_out(
    program: GraphProgram, channels: tuple[Channel, ...], hidden_size: int | None
) -> tuple[Layout | None, list[Problem]]:
    """Place variables, inputs and channels; ``None`` -> the minimal size.

    Returns the layout, or None and the problems (a size too small names what
    needs the room).
    """
    variables = list(program.variable_names())
    node = [*node_inputs(program.algorithm), *program.hint_inputs()]
    edge = list(program.edge_inputs())
    graph = list(program.graph_hint_inputs())
    labels = []
    for channel in channels:
        label, k = channel.label, 2
        while label in labels:
            label, k = f"{channel.label}#{k}", k + 1
        labels.append(label)
    needed = minimal_hidden_size(
        len(variables), len(node), len(edge), len(labels), len(graph)
    )
    size = needed if hidden_size is None else int(hidden_size)
    if size < needed:
        parts = [
            f"{len(variables)} variables ({', '.join(variables)})",
            f"{len(labels)} pre-attention channels",
            f"{len(node)} node inputs",
        ]
        return None, [
            Problem(
                "hidden_size",
                f"{program.name} needs hidden_size >= {needed} ({'; '.join(parts)}), "
                f"got {size}",
            )
        ]
    layout = Layout(
        hidden_size=size,
        hidden=_pad(variables, size),
        node=_pad(node, size),
        edge=_pad(edge, size),
        pre_attention=_pad(labels, size),
        channels=tuple(channels),
        graph=_pad(graph, size),
    )
    return layout, []
