"""The paper against ours: one table per notebook, computed from the results files.

A notebook ends with :func:`write_comparison`'s table, one row per claim of
:data:`~nar_gap.paper.report.claims.CLAIMS` under it, each judged by its
rule (:mod:`~nar_gap.paper.report.rules`) on our results, and its prose says
what that table says; nothing else in a notebook, the README or docs/ states
a finding.

Verdicts (from :mod:`nar_gap.analysis.verdicts`): ``agree``, ``disagree``,
``inconclusive`` (the test cannot decide) and ``not testable here`` (our run
has not reached the paper's regime, or a results file or column is absent:
the evidence says what is missing and which notebook writes it).  Every row
carries its evidence: the test, n, and the p-value or interval; an undecided
one, what would decide it (:func:`decidable_at`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nar_gap.analysis.verdicts import (
    AGREE,
    DISAGREE,
    INCONCLUSIVE,
    NOT_TESTABLE,
    VERDICTS,
    Judgement,
)
from nar_gap.paper.experiments import ablations, outputs, profiles
from nar_gap.paper.report.claims import CLAIMS, Claim
from nar_gap.paper.report.rules import Absent, Verdict
from nar_gap.system import files

__all__ = [
    "AGREE",
    "COLUMNS",
    "DISAGREE",
    "INCONCLUSIVE",
    "NOT_TESTABLE",
    "VERDICTS",
    "comparison",
    "counts",
    "verdict_sentence",
    "write_comparison",
]

COLUMNS = (
    "where",
    "claim",
    "paper",
    "ours",
    "verdict",
    "protocol",
    "criterion",
    "evidence",
    "decidable_at",
)


def _judge(claim: Claim, results: Path) -> Verdict:
    """``claim.rule`` on ``results``; an absent file, row or column: `not testable`."""
    at = f" at profile {claim.profile}" if claim.profile else ""
    try:
        return claim.rule(results, **claim.params)
    except FileNotFoundError as error:
        name = Path(error.filename or "?").name
        missing = f"no {results.name}/{name}"
    except Absent as error:
        missing = str(error)
    return Verdict(
        missing,
        "",
        Judgement(NOT_TESTABLE, f"n = 0: {missing}: run notebook {claim.notebook}{at}"),
        needs=f"the results notebook {claim.notebook} writes{at}",
    )


def trained_sizes(profile: profiles.Profile, trained: str) -> profiles.Sizes:
    """The sizes ``profile`` trains a claim's models at (``Claim.trained``)."""
    if trained == "minimal":  # Table 15's lottery tickets
        return profiles.Sizes(
            profile.minimal_seeds, ablations.MINIMAL_HIDDEN_SIZE, profile.steps
        )
    if trained == "ablation":
        return profiles.Sizes(profile.seeds, profile.hidden_size, profile.steps)
    return profile.baseline_sizes(trained)


REACHING_PROFILES = ("cpu", "gpu", "paper")
"""The profiles ``decidable_at`` names, smallest first."""


def decidable_at(claim: Claim, verdict: Verdict, profile: str | None = None) -> str:
    """What would decide an undecided row: seeds x steps and the profile that has them.

    The seeds come from the row's own rule at the effect and spread it
    measured (``Judgement.seeds_needed``, :mod:`nar_gap.analysis.power`; per
    arm for a comparison of two), at the steps the row's models trained
    (``profile``'s sizes, the cpu profile's when unknown).  Empty for a
    decided row.
    """
    judged = verdict.judgement
    if judged.verdict in (AGREE, DISAGREE):
        return ""
    if verdict.needs:
        return verdict.needs
    if claim.trained is None:
        return "not more seeds: a deterministic check"
    count = judged.seeds_needed
    if count is None:
        return "no count of seeds: the measured effect is about zero against its bound"
    known = profiles.PROFILES.get(profile or "", profiles.CPU)
    steps = trained_sizes(known, claim.trained).steps
    for name in REACHING_PROFILES:
        sizes = trained_sizes(profiles.PROFILES[name], claim.trained)
        if sizes.seeds >= count and sizes.steps >= steps:
            return f"{count} seeds x {steps} steps (profile {name})"
    most = trained_sizes(profiles.PAPER, claim.trained).seeds
    return f"{count} seeds x {steps} steps (beyond the paper profile's {most})"


def comparison(
    notebook: str, results_dir: str | os.PathLike, profile: str | None = None
) -> list[dict[str, Any]]:
    """One row per claim of ``notebook``: the paper's, ours, verdict, evidence.

    ``profile``: the profile the results were made at (``decidable_at``'s
    steps).
    """
    results = Path(results_dir)
    rows = []
    for claim in (c for c in CLAIMS if c.notebook == notebook):
        verdict = _judge(claim, results)
        rows.append(
            {
                "where": claim.where,
                "claim": claim.claim,
                "paper": claim.paper,
                "ours": verdict.ours,
                "verdict": verdict.judgement.verdict,
                "protocol": verdict.protocol,
                "criterion": verdict.criterion,
                "evidence": verdict.judgement.evidence,
                "decidable_at": decidable_at(claim, verdict, profile),
            }
        )
    return rows


def comparison_file(notebook: str) -> str:
    """Notebook ``notebook``'s claims against our results (``"01"`` ...)."""
    return outputs.COMPARISON_FILE.format(notebook)


def write_comparison(
    notebook: str,
    results_dir: str | os.PathLike,
    metadata: dict[str, Any] | None = None,
) -> Path:
    """``results/paper_vs_ours_<notebook>.csv`` (with its sidecar)."""
    if not any(c.notebook == notebook for c in CLAIMS):
        known = sorted({c.notebook for c in CLAIMS})
        raise ValueError(f"no claims for notebook {notebook!r}; known: {known}")
    profile = (metadata or {}).get("profile")
    return files.write_table(
        Path(results_dir) / comparison_file(notebook),
        comparison(notebook, results_dir, profile),
        metadata,
        COLUMNS,
    )


def counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many claims got each verdict (all four, zeros included)."""
    found = dict.fromkeys(VERDICTS, 0)
    for row in rows:
        found[row["verdict"]] += 1
    return found


def verdict_sentence(rows: list[dict[str, Any]] | str | os.PathLike) -> str:
    """The sentence under a comparison table, written from its verdicts.

    ``rows``: :func:`comparison`'s rows, or the file :func:`write_comparison`
    wrote.
    """
    if isinstance(rows, (str, os.PathLike)):
        rows = files.read_table(rows)
    found = counts(rows)
    parts = [f"ours agree with {found[AGREE]}", f"disagree with {found[DISAGREE]}"]
    if found[INCONCLUSIVE]:
        parts.append(f"are inconclusive on {found[INCONCLUSIVE]}")
    if found[NOT_TESTABLE]:
        parts.append(f"cannot test {found[NOT_TESTABLE]} here")
    noun = "finding" if len(rows) == 1 else "findings"
    text = f"Of the paper's {len(rows)} {noun} here, " + ", ".join(parts) + "."
    for verdict, label in (
        (AGREE, "Reproduced"),
        (DISAGREE, "Not reproduced"),
        (INCONCLUSIVE, "Undecided"),
        (NOT_TESTABLE, "Not testable here"),
    ):
        claims = [r["claim"] for r in rows if r["verdict"] == verdict]
        if claims:
            text += f" {label}: " + "; ".join(claims) + "."
    return text
