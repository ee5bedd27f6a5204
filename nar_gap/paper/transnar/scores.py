"""TransNAR's three scores of a generated CLRS-Text answer.

Bounsi et al. (2024), "Transformers meet Neural Algorithmic Reasoners", score
each generated answer three ways, from coarse to fine.  We follow the
definitions in the paper's text (not its code), for answers that are one
integer array (the pointer array ``pi`` of BFS and Bellman-Ford):

- ``shape``: 1 if the answer parses and has as many elements as the truth, else 0
  (the paper's binary check that the output has the right shape);
- ``parse``: 1 if the answer parses at all (:func:`parse_answer` is not None):
  the paper's check that the output has no illegal characters, made exact by
  reading the answer in the grammar dm-clrs writes it in (brackets, integers
  separated by single spaces; trailing newlines, however many, are ignored);
- ``clrs``: the fraction of elements equal to the truth, and 0 when the shape is
  wrong (the paper's CLRS score: CLRS-30's element-wise exact match, zero for a
  wrong shape).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nar_gap.tasks.batch import Batch
from nar_gap.tasks.clrs_text import parse_answer

__all__ = [
    "SCORES",
    "answer_scores",
    "batch_scores",
    "listed_length",
    "rule_pointers",
    "rule_scores",
]

SCORES = ("shape", "parse", "clrs")


def _check_truth(truth: np.ndarray) -> np.ndarray:
    """A 1-D integer truth (the true pointer array of one sample)."""
    array = np.asarray(truth)
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(
            f"expected a 1-D integer truth, found shape {array.shape} "
            f"dtype {array.dtype}"
        )
    return array


def answer_scores(generated: str, truth: np.ndarray) -> dict[str, float]:
    r"""The three scores of one generated answer against its true array.

    Args:
        generated: the decoded answer text (e.g. ``'[0 0 2]\n\n'``).
        truth: ``[n]`` the true integer values.

    Returns:
        ``{"shape": 0|1, "parse": 0|1, "clrs": fraction in [0, 1]}``.
    """
    truth = _check_truth(truth)
    # Where the answer stops is the model's EOS, not its blank lines: trailing
    # newlines past the two dm-clrs writes are not held against the parse.
    values = parse_answer(
        generated.rstrip("\n") if isinstance(generated, str) else generated
    )
    parsed = values is not None
    shaped = parsed and values.shape == truth.shape
    clrs = float(np.mean(values == truth)) if shaped and truth.size else float(shaped)
    return {"shape": float(shaped), "parse": float(parsed), "clrs": clrs}


def batch_scores(
    generated: Sequence[str],
    truths: np.ndarray,
    num_nodes: Sequence[int] | None = None,
) -> dict[str, np.ndarray]:
    """Per-sample scores of a batch: ``{score: [B] float64}``.

    Args:
        generated: B decoded answer texts.
        truths: ``[B, N]`` true integer arrays, right-padded where graphs are
            smaller than N.
        num_nodes: each sample's real n (its truth is ``truths[i, :n]``); None
            means N for every sample.

    Raises:
        ValueError: on mismatched batch sizes or an n outside [0, N].
    """
    truths = np.asarray(truths)
    if truths.ndim != 2:
        raise ValueError(f"expected truths of shape [B, N], found {truths.shape}")
    if isinstance(generated, str) or len(generated) != truths.shape[0]:
        raise ValueError(
            f"expected {truths.shape[0]} generated answers (one per truth), "
            f"found {1 if isinstance(generated, str) else len(generated)}"
        )
    sizes = [truths.shape[1]] * truths.shape[0] if num_nodes is None else num_nodes
    if len(sizes) != truths.shape[0] or not all(
        0 <= n <= truths.shape[1] for n in sizes
    ):
        raise ValueError(
            f"expected {truths.shape[0]} node counts in [0, {truths.shape[1]}], "
            f"found {list(sizes)}"
        )
    rows = [
        answer_scores(text, truth[: int(n)])
        for text, truth, n in zip(generated, truths, sizes, strict=True)
    ]
    return {name: np.array([row[name] for row in rows]) for name in SCORES}


def listed_length(generated: str) -> int | None:
    r"""How many items the answer's first bracketed list holds; None if it never closes.

    Looser than the parse score on purpose (leading newlines and text after
    the list are allowed): a list of the wrong length still says how long
    the model made it, which tells an answer of the wrong length from one
    that does not stop.  ``'\n[1 2 3]\n\n'`` holds 3; ``'[1 2 3 4'`` never closes.
    """
    body = generated.lstrip("\n") if isinstance(generated, str) else ""
    if not body.startswith("[") or "]" not in body:
        return None
    return len(body[1 : body.index("]")].split())


def content_score(scores: dict[str, np.ndarray]) -> float:
    """The CLRS score over the answers of the right shape only (NaN if none).

    The CLRS score is 0 for an answer of the wrong length, so out of
    distribution it mixes two failures: writing the wrong number of elements,
    and writing wrong ones.  This separates the second: how many elements are
    right where the length is.
    """
    shaped = scores["shape"] == 1.0
    return float(scores["clrs"][shaped].mean()) if shaped.any() else float("nan")


def rule_pointers(graphs: Batch) -> dict[str, np.ndarray]:
    """Two rules' answers ``[B, n]`` for BFS's and Bellman-Ford's ``pi``.

    A CLRS score is read against what needs no search: on small random
    graphs most nodes are unreachable or next to the source, so ``self``
    (every node its own parent, the answer for the source and for every
    unreachable node) and ``one_hop`` (the source's neighbours point at it,
    every other node at itself) score high in distribution and fall with
    the size.  A model below ``one_hop`` has not learned more than one hop.
    """
    n = graphs.num_nodes
    adjacency = np.asarray(graphs.inputs["adj"])[:, :n, :n] > 0
    sources = graphs.sources
    rows = np.arange(adjacency.shape[0])
    own = np.broadcast_to(np.arange(n), adjacency.shape[:2])
    # the source is its own parent either way: its own neighbour or not
    one_hop = np.where(adjacency[rows, sources], sources[:, None], own)
    return {"self": own.copy(), "one_hop": one_hop}


def rule_scores(graphs: Batch) -> dict[str, float]:
    """Each rule's CLRS score on ``graphs`` (its answers have the right shape)."""
    truth = np.asarray(graphs.outputs["pi"])[:, : graphs.num_nodes]
    return {
        name: float(np.mean(pointers == truth))
        for name, pointers in rule_pointers(graphs).items()
    }
