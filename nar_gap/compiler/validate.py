"""Check a graph program before any matrix exists; report every problem at once."""

from __future__ import annotations

import dataclasses

from nar_gap.programs.dsl import (
    EDGE_INPUTS,
    NODE_INPUTS,
    Eligible,
    Expr,
    GraphProgram,
    LowestId,
    Minimise,
    Prefer,
)
from nar_gap.specs import get_spec

_DECODER_TYPES = {"mask": "mask", "scalar": "scalar", "pointer": "pointer"}


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


def _check_node_expr(expr: Expr, where: str, names: set[str]) -> list[Problem]:
    problems = []
    for ref in expr.refs():
        if ref in EDGE_INPUTS:
            problems.append(
                Problem(where, f"edge input {ref!r} used where only node values exist")
            )
        elif ref not in names and ref not in NODE_INPUTS:
            problems.append(
                Problem(
                    where,
                    f"unknown reference {ref!r}; known: variables "
                    f"{sorted(names)} and node inputs {list(NODE_INPUTS)}",
                )
            )
    return problems


def validate(program: GraphProgram) -> list[Problem]:
    """Every problem of ``program``; an empty list means it can be compiled."""
    problems: list[Problem] = []
    names = [v.name for v in program.variables]
    known = set(names)
    if not names:
        problems.append(Problem(program.name, "a program needs at least one variable"))
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(Problem(name, "variable declared more than once"))
    for name in names:
        if name in NODE_INPUTS or name in EDGE_INPUTS:
            problems.append(Problem(name, "a variable cannot take an input's name"))

    targets = [u.target for u in program.updates]
    for name in names:
        if targets.count(name) == 0:
            problems.append(Problem(name, "variable has no update rule"))
        elif targets.count(name) > 1:
            problems.append(Problem(name, "variable has more than one update rule"))
    edge_targets = []
    for update in program.updates:
        where = update.target
        if update.target not in known:
            problems.append(Problem(where, "update of an undeclared variable"))
        problems += _check_node_expr(update.own, f"{where} (own)", known)
        problems += _check_node_expr(update.selected, f"{where} (selected)", known)
        if update.edge is not None:
            edge_targets.append(update.target)
            if update.edge not in EDGE_INPUTS:
                problems.append(
                    Problem(
                        where,
                        f"unknown edge input {update.edge!r}; known: "
                        f"{list(EDGE_INPUTS)}",
                    )
                )
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

    criteria = program.selection.criteria
    if not criteria:
        problems.append(Problem("selection", "needs at least one criterion"))
    for k, criterion in enumerate(criteria):
        where = f"selection[{k}] {type(criterion).__name__}"
        exprs: list[Expr] = []
        if isinstance(criterion, Eligible):
            exprs = [criterion.flag]
        elif isinstance(criterion, Minimise):
            exprs = [criterion.value, criterion.among]
            if criterion.edge is not None and criterion.edge not in EDGE_INPUTS:
                problems.append(
                    Problem(where, f"unknown edge input {criterion.edge!r}")
                )
        elif isinstance(criterion, LowestId):
            exprs = [e for e in (criterion.among, criterion.unless_receiver) if e]
            if criterion.resolution not in ("nodes", "ties"):
                problems.append(Problem(where, "resolution must be 'nodes' or 'ties'"))
        elif isinstance(criterion, Prefer):
            exprs = [criterion.receiver_id]
        else:
            problems.append(Problem(where, f"unknown criterion {criterion!r}"))
        for expr in exprs:
            problems += _check_node_expr(expr, where, known)

    try:
        spec = get_spec(program.algorithm)
    except ValueError as error:
        return problems + [Problem(program.name, str(error))]
    decoded: list[str] = []
    for decoder in program.decoders:
        problems += _check_node_expr(decoder.expr, f"decoder {decoder.probes}", known)
        for probe in decoder.probes:
            decoded.append(probe)
            if probe not in spec or spec[probe][0] == "input":
                problems.append(
                    Problem(probe, f"not a hint or output of {program.algorithm!r}")
                )
            elif _DECODER_TYPES.get(decoder.kind) != spec[probe][2]:
                problems.append(
                    Problem(
                        probe,
                        f"decoded as {decoder.kind} but CLRS type is {spec[probe][2]}",
                    )
                )
            elif spec[probe][1] != "node":
                problems.append(Problem(probe, "only node probes can be decoded"))
    for probe, (stage, _, _) in spec.items():
        if stage in ("hint", "output") and probe not in decoded:
            problems.append(Problem(probe, f"CLRS {stage} has no decoder"))
    for probe in sorted({p for p in decoded if decoded.count(p) > 1}):
        problems.append(Problem(probe, "decoded more than once"))
    return problems
