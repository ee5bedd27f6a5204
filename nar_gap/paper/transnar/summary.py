"""TransNAR's scores summarised over seeds, and notebook 08's question answered.

Rows are notebook 08's per-seed rows (``transnar_<algorithm>.csv``), as the
study returns them or as the CSV reads back: one per model, seed and size,
with TransNAR's scores (:mod:`.scores`).  These functions read them only;
training and scoring stay with the study.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nar_gap.analysis import verdicts
from nar_gap.analysis.stats import finite_summary
from nar_gap.paper.transnar.scores import SCORES

# Each NAR kind's model, as the rows name it.
MODEL_NAMES = {
    "none": "transformer",
    "trained": "transnar_trained",
    "compiled": "transnar_compiled",
}


def summarise(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean, std (over seeds) and seed count of each score, per model and size.

    ``content`` is averaged over the seeds that wrote any answer of the right
    length (``content_seeds`` of them), not over every seed.
    """
    keys = dict.fromkeys((r["model"], int(r["num_nodes"])) for r in rows)
    summary = []
    for model, num_nodes in keys:
        chosen = [
            r for r in rows if r["model"] == model and int(r["num_nodes"]) == num_nodes
        ]
        row: dict[str, Any] = {
            "model": model,
            "num_nodes": num_nodes,
            "in_distribution": chosen[0]["in_distribution"],
            "seeds": len(chosen),
        }
        for name in (*SCORES, "content", "nar_clrs"):
            over_seeds = finite_summary([float(r[name]) for r in chosen])
            row[f"{name}_mean"] = over_seeds.mean
            row[f"{name}_std"] = over_seeds.std
        # seeds with at least one answer of the right length: the content's n
        row["content_seeds"] = finite_summary([float(r["content"]) for r in chosen]).n
        summary.append(row)
    return summary


def per_seed(
    rows: Sequence[dict[str, Any]],
    model: str,
    in_distribution: bool,
    score: str = "clrs",
) -> list[float]:
    """Per seed, ``model``'s mean ``score`` over the in- or out-of-distribution sizes.

    ``rows`` as :func:`run_algorithm` returns them or as its CSV reads back.
    """
    chosen = [r for r in rows if r["model"] == model and _inside(r) == in_distribution]
    seeds = sorted({int(r["seed"]) for r in chosen})
    return [
        float(np.mean([float(r[score]) for r in chosen if int(r["seed"]) == s]))
        for s in seeds
    ]


def _per_seed_ood(
    rows: Sequence[dict[str, Any]], model: str, score: str = "clrs"
) -> list[float]:
    return per_seed(rows, model, False, score)


def _inside(row: dict[str, Any]) -> bool:
    value = row["in_distribution"]
    return value is True or value == "True"


def question_rows(
    rows_by_algorithm: dict[str, Sequence[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """The notebook's question, answered per algorithm from the per-seed rows.

    Does an exact NAR make the hybrid exact out of distribution, and how
    much of TransNAR's benefit survives when the NAR is trained?  Per
    algorithm: each model's mean out-of-distribution CLRS score over seeds,
    the compiled NAR's own score on the same graphs, whether the compiled
    hybrid is exact there (every seed scores 1 on every graph), and two
    one-sided Welch tests across seeds (compiled hybrid above the trained
    one; trained hybrid above the Transformer).
    """
    out = []
    for algorithm, rows in rows_by_algorithm.items():
        compiled = _per_seed_ood(rows, "transnar_compiled")
        trained = _per_seed_ood(rows, "transnar_trained")
        alone = _per_seed_ood(rows, "transformer")
        nar_own = [
            float(r["nar_clrs"])
            for r in rows
            if r["model"] == "transnar_compiled" and not _inside(r)
        ]
        out.append(
            {
                "algorithm": algorithm,
                "ood_sizes": " ".join(
                    str(n)
                    for n in sorted(
                        {int(r["num_nodes"]) for r in rows if not _inside(r)}
                    )
                ),
                "seeds": len(compiled),
                "transformer": float(np.mean(alone)),
                "transnar_trained": float(np.mean(trained)),
                "transnar_compiled": float(np.mean(compiled)),
                "compiled_nar_alone": float(np.mean(nar_own)),
                # CLRS is 0 for an answer of the wrong length: how often each
                # model wrote the right number of elements out of distribution
                **{
                    f"shape_{model}": float(
                        np.mean(_per_seed_ood(rows, model, "shape"))
                    )
                    for model in MODEL_NAMES.values()
                },
                "compiled_hybrid_exact": bool(compiled and min(compiled) == 1.0),
                "compiled_above_trained": verdicts.higher(compiled, trained).verdict,
                "compiled_above_trained_evidence": verdicts.higher(
                    compiled, trained
                ).evidence,
                "trained_above_transformer": verdicts.higher(trained, alone).verdict,
                "trained_above_transformer_evidence": verdicts.higher(
                    trained, alone
                ).evidence,
            }
        )
    return out


def question_sentence(rows: Sequence[dict[str, Any]]) -> str:
    """The answer, in words written from :func:`question_rows`' values."""
    parts = []
    for r in rows:
        exact = str(r["compiled_hybrid_exact"]) == "True"
        parts.append(
            f"{r['algorithm']} at N = {', '.join(str(r['ood_sizes']).split())} "
            f"({r['seeds']} seeds): the "
            f"compiled NAR alone scores {float(r['compiled_nar_alone']):.3f}, the "
            f"hybrid reading it {float(r['transnar_compiled']):.3f} "
            f"({'exact' if exact else 'not exact'}), the hybrid reading a trained "
            f"NAR {float(r['transnar_trained']):.3f}, the Transformer alone "
            f"{float(r['transformer']):.3f}; compiled above trained: "
            f"{r['compiled_above_trained']}; trained above the Transformer: "
            f"{r['trained_above_transformer']}; answers of the right length "
            f"(shape score): Transformer {float(r['shape_transformer']):.3f}, "
            f"trained {float(r['shape_transnar_trained']):.3f}, compiled "
            f"{float(r['shape_transnar_compiled']):.3f}"
        )
    return "Out of distribution (mean CLRS score over seeds): " + "; ".join(parts) + "."
