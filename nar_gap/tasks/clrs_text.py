"""CLRS-Text examples formatted by dm-clrs itself, paired with the same graphs.

TransNAR (Bounsi et al. 2024) reads an algorithmic problem as text (CLRS-Text,
Markeeva et al. 2024) while cross-attending to a GNN that reads the same problem
as a graph.  So every text example must come with its graph, sample for sample.
:func:`text_batch` draws one batch with a dm-clrs sampler, formats each sample
with dm-clrs's own ``clrs_utils.format_clrs_example`` (no hints, as CLRS-Text's
default) and translates the same feedback into our :class:`Batch`.  The answer
text therefore spells exactly ``graphs.outputs["pi"]``.
"""

from __future__ import annotations

import dataclasses
import numbers
import re
from typing import Any

import numpy as np

from nar_gap.tasks._clrs import clrs, clrs_probing, clrs_text_utils
from nar_gap.tasks.algorithms import reference_algorithm
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.feedback import from_clrs_feedback
from nar_gap.tasks.specs import get_spec, sampler_class

__all__ = [
    "DECIMALS",
    "TEXT_ALGORITHMS",
    "TextBatch",
    "answer_values",
    "parse_answer",
    "text_batch",
]

# The two graph algorithms whose CLRS-Text answer is one pointer array `pi`.
TEXT_ALGORITHMS: tuple[str, ...] = ("bfs", "bellman_ford")

# Decimals kept in float inputs (Bellman-Ford's weights). CLRS-Text's Hugging
# Face generator defaults to 3; 2 shortens every weight by one token, which
# keeps the sequences short enough to train a Transformer on a CPU.
DECIMALS = 2

_MAX_SEED = 2**32  # numpy RandomState accepts seeds in [0, 2**32)
_ANSWER = re.compile(r"\[(-?[0-9]+(?: -?[0-9]+)*)?\]\n{0,2}")
_INT64 = np.iinfo(np.int64)


@dataclasses.dataclass(frozen=True)
class TextBatch:
    r"""One batch of CLRS-Text examples and the same samples as graphs.

    Attributes:
        algorithm: one of :data:`TEXT_ALGORITHMS`.
        prompts: each sample's question as dm-clrs formats it (ends with ``':\n'``).
        answers: each sample's answer (ends with ``'\n\n'``).
        graphs: the same samples in our encoding, in the same order.
    """

    algorithm: str
    prompts: tuple[str, ...]
    answers: tuple[str, ...]
    graphs: Batch

    def __post_init__(self) -> None:
        """Rejects texts and graphs that do not pair up one to one."""
        sizes = {len(self.prompts), len(self.answers), self.graphs.batch_size}
        if len(sizes) != 1:
            raise ValueError(
                f"expected as many prompts, answers and graphs, found "
                f"{len(self.prompts)}, {len(self.answers)}, {self.graphs.batch_size}"
            )

    @property
    def num_nodes(self) -> int:
        """N, the number of nodes of every graph."""
        return self.graphs.num_nodes

    @property
    def batch_size(self) -> int:
        """B, the number of examples."""
        return len(self.prompts)


def _check_text_algorithm(algorithm: str) -> str:
    """Only algorithms whose answer is the pointer array ``pi`` are supported."""
    if algorithm not in TEXT_ALGORITHMS:
        raise ValueError(
            f"expected a CLRS-Text algorithm in {TEXT_ALGORITHMS}, found {algorithm!r}"
        )
    return algorithm


def _check_int(value: Any, what: str, minimum: int, maximum: int | None = None) -> int:
    """An integer in [minimum, maximum), with a message naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"expected an integer {what}, found {value!r}")
    if value < minimum or (maximum is not None and value >= maximum):
        bound = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum})"
        raise ValueError(f"expected {what} {bound}, found {value}")
    return int(value)


def _sample_points(points: Any, index: int, axis: int) -> list[Any]:
    """The DataPoints of one sample, batch axis kept (size 1), as dm-clrs wants."""
    take = slice(index, index + 1)
    return [
        clrs_probing.DataPoint(
            name=point.name,
            location=point.location,
            type_=point.type_,
            data=point.data[take] if axis == 0 else point.data[:, take],
        )
        for point in points
    ]


def _sample_feedback(feedback: Any, index: int) -> Any:
    """Sample ``index`` of a dm-clrs ``Feedback`` as a batch-of-1 ``Feedback``."""
    features = feedback.features
    return clrs.Feedback(
        features=clrs.Features(
            inputs=_sample_points(features.inputs, index, axis=0),
            hints=_sample_points(features.hints, index, axis=1),
            lengths=np.asarray(features.lengths)[index : index + 1],
        ),
        outputs=_sample_points(feedback.outputs, index, axis=0),
    )


def text_batch(
    algorithm: str, num_nodes: int, count: int, seed: int, decimals: int = DECIMALS
) -> TextBatch:
    """``count`` CLRS-Text examples on ``num_nodes`` nodes, with their graphs.

    The sampler is built as :mod:`nar_gap.tasks.sampling` builds it (our
    reference algorithm and spec, the sampler's default edge probability), plus
    dm-clrs's ``truncate_decimals``: the float inputs are truncated *before* the
    algorithm runs, so the answers and ``graphs`` agree with the printed weights.
    The batch is read whole with ``next()`` (generation order).

    Args:
        algorithm: one of :data:`TEXT_ALGORITHMS`.
        num_nodes: N, at least 2 (dm-clrs's samplers break one-node graphs).
        count: B, at least 1.
        seed: the sampler's RandomState seed, in [0, 2**32).
        decimals: decimals kept in float inputs, at least 1 (dm-clrs reads 0 as
            "do not truncate").

    Raises:
        ValueError: on an unknown algorithm or an out-of-range argument.
    """
    _check_text_algorithm(algorithm)
    sampler = sampler_class(algorithm)(
        reference_algorithm(algorithm),
        get_spec(algorithm),
        _check_int(count, "count", 1),
        seed=_check_int(seed, "seed", 0, _MAX_SEED),
        track_max_steps=False,
        length=_check_int(num_nodes, "num_nodes", 2),
        truncate_decimals=_check_int(decimals, "decimals", 1),
    )
    feedback = sampler.next()
    texts = [
        clrs_text_utils.format_clrs_example(
            algorithm, _sample_feedback(feedback, i), use_hints=False
        )
        for i in range(count)
    ]
    return TextBatch(
        algorithm=algorithm,
        prompts=tuple(question for question, _ in texts),
        answers=tuple(answer for _, answer in texts),
        graphs=from_clrs_feedback(feedback, algorithm),
    )


def answer_values(algorithm: str, graphs: Batch) -> np.ndarray:
    """``[B, N]`` int64: the pointer array ``pi`` that each true answer spells.

    The ground truth that generated answers are scored against.

    Raises:
        ValueError: on an unknown algorithm or graphs of another algorithm.
    """
    _check_text_algorithm(algorithm)
    if graphs.algorithm != algorithm:
        raise ValueError(
            f"expected graphs of {algorithm!r}, found graphs of {graphs.algorithm!r}"
        )
    return np.asarray(graphs.outputs["pi"]).astype(np.int64)


def parse_answer(text: str) -> np.ndarray | None:
    r"""The int64 array an answer such as ``'[0 0 0 2 3]\n\n'`` spells, else None.

    Strict, as dm-clrs writes answers: brackets, integers separated by single
    spaces, then at most two newlines.  A generated answer in any other form
    counts as unparsed (TransNAR's parse score), hence None rather than an error.
    """
    if not isinstance(text, str):
        return None
    match = _ANSWER.fullmatch(text)
    if match is None:
        return None
    values = [int(word) for word in (match.group(1) or "").split()]
    if any(not _INT64.min <= value <= _INT64.max for value in values):
        return None
    return np.array(values, dtype=np.int64)
