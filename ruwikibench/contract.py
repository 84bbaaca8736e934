"""An older name of :mod:`ruwikibench.stage.contract` (moved there): outside code that imports
``ruwikibench.contract`` gets that module itself."""

import sys

from ruwikibench.stage import contract as _moved

sys.modules[__name__] = _moved
