"""An older name of :mod:`ruwikibench.stage.context` (moved there): outside code that imports
``ruwikibench.context`` gets that module itself."""

import sys

from ruwikibench.stage import context as _moved

sys.modules[__name__] = _moved
