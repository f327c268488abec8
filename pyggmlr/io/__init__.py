"""Model files (layer 4, above graph/): this project's safetensors model files and ggmlR's
functions over them.

- ``check.py``: what a file or an architecture must satisfy before anything is written or built;
- ``modelfile.py``: writing and reading the files through the core's schema, ag_model_info;
- ``save.py``: ag_save_model / ag_load_model with ggmlR's arguments, ggml_version.
"""

from .modelfile import ag_model_info
from .save import ag_load_model, ag_save_model, ggml_version

__all__ = ["ag_model_info", "ag_save_model", "ag_load_model", "ggml_version"]
