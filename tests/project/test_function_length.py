"""No function in the package is longer than the house style's 80 lines.

A function is counted from its ``def`` line to its last line, docstring,
comments and blank lines included: what a reader has to hold at once.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "nar_gap"
MAX_LINES = 80


def long_functions(root: Path, limit: int = MAX_LINES) -> list[str]:
    """``"<lines> <path>:<line> <name>"`` of every function over ``limit`` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    where = f"{path.relative_to(root.parent)}:{node.lineno}"
                    found.append(f"{lines} {where} {node.name}")
    return found


def test_no_function_is_longer_than_80_lines():
    assert long_functions(PACKAGE) == []


def test_the_count_runs_from_def_to_the_last_line(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES - 2))
    (package / "m.py").write_text(
        f"def fits():\n    '''Doc.'''\n{body}\n\n"
        f"class C:\n    async def long(self):\n        '''Doc.'''\n"
        + body.replace("    ", "        ")
        + "\n        return x0\n"
    )
    assert long_functions(package) == ["81 pkg/m.py:83 long"]
