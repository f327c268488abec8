"""Layers and modules (layer 1, above the core's tensors and ops): ``pyggmlr.nn`` names every
layer, as ``nn/modules.py``'s ``__all__`` lists them.

- ``module.py``: attribute registration (parameters(), buffers(), children(), repr) and the
  state_dict() / load_state_dict() methods of every Module;
- ``state.py``: ag_state_dict / ag_load_state_dict (ggmlR 0.8.6's in-memory format);
- ``base.py``: the Module base class, ag_train / ag_eval, the row ops, initialisers, dropout;
- ``layers.py``: batch and layer norm, embedding, multi-head attention;
- ``modules.py``: ag_linear, ag_sequential, ag_dropout and the architecture configs.
"""

from .modules import *  # noqa: F403  (the layers: modules.py's __all__)
from .modules import __all__ as __all__
