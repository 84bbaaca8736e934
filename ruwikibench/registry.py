"""An older name of :mod:`ruwikibench.stage.registry` (moved there): outside code that imports
``ruwikibench.registry`` gets that module itself."""

import sys

from ruwikibench.stage import registry as _moved

sys.modules[__name__] = _moved
