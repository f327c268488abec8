"""pyggmlr: an autograd engine with one C core shared by Python and R.

Mirrors ggmlR's ag_* API (ag_tensor, ag_param, with_grad_tape, backward, ag_matmul, ...,
optimizer_adam, ag_sequential, ag_fit). Tensors are column-major [features, batch] matrices:
``shape`` is R's ``dim()``.
"""
from ._core import ag_get_threads, ag_set_threads, blas_name, blas_library_path, use_blas
from .errors import (ArgumentError, DTypeError, GradientKeyError, PyggmlrError, PyggmlrMemoryError,
                     PyggmlrValueError, ShapeError, StateError)
from .tensor import (DeviceError, Tensor, ag_default_device, ag_default_dtype, ag_device,
                     ag_dtype, ag_grad, ag_param, ag_tensor, ag_to_device, is_ag_tensor)
from .tape import Gradients, ag_no_grad, ag_tape_clear, backward, with_grad_tape
from .ops import *  # noqa: F401,F403
from .ops_select import *  # noqa: F401,F403  (argmax, log-softmax, gather, max, sampling)
from .ops_loss import *  # noqa: F401,F403  (bce, bce with logits, huber, mae, weighted mse)
from .optim import Optimizer, clip_grad_norm, optimizer_adam, optimizer_sgd
from .sched import *  # noqa: F401,F403  (lr schedulers, clip_grad_value, check_grad_anomaly)
from .random import ag_rng, ggml_set_seed
from .nn import *  # noqa: F401,F403  (layers and modules)
from .data import *  # noqa: F401,F403  (ag_dataloader, data sets)
from .gradcheck import *  # noqa: F401,F403
from .fit import *  # noqa: F401,F403  (ag_fit, callbacks, history)
from .io import *  # noqa: F401,F403  (ag_save_model, ag_load_model)
from .state import *  # noqa: F401,F403  (ag_state_dict, ag_load_state_dict, ag_save_model, ag_load_model, ggml_version)
from .distributed import (dp_train, ag_mpi_init, ag_mpi_rank, ag_mpi_world_size, ag_mpi_barrier, ag_mpi_available, ag_broadcast_parameters, ag_allreduce_gradients, DistributedOptimizer, ag_fit_distributed)  # noqa: F401  (MPI optional, imported on use)
from .compile import ag_compile  # noqa: F401  (static graphs)
from .gpu import *  # noqa: F401,F403  (ggmlR's GPU switches and probes: no GPU here)
from .capture import *  # noqa: F401,F403  (ggmlR's captured functions and steps, eager on the CPU)
from .memory import *  # noqa: F401,F403  (ag_tape_memory, ag_estimate_training_memory, ...)
from .attention import *  # noqa: F401,F403  (ag_flash_attention)
from .checkpoint import ag_checkpoint  # noqa: F401  (gradient checkpointing; old callback alias)
from .optim_state import OptimizerHyperWarning  # noqa: F401  (load_state's hyper-parameter warning)

__version__ = "0.1.0"
from .errors import ModifiedTensorError  # noqa: F401  (backward over a tensor overwritten after recording)
