"""Numba's lowering of arrays: allocating a new one, and a structure's value."""

from numba.np import arrayobj


def allocate_array(context, builder, arrtype, shapes):
    """A new array of type ``arrtype`` (its structure proxy) with the shape
    ``shapes`` (LLVM values), allocated as Numba's ``np.empty`` lowers."""
    return arrayobj._empty_nd_impl(context, builder, arrtype, shapes)


def structure_value(struct):
    """The LLVM value of a ``cgutils`` structure proxy (as ``make_array``'s)."""
    return struct._getvalue()
