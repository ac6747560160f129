"""Explicit ``<4 x double>`` SIMD for the numba kernels: the histogram's
vector add (``add4``, ``add4x2``) and a four-lane value type (``Vec4``:
``load4``, ``store4``, ``splat4``, ``muladd4``) that keeps a 4 x 8 tile of
``linalg.gram_upper_add``'s Gram in registers.

numba leaves LLVM's SLP vectoriser off, so four adjacent scalar adds stay
four loads, adds and stores; the histogram kernel is bound by those memory
operations (three read-modify-writes per row and feature: sum g, sum h,
count).  One vector add of (g, h, 1, 0) does the three at once.  Each lane
is an IEEE-754 double add, rounded as the scalar add is (no fused or
reassociated operation), so every sum keeps its bits.

The same holds for ``Vec4``: each lane of ``muladd4`` is the scalar
``acc + a * x`` with the product rounded before the add (two IEEE-754
operations, never contracted into a fused multiply-add: the builder sets no
``contract`` flag), so a kernel that runs four entries' chains side by side
gets each entry's bits of the scalar loop, on x86-64 and aarch64 alike.
"""
from llvmlite import ir as llir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

_VEC = llir.VectorType(llir.DoubleType(), 4)


def _is_c2_doubles(*arrs):
    """2-D C-contiguous float64 arrays: only there are a row's four doubles
    at 4 * row (``add4``'s 4-column arrays)."""
    return all(isinstance(a, types.Array) and a.dtype == types.float64 and a.ndim == 2 and a.layout == "C"
               for a in arrs)


def _row4_ptr(context, builder, aty, arr, ity, idx):
    """Pointer to row ``idx`` of the 4-column C array ``arr`` as a
    ``<4 x double>*`` (no bounds check)."""
    data = context.make_array(aty)(context, builder, arr).data
    k = context.cast(builder, idx, ity, types.int64)
    return builder.bitcast(builder.gep(data, [builder.mul(k, llir.IntType(64)(4))]), _VEC.as_pointer())


@intrinsic
def add4(typingctx, dst, i, src, j):
    """``dst[i, 0:4] += src[j, 0:4]``, elementwise, as one vector add
    (both float64 arrays C-contiguous with 4 columns; no bounds check)."""
    if not (_is_c2_doubles(dst, src) and isinstance(i, types.Integer) and isinstance(j, types.Integer)):
        return None
    sig = types.void(dst, i, src, j)

    def codegen(context, builder, signature, args):
        a = signature.args
        dp = _row4_ptr(context, builder, a[0], args[0], a[1], args[1])
        sp = _row4_ptr(context, builder, a[2], args[2], a[3], args[3])
        builder.store(builder.fadd(builder.load(dp, align=8), builder.load(sp, align=8)), dp, align=8)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def add4x2(typingctx, dst_a, i, dst_b, k, src, j):
    """``dst_a[i, 0:4] += src[j, 0:4]`` then ``dst_b[k, 0:4] += src[j, 0:4]``:
    ``add4`` into two features' sums with one load of the row's vector (a
    store to ``dst_a`` could alias ``src`` for all the compiler knows, so two
    ``add4`` calls load it twice).  The same IEEE-754 adds, in that order."""
    if not (_is_c2_doubles(dst_a, dst_b, src) and all(isinstance(x, types.Integer) for x in (i, k, j))):
        return None
    sig = types.void(dst_a, i, dst_b, k, src, j)

    def codegen(context, builder, signature, args):
        a = signature.args
        pa, pb, ps = (_row4_ptr(context, builder, a[n], args[n], a[n + 1], args[n + 1]) for n in (0, 2, 4))
        v = builder.load(ps, align=8)
        builder.store(builder.fadd(builder.load(pa, align=8), v), pa, align=8)
        builder.store(builder.fadd(builder.load(pb, align=8), v), pb, align=8)
        return context.get_dummy_value()
    return sig, codegen


# ------------------------------------------------------------------ Vec4
class Vec4Type(types.Type):
    """Four float64 lanes held as one LLVM ``<4 x double>`` value (a register)."""

    def __init__(self):
        super().__init__(name="Vec4")


vec4 = Vec4Type()


@register_model(Vec4Type)
class _Vec4Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _VEC)


def _is_row_of_doubles(arr, i, j):
    """A 2-D float64 array, C-contiguous or of any layout ("A": a column
    prefix ``buf[:, :p]`` of a C-contiguous buffer), and two integer indices.
    arr[i, j:j+4] must be four adjacent doubles: for layout "A" the caller
    checks ``arr.strides[1] == 8`` (``linalg.weighted_gram_rows`` does)."""
    return (isinstance(arr, types.Array) and arr.dtype == types.float64 and arr.ndim == 2
            and arr.layout in ("C", "A") and isinstance(i, types.Integer) and isinstance(j, types.Integer))


def _vec_ptr(context, builder, sig, args):
    """Pointer to arr[i, j] as a ``<4 x double>*`` (no bounds check)."""
    arr = context.make_array(sig.args[0])(context, builder, args[0])
    idx = [context.cast(builder, args[k], sig.args[k], types.intp) for k in (1, 2)]
    p = cgutils.get_item_pointer(context, builder, sig.args[0], arr, idx, wraparound=False)
    return builder.bitcast(p, _VEC.as_pointer())


@intrinsic
def load4(typingctx, arr, i, j):
    """``arr[i, j:j+4]`` as a Vec4 (C-contiguous float64 2-D array)."""
    if not _is_row_of_doubles(arr, i, j):
        return None

    def codegen(context, builder, sig, args):
        return builder.load(_vec_ptr(context, builder, sig, args), align=8)
    return vec4(arr, i, j), codegen


@intrinsic
def store4(typingctx, arr, i, j, v):
    """``arr[i, j:j+4] = v``."""
    if not (_is_row_of_doubles(arr, i, j) and v == vec4):
        return None

    def codegen(context, builder, sig, args):
        builder.store(args[3], _vec_ptr(context, builder, sig, args), align=8)
        return context.get_dummy_value()
    return types.void(arr, i, j, v), codegen


@intrinsic
def splat4(typingctx, x):
    """The float64 ``x`` in all four lanes."""
    if x != types.float64:
        return None

    def codegen(context, builder, sig, args):
        v = llir.Constant(_VEC, None)
        for k in range(4):
            v = builder.insert_element(v, args[0], llir.Constant(llir.IntType(32), k))
        return v
    return vec4(x), codegen


@intrinsic
def muladd4(typingctx, acc, a, x):
    """``acc + a * x`` per lane: the product rounded, then the sum."""
    if not (acc == vec4 and a == vec4 and x == vec4):
        return None

    def codegen(context, builder, sig, args):
        return builder.fadd(args[0], builder.fmul(args[1], args[2]))
    return vec4(acc, a, x), codegen
