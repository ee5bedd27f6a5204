"""A fixed, character-level tokenizer for CLRS-Text (BFS and Bellman-Ford).

CLRS-Text has a tiny alphabet, so a learned tokenizer would only add merges
that differ between graph sizes.  Here the few words (algorithm and probe
names) are single tokens, and every other character is its own token; numbers
are spelled digit by digit, so indices and weights on larger graphs than seen
in training use only tokens the model has seen.  Tokens are read with one
regex (a word ``[A-Za-z_]+``, else one character) and decoding joins them, so
``decode(encode(text)) == text`` exactly.
"""

from __future__ import annotations

import dataclasses
import numbers
import re
from collections.abc import Sequence

import numpy as np

__all__ = [
    "BOS",
    "EOS",
    "PAD",
    "VOCABULARY",
    "Sequences",
    "decode",
    "encode",
    "encode_examples",
    "encode_prompts",
    "vocabulary_size",
]

_SPECIAL = ("<pad>", "<bos>", "<eos>")
_WORDS = ("bfs", "bellman_ford", "labels", "s", "A", "pi")
_CHARACTERS = (":", "\n", "[", "]", ",", " ", ".", "-")
_DIGITS = tuple("0123456789")

# Index = token id.  Ids 0..2 are the special tokens; text never encodes to them.
VOCABULARY: tuple[str, ...] = _SPECIAL + _WORDS + _CHARACTERS + _DIGITS
PAD, BOS, EOS = 0, 1, 2

_IDS = {token: i for i, token in enumerate(VOCABULARY) if i >= len(_SPECIAL)}
_TOKEN = re.compile(r"[A-Za-z_]+|.", re.DOTALL)


def vocabulary_size() -> int:
    """The number of token ids (the embedding table's rows)."""
    return len(VOCABULARY)


def encode(text: str) -> np.ndarray:
    """The int32 token ids of ``text``, with no BOS or EOS.

    Raises:
        ValueError: on a word or character outside :data:`VOCABULARY`.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected text as a str, found {type(text).__name__}")
    ids = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token not in _IDS:
            raise ValueError(
                f"unknown token {token!r} at position {match.start()} of the text"
            )
        ids.append(_IDS[token])
    return np.array(ids, dtype=np.int32)


def decode(ids: Sequence[int] | np.ndarray) -> str:
    """The text of a 1-D id sequence: stops at the first EOS, skips PAD and BOS.

    So a generated row (prompt, answer, EOS, then anything) decodes to its text.

    Raises:
        ValueError: on ids that are not a 1-D integer sequence in the vocabulary.
    """
    array = np.asarray(ids)
    if array.ndim != 1 or not (
        array.size == 0 or np.issubdtype(array.dtype, np.integer)
    ):
        raise ValueError(
            f"expected a 1-D integer id sequence, found shape {array.shape} "
            f"dtype {array.dtype}"
        )
    pieces = []
    for position, token_id in enumerate(array.tolist()):
        if not 0 <= token_id < len(VOCABULARY):
            raise ValueError(f"unknown token id {token_id} at position {position}")
        if token_id == EOS:
            break
        if token_id not in (PAD, BOS):
            pieces.append(VOCABULARY[token_id])
    return "".join(pieces)


@dataclasses.dataclass(frozen=True)
class Sequences:
    """A batch of token sequences, right-padded, ready for a decoder.

    Attributes:
        tokens: ``[B, L]`` int32: BOS, prompt, answer, EOS, then PAD.
        answer_start: ``[B]`` int32: index in ``tokens`` of the first answer
            token (for prompts only: the first free position, ``lengths``).
        lengths: ``[B]`` int32: the number of non-PAD tokens.
    """

    tokens: np.ndarray
    answer_start: np.ndarray
    lengths: np.ndarray


def _check_texts(texts: Sequence[str], what: str) -> tuple[str, ...]:
    """A non-empty sequence of str (a bare str would be read as characters)."""
    if isinstance(texts, str) or not all(isinstance(text, str) for text in texts):
        raise ValueError(f"expected a sequence of str {what}, found {texts!r:.80}")
    if not texts:
        raise ValueError(f"expected at least one of the {what}, found none")
    return tuple(texts)


def _pad(
    rows: Sequence[np.ndarray], answer_start: Sequence[int], length: int | None
) -> Sequences:
    """Right-pads id rows with PAD to ``length`` (None: the longest row)."""
    lengths = np.array([len(row) for row in rows], dtype=np.int32)
    longest = int(lengths.max())
    if length is None:
        length = longest
    elif (
        isinstance(length, bool)
        or not isinstance(length, numbers.Integral)
        or length < 1
    ):
        raise ValueError(f"expected a positive integer length, found {length!r}")
    elif longest > length:
        raise ValueError(
            f"expected sequences of at most {length} tokens, found one of {longest}"
        )
    tokens = np.full((len(rows), length), PAD, dtype=np.int32)
    for i, row in enumerate(rows):
        tokens[i, : len(row)] = row
    return Sequences(
        tokens=tokens,
        answer_start=np.array(answer_start, dtype=np.int32),
        lengths=lengths,
    )


def encode_examples(
    prompts: Sequence[str], answers: Sequence[str], length: int | None = None
) -> Sequences:
    r"""Teacher-forcing sequences: BOS + prompt + answer + EOS, right-padded.

    Args:
        prompts: the questions (dm-clrs's, ending with ``':\n'``).
        answers: the answers, each with its trailing ``'\n\n'``.
        length: pad to this L (for fixed shapes under jit); None pads to the
            longest sequence.

    Raises:
        ValueError: on mismatched counts, unknown tokens, or a sequence longer
            than ``length``.
    """
    prompts = _check_texts(prompts, "prompts")
    answers = _check_texts(answers, "answers")
    if len(prompts) != len(answers):
        raise ValueError(
            f"expected as many answers as prompts, found {len(answers)} "
            f"answers for {len(prompts)} prompts"
        )
    heads = [np.concatenate([[BOS], encode(prompt)]) for prompt in prompts]
    rows = [
        np.concatenate([head, encode(answer), [EOS]])
        for head, answer in zip(heads, answers, strict=True)
    ]
    return _pad(rows, [len(head) for head in heads], length)


def encode_prompts(prompts: Sequence[str], length: int | None = None) -> Sequences:
    """Generation inputs: BOS + prompt, right-padded; ``answer_start = lengths``.

    Raises:
        ValueError: on unknown tokens or a sequence longer than ``length``.
    """
    prompts = _check_texts(prompts, "prompts")
    rows = [np.concatenate([[BOS], encode(prompt)]) for prompt in prompts]
    return _pad(rows, [len(row) for row in rows], length)
