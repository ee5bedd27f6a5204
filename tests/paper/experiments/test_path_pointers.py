"""Notebook 07's section 6b: where its tables go and when it runs."""

from __future__ import annotations

from nar_gap.paper.experiments import outputs, path_pointers, profiles


def test_the_catalogue_lists_the_section_s_tables_where_notebook_07_writes_them():
    cpu = outputs.tables(profiles.CPU)
    for name in path_pointers.files_of("bfs"):
        assert cpu[name] == "07_closing_the_gap"
    assert not path_pointers.has_section(profiles.CPU, "bellman_ford")
