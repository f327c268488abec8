"""pyggmlr: an autograd engine with one C core shared by Python and R.

Mirrors ggmlR's ag_* API (ag_tensor, ag_param, with_grad_tape, backward, ag_matmul, ...,
optimizer_adam, ag_sequential, ag_fit). Tensors are column-major [features, batch] matrices:
``shape`` is R's ``dim()``.

The modules, bottom to top (docs/contributing.md, "Python's layers"; each imports only from its
own layer and those below):

- core: ``_core`` (the compiled ``lib``), ``errors``, ``_args``, ``tensor``, ``tensor_index``,
  ``ops``, ``ops_loss``, ``ops_select``, ``tape``, ``random``, ``_walk``, ``gradcheck``, ``gpu``,
  ``checkpoint``, ``attention``, ``data``;
- ``nn/``: modules and layers, state dicts;
- ``optim/``: optimizers, their state, schedules;
- ``graph/``: memory counters, ag_compile, captures, memory reports and estimates;
- ``io/``: model files;
- ``parallel/``: MPI collectives, DistributedOptimizer, dp_train;
- ``fit/``: ag_fit and what it runs on;
- this namespace, ``__main__`` (the command line), ``distributed`` (the MPI API with
  ag_fit_distributed) and ``r`` (the R bridge).
"""

from ._core import (
    ag_blas_name,
    ag_get_threads,
    ag_set_blas,
    ag_set_threads,
    blas_library_path,
)
from ._version import __version__  # noqa: F401
from .attention import *  # noqa: F401,F403  (ag_flash_attention)
from .checkpoint import ag_checkpoint  # noqa: F401  (gradient checkpointing)
from .conv import *  # noqa: F401,F403  (ag_images, ag_image_shape, ag_conv2d_op, ag_conv1d_op)
from .data import *  # noqa: F401,F403  (ag_dataloader, data sets)
from .distributed import (  # noqa: F401  (MPI optional, imported on use)
    DistributedOptimizer,
    ag_allreduce_gradients,
    ag_broadcast_parameters,
    ag_fit_distributed,
    ag_mpi_available,
    ag_mpi_barrier,
    ag_mpi_init,
    ag_mpi_rank,
    ag_mpi_world_size,
    ag_parameters_spread,  # noqa: F401  (top level as in R)
)
from .errors import (
    ArgumentError,
    DTypeError,
    GradientKeyError,
    ModifiedTensorError,  # noqa: F401  (backward over a tensor overwritten after recording)
    NonFiniteLossWarning,
    PyggmlrError,
    PyggmlrMemoryError,
    PyggmlrValueError,
    ShapeError,
    StateError,
    StaticFallbackWarning,
)
from .fit import *  # noqa: F401,F403  (ag_fit, callbacks, history, ag_predict)
from .gpu import *  # noqa: F401,F403  (ggmlR's GPU switches and probes: no GPU here)
from .gradcheck import *  # noqa: F401,F403
from .graph.capture import *  # noqa: F401,F403  (ggmlR's captured functions and steps, eager on the CPU)
from .graph.compile import ag_compile  # noqa: F401  (static graphs)
from .graph.estimate import *  # noqa: F401,F403  (ag_tape_memory, ag_estimate_training_memory)
from .graph.memory import *  # noqa: F401,F403  (ag_memory_stats, ..., MemoryReport)
from .io import *  # noqa: F401,F403  (ag_save_model, ag_load_model, ag_model_info, ggml_version)
from .nn.modules import *  # noqa: F401,F403  (layers and modules)
from .nn.state import *  # noqa: F401,F403  (ag_state_dict, ag_load_state_dict)
from .nn.summary import Summary, summary  # noqa: F401  (R's summary(model): the layer table)
from .ops import *  # noqa: F401,F403
from .ops_loss import *  # noqa: F401,F403  (bce, bce with logits, huber, mae, weighted mse)
from .ops_select import *  # noqa: F401,F403  (argmax, log-softmax, gather, max, sampling)
from .optim.optimizer import Optimizer, clip_grad_norm, optimizer_adam, optimizer_sgd
from .optim.sched import *  # noqa: F401,F403  (lr schedulers, clip_grad_value, check_grad_anomaly)
from .optim.state import OptimizerHyperWarning  # noqa: F401  (load_state's hyper-parameter warning)
from .parallel.replicas import dp_train  # noqa: F401  (ggmlR dp_train)
from .random import ag_rng, ggml_set_seed
from .tape import Gradients, ag_no_grad, ag_tape_clear, backward, with_grad_tape
from .tensor import (
    DeviceError,
    Tensor,
    ag_default_device,
    ag_default_dtype,
    ag_device,
    ag_dtype,
    ag_grad,
    ag_param,
    ag_tensor,
    ag_to_device,
    is_ag_tensor,
)
from .tensor_index import PyggmlrIndexError  # noqa: F401  (Tensor.__getitem__: t[i, j], slices, masks)

# The public API, for help(pyggmlr), `from pyggmlr import *` and type checkers (a literal list:
# mypy reads it). tests/test_py_habits.py checks it against the names imported above, sorted.
__all__ = [
    "ArgumentError",
    "Callback",
    "Captured",
    "DTypeError",
    "DeviceError",
    "DistributedOptimizer",
    "GradcheckResult",
    "GradientKeyError",
    "Gradients",
    "History",
    "MemoryReport",
    "ModifiedTensorError",
    "Module",
    "NonFiniteLossWarning",
    "Optimizer",
    "OptimizerHyperWarning",
    "PyggmlrError",
    "PyggmlrIndexError",
    "PyggmlrMemoryError",
    "PyggmlrValueError",
    "ShapeError",
    "StateError",
    "StaticFallbackWarning",
    "Summary",
    "Tensor",
    "ag_accuracy",
    "ag_add",
    "ag_allreduce_gradients",
    "ag_argmax",
    "ag_avg_pool1d",
    "ag_avg_pool1d_op",
    "ag_avg_pool2d",
    "ag_avg_pool2d_op",
    "ag_batch_norm",
    "ag_bce_with_logits_loss",
    "ag_binary_cross_entropy_loss",
    "ag_blas_name",
    "ag_broadcast_parameters",
    "ag_capture",
    "ag_capture_free",
    "ag_capture_set",
    "ag_capture_step",
    "ag_checkpoint",
    "ag_clamp",
    "ag_compile",
    "ag_concat_rows",
    "ag_conv1d",
    "ag_conv1d_op",
    "ag_conv2d",
    "ag_conv2d_op",
    "ag_conv_transpose1d",
    "ag_conv_transpose1d_op",
    "ag_conv_transpose2d",
    "ag_conv_transpose2d_op",
    "ag_cross_entropy_loss",
    "ag_dataloader",
    "ag_default_device",
    "ag_default_dtype",
    "ag_device",
    "ag_div",
    "ag_dropout",
    "ag_dtype",
    "ag_early_stopping",
    "ag_embedding",
    "ag_estimate_training_memory",
    "ag_eval",
    "ag_evaluate",
    "ag_exp",
    "ag_fit",
    "ag_fit_distributed",
    "ag_flash_attention",
    "ag_flatten",
    "ag_gather",
    "ag_gelu",
    "ag_get_threads",
    "ag_global_avg_pool",
    "ag_global_avg_pool_op",
    "ag_global_max_pool",
    "ag_global_max_pool_op",
    "ag_grad",
    "ag_gradcheck",
    "ag_graph_mode",
    "ag_gru",
    "ag_huber_loss",
    "ag_image_shape",
    "ag_images",
    "ag_layer_norm",
    "ag_linear",
    "ag_live_objects",
    "ag_load_model",
    "ag_load_state_dict",
    "ag_local_mode",
    "ag_log",
    "ag_log_softmax",
    "ag_lstm",
    "ag_mae_loss",
    "ag_matmul",
    "ag_matmul_precision",
    "ag_max",
    "ag_max_pool1d",
    "ag_max_pool1d_op",
    "ag_max_pool2d",
    "ag_max_pool2d_op",
    "ag_mean",
    "ag_memory_peak",
    "ag_memory_reset_peak",
    "ag_memory_stats",
    "ag_memory_trim",
    "ag_model_checkpoint",
    "ag_model_info",
    "ag_module_from_config",
    "ag_mpi_available",
    "ag_mpi_barrier",
    "ag_mpi_init",
    "ag_mpi_rank",
    "ag_mpi_world_size",
    "ag_mse_loss",
    "ag_mul",
    "ag_multihead_attention",
    "ag_neg",
    "ag_no_grad",
    "ag_normalization",
    "ag_pad1d",
    "ag_pad1d_op",
    "ag_pad2d",
    "ag_pad2d_op",
    "ag_param",
    "ag_parameters_spread",
    "ag_pow",
    "ag_predict",
    "ag_register_layer",
    "ag_relu",
    "ag_reshape",
    "ag_rng",
    "ag_rnn",
    "ag_sample_categorical",
    "ag_sample_normal",
    "ag_save_model",
    "ag_scale",
    "ag_sequences",
    "ag_sequential",
    "ag_set_blas",
    "ag_set_threads",
    "ag_sigmoid",
    "ag_slice_rows",
    "ag_softmax",
    "ag_softmax_cross_entropy_loss",
    "ag_state_dict",
    "ag_sub",
    "ag_sum",
    "ag_tanh",
    "ag_tape_clear",
    "ag_tape_memory",
    "ag_tensor",
    "ag_to_config",
    "ag_to_device",
    "ag_train",
    "ag_transpose",
    "ag_upsample1d",
    "ag_upsample1d_op",
    "ag_upsample2d",
    "ag_upsample2d_op",
    "ag_weighted_mse_loss",
    "backward",
    "blas_library_path",
    "check_grad_anomaly",
    "clip_grad_norm",
    "clip_grad_value",
    "dp_train",
    "ggml_backend_dev_count",
    "ggml_set_seed",
    "ggml_version",
    "ggml_vulkan_available",
    "ggml_vulkan_device_count",
    "ggml_vulkan_status",
    "is_ag_tensor",
    "load_breast_cancer",
    "load_digits",
    "load_iris",
    "load_letters",
    "load_sunspots",
    "lr_scheduler_cosine",
    "lr_scheduler_cyclic",
    "lr_scheduler_onecycle",
    "lr_scheduler_step",
    "lr_scheduler_warmup",
    "lr_scheduler_warmup_cosine",
    "optimizer_adam",
    "optimizer_sgd",
    "summary",
    "with_grad_tape",
]


def _complete_all() -> None:
    """A name imported above but missing from the literal list is still exported (the test
    above names it so the list can be fixed)."""
    g = globals()
    extra = sorted(
        k
        for k, v in g.items()
        if not k.startswith("_") and k not in __all__ and type(v).__name__ != "module"
    )
    __all__.extend(extra)


_complete_all()
