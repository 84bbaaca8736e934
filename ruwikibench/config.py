"""An older name of :mod:`ruwikibench.conf.config` (moved there): outside code that imports
``ruwikibench.config`` gets that module itself."""

import sys

from ruwikibench.conf import config as _moved

sys.modules[__name__] = _moved
