#!/usr/bin/env bash
set -euo pipefail
# Put the saved benchmark run's table into docs/benchmark.md (between its
# markers), so the numbers there are rendered from benchmarks/results/, never typed.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="${NAR_GAP_VENV:-.venv}"
table="$("$venv/bin/python" benchmarks/train_throughput.py --report benchmarks/results/train_throughput_cpu.json)"
"$venv/bin/python" - "$table" <<'PY'
import sys
from pathlib import Path
page = Path("docs/benchmark.md")
text = page.read_text()
head, rest = text.split("<!-- benchmark:start -->\n", 1)
_, tail = rest.split("<!-- benchmark:end -->", 1)
page.write_text(f"{head}<!-- benchmark:start -->\n{sys.argv[1]}\n<!-- benchmark:end -->{tail}")
PY
