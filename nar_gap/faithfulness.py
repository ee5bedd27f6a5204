"""The old path of the faithfulness measures; they live in :mod:`nar_gap.analysis`.

``from nar_gap.faithfulness import Models`` keeps working: the names are
re-exported from :mod:`nar_gap.analysis.faithfulness` and
:mod:`nar_gap.analysis.models`.  New code imports from there.
"""

from nar_gap.analysis.faithfulness import *  # noqa: F403
from nar_gap.analysis.faithfulness import __all__ as _measures
from nar_gap.analysis.models import *  # noqa: F403
from nar_gap.analysis.models import __all__ as _models

__all__ = [*_measures, *_models]
