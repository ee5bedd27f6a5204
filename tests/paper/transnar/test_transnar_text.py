"""CLRS-Text for TransNAR: dm-clrs's text, our tokenizer, and TransNAR's scores."""

from __future__ import annotations

import re

import numpy as np
import pytest

from nar_gap.paper.transnar import tokenizer
from nar_gap.paper.transnar.scores import (
    SCORES,
    answer_scores,
    batch_scores,
    listed_length,
    rule_pointers,
)
from nar_gap.paper.transnar.tokenizer import BOS, EOS, PAD, decode, encode
from nar_gap.tasks.clrs_text import (
    DECIMALS,
    TEXT_ALGORITHMS,
    answer_values,
    format_answer,
    parse_answer,
    text_batch,
)
from nar_gap.tasks.sampling import sample_batch


def _matrix(prompt: str) -> np.ndarray:
    """The ``A: [[..], ..]`` matrix of a prompt, read back as float64."""
    body = re.search(r"A: \[(.*)\]\n", prompt).group(1)
    rows = re.findall(r"\[([^\[\]]*)\]", body)
    return np.array([[float(x) for x in row.split(" ")] for row in rows])


# ---------------------------------------------------------------------- tokenizer


@pytest.mark.parametrize("algorithm", TEXT_ALGORITHMS)
@pytest.mark.parametrize("num_nodes", [4, 5, 12])
def test_tokenizer_round_trips_dm_clrs_text_exactly(algorithm, num_nodes):
    batch = text_batch(algorithm, num_nodes, 20, seed=num_nodes)
    texts = [p + a for p, a in zip(batch.prompts, batch.answers, strict=True)]
    for text in texts:
        ids = encode(text)
        assert ids.dtype == np.int32 and not np.isin(ids, [PAD, BOS, EOS]).any()
        assert decode(ids) == text
    seqs = tokenizer.encode_examples(batch.prompts, batch.answers)
    for i, (prompt, answer) in enumerate(
        zip(batch.prompts, batch.answers, strict=True)
    ):
        row, start, length = seqs.tokens[i], seqs.answer_start[i], seqs.lengths[i]
        assert row[0] == BOS and row[length - 1] == EOS
        assert (row[length:] == PAD).all()
        assert decode(row[:start]) == prompt
        assert decode(row[start:]) == answer  # stops at EOS, ignores the padding
    prompts = tokenizer.encode_prompts(batch.prompts)
    np.testing.assert_array_equal(prompts.answer_start, prompts.lengths)
    np.testing.assert_array_equal(prompts.lengths, seqs.answer_start)


def test_numbers_are_spelled_digit_by_digit():
    digits = [tokenizer.VOCABULARY[i] for i in encode("[10 0]\n\n")]
    assert digits == ["[", "1", "0", " ", "0", "]", "\n", "\n"]
    assert tokenizer.VOCABULARY[:3] == ("<pad>", "<bos>", "<eos>")
    assert tokenizer.vocabulary_size() == len(tokenizer.VOCABULARY)
    assert [tokenizer.VOCABULARY[i] for i in encode("bellman_ford:")] == [
        "bellman_ford",
        ":",
    ]


def test_unknown_character_or_word_raises_naming_it():
    with pytest.raises(ValueError, match=r"'x' at position 3"):
        encode("[0 x]")
    with pytest.raises(ValueError, match=r"'dfs' at position 0"):
        encode("dfs:\n")
    with pytest.raises(ValueError, match=r"'<' at position 0"):
        encode("<eos>")  # special tokens are never read from text


def test_padding_to_a_fixed_length_and_too_long():
    seqs = tokenizer.encode_examples(["bfs:\n"], ["[0]\n\n"], length=20)
    assert seqs.tokens.shape == (1, 20) and seqs.lengths[0] == 1 + 3 + 5 + 1
    with pytest.raises(ValueError, match="at most 5 tokens"):
        tokenizer.encode_examples(["bfs:\n"], ["[0]\n\n"], length=5)
    with pytest.raises(ValueError, match="as many answers as prompts"):
        tokenizer.encode_examples(["bfs:\n", "bfs:\n"], ["[0]\n\n"])


# ---------------------------------------------------------------------- CLRS-Text


@pytest.mark.parametrize("algorithm", TEXT_ALGORITHMS)
def test_answers_spell_the_graphs_pointers_and_prompts_their_source(algorithm):
    batch = text_batch(algorithm, 7, 16, seed=3)
    assert (batch.batch_size, batch.num_nodes) == (16, 7)
    truth = answer_values(algorithm, batch.graphs)
    np.testing.assert_array_equal(truth, batch.graphs.outputs["pi"])
    sources = np.argmax(batch.graphs.inputs["s"], axis=1)
    for i in range(batch.batch_size):
        assert batch.prompts[i].startswith(f"{algorithm}:\ns: {sources[i]}, A: [[")
        assert batch.prompts[i].endswith("\npi:\n")
        assert batch.answers[i].endswith("]\n\n")
        np.testing.assert_array_equal(parse_answer(batch.answers[i]), truth[i])


def test_bfs_graphs_are_sample_batchs_graphs():
    # Same sampler, same seed: the text sees exactly the graphs the GNN sees.
    ours, theirs = text_batch("bfs", 6, 5, seed=9).graphs, sample_batch("bfs", 6, 5, 9)
    for name in theirs.inputs:
        np.testing.assert_array_equal(ours.inputs[name], theirs.inputs[name])
    np.testing.assert_array_equal(ours.outputs["pi"], theirs.outputs["pi"])


def test_same_seed_same_text_other_seed_other_text():
    first, again = text_batch("bfs", 6, 8, seed=1), text_batch("bfs", 6, 8, seed=1)
    other = text_batch("bfs", 6, 8, seed=2)
    assert first.prompts == again.prompts and first.answers == again.answers
    assert first.prompts != other.prompts


@pytest.mark.parametrize("decimals", [DECIMALS, 3])
def test_bellman_ford_weights_are_truncated_in_text_and_graphs_alike(decimals):
    batch = text_batch("bellman_ford", 6, 10, seed=4, decimals=decimals)
    for prompt, weights in zip(batch.prompts, batch.graphs.inputs["A"], strict=True):
        numbers = re.findall(r"\d+\.(\d+)", prompt)
        assert numbers and max(len(x) for x in numbers) <= decimals
        printed = _matrix(prompt)
        np.testing.assert_array_equal(printed.astype(np.float32), weights)
        scaled = printed * 10**decimals
        np.testing.assert_allclose(scaled, np.round(scaled), atol=1e-9)


@pytest.mark.parametrize("algorithm", TEXT_ALGORITHMS)
def test_labelled_text_names_nodes_by_their_labels(algorithm):
    plain = text_batch(algorithm, 5, 12, seed=6)
    labelled = text_batch(algorithm, 5, 12, seed=6, label_range=20)
    # the same graphs; the labels sorted, distinct, below the range, not indices
    np.testing.assert_array_equal(
        labelled.graphs.outputs["pi"], plain.graphs.outputs["pi"]
    )
    labels = labelled.labels
    assert labels.shape == (12, 5) and labels.min() >= 0 and labels.max() < 20
    assert (np.diff(labels, axis=1) > 0).all()
    assert not (labels == np.arange(5)).all()
    pi = np.asarray(plain.graphs.outputs["pi"])
    sources = np.argmax(plain.graphs.inputs["s"], axis=1)
    for i in range(12):
        listed = " ".join(str(v) for v in labels[i])
        head = f"{algorithm}:\nlabels: [{listed}], s: {labels[i, sources[i]]}, A: [["
        assert labelled.prompts[i].startswith(head)
        # the rest of the prompt is dm-clrs's, word for word
        assert (
            labelled.prompts[i].split(", A: ", 1)[1]
            == plain.prompts[i].split(", A: ", 1)[1]
        )
        np.testing.assert_array_equal(
            parse_answer(labelled.answers[i]), labels[i, pi[i]]
        )
        np.testing.assert_array_equal(labelled.truths[i], labels[i, pi[i]])
        assert decode(encode(labelled.prompts[i] + labelled.answers[i])) == (
            labelled.prompts[i] + labelled.answers[i]
        )
    np.testing.assert_array_equal(plain.truths, pi)  # dm-clrs's text: labels = indices
    again = text_batch(algorithm, 5, 12, seed=6, label_range=20)
    np.testing.assert_array_equal(again.labels, labels)


@pytest.mark.parametrize("algorithm", TEXT_ALGORITHMS)
def test_format_answer_writes_dm_clrs_s_answer(algorithm):
    batch = text_batch(algorithm, 7, 8, seed=5)
    for answer, pi in zip(batch.answers, batch.graphs.outputs["pi"], strict=True):
        assert format_answer(pi) == answer
        np.testing.assert_array_equal(parse_answer(format_answer(pi)), pi)


def test_labels_at_the_range_are_the_indices():
    batch = text_batch("bfs", 8, 3, seed=2, label_range=8)
    np.testing.assert_array_equal(batch.labels, np.tile(np.arange(8), (3, 1)))
    np.testing.assert_array_equal(batch.truths, batch.graphs.outputs["pi"])
    with pytest.raises(ValueError, match=r"label_range >= 8, found 7"):
        text_batch("bfs", 8, 3, seed=2, label_range=7)


def test_unknown_algorithm_and_bad_arguments_raise():
    with pytest.raises(ValueError, match=r"in \('bfs', 'bellman_ford'\), found 'dfs'"):
        text_batch("dfs", 5, 2, seed=0)
    with pytest.raises(ValueError, match="bellman_ford"):
        answer_values("dfs", text_batch("bfs", 5, 2, seed=0).graphs)
    with pytest.raises(ValueError, match="decimals >= 1"):
        text_batch("bellman_ford", 5, 2, seed=0, decimals=0)
    with pytest.raises(ValueError, match="num_nodes >= 2"):
        text_batch("bfs", 1, 2, seed=0)


@pytest.mark.parametrize(
    "text",
    ["0 1 2", "[0 x]", "[0  1]", "[0,1]", " [0 1]", "[0 1]\n\n\n", "[0 1] ", "[0.5]"],
)
def test_parse_answer_rejects_what_dm_clrs_does_not_write(text):
    assert parse_answer(text) is None


def test_parse_answer_accepts_dm_clrs_answers_with_or_without_newlines():
    for text in ["[0 0 0 2 3]\n\n", "[0 0 0 2 3]\n", "[0 0 0 2 3]"]:
        np.testing.assert_array_equal(parse_answer(text), [0, 0, 0, 2, 3])


# ------------------------------------------------------------------------- scores


def test_scores_of_perfect_wrong_short_and_garbage_answers():
    truth = np.array([0, 0, 0, 2, 3])
    assert answer_scores("[0 0 0 2 3]\n\n", truth) == dict.fromkeys(SCORES, 1.0)
    assert answer_scores("[0 0 1 2 3]\n\n", truth) == {
        "shape": 1.0,
        "parse": 1.0,
        "clrs": 4 / 5,
    }
    assert answer_scores("[0 0 0 2]\n\n", truth) == {
        "shape": 0.0,
        "parse": 1.0,
        "clrs": 0.0,
    }
    assert answer_scores("[0 x", truth) == dict.fromkeys(SCORES, 0.0)


def test_a_list_of_the_wrong_length_is_told_from_one_that_never_closes():
    # both have shape 0; only the length says which failure it was
    assert listed_length("[0 0 0 2 3]\n\n") == 5
    assert listed_length("\n\n[0 0 0 2 3 4 4]\n\n0 1") == 7  # blank lines, run-on
    assert listed_length("[]") == 0
    for never in ("[0 0 0 2 3 4 4 4", "0 0 0]", "", ",,,[0]"):
        assert listed_length(never) is None, never


def test_batch_scores_per_sample_with_padded_truths():
    truths = np.array([[0, 0, 1], [1, 1, 0]])
    scores = batch_scores(["[0 0]", "[1 0 0]\n\n"], truths, num_nodes=[2, 3])
    np.testing.assert_array_equal(scores["shape"], [1.0, 1.0])
    np.testing.assert_allclose(scores["clrs"], [1.0, 2 / 3])
    full = batch_scores(["[0 0]", "[1 1 0]"], truths)  # default n = N = 3
    np.testing.assert_array_equal(full["shape"], [0.0, 1.0])
    np.testing.assert_array_equal(full["clrs"], [0.0, 1.0])
    with pytest.raises(ValueError, match="one per truth"):
        batch_scores(["[0]"], truths)


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford"])
def test_the_rules_answer_exactly_the_nodes_within_one_hop(algorithm):
    """``self`` is right exactly where a node is its own parent; ``one_hop``
    exactly where the parent is the node or the source (every neighbour of
    the source, and every node no path reaches)."""
    graphs = text_batch(algorithm, num_nodes=6, count=64, seed=3).graphs
    truth = np.asarray(graphs.outputs["pi"])
    source = np.asarray(graphs.inputs["s"]).argmax(-1)[:, None]
    own = np.arange(6)[None]
    rules = rule_pointers(graphs)
    assert set(rules) == {"self", "one_hop"}
    assert ((rules["self"] == truth) == (truth == own)).all()
    near = (truth == own) | (truth == source)
    assert ((rules["one_hop"] == truth) == near).all()
    assert near.mean() < 1.0  # some nodes lie further: the rule can miss


def test_read_shares_tell_a_query_that_reads_the_source_from_one_that_looks_up():
    """A layer that always reads the source scores on ``reads_named_node``
    exactly the share of parents that are the source (``source_named``),
    however far above ``chance``; one that reads each element's own node
    scores 1 on ``reads_own_node`` and the share of self-parents on
    ``reads_named_node``."""
    from nar_gap.paper.transnar.evaluation import element_slots, read_shares
    from nar_gap.paper.transnar.tokenizer import encode_examples

    texts = text_batch("bfs", num_nodes=6, count=16, seed=5, label_range=10)
    sequences = encode_examples(texts.prompts, texts.answers)
    parents = np.asarray(texts.graphs.outputs["pi"])
    sources = np.asarray(texts.graphs.inputs["s"]).argmax(-1)
    mask = np.ones((16, 6), dtype=bool)
    at_source = np.zeros((16, sequences.tokens.shape[1], 6))
    at_source[np.arange(16), :, sources] = 1.0
    at_own = np.zeros_like(at_source)
    for b in range(16):
        start = int(sequences.answer_start[b])
        answer = sequences.tokens[b, start : int(sequences.lengths[b])]
        for j, slot in enumerate(element_slots(answer)):
            at_own[b, start + slot - 1, j] = 1.0
    by_source = float(np.mean(parents == sources[:, None]))
    reads = read_shares(at_source, sequences, parents, sources, mask)
    assert reads["elements"] == 96 and reads["chance"] == pytest.approx(1 / 6)
    assert reads["reads_source"] == 1.0
    assert reads["source_named"] == pytest.approx(by_source)
    assert reads["reads_named_node"] == pytest.approx(by_source)
    assert reads["reads_named_node"] > 2 * reads["chance"]  # chance alone misleads
    reads = read_shares(at_own, sequences, parents, sources, mask)
    assert reads["reads_own_node"] == 1.0
    assert reads["reads_named_node"] == pytest.approx(
        float(np.mean(parents == np.arange(6)))
    )
    assert reads["reads_source"] == pytest.approx(1 / 6)
