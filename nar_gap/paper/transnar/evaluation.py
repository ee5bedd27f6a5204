"""Scoring a TransNAR seed at one graph size, and what its cross-attention reads.

Every model and seed is scored on the same graphs of a size (their sampler
seed depends on the size alone), so the three models' scores are paired.
Answers are decoded greedily (:func:`~nar_gap.paper.transnar.decode.greedy_decode`)
and scored with TransNAR's shape, parse and CLRS scores
(:mod:`~nar_gap.paper.transnar.scores`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import numpy as np

from nar_gap.paper.transnar.decode import PromptLayout, greedy_decode, prompt_layout
from nar_gap.paper.transnar.model import TransformerConfig, TransNAR, draw_positions
from nar_gap.paper.transnar.scores import batch_scores
from nar_gap.paper.transnar.tokenizer import (
    VOCABULARY,
    Sequences,
    decode,
    encode,
    encode_examples,
    encode_prompts,
)
from nar_gap.paper.transnar.training import NarFn
from nar_gap.tasks.clrs_text import TextBatch, text_batch

EVAL_SEED_BASE = 900_000  # the evaluation graphs' sampler seed is this + N
_EVAL_STREAM = 0x6576616C  # "eval": the evaluation's positions
# Bytes one chunk's attention weights may take (prefill holds [b, H, L, L]).
_ATTENTION_BUDGET = 256 * 2**20
_DIGITS = frozenset(str(d) for d in range(10))


def evaluation_texts(
    algorithm: str, num_nodes: int, count: int, label_range: int | None = None
) -> TextBatch:
    """The evaluation graphs of one size: the same for every model and seed."""
    return text_batch(
        algorithm,
        num_nodes,
        count,
        EVAL_SEED_BASE + num_nodes,
        label_range=label_range,
    )


@dataclasses.dataclass(frozen=True)
class SizeScores:
    """One seed's answers at one size: per-sample scores and the texts."""

    num_nodes: int
    scores: dict[str, np.ndarray]
    generated: tuple[str, ...]


def _chunk_size(config: TransformerConfig, length: int) -> int:
    per_sample = 4 * config.heads * length * length * 3
    return max(1, _ATTENTION_BUDGET // per_sample)


def _max_new(answers: tuple[str, ...]) -> int:
    # room for the longest true answer, its EOS and a few tokens more, so an
    # answer that runs a little long is still seen to have the wrong shape
    return max(len(encode(a)) for a in answers) + 5


def generate(
    config: TransformerConfig,
    params: Any,
    texts: TextBatch,
    rng: np.random.Generator,
    nar: NarFn | None = None,
) -> tuple[str, ...]:
    """Greedy answers to ``texts``' prompts, in chunks that bound memory."""
    prompts = encode_prompts(texts.prompts)
    max_new = _max_new(texts.answers)
    # Positions for every row at once, so no answer depends on the chunking.
    whole = prompt_layout(prompts.tokens, prompts.lengths, max_new, config, rng)
    chunk = min(_chunk_size(config, whole.tokens.shape[1]), texts.batch_size)
    embeddings, mask = (None, None) if nar is None else nar(texts.graphs)
    answers: list[str] = []
    for start in range(0, texts.batch_size, chunk):
        rows = np.arange(start, min(start + chunk, texts.batch_size))
        padded = np.resize(rows, chunk)  # same shape for every chunk: one compile
        layout = PromptLayout(
            whole.tokens[padded],
            whole.positions[padded],
            whole.prompt_mask[padded],
            whole.prompt_slots,
        )
        tokens, _ = greedy_decode(
            config,
            params,
            layout,
            None if embeddings is None else embeddings[padded],
            None if mask is None else mask[padded],
        )
        answers += [decode(tokens[i]) for i in range(len(rows))]
    return tuple(answers)


def score_size(
    config: TransformerConfig,
    params: Any,
    texts: TextBatch,
    seed: int,
    nar: NarFn | None = None,
) -> SizeScores:
    """TransNAR's scores of one seed on ``texts`` (one graph size)."""
    rng = np.random.default_rng([seed, texts.num_nodes, _EVAL_STREAM])
    generated = generate(config, params, texts, rng, nar)
    return SizeScores(texts.num_nodes, batch_scores(generated, texts.truths), generated)


def element_slots(answer_tokens: np.ndarray) -> list[int]:
    """Indices of each element's first digit in an answer's tokens."""
    slots, previous = [], "["
    for index, token in enumerate(answer_tokens):
        word = VOCABULARY[int(token)]
        if word in _DIGITS and previous in ("[", " "):
            slots.append(index)
        previous = word
    return slots


@functools.lru_cache(maxsize=8)
def _teacher_forced(config: TransformerConfig):
    """The jitted full pass returning each layer's head-averaged cross weights."""

    def forward(params, tokens, positions, token_mask, nar, nar_mask):
        _, weights = TransNAR(config).apply(
            {"params": params}, tokens, positions, token_mask, nar, nar_mask,
            with_attention=True,
        )  # fmt: skip
        return [w.mean(axis=1) for w in weights]

    return jax.jit(forward)


def cross_attention_reads(
    config: TransformerConfig,
    params: Any,
    texts: TextBatch,
    seed: int,
    nar: NarFn,
) -> list[dict[str, float]]:
    """Per layer: which node the token writing answer element ``j`` reads most.

    Teacher-forced on the true answer: for element ``j`` (node ``j``'s
    parent ``pi_j``), the query that produces its first digit; its
    head-averaged cross-attention's most-read node is compared with ``j``
    (the node the element is about) and with ``pi_j`` (the node it names),
    against two baselines (:func:`read_shares`).
    """
    sequences = encode_examples(texts.prompts, texts.answers)
    rng = np.random.default_rng([seed, texts.num_nodes, _EVAL_STREAM, 1])
    length = sequences.tokens.shape[1]
    positions = draw_positions(config, rng, sequences.lengths, length)
    embeddings, mask = nar(texts.graphs)
    token_mask = np.arange(length)[None] < sequences.lengths[:, None]
    forward = _teacher_forced(config)
    chunk = min(_chunk_size(config, length), texts.batch_size)
    parts = []
    for start in range(0, texts.batch_size, chunk):
        rows = np.resize(np.arange(start, min(start + chunk, texts.batch_size)), chunk)
        layers = forward(
            params,
            sequences.tokens[rows],
            positions[rows],
            token_mask[rows],
            embeddings[rows],
            mask[rows],
        )
        taken = min(chunk, texts.batch_size - start)
        parts.append([np.asarray(w)[:taken] for w in layers])
    weights = [np.concatenate(layer) for layer in zip(*parts, strict=True)]
    parents = np.asarray(texts.graphs.outputs["pi"])  # nodes, not their labels
    sources = texts.graphs.sources
    return [
        {"layer": layer, **read_shares(w, sequences, parents, sources, mask)}
        for layer, w in enumerate(weights)
    ]


def read_shares(
    weights: np.ndarray,
    sequences: Sequences,
    parents: np.ndarray,
    sources: np.ndarray,
    node_mask: np.ndarray,
) -> dict[str, float]:
    """One layer's reads: how often each element's query reads which node most.

    ``weights [B, L, N]`` are the layer's head-averaged cross-attention
    weights, teacher-forced on ``sequences``; element ``j`` of row ``b`` is
    read by the query before its first digit.  ``reads_own_node`` and
    ``reads_named_node`` count the most-read node equal to ``j`` and to
    ``parents[b, j]``; ``chance`` is the mean of ``1 / n``.  Reading the
    source every time needs nothing from the graph, and the source is the
    parent of every node next to it, so ``reads_source`` counts the source
    read most and ``source_named`` the elements whose parent is the source:
    what that strategy scores on ``reads_named_node``.
    """
    own = named = source = total = 0
    chance, by_source = [], 0
    for b in range(weights.shape[0]):
        start = int(sequences.answer_start[b])
        answer = sequences.tokens[b, start : int(sequences.lengths[b])]
        n = int(node_mask[b].sum())
        for j, slot in enumerate(element_slots(answer)[:n]):
            read = int(np.argmax(weights[b, start + slot - 1]))
            own += read == j
            named += read == int(parents[b, j])
            source += read == int(sources[b])
            by_source += int(parents[b, j]) == int(sources[b])
            total += 1
            chance.append(1.0 / n)
    count = max(total, 1)
    return {
        "elements": total,
        "reads_own_node": own / count,
        "reads_named_node": named / count,
        "reads_source": source / count,
        "source_named": by_source / count,
        "chance": float(np.mean(chance)) if chance else float("nan"),
    }
