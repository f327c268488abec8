"""Exception types. Every error raised by the C core maps onto one of these; each also
inherits the matching builtin so ``except ValueError`` keeps working."""


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


# C status code -> exception type (see enum pg_status in native/pg_api.h)
_BY_STATUS = {
    1: ShapeError,
    2: DTypeError,
    3: PyggmlrValueError,
    4: PyggmlrMemoryError,
    5: StateError,
    6: ArgumentError,
}


def error_for_status(status, message):
    return _BY_STATUS.get(status, PyggmlrError)(message)
