"""The one place that imports dm-clrs, with TensorFlow's log noise kept out.

dm-clrs imports TensorFlow (through tensorflow-datasets) at package import time.
TensorFlow's C++ runtime writes banner lines such as "Could not find cuda
drivers" straight to file descriptor 2, where ``TF_CPP_MIN_LOG_LEVEL`` does not
always reach them, and absl logs a warning for every on-the-fly sampler.  Users
of nar_gap should see none of it, so the import runs with fd 2 pointed at
/dev/null and absl is set to errors only.  Every other module imports dm-clrs as
``from nar_gap.tasks._clrs import clrs``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


@contextlib.contextmanager
def _silenced_stderr() -> Iterator[None]:
    """Point fd 2 at /dev/null for the duration (C++ loggers bypass sys.stderr)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real fd 2 (some notebook kernels)
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


with _silenced_stderr():
    import clrs  # noqa: E402
    from clrs._src import algorithms as clrs_algorithms  # noqa: E402
    from clrs._src import probing as clrs_probing  # noqa: E402
    from clrs._src import samplers as clrs_samplers  # noqa: E402
    from clrs._src import specs as clrs_specs  # noqa: E402
    from clrs._src.clrs_text import clrs_utils as clrs_text_utils  # noqa: E402

try:  # absl is a dm-clrs dependency; keep its sampler warnings out of user output
    from absl import logging as _absl_logging

    _absl_logging.set_verbosity(_absl_logging.ERROR)
except ImportError:  # pragma: no cover
    pass

__all__ = [
    "clrs",
    "clrs_algorithms",
    "clrs_probing",
    "clrs_samplers",
    "clrs_specs",
    "clrs_text_utils",
]
