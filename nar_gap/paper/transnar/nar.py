"""The frozen NAR's side of TransNAR: node embeddings, and the NAR's own answer.

TransNAR's tokens read the node embeddings of a GNN that has already run on
the problem's graph.  We take the processor's output at the step whose
candidate output the network returns (``L_b - 2``, :func:`output_steps`):
the state that the output decoders read, so for a compiled network the
algorithm's variables at the end of its trace.  The NAR is any
:class:`~nar_gap.model.model.Model` -- a trained seed or a compiled program --
and is never updated: its embeddings are data to the Transformer.
"""

from __future__ import annotations

import numpy as np

from nar_gap.model.model import Model
from nar_gap.model.network import output_steps
from nar_gap.paper.transnar.scores import batch_scores
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.clrs_text import TextBatch, format_answer


def node_embeddings(nar: Model, graphs: Batch) -> tuple[np.ndarray, np.ndarray]:
    """``[B, N, D]`` node embeddings and the ``[B, N]`` mask of real nodes."""
    out = nar.apply(graphs)
    hiddens = np.asarray(out.hiddens)  # [S, B, N, D]
    steps = np.asarray(output_steps(np.asarray(graphs.lengths), hiddens.shape[0]))
    rows = np.arange(hiddens.shape[1])
    embeddings = hiddens[steps, rows].astype(np.float32)
    return embeddings, np.asarray(graphs.node_mask, dtype=bool)


def nar_pointers(nar: Model, graphs: Batch, output: str = "pi") -> np.ndarray:
    """The NAR's own answer: its pointer output ``[B, N]`` as node indices.

    What the hybrid could at best copy: the NAR's CLRS score on the same
    graphs is the ceiling the Transformer reads from.
    """
    logits = np.asarray(nar.apply(graphs).outputs[output])  # [B, N, N]
    mask = np.asarray(graphs.node_mask, dtype=bool)
    logits = np.where(mask[:, None, :], logits, -np.inf)
    return np.argmax(logits, axis=-1).astype(np.int32)


def embedder(nar: Model | None):
    """What TransNAR's tokens read of ``nar``: its node embeddings (None: no NAR)."""
    return None if nar is None else (lambda graphs: node_embeddings(nar, graphs))


def nar_clrs_score(nar: Model | None, texts: TextBatch) -> float:
    """The NAR's own CLRS score on ``texts``' graphs, its pointers as answers."""
    if nar is None:
        return float("nan")
    predicted = nar_pointers(nar, texts.graphs)
    truths = np.asarray(texts.graphs.outputs["pi"])
    answers = [format_answer(row) for row in predicted]
    return float(batch_scores(answers, truths)["clrs"].mean())
