"""The edge-list reader: the format, and one clear error per kind of bad input."""

from __future__ import annotations

import numpy as np
import pytest

from nar_gap.tasks.batch import Batch
from nar_gap.tasks.graphs import GraphFileError, parse_edge_list, read_edge_list


def test_weights_default_weight_and_symmetry():
    matrix = parse_edge_list("0 1 0.5\n1 2\n")
    expected = np.array([[0.0, 0.5, 0.0], [0.5, 0.0, 1.0], [0.0, 1.0, 0.0]])
    np.testing.assert_array_equal(matrix, expected)
    assert matrix.dtype == np.float64
    np.testing.assert_array_equal(matrix, matrix.T)


def test_comments_and_blank_lines_are_ignored():
    text = "# a triangle\n\n0 1   # first edge\n  \n1 2 2.5#no space\n2 0 1e-1\n# end\n"
    matrix = parse_edge_list(text)
    assert matrix.shape == (3, 3)
    assert matrix[1, 2] == matrix[2, 1] == 2.5
    assert matrix[0, 2] == matrix[2, 0] == 0.1
    assert np.count_nonzero(matrix) == 6


def test_nodes_line_adds_isolated_nodes_anywhere_in_the_file():
    matrix = parse_edge_list("0 1\nnodes 5  # two isolated nodes at the end\n")
    assert matrix.shape == (5, 5)
    assert not matrix[2:].any() and not matrix[:, 2:].any()
    assert parse_edge_list("nodes 2\n").shape == (2, 2)  # no edges at all


def test_self_loops_set_the_diagonal():
    matrix = parse_edge_list("0 0 0.25\n0 1\n")
    assert matrix[0, 0] == 0.25
    assert matrix[1, 1] == 0.0


def test_repeated_edge_with_the_same_weight_is_fine():
    matrix = parse_edge_list("0 1 0.5\n1 0 0.5\n0 1 0.5\n")
    assert matrix[0, 1] == matrix[1, 0] == 0.5


def test_read_edge_list_reads_a_file_with_crlf_and_bom(tmp_path):
    path = tmp_path / "g.txt"
    path.write_bytes("\ufeff0 1\r\n1 2 0.5\r\n".encode())
    np.testing.assert_array_equal(read_edge_list(path), parse_edge_list("0 1\n1 2 0.5"))


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        ("0 1\n0 1 2 3\n", 2, "2 or 3 fields"),
        ("0\n", 1, "2 or 3 fields"),
        ("0 1\n0 x\n", 2, "integers"),
        ("0 1.5\n", 1, "integers"),
        ("0 1 heavy\n", 1, "not a number"),
        ("0 1\n\n-1 2\n", 3, ">= 0"),
        ("nodes 3\n0 1\n1 3\n", 3, "out of range"),
        ("0 5\nnodes 3\n", 1, "out of range"),
        ("nodes 3\nnodes 3\n", 2, "second 'nodes' line"),
        ("nodes\n", 1, "nodes N"),
        ("nodes three\n", 1, "nodes N"),
        ("nodes 2 3\n", 1, "nodes N"),
        ("nodes 0\n", 1, "must be in"),
        ("0 1 nan\n", 1, "finite"),
        ("0 1 inf\n", 1, "finite"),
        ("0 1 0\n", 1, "> 0"),
        ("0 1 -0.5\n", 1, "> 0"),
        ("0 1 0.5\n1 2\n1 0 0.25\n", 3, "line 1 gave it weight 0.5"),
        ("0 99999999\n", 1, "too large"),
    ],
)
def test_bad_lines_name_the_file_and_line(text, line, expected):
    with pytest.raises(GraphFileError) as raised:
        parse_edge_list(text, "g.txt")
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"graph file g.txt, line {line}: "), message
    assert expected in message
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_an_empty_graph_is_an_error(text):
    with pytest.raises(GraphFileError, match="graph file g.txt: empty graph"):
        parse_edge_list(text, "g.txt")


def test_unreadable_files_are_graph_file_errors(tmp_path):
    with pytest.raises(GraphFileError, match="missing.txt: no such file"):
        read_edge_list(tmp_path / "missing.txt")
    with pytest.raises(GraphFileError, match="is a directory"):
        read_edge_list(tmp_path)
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("0 1 # caf\xe9\n".encode("latin-1"))
    with pytest.raises(GraphFileError, match="latin1.txt: not UTF-8"):
        read_edge_list(latin1)


def test_arcs_set_one_direction_only():
    a = parse_edge_list("0 -> 1\n1 -> 2 0.5\n2 0\n2 -> 2\n")
    expected = np.zeros((3, 3))
    expected[0, 1], expected[1, 2], expected[2, 2] = 1.0, 0.5, 1.0
    expected[2, 0] = expected[0, 2] = 1.0  # the undirected edge 2 0
    np.testing.assert_array_equal(a, expected)


@pytest.mark.parametrize(
    "text,line",
    [
        ("0 -> 1\n0 -> 1 2\n", 2),  # the same arc, another weight
        ("0 1\n1 -> 0 2\n", 2),  # an arc against an edge's weight
        ("0 -> 1 3\n1 0\n", 2),  # an edge against an arc's weight
    ],
)
def test_an_entry_given_twice_needs_the_same_weight(text, line):
    with pytest.raises(GraphFileError, match=f"line {line}: edge"):
        parse_edge_list(text)


def test_an_arc_and_its_reverse_may_differ():
    a = parse_edge_list("0 -> 1 2\n1 -> 0 3\n")
    assert (a[0, 1], a[1, 0]) == (2.0, 3.0)


def test_shuffled_ids_renumber_the_same_graphs_by_a_drawn_permutation():
    """The same lattice, self-loops and source id; only the numbering (and so
    dm-clrs's lowest-id tie-break and the ``pos`` a model reads) changes."""
    from nar_gap.tasks.graphs import family_batch

    def grids(shuffled_ids: bool) -> Batch:
        return family_batch(
            "bfs", "grid", 25, 4, first=7, clrs_law=True, shuffled_ids=shuffled_ids
        )

    plain, shuffled = grids(False), grids(True)
    a, b = (np.asarray(x.inputs["A"]) for x in (plain, shuffled))
    for k in range(4):
        order = np.random.default_rng([7 + k, 25, 7]).permutation(25)
        np.testing.assert_array_equal(b[k], a[k][np.ix_(order, order)])
    assert not np.array_equal(a, b)
    assert not np.array_equal(plain.outputs["pi"], shuffled.outputs["pi"])
    np.testing.assert_array_equal(plain.inputs["s"], shuffled.inputs["s"])
    np.testing.assert_array_equal(np.asarray(grids(True).inputs["A"]), b)


def test_a_kept_source_makes_the_shuffled_draw_the_plain_one_relabelled():
    """Seen failing with the source left at its drawn index, and with it
    mapped by the permutation instead of its inverse."""
    from nar_gap.tasks.graphs import family_batch

    def grids(**shuffled: bool) -> Batch:
        return family_batch("bfs", "grid", 25, 4, first=7, clrs_law=True, **shuffled)

    plain, kept = grids(), grids(shuffled_ids=True, source_kept=True)
    moved = grids(shuffled_ids=True)
    for k in range(4):
        order = np.random.default_rng([7 + k, 25, 7]).permutation(25)
        a, b = (np.asarray(x.inputs["A"][k]) for x in (plain, kept))
        np.testing.assert_array_equal(b, a[np.ix_(order, order)])
        # new id i is old node order[i]: the same source, the same reach
        np.testing.assert_array_equal(kept.inputs["s"][k], plain.inputs["s"][k][order])
        np.testing.assert_array_equal(
            kept.hints["reach_h"][:, k], plain.hints["reach_h"][:, k][:, order]
        )
    np.testing.assert_array_equal(np.asarray(moved.inputs["A"]), kept.inputs["A"])
    assert not np.array_equal(moved.inputs["s"], kept.inputs["s"])
    with pytest.raises(ValueError, match="needs shuffled_ids"):
        grids(source_kept=True)
