"""A process started with this folder on PYTHONPATH cannot import TensorFlow.

Python imports ``sitecustomize`` at start-up, before any code of the process,
so the finder below is first on ``sys.meta_path`` before anything could import
TensorFlow, TensorFlow Datasets or Haiku (dm-clrs's heavy dependencies, which
nar_gap must never need). The tests put this folder on the PYTHONPATH of
their subprocesses and of the smoke notebooks' kernels
(``tests/blocked_imports.py``).
"""

import importlib.abc
import sys

BLOCKED = ("tensorflow", "tensorflow_datasets", "haiku")


class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname.partition(".")[0] in BLOCKED:
            raise ImportError(f"{fullname} is blocked in this process (no_tensorflow)")
        return None


sys.meta_path.insert(0, _Refuse())
