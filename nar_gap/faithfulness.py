"""The old path of the faithfulness measures; they live in :mod:`nar_gap.analysis`.

``from nar_gap.faithfulness import Models`` keeps working until nar_gap 0.3.0
(:data:`nar_gap.system.legacy.REMOVAL`), with a ``DeprecationWarning``: the
names are re-exported from :mod:`nar_gap.analysis.faithfulness` and
:mod:`nar_gap.analysis.models`.  New code imports from there.
"""

from nar_gap.analysis.faithfulness import *  # noqa: F403
from nar_gap.analysis.faithfulness import __all__ as _measures
from nar_gap.analysis.models import *  # noqa: F403
from nar_gap.analysis.models import __all__ as _models
from nar_gap.system.legacy import warn_moved

warn_moved("nar_gap.faithfulness", "nar_gap.analysis (faithfulness, models)")

__all__ = [*_measures, *_models]
