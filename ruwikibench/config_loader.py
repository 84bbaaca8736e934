"""An older name of :mod:`ruwikibench.conf.loader` (moved there): outside code that imports
``ruwikibench.config_loader`` gets that module itself."""

import sys

from ruwikibench.conf import loader as _moved

sys.modules[__name__] = _moved
