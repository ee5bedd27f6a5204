"""A process started with this folder on PYTHONPATH cannot import TensorFlow.

Python imports ``sitecustomize`` at start-up, before any code of the process,
so the finder below is first on ``sys.meta_path`` before anything could import
TensorFlow, TensorFlow Datasets or Haiku (dm-clrs's heavy dependencies, which
nar_gap must never need). The tests put this folder on the PYTHONPATH of
their subprocesses and of the smoke notebooks' kernels
(``tests/blocked_imports.py``).

Finding is not importing: ``importlib.util.find_spec("tensorflow")`` still
answers (etils.epath asks it whenever JAX opens its compilation cache, to
know whether ``gs://`` paths could work); executing the module raises.
"""

import importlib.abc
import importlib.machinery
import os
import sys

# NAR_GAP_BLOCK_ALSO (comma-separated): more packages to refuse, such as the
# Jupyter stack a GPU node's job must run without (tests/paper/tools/test_job.py).
BLOCKED = ("tensorflow", "tensorflow_datasets", "haiku") + tuple(
    filter(None, os.environ.get("NAR_GAP_BLOCK_ALSO", "").split(","))
)


class _RefuseToLoad(importlib.abc.Loader):
    def create_module(self, spec):
        raise ImportError(f"{spec.name} is blocked in this process (no_tensorflow)")

    def exec_module(self, module):  # never reached: create_module raises
        raise ImportError(f"{module.__name__} is blocked in this process")


class _Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname.partition(".")[0] in BLOCKED:
            return importlib.machinery.ModuleSpec(fullname, _RefuseToLoad())
        return None


sys.meta_path.insert(0, _Refuse())
