"""What an array index selects, read off Numba's types: its atoms per
dimension (a constant, an integer variable, a slice, ``...``), and whether
it reads or writes one element, a row or a slice (`scan.py` asks)."""

from numba.core import ir, types


def is_int(scan, atom):
    """True when an index atom is an integer: a variable Numba typed as an integer, or an int
    constant (not a bool)."""
    if isinstance(atom, ir.Var):
        return isinstance(scan.typemap.get(atom.name), types.Integer)
    return isinstance(atom, int) and not isinstance(atom, bool)


def int_constant(scan, atom):
    """The int an index atom or loop bound holds (an int, or a variable
    assigned an int constant), else None."""
    if isinstance(atom, ir.Var):
        value = scan.definition(atom.name)
        atom = value.value if isinstance(value, ir.Const) else None
    return atom if isinstance(atom, int) and not isinstance(atom, bool) else None


def is_slice(typemap, atom):
    """Whether an index atom (a Var or a constant) is a slice."""
    if isinstance(atom, ir.Var):
        return isinstance(typemap.get(atom.name), types.SliceType)
    return isinstance(atom, slice)


def index_atoms(scan, node):
    """The index of a getitem/setitem as a list of per-dimension atoms, or
    None when its components are not visible (a tuple from elsewhere)."""
    if isinstance(node, (ir.StaticSetItem,)) or (isinstance(node, ir.Expr) and node.op == "static_getitem"):
        index = node.index
        return list(index) if isinstance(index, tuple) else [index]
    index = node.index
    value = scan.definition(index.name)
    if isinstance(value, ir.Expr) and value.op == "build_tuple":
        return list(value.items)
    if isinstance(value, ir.Const) and isinstance(value.value, tuple):
        return list(value.value)
    if isinstance(scan.typemap.get(index.name), types.BaseTuple):
        return None
    return [index]


def without_ellipsis(scan, atoms, ndim):
    """``...`` in an index as the whole-dimension slices it stands for."""
    for k, atom in enumerate(atoms):
        if atom is Ellipsis or isinstance(atom, ir.Var) and isinstance(scan.typemap.get(atom.name), types.EllipsisType):
            return atoms[:k] + [slice(None)] * (ndim - len(atoms) + 1) + atoms[k + 1:]
    return atoms


def classify_index(scan, root_var, index):
    """What an index (a list of per-dimension atoms, or None) selects of the array ``root_var``:
    ``"element"`` (one integer per dimension), ``"row"`` (fewer integers), ``"slice"`` (integers
    and slices), else ``"opaque"`` (an index array, a tuple from elsewhere)."""
    ndim = scan.typemap[root_var].ndim
    if index is None:
        return "opaque"
    if all(is_int(scan, a) for a in index):
        return "element" if len(index) == ndim else "row"
    if all(is_int(scan, a) or is_slice(scan.typemap, a) for a in index):
        return "slice"
    return "opaque"


def is_element_index(typemap, stmt, ndim):
    """Whether a setitem's index (a variable or a constant) selects one
    element of an ``ndim``-dimensional array: ``ndim`` integers."""
    index = stmt.index_var if isinstance(stmt, ir.StaticSetItem) else stmt.index
    if index is None:
        value = stmt.index
        parts = list(value) if isinstance(value, tuple) else [value]
        return len(parts) == ndim and all(isinstance(p, int) for p in parts)
    ty = typemap[index.name]
    parts = list(ty) if isinstance(ty, types.BaseTuple) else [ty]
    return len(parts) == ndim and all(isinstance(p, types.Integer) for p in parts)


def subscript_key(scan, node):
    """A subscript's index, comparable between two statements: per
    dimension its constant, the arguments of the ``slice`` built there, or
    the variable holding it (None where the index is not visible)."""
    def atom_key(atom):
        if not isinstance(atom, ir.Var):
            return repr(atom)
        value = scan.definition(atom.name)
        if isinstance(value, ir.Const):
            return repr(value.value)
        if isinstance(value, ir.Expr) and value.op == "call" and isinstance(scan.typemap[atom.name], types.SliceType):
            return ("slice",) + tuple(atom_key(a) for a in value.args)
        return scan.canonical(atom.name)

    atoms = index_atoms(scan, node)
    return None if atoms is None else tuple(atom_key(a) for a in atoms)


def disjoint_subscripts(read, written):
    """Whether two `subscript_key` s select disjoint elements whatever the
    shape: in some dimension both are integer constants of one sign that
    differ (``p[1, :]`` and ``p[0, :]``; ``p[:, -2]`` and ``p[:, -1]``)."""
    def constant(key):
        try:
            return int(key) if isinstance(key, str) else None
        except ValueError:
            return None

    return any(a is not None and b is not None and (a < 0) == (b < 0) and a != b
               for a, b in zip(map(constant, read), map(constant, written)))


# `subscript_key` of ``:``, built at run time or a constant of Numba's
_WHOLE_AXIS = (("slice", "None", "None"), repr(slice(None, None, None)))


def reads_what_it_writes(scan, stmt, arrays):
    """Whether an operand is the destination itself, element for element:
    the whole array stored whole (gemm's ``C[:] = alpha * A @ B + beta *
    C``), or the view stored (``u[1:-1] = 2.0 * u[1:-1]``)."""
    if not isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
        return False
    written, target = subscript_key(scan, stmt), scan.canonical(stmt.target.name)
    whole = written is not None and all(key in _WHOLE_AXIS for key in written)
    for leaf in arrays:
        view = scan.definition(leaf)
        if scan.canonical(leaf) == target and whole or isinstance(view, ir.Expr) and view.op in (
                "getitem", "static_getitem") and scan.canonical(view.value.name) == target \
                and subscript_key(scan, view) == written is not None:
            return True
    return False
