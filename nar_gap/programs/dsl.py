"""Graph programs: the small language that nar_gap compiles into GATv2 weights.

A graph program says, in terms one GATv2 step can execute, how every node's
state changes in one round of an algorithm (one CLRS hint step):

* **Variables** (:class:`Variable`) are named scalars laid out in the hidden
  state, one channel each.  All start at 0 (the hidden state before step 0 is
  zero), so anything a node needs at step 0 comes from the inputs ``pos`` and
  ``s``.  Values stay >= 0 because every update ends in a ReLU.
* **Expressions** (:class:`Expr`) are affine maps of a node's variables,
  node inputs (``pos``, ``s``) and fed-back hints (:func:`hint`), or of an
  edge input (``A``).  They are what a
  linear layer can compute, so they are the only arithmetic in a program.
* **Selection** (:class:`Selection`) says whom each receiver attends to: an
  ordered list of criteria, compared lexicographically over the candidates
  (the receiver itself and its neighbours), e.g. "eligible senders first, then
  the smallest distance, then the current predecessor, then the smallest id".
  The compiler turns the order into logit magnitudes; the interpreter compares
  the criteria exactly.  Softmax then picks one sender.
* **Updates** (:class:`Update`) give every variable's next value as
  ``relu(own(i) + selected(j*) [+ edge(i, j*)])``: ``own`` reads the receiver
  (the GATv2 skip path), ``selected`` reads the chosen sender (the values),
  ``edge`` adds the chosen edge's weight (the paper's edge information).
* **Decoders** (:class:`Decoder`) turn expressions of the new state into the
  CLRS hints and outputs (mask, scalar, or pointer = "the node whose ``pos``
  equals this id").

Everything here is a frozen dataclass without numpy: a program is a value,
checked by :func:`nar_gap.compiler.validate`, run by
:func:`nar_gap.programs.interpreter.run_program` and compiled by
:func:`nar_gap.compiler.compile_program`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Literal

NODE_INPUTS: tuple[str, ...] = ("pos", "s")  # node inputs a program may read
EDGE_INPUTS: tuple[str, ...] = ("A", "adj")  # edge inputs a program may read
# A reference ``hint:<probe>`` reads the hint the network fed back (see hint()),
# ``graph_hint:<probe>`` a fed-back graph hint (see graph_hint()).
HINT_PREFIX = "hint:"
GRAPH_HINT_PREFIX = "graph_hint:"

VariableKind = Literal["flag", "id", "distance"]
DecoderKind = Literal[
    "mask", "scalar", "pointer", "categorical", "mask_one", "graph_scalar"
]


@dataclasses.dataclass(frozen=True)
class Variable:
    """One hidden channel.

    Attributes:
      name: unique name; a variable that reproduces a CLRS probe by itself
        carries that probe's name.
      kind: ``flag`` (0/1), ``id`` (a node id as its ``pos`` value, or 0) or
        ``distance`` (a non-negative real); used by validation and plots.
      doc: one line saying what the channel holds, shown in layouts and plots.
    """

    name: str
    kind: VariableKind
    doc: str


@dataclasses.dataclass(frozen=True)
class Expr:
    """``const + Σ coef * ref``; refs are variable names, node inputs or ``A``.

    Build with :func:`var`, :func:`inp`, :func:`edge`, ``+``, ``-`` and
    multiplication by a number.  Terms are kept sorted, so equal expressions
    compare equal.
    """

    terms: tuple[tuple[str, float], ...] = ()
    const: float = 0.0

    @staticmethod
    def of(coefs: Mapping[str, float], const: float = 0.0) -> Expr:
        """The expression ``const + Σ coefs[name] * name`` (zero terms dropped)."""
        merged = {name: float(c) for name, c in coefs.items() if c != 0.0}
        return Expr(tuple(sorted(merged.items())), float(const))

    def coefficients(self) -> dict[str, float]:
        """``{reference: coefficient}``."""
        return dict(self.terms)

    def refs(self) -> tuple[str, ...]:
        """The names this expression reads."""
        return tuple(name for name, _ in self.terms)

    def __add__(self, other: Expr | float) -> Expr:
        if not isinstance(other, Expr):
            return Expr(self.terms, self.const + float(other))
        coefs = self.coefficients()
        for name, c in other.terms:
            coefs[name] = coefs.get(name, 0.0) + c
        return Expr.of(coefs, self.const + other.const)

    __radd__ = __add__

    def __neg__(self) -> Expr:
        return self * -1.0

    def __sub__(self, other: Expr | float) -> Expr:
        return self + (-other if isinstance(other, Expr) else -float(other))

    def __rsub__(self, other: float) -> Expr:
        return -self + other

    def __mul__(self, scale: float) -> Expr:
        return Expr.of({n: c * scale for n, c in self.terms}, self.const * scale)

    __rmul__ = __mul__

    def __str__(self) -> str:
        """``2*a - b + 0.5``: signs between terms, coefficients 1 left out."""
        terms = [(c, n) for n, c in self.terms]
        if self.const or not terms:
            terms.append((self.const, ""))
        text = ""
        for index, (c, name) in enumerate(terms):
            size = abs(c)
            body = (
                name
                if size == 1.0 and name
                else f"{size:g}*{name}"
                if name
                else f"{size:g}"
            )
            sign = "-" if c < 0 else "+"
            text += (("-" if c < 0 else "") if index == 0 else f" {sign} ") + body
        return text


def var(name: str) -> Expr:
    """A hidden variable of the node being read."""
    return Expr(((name, 1.0),))


def inp(name: str) -> Expr:
    """A node input (``pos`` or ``s``) of the node being read."""
    return Expr(((name, 1.0),))


def hint(probe: str, category: int | None = None) -> Expr:
    """The fed-back value of the node hint ``probe`` at the node being read.

    For a categorical hint, ``category`` names the class whose probability
    (0/1 when exact) is read: ``hint("color", 1)`` is 1 on grey nodes.

    CLRS's network encodes at step ``t`` the hints it decoded at step
    ``t - 1`` (at step 0, dm-clrs's own ``hint[0]``), so a program may keep
    state in a hint instead of a hidden variable: the interpreter feeds back
    the hints its decoders produced, the compiler gives the hint's encoder a
    node dimension.  A program that reads a hint is no longer independent of
    teacher forcing and re-prediction.  The validator accepts node hints of
    type mask, mask_one or scalar, and the classes of categorical ones, that
    the program itself decodes.
    """
    ref = HINT_PREFIX + probe + ("" if category is None else f"#{int(category)}")
    return Expr(((ref, 1.0),))


def graph_hint(probe: str) -> Expr:
    """The fed-back value of the graph scalar hint ``probe`` (DFS's ``time``).

    CLRS encodes graph hints into graph features ``g``, which reach only the
    attention logits and the graph decoders (``L1(max_i h_i) + L2(g)``),
    never a node's state.  So the validator accepts ``graph_hint`` only in
    ``graph_scalar`` decoders, where it is read once per graph (not maxed
    over nodes): ``time' = graph_hint("time") + 0.01 * event`` is a clock the
    network keeps in its own feedback loop.  Like :func:`hint`, the program
    must decode the hint itself.
    """
    return Expr(((GRAPH_HINT_PREFIX + probe, 1.0),))


def is_graph_hint(ref: str) -> bool:
    """Whether ``ref`` reads a fed-back graph hint (``graph_hint:<probe>``)."""
    return ref.startswith(GRAPH_HINT_PREFIX)


def without_graph_hints(expr: Expr) -> Expr:
    """``expr`` with its ``graph_hint`` terms left out: what reads nodes."""
    return Expr.of({r: c for r, c in expr.terms if not is_graph_hint(r)}, expr.const)


def is_hint(ref: str) -> bool:
    """Whether ``ref`` reads a fed-back hint (``hint:<probe>``)."""
    return ref.startswith(HINT_PREFIX)


def hint_probe(ref: str) -> str:
    """The probe a ``hint:`` or ``graph_hint:`` reference reads (class dropped)."""
    prefix = GRAPH_HINT_PREFIX if is_graph_hint(ref) else HINT_PREFIX
    return ref[len(prefix) :].split("#")[0]


def hint_category(ref: str) -> int | None:
    """The class a ``hint:<probe>#<class>`` reference reads (None: not categorical)."""
    _, _, category = ref.partition("#")
    return int(category) if category else None


def edge(name: str = "A") -> Expr:
    """An edge input of the pair being read (only in selection criteria)."""
    return Expr(((name, 1.0),))


ZERO = Expr()


# ------------------------------------------------------------------ selection


@dataclasses.dataclass(frozen=True)
class Eligible:
    """Senders whose ``flag`` (a sender expression valued 0/1) is 1 come first.

    With ``edge``, a sender is eligible only across an edge of that input
    too: ``flag_j + edge_ij - 1 = 1``, e.g. DFS's "a white out-neighbour"
    (``A_ij = 1`` is the edge ``i -> j``; attention runs over both
    directions).  Then ``flag`` may also take the value -1 (a difference of
    two flags, ``W - U``: white and not the current node): the lowering
    cancels the LeakyReLU's leak, so every ineligible sender gets the same
    logit, whatever its flag.
    """

    flag: Expr
    edge: str | None = None

    def __str__(self) -> str:
        if self.edge is None:
            return f"eligible senders first: {self.flag} = 1"
        return f"eligible senders first: {self.flag} = 1 and {self.edge}_ij = 1"


@dataclasses.dataclass(frozen=True)
class Linked:
    """Senders joined to the receiver in the input graph (``edge`` = 1) first.

    CLRS's processor attends over more than the input graph: every pointer a
    step decodes joins a node and its pointer's target for the next step
    (dm-clrs's ``accum_adj_mat`` adds ``pointer + pointer.T`` to the
    adjacency).  While every decoded pointer is right that adds nothing (a
    parent is a neighbour), but one wrong pointer opens an edge that is not
    in the graph, with edge inputs 0 across it: for Bellman-Ford a path of
    length 0.  This criterion keeps a program to the input graph's edges,
    the candidates the interpreter and dm-clrs's algorithm see.  It is
    lowered as a penalty on ``1 - edge_ij``, so the logits of real edges are
    exactly those without it.
    """

    edge: str = "adj"

    def __str__(self) -> str:
        return f"senders joined in the input graph first: {self.edge}_ij = 1"


@dataclasses.dataclass(frozen=True)
class Minimise:
    """Among senders with ``among == 1``: the smallest ``value_j (+ A_ij)`` first.

    Senders outside ``among`` rank above all scored ones within this criterion
    (they were already ordered by an earlier :class:`Eligible`).
    """

    value: Expr
    among: Expr
    edge: str | None = None

    def __str__(self) -> str:
        value = f"{self.value} + {self.edge}_ij" if self.edge else str(self.value)
        return f"smallest {value}, among senders with {self.among} = 1"


@dataclasses.dataclass(frozen=True)
class LowestId:
    """The smallest sender id (``pos``) first: CLRS's loop-order tie-break.

    With ``among`` and ``unless_receiver`` the criterion only ranks senders
    with ``among == 1`` at receivers with ``unless_receiver == 0``; elsewhere
    it is indifferent.  ``resolution`` says how many ids it must tell apart:
    ``"nodes"`` (every id of the largest graph, BFS's parent choice) or
    ``"ties"`` (only exact ties on small graphs; cheap, see CompilerConfig).
    """

    among: Expr | None = None
    unless_receiver: Expr | None = None
    resolution: Literal["nodes", "ties"] = "nodes"

    def __str__(self) -> str:
        text = "lowest sender id (pos)"
        if self.among is not None:
            text += f", among senders with {self.among} = 1"
        if self.unless_receiver is not None:
            text += f", at receivers with {self.unless_receiver} = 0"
        return f"{text} (resolves {self.resolution})"


@dataclasses.dataclass(frozen=True)
class Prefer:
    """The sender whose ``sender_id`` equals the receiver's ``receiver_id`` first.

    With the default ``sender_id = pos`` the receiver names the sender:
    ``Prefer(pos)`` is self-selection, ``Prefer(pi)`` keeps the parent.  With
    ``receiver_id = pos`` and a stored id as ``sender_id`` the sender names the
    receiver: ``Prefer(inp("pos"), sender_id=var("next"))`` finds the
    neighbour whose ``next`` points here (a pointer followed backwards: how
    the node DFS pushes learns who pushed it, since attention runs along the
    receiver's edges, not the scanner's).  Both sides must hold ids, values on
    the ``pos`` grid ``k / N``; the compiled bump is flat for every other
    value on that grid.
    """

    receiver_id: Expr
    sender_id: Expr = dataclasses.field(default_factory=lambda: inp("pos"))

    def __str__(self) -> str:
        if self.sender_id == inp("pos"):
            return f"the sender whose id is the receiver's {self.receiver_id}"
        return f"the sender whose {self.sender_id} is the receiver's {self.receiver_id}"


Criterion = Linked | Eligible | Minimise | LowestId | Prefer


@dataclasses.dataclass(frozen=True)
class Selection:
    """Criteria in decreasing priority; the first that differs decides."""

    criteria: tuple[Criterion, ...]


# ------------------------------------------------------------ updates, decoders


@dataclasses.dataclass(frozen=True)
class Update:
    """``target' = relu(own(receiver) + selected(sender) [+ A(receiver, sender)])``.

    ``own`` and ``selected`` are expressions of node variables and node inputs,
    read at the receiver and at the selected sender; ``edge`` names an edge
    input added for the selected pair (needs the paper's edge information and
    the target laid out on channel 0).
    """

    target: str
    own: Expr = ZERO
    selected: Expr = ZERO
    edge: str | None = None

    def __str__(self) -> str:
        """``x' = relu((own)_i + (selected)_j* + A_ij*)``, zero parts left out."""
        parts = [
            f"({expr})_{where}"
            for expr, where in ((self.own, "i"), (self.selected, "j*"))
            if expr != ZERO
        ]
        if self.edge:
            parts.append(f"{self.edge}_ij*")
        return f"{self.target}' = relu({' + '.join(parts) or '0'})"


@dataclasses.dataclass(frozen=True)
class Decoder:
    """How a CLRS hint and/or output is read from the *new* state.

    Per node: ``mask``: 1 iff ``expr > 1/2``; ``scalar``: ``expr``;
    ``pointer``: the node whose ``pos`` equals ``expr``; ``categorical``: the
    class ``c`` whose ``classes[c]`` is largest (``expr`` unused).

    Over all nodes (CLRS decodes these with a softmax or a max across the
    graph, which is how a choice reaches nodes that cannot see it):
    ``mask_one``: the one node whose ``expr`` is largest (compiled logits
    ``pointer_scale * expr``: values ``1 / resolution_nodes`` apart are told
    apart with the full margin; the interpreter refuses exact ties);
    ``graph_scalar``: ``const + Σ coef * max over nodes of ref`` for
    ``expr = const + Σ coef * ref`` (CLRS's graph decoder is linear in
    per-channel maxima).

    ``probes`` are CLRS probe names; one decoder may serve a hint and an
    output of the same name pattern (``pi_h`` and ``pi``).
    """

    probes: tuple[str, ...]
    kind: DecoderKind
    expr: Expr = dataclasses.field(default_factory=Expr)
    classes: tuple[Expr, ...] = ()

    def exprs(self) -> tuple[Expr, ...]:
        """Every expression the decoder reads."""
        return (self.expr, *self.classes)


@dataclasses.dataclass(frozen=True)
class GraphProgram:
    """A whole graph program.

    Attributes:
      name: program name (``bfs``, ``bellman_ford``).
      algorithm: the CLRS algorithm whose trace it reproduces.
      variables: hidden variables, in layout order (a tuple, never a dict).
      selection: whom each receiver attends to.
      updates: one per variable.
      decoders: CLRS hints and outputs.
      definitions: named expressions (documentation and plots only).
      doc: what the program does, in words.
      num_nodes: None for a program that runs graphs of every size; the one
        size it runs otherwise (DFS's ``v`` needs it: see
        ``locality.find_argmax_witness``).  Interpreter and compiled model
        refuse other sizes.
    """

    name: str
    algorithm: str
    variables: tuple[Variable, ...]
    selection: Selection
    updates: tuple[Update, ...]
    decoders: tuple[Decoder, ...]
    definitions: tuple[tuple[str, Expr], ...] = ()
    doc: str = ""
    num_nodes: int | None = None

    def check_size(self, node_counts) -> None:
        """Refuse graphs of another size than the one a sized program runs."""
        if self.num_nodes is None:
            return
        other = sorted({int(k) for k in node_counts} - {self.num_nodes})
        if other:
            raise ValueError(
                f"program {self.name!r} is built for graphs of {self.num_nodes} "
                f"nodes, got {other[0]}; build it for that size"
            )

    def variable_names(self) -> tuple[str, ...]:
        """The variables' names, in layout order."""
        return tuple(v.name for v in self.variables)

    def update_for(self, name: str) -> Update:
        """The update rule of variable ``name``."""
        for update in self.updates:
            if update.target == name:
                return update
        raise KeyError(f"program {self.name!r} has no update for {name!r}")

    @property
    def measures_distances(self) -> bool:
        """Whether it adds edge weights up as lengths (a Minimise or an edge update).

        Only then do the compiler's constants depend on the weight and
        distance ranges; an edge read as a flag (``Eligible(edge=...)``,
        ``Linked``) does not.
        """
        return self.uses_edge_values or any(
            isinstance(c, Minimise) for c in self.selection.criteria
        )

    @property
    def uses_edge_values(self) -> bool:
        """Whether an update adds an edge input (needs the paper's edge information)."""
        return any(u.edge is not None for u in self.updates)

    def hint_inputs(self) -> tuple[str, ...]:
        """The fed-back hints the program reads (``hint:<probe>`` references)."""
        exprs: list[Expr] = []
        for update in self.updates:
            exprs += [update.own, update.selected]
        exprs += [e for decoder in self.decoders for e in decoder.exprs()]
        for criterion in self.selection.criteria:
            exprs += [
                value for value in vars(criterion).values() if isinstance(value, Expr)
            ]
        return tuple(sorted({r for e in exprs for r in e.refs() if is_hint(r)}))

    def graph_hint_inputs(self) -> tuple[str, ...]:
        """The fed-back graph hints the program reads (``graph_hint:<probe>``)."""
        exprs = [e for decoder in self.decoders for e in decoder.exprs()]
        for update in self.updates:
            exprs += [update.own, update.selected]
        return tuple(sorted({r for e in exprs for r in e.refs() if is_graph_hint(r)}))

    def edge_inputs(self) -> tuple[str, ...]:
        """The edge inputs the program reads, in updates and criteria."""
        names = {u.edge for u in self.updates if u.edge}
        for c in self.selection.criteria:
            if isinstance(c, Minimise | Linked | Eligible) and c.edge:
                names.add(c.edge)
        return tuple(sorted(names))

    def sections(self) -> dict[str, list[tuple[str, ...]]]:
        """The program as rows of text, section by section (for printing)."""
        return {
            "variables": [(v.name, v.kind, v.doc) for v in self.variables],
            "selection (the first criterion that differs decides)": [
                (f"{k}.", str(c)) for k, c in enumerate(self.selection.criteria, 1)
            ],
            "updates (i: the receiver, j*: the sender it selected)": [
                (str(u),) for u in self.updates
            ],
            "decoders": [
                (
                    ", ".join(d.probes),
                    d.kind,
                    " | ".join(map(str, d.classes)) if d.classes else str(d.expr),
                )
                for d in self.decoders
            ],
        }

    def __str__(self) -> str:
        """A readable listing: one line per variable, criterion, update, decoder."""
        lines = [f"graph program {self.name!r} (CLRS algorithm {self.algorithm!r})"]
        for title, rows in self.sections().items():
            lines.append(f"{title}:")
            widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]) - 1)]
            for row in rows:
                cells = [
                    cell.ljust(w) for cell, w in zip(row, widths, strict=False)
                ] + [row[-1]]
                lines.append("  " + "  ".join(cells).rstrip())
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The same listing as HTML tables (JupyterLab shows this)."""
        from html import escape

        parts = [f"<p><b>graph program {escape(self.name)}</b></p>"]
        for title, rows in self.sections().items():
            body = "".join(
                "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>"
                for row in rows
            )
            parts.append(f"<p>{escape(title)}</p><table>{body}</table>")
        return "".join(parts)
