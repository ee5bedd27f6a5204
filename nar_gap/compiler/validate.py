"""Check a graph program before any matrix exists; report every problem at once."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from nar_gap.programs.dsl import (
    EDGE_INPUTS,
    GRAPH_HINT_PREFIX,
    HINT_PREFIX,
    NODE_INPUTS,
    Eligible,
    Expr,
    GraphProgram,
    Linked,
    LowestId,
    Minimise,
    Prefer,
    hint_probe,
    is_graph_hint,
    is_hint,
    without_graph_hints,
)
from nar_gap.tasks.specs import Location, Stage, Type, get_spec

# A program's decoder kind -> the CLRS (type, location) it produces.
_DECODER_TYPES = {
    "mask": (Type.MASK, Location.NODE),
    "scalar": (Type.SCALAR, Location.NODE),
    "pointer": (Type.POINTER, Location.NODE),
    "categorical": (Type.CATEGORICAL, Location.NODE),
    "mask_one": (Type.MASK_ONE, Location.NODE),
    "graph_scalar": (Type.SCALAR, Location.GRAPH),
}


@dataclasses.dataclass(frozen=True)
class Problem:
    """One thing wrong with a program; ``where`` names the variable or probe."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


class CompileError(ValueError):
    """A program that cannot be compiled; the message lists every problem."""

    def __init__(self, program: str, problems: list[Problem]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"cannot compile program {program!r}:\n{lines}")


def node_inputs(algorithm: str) -> tuple[str, ...]:
    """The node inputs (``pos``, ``s``) ``algorithm`` has: DFS has no source."""
    try:
        spec = get_spec(algorithm)
    except ValueError:
        return NODE_INPUTS
    return tuple(n for n in NODE_INPUTS if n in spec and spec[n][0] == Stage.INPUT)


# The hint types a program may read back: one value per node, as encoded.
_READABLE_HINT_TYPES = (Type.MASK, Type.MASK_ONE, Type.SCALAR)


def readable_hints(program: GraphProgram) -> frozenset[str]:
    """The ``hint:<probe>`` references ``program`` may read.

    Node hints of type mask, mask_one or scalar, and each class
    (``hint:<probe>#<c>``) of a categorical one, that the program decodes
    itself: the interpreter feeds back its own decoded value, so a hint it
    does not decode would have no value to feed back.  (Pointer hints are
    encoded as edge features; the language does not read them yet.)
    """
    try:
        spec = get_spec(program.algorithm)
    except ValueError:
        return frozenset()
    readable = set()
    for decoder in program.decoders:
        for name in decoder.probes:
            stage, location, typ = spec.get(name, (None, None, None))
            if stage != Stage.HINT or location != Location.NODE:
                continue
            if typ in _READABLE_HINT_TYPES:
                readable.add(HINT_PREFIX + name)
            elif typ == Type.CATEGORICAL and decoder.kind == "categorical":
                readable |= {
                    f"{HINT_PREFIX}{name}#{c}" for c in range(len(decoder.classes))
                }
    return frozenset(readable)


def readable_graph_hints(program: GraphProgram) -> frozenset[str]:
    """The ``graph_hint:<probe>`` references a graph decoder may read.

    The graph scalar hints the program decodes itself (DFS's ``time``).
    """
    try:
        spec = get_spec(program.algorithm)
    except ValueError:
        return frozenset()
    return frozenset(
        GRAPH_HINT_PREFIX + name
        for decoder in program.decoders
        if decoder.kind == "graph_scalar"
        for name in decoder.probes
        if spec.get(name, (None,))[0] == Stage.HINT
    )


def _check_graph_reads(
    expr: Expr, where: str, readable: frozenset[str]
) -> list[Problem]:
    """A graph decoder's ``graph_hint`` references: only hints it decodes."""
    return [
        Problem(
            where,
            f"cannot read graph hint {hint_probe(ref)!r}: a graph decoder reads "
            "back only the graph scalar hints the program decodes itself "
            f"(here: {sorted(readable) or 'none'})",
        )
        for ref in expr.refs()
        if is_graph_hint(ref) and ref not in readable
    ]


def _check_node_expr(
    expr: Expr,
    where: str,
    names: set[str],
    hints: frozenset[str] = frozenset(),
    inputs: tuple[str, ...] = NODE_INPUTS,
) -> list[Problem]:
    problems = []
    for ref in expr.refs():
        if is_graph_hint(ref):
            problems.append(
                Problem(
                    where,
                    f"graph hint {hint_probe(ref)!r} read where a node value is "
                    "needed: CLRS's graph features reach only the attention "
                    "logits and the graph decoders, so only a graph_scalar "
                    "decoder reads it",
                )
            )
        elif is_hint(ref):
            if ref not in hints:
                problems.append(
                    Problem(
                        where,
                        f"cannot read hint {ref[len(HINT_PREFIX) :]!r}: a program "
                        "reads back only the mask, mask_one and scalar node hints "
                        "and the classes of the categorical ones it decodes "
                        f"itself (here: {sorted(hints) or 'none'})",
                    )
                )
        elif ref in EDGE_INPUTS:
            problems.append(
                Problem(where, f"edge input {ref!r} used where only node values exist")
            )
        elif ref in NODE_INPUTS and ref not in inputs:
            problems.append(Problem(where, f"the algorithm has no input {ref!r}"))
        elif ref not in names and ref not in NODE_INPUTS:
            problems.append(
                Problem(
                    where,
                    f"unknown reference {ref!r}; known: variables "
                    f"{sorted(names)} and node inputs {list(NODE_INPUTS)}",
                )
            )
    return problems


def _expr_checker(program: GraphProgram) -> Callable[[Expr, str], list[Problem]]:
    """``check(expr, where)``: the problems of one node expression of ``program``."""
    known = {v.name for v in program.variables}
    hints = readable_hints(program)
    inputs = node_inputs(program.algorithm)

    def check(expr: Expr, where: str) -> list[Problem]:
        return _check_node_expr(expr, where, known, hints, inputs)

    return check


def _check_variables(program: GraphProgram) -> list[Problem]:
    names = [v.name for v in program.variables]
    problems = []
    if not names:
        problems.append(Problem(program.name, "a program needs at least one variable"))
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(Problem(name, "variable declared more than once"))
    for name in names:
        if name in NODE_INPUTS or name in EDGE_INPUTS:
            problems.append(Problem(name, "a variable cannot take an input's name"))
    return problems


def _check_updates(program: GraphProgram) -> list[Problem]:
    names = [v.name for v in program.variables]
    known = set(names)
    targets = [u.target for u in program.updates]
    problems = []
    for name in names:
        if targets.count(name) == 0:
            problems.append(Problem(name, "variable has no update rule"))
        elif targets.count(name) > 1:
            problems.append(Problem(name, "variable has more than one update rule"))
    check = _expr_checker(program)
    for update in program.updates:
        where = update.target
        if update.target not in known:
            problems.append(Problem(where, "update of an undeclared variable"))
        problems += check(update.own, f"{where} (own)")
        problems += check(update.selected, f"{where} (selected)")
        if update.edge is not None and update.edge not in EDGE_INPUTS:
            problems.append(
                Problem(
                    where,
                    f"unknown edge input {update.edge!r}; known: {list(EDGE_INPUTS)}",
                )
            )
    return problems


def _check_edge_channel(program: GraphProgram) -> list[Problem]:
    """Edge values reach only hidden channel 0 (the paper's edge information)."""
    names = [v.name for v in program.variables]
    edge_targets = [u.target for u in program.updates if u.edge is not None]
    problems = []
    if len(edge_targets) > 1:
        problems.append(
            Problem(
                ", ".join(edge_targets),
                "edge values reach only hidden channel 0: at most one update may "
                "add an edge input",
            )
        )
    if edge_targets and names and edge_targets[0] != names[0]:
        problems.append(
            Problem(
                edge_targets[0],
                "a variable that adds edge values must be the first variable (the "
                "edge information feeds channel 0 of each head)",
            )
        )
    return problems


def _eligible(c: Eligible) -> tuple[list[Expr], list[str]]:
    wrong = [] if c.edge is None or c.edge in EDGE_INPUTS else [c.edge]
    return [c.flag], [f"unknown edge input {e!r}" for e in wrong]


def _linked(c: Linked) -> tuple[list[Expr], list[str]]:
    known = c.edge in EDGE_INPUTS
    return [], [] if known else [f"unknown edge input {c.edge!r}"]


def _minimise(c: Minimise) -> tuple[list[Expr], list[str]]:
    wrong = [] if c.edge is None or c.edge in EDGE_INPUTS else [c.edge]
    return [c.value, c.among], [f"unknown edge input {e!r}" for e in wrong]


def _lowest_id(c: LowestId) -> tuple[list[Expr], list[str]]:
    exprs = [e for e in (c.among, c.unless_receiver) if e is not None]
    ok = c.resolution in ("nodes", "ties")
    return exprs, [] if ok else ["resolution must be 'nodes' or 'ties'"]


def _prefer(c: Prefer) -> tuple[list[Expr], list[str]]:
    return [c.receiver_id, c.sender_id], []


# One checker per criterion kind: (the node expressions it reads, its own
# problems).  tests/compiler/test_compiler.py checks every kind of the language is here.
CRITERION_CHECKS: dict[type, Callable[[Any], tuple[list[Expr], list[str]]]] = {
    Linked: _linked,
    Eligible: _eligible,
    Minimise: _minimise,
    LowestId: _lowest_id,
    Prefer: _prefer,
}


def _check_selection(program: GraphProgram) -> list[Problem]:
    check_expr = _expr_checker(program)
    criteria = program.selection.criteria
    problems = (
        [] if criteria else [Problem("selection", "needs at least one criterion")]
    )
    for k, criterion in enumerate(criteria):
        where = f"selection[{k}] {type(criterion).__name__}"
        check = CRITERION_CHECKS.get(type(criterion))
        if check is None:
            problems.append(Problem(where, f"unknown criterion {criterion!r}"))
            continue
        exprs, messages = check(criterion)
        problems += [Problem(where, message) for message in messages]
        for expr in exprs:
            problems += check_expr(expr, where)
    return problems


def _check_decoders(program: GraphProgram) -> list[Problem]:
    """Every CLRS hint and output decoded once, as its type and location."""
    check_expr = _expr_checker(program)
    try:
        spec = get_spec(program.algorithm)
    except ValueError as error:
        return [Problem(program.name, str(error))]
    problems: list[Problem] = []
    decoded: list[str] = []
    graph_readable = readable_graph_hints(program)
    for decoder in program.decoders:
        where = f"decoder {decoder.probes}"
        for expr in decoder.exprs():
            if decoder.kind == "graph_scalar":
                problems += _check_graph_reads(expr, where, graph_readable)
                expr = without_graph_hints(expr)
            problems += check_expr(expr, where)
        if (decoder.kind == "categorical") != bool(decoder.classes):
            problems.append(
                Problem(where, "a categorical decoder, and only it, has classes")
            )
        for probe in decoder.probes:
            decoded.append(probe)
            if probe not in spec or spec[probe][0] == Stage.INPUT:
                problems.append(
                    Problem(probe, f"not a hint or output of {program.algorithm!r}")
                )
            elif _DECODER_TYPES.get(decoder.kind) != (spec[probe][2], spec[probe][1]):
                problems.append(
                    Problem(
                        probe,
                        f"decoded as {decoder.kind} but CLRS has a {spec[probe][1]} "
                        f"{spec[probe][2]}",
                    )
                )
    for probe, (stage, _, _) in spec.items():
        if stage in (Stage.HINT, Stage.OUTPUT) and probe not in decoded:
            problems.append(Problem(probe, f"CLRS {stage} has no decoder"))
    for probe in sorted({p for p in decoded if decoded.count(p) > 1}):
        problems.append(Problem(probe, "decoded more than once"))
    return problems


_CHECKS = (
    _check_variables,
    _check_updates,
    _check_edge_channel,
    _check_selection,
    _check_decoders,
)


def validate(program: GraphProgram) -> list[Problem]:
    """Every problem of ``program``; an empty list means it can be compiled."""
    return [problem for check in _CHECKS for problem in check(program)]
