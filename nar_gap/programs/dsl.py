"""Graph programs: the small language that nar_gap compiles into GATv2 weights.

A graph program says, in terms one GATv2 step can execute, how every node's
state changes in one round of an algorithm (one CLRS hint step):

* **Variables** (:class:`Variable`) are named scalars laid out in the hidden
  state, one channel each.  All start at 0 (the hidden state before step 0 is
  zero), so anything a node needs at step 0 comes from the inputs ``pos`` and
  ``s``.  Values stay >= 0 because every update ends in a ReLU.
* **Expressions** (:class:`Expr`) are affine maps of a node's variables and
  node inputs (``pos``, ``s``), or of an edge input (``A``).  They are what a
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
:func:`nar_gap.interpreter.run_program` and compiled by
:func:`nar_gap.compiler.compile_program`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Literal

NODE_INPUTS: tuple[str, ...] = ("pos", "s")  # node inputs a program may read
EDGE_INPUTS: tuple[str, ...] = ("A",)  # edge inputs a program may read

VariableKind = Literal["flag", "id", "distance"]
DecoderKind = Literal["mask", "scalar", "pointer"]


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
        merged = {name: float(c) for name, c in coefs.items() if c != 0.0}
        return Expr(tuple(sorted(merged.items())), float(const))

    def coefficients(self) -> dict[str, float]:
        return dict(self.terms)

    def refs(self) -> tuple[str, ...]:
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
        parts = [
            f"{c:+g}*{n}" if c not in (1.0, -1.0) else f"{'+' if c > 0 else '-'}{n}"
            for n, c in self.terms
        ]
        if self.const or not parts:
            parts.append(f"{self.const:+g}")
        text = " ".join(parts)
        return text[1:] if text.startswith("+") else text


def var(name: str) -> Expr:
    """A hidden variable of the node being read."""
    return Expr(((name, 1.0),))


def inp(name: str) -> Expr:
    """A node input (``pos`` or ``s``) of the node being read."""
    return Expr(((name, 1.0),))


def edge(name: str = "A") -> Expr:
    """An edge input of the pair being read (only in selection criteria)."""
    return Expr(((name, 1.0),))


ZERO = Expr()


# ------------------------------------------------------------------ selection


@dataclasses.dataclass(frozen=True)
class Eligible:
    """Senders whose ``flag`` (a sender expression valued 0/1) is 1 come first."""

    flag: Expr


@dataclasses.dataclass(frozen=True)
class Minimise:
    """Among senders with ``among == 1``: the smallest ``value_j (+ A_ij)``
    first.  Senders outside ``among`` rank above all scored ones within this
    criterion (they were already ordered by an earlier :class:`Eligible`).
    """

    value: Expr
    among: Expr
    edge: str | None = None


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


@dataclasses.dataclass(frozen=True)
class Prefer:
    """The sender whose id equals the receiver's ``receiver_id`` first
    (``pos_i``: self-selection; a stored predecessor id: keep the parent).
    """

    receiver_id: Expr


Criterion = Eligible | Minimise | LowestId | Prefer


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


@dataclasses.dataclass(frozen=True)
class Decoder:
    """How a CLRS hint and/or output is read from the *new* state.

    ``mask``: 1 iff ``expr > 1/2``; ``scalar``: ``expr``; ``pointer``: the node
    whose ``pos`` equals ``expr``.  ``probe`` is the CLRS probe name; one
    decoder may serve a hint and an output of the same name pattern
    (``pi_h`` and ``pi``) through ``probes``.
    """

    probes: tuple[str, ...]
    kind: DecoderKind
    expr: Expr


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
    """

    name: str
    algorithm: str
    variables: tuple[Variable, ...]
    selection: Selection
    updates: tuple[Update, ...]
    decoders: tuple[Decoder, ...]
    definitions: tuple[tuple[str, Expr], ...] = ()
    doc: str = ""

    def variable_names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.variables)

    def update_for(self, name: str) -> Update:
        for update in self.updates:
            if update.target == name:
                return update
        raise KeyError(f"program {self.name!r} has no update for {name!r}")

    @property
    def uses_edge_values(self) -> bool:
        return any(u.edge is not None for u in self.updates)

    def edge_inputs(self) -> tuple[str, ...]:
        names = {u.edge for u in self.updates if u.edge}
        for c in self.selection.criteria:
            if isinstance(c, Minimise) and c.edge:
                names.add(c.edge)
        return tuple(sorted(names))
