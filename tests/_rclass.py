"""The R condition class of each Python exception type (the parity tier compares both)."""

import pyggmlr as pg

R_CLASS = {
    pg.ShapeError: "pyggmlr_shape_error",
    pg.DTypeError: "pyggmlr_dtype_error",
    pg.PyggmlrValueError: "pyggmlr_value_error",
    pg.PyggmlrMemoryError: "pyggmlr_memory_error",
    pg.StateError: "pyggmlr_state_error",
    pg.ArgumentError: "pyggmlr_argument_error",
}
