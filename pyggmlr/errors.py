"""Exception types. Every error raised by the C core maps onto one of these; each also
inherits the matching builtin so ``except ValueError`` keeps working."""

from ._native import lib as _lib  # the core's status codes (enum pg_status)


class PyggmlrError(Exception):
    """Base class of all pyggmlr errors."""


class ShapeError(PyggmlrError, ValueError):
    """Operand shapes do not fit the operation (the message names the op and the shapes)."""


class DTypeError(PyggmlrError, TypeError):
    """A dtype is not allowed or operands disagree."""


class PyggmlrValueError(PyggmlrError, ValueError):
    """A bad argument value (out-of-range index, negative size, unknown option...)."""


class PyggmlrMemoryError(PyggmlrError, MemoryError):
    """The C core could not allocate memory."""


class StateError(PyggmlrError, RuntimeError):
    """The call is not valid in the current state (dead handle, tape misuse...)."""


class ArgumentError(PyggmlrError, TypeError):
    """An argument of the wrong kind (not a tensor, freed or foreign object...)."""


class StaticFallbackWarning(UserWarning):
    """ag_fit(static=None) runs a model eagerly because its step cannot be compiled safely (the
    message gives the reason; static=False silences it)."""


class NonFiniteLossWarning(RuntimeWarning):
    """ag_fit stopped because an epoch's loss turned NaN or infinite (the message names the
    epoch and what to try); the History keeps the epochs up to that one."""


class GradientKeyError(PyggmlrError, KeyError):
    """A gradient map has no entry for that tensor or id (a KeyError, as Mapping lookups need)."""


class ModifiedTensorError(StateError):
    """backward() needs a tensor whose values were overwritten after the forward pass recorded
    it (``x.data = ...``, a write through a numpy view, an optimizer step): the message names
    the tensor, the op and both versions (as PyTorch's in-place modification error)."""


# C status code -> exception type (enum pg_status in native/pg_api.h)
_BY_STATUS = {
    _lib.PG_STATUS_ERR_SHAPE: ShapeError,
    _lib.PG_STATUS_ERR_DTYPE: DTypeError,
    _lib.PG_STATUS_ERR_VALUE: PyggmlrValueError,
    _lib.PG_STATUS_ERR_NOMEM: PyggmlrMemoryError,
    _lib.PG_STATUS_ERR_STATE: StateError,
    _lib.PG_STATUS_ERR_ARG: ArgumentError,
    _lib.PG_STATUS_ERR_MODIFIED: ModifiedTensorError,
}


def error_for_status(status, message):
    """The typed exception (not raised) for a C status code and message: ShapeError for 1,
    DTypeError, ...; PyggmlrError for an unknown code."""
    return _BY_STATUS.get(status, PyggmlrError)(message)
