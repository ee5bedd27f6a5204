"""CLRS-Text examples formatted by dm-clrs itself, paired with the same graphs.

TransNAR (Bounsi et al. 2024) reads an algorithmic problem as text (CLRS-Text,
Markeeva et al. 2024) while cross-attending to a GNN that reads the same problem
as a graph.  So every text example must come with its graph, sample for sample.
:func:`text_batch` draws one batch with a dm-clrs sampler, formats each sample
with dm-clrs's own ``clrs_utils.format_clrs_example`` (no hints, as CLRS-Text's
default) and translates the same feedback into our :class:`Batch`.  The answer
text therefore spells exactly ``graphs.outputs["pi"]``.

**Node labels** (``label_range``).  dm-clrs names node ``i`` by its index, so a
model trained on graphs of 4 and 5 nodes only ever writes the tokens 0 to 4, and
a graph of 10 or 20 nodes asks for numbers it has never written: its answers
fail for want of vocabulary, whatever it has learned of the algorithm.
With ``label_range = R`` each graph's nodes carry labels drawn at random, sorted
and distinct, from ``0 .. R-1`` (as TransNAR draws its positions at random from
a range longer than any sequence); the prompt lists them first
(``labels: [3 8 11 14 17], s: 8, A: ...``) and ``s`` and the answer name nodes
by label.  Set ``R`` to the largest size scored and every label any test asks
for is one training wrote; at ``N = R`` the labels are the indices.  This is
our choice, not CLRS-Text's: the matrix ``A`` still lists nodes in index order,
so the model must look a node's label up in the list.
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
    "format_answer",
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
_SOURCE = re.compile(r"\A([a-z_]+:\n)s: ([0-9]+), ")
_LABEL_STREAM = 0x6C61626C  # "labl": the labels' draws, apart from the graphs'
_INT64 = np.iinfo(np.int64)


@dataclasses.dataclass(frozen=True)
class TextBatch:
    r"""One batch of CLRS-Text examples and the same samples as graphs.

    Attributes:
        algorithm: one of :data:`TEXT_ALGORITHMS`.
        prompts: each sample's question as dm-clrs formats it (ends with ``':\n'``).
        answers: each sample's answer (ends with ``'\n\n'``).
        graphs: the same samples in our encoding, in the same order.
        labels: ``[B, N]`` int64, each node's label in the text (the node's
            index where the text is dm-clrs's own).
    """

    algorithm: str
    prompts: tuple[str, ...]
    answers: tuple[str, ...]
    graphs: Batch
    labels: np.ndarray

    def __post_init__(self) -> None:
        """Rejects texts, graphs and labels that do not pair up one to one."""
        sizes = {len(self.prompts), len(self.answers), self.graphs.batch_size}
        if len(sizes) != 1:
            raise ValueError(
                f"expected as many prompts, answers and graphs, found "
                f"{len(self.prompts)}, {len(self.answers)}, {self.graphs.batch_size}"
            )
        expected = (self.graphs.batch_size, self.graphs.num_nodes)
        if np.shape(self.labels) != expected:
            raise ValueError(
                f"expected labels of shape {expected}, found {np.shape(self.labels)}"
            )

    @property
    def truths(self) -> np.ndarray:
        """``[B, N]`` int64: the values each true answer spells (labels of ``pi``)."""
        pi = answer_values(self.algorithm, self.graphs)
        return np.take_along_axis(np.asarray(self.labels, np.int64), pi, axis=1)

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


def _draw_labels(
    num_nodes: int, label_range: int, rng: np.random.Generator
) -> np.ndarray:
    """``num_nodes`` distinct labels from ``0 .. label_range-1``, sorted."""
    return np.sort(rng.choice(label_range, size=num_nodes, replace=False))


def _bracketed(values: Any) -> str:
    """Integers as dm-clrs writes an array: ``[0 0 2]``."""
    return "[" + " ".join(str(int(v)) for v in values) + "]"


def format_answer(values: Any) -> str:
    r"""The answer text dm-clrs writes for ``values`` (``'[0 0 2]\n\n'``).

    The inverse of :func:`parse_answer`: what a model's pointer output is
    written as to be scored like a generated answer.
    """
    return _bracketed(values) + "\n\n"


def _labelled(prompt: str, answer: str, labels: np.ndarray) -> tuple[str, str]:
    """dm-clrs's prompt and answer with nodes named by ``labels``."""
    match = _SOURCE.match(prompt)
    if match is None:
        raise ValueError(
            f"expected a prompt starting 'name:\\ns: k, ', found {prompt!r:.40}"
        )
    source = labels[int(match.group(2))]
    head = f"{match.group(1)}labels: {_bracketed(labels)}, s: {source}, "
    values = parse_answer(answer)
    if values is None:
        raise ValueError(f"expected a dm-clrs answer, found {answer!r:.40}")
    return head + prompt[match.end() :], format_answer(labels[values])


def text_batch(
    algorithm: str,
    num_nodes: int,
    count: int,
    seed: int,
    decimals: int = DECIMALS,
    label_range: int | None = None,
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
        label_range: None for dm-clrs's text (nodes named by index); else R >=
            ``num_nodes``: nodes named by sorted random labels below R (see the
            module's docstring), drawn from ``seed`` alone.

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
    if label_range is None:
        labels = np.tile(np.arange(num_nodes, dtype=np.int64), (count, 1))
    else:
        _check_int(label_range, "label_range", num_nodes)
        rng = np.random.default_rng([seed, _LABEL_STREAM])
        labels = np.stack([_draw_labels(num_nodes, label_range, rng) for _ in texts])
        texts = [
            _labelled(q, a, row) for (q, a), row in zip(texts, labels, strict=True)
        ]
    return TextBatch(
        algorithm=algorithm,
        prompts=tuple(question for question, _ in texts),
        answers=tuple(answer for _, answer in texts),
        graphs=from_clrs_feedback(feedback, algorithm),
        labels=labels.astype(np.int64),
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
