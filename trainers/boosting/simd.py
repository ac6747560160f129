"""One explicit SIMD operation for the histogram kernels: four float64 adds
as one ``<4 x double>`` load, add and store (``add4``).

numba leaves LLVM's SLP vectoriser off, so four adjacent scalar adds stay
four loads, adds and stores; the histogram kernel is bound by those memory
operations (three read-modify-writes per row and feature: sum g, sum h,
count).  One vector add of (g, h, 1, 0) does the three at once.  Each lane
is an IEEE-754 double add, rounded as the scalar add is (no fused or
reassociated operation), so every sum keeps its bits.
"""
from llvmlite import ir as llir
from numba import types
from numba.extending import intrinsic


@intrinsic
def add4(typingctx, dst, i, src, j):
    """``dst[i, 0:4] += src[j, 0:4]``, elementwise, as one vector add
    (both float64 arrays C-contiguous with 4 columns; no bounds check)."""
    # the vector load reads 4 adjacent doubles from row i: only a 2-D C-contiguous array has them there
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array)
            and dst.dtype == types.float64 and src.dtype == types.float64
            and dst.ndim == 2 and src.ndim == 2 and dst.layout == "C" and src.layout == "C"
            and isinstance(i, types.Integer) and isinstance(j, types.Integer)):
        return None
    sig = types.void(dst, i, src, j)

    def codegen(context, builder, signature, args):
        d, ii, s, jj = args
        vec = llir.VectorType(llir.DoubleType(), 4)
        i64 = llir.IntType(64)
        ptrs = []
        for arr, idx, aty, ity in ((d, ii, signature.args[0], signature.args[1]),
                                   (s, jj, signature.args[2], signature.args[3])):
            data = context.make_array(aty)(context, builder, arr).data
            k = context.cast(builder, idx, ity, types.int64)
            ptrs.append(builder.bitcast(builder.gep(data, [builder.mul(k, i64(4))]), vec.as_pointer()))
        dp, sp = ptrs
        builder.store(builder.fadd(builder.load(dp, align=8), builder.load(sp, align=8)), dp, align=8)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def add4x2(typingctx, dst_a, i, dst_b, k, src, j):
    """``dst_a[i, 0:4] += src[j, 0:4]`` then ``dst_b[k, 0:4] += src[j, 0:4]``:
    ``add4`` into two features' sums with one load of the row's vector (a
    store to ``dst_a`` could alias ``src`` for all the compiler knows, so two
    ``add4`` calls load it twice).  The same IEEE-754 adds, in that order."""
    arrs = (dst_a, dst_b, src)
    if not (all(isinstance(a, types.Array) and a.dtype == types.float64 and a.ndim == 2 and a.layout == "C"
                for a in arrs) and all(isinstance(x, types.Integer) for x in (i, k, j))):
        return None
    sig = types.void(dst_a, i, dst_b, k, src, j)

    def codegen(context, builder, signature, args):
        vec = llir.VectorType(llir.DoubleType(), 4)
        i64 = llir.IntType(64)
        ptrs = []
        for a, x in ((0, 1), (2, 3), (4, 5)):
            data = context.make_array(signature.args[a])(context, builder, args[a]).data
            n = context.cast(builder, args[x], signature.args[x], types.int64)
            ptrs.append(builder.bitcast(builder.gep(data, [builder.mul(n, i64(4))]), vec.as_pointer()))
        pa, pb, ps = ptrs
        v = builder.load(ps, align=8)
        builder.store(builder.fadd(builder.load(pa, align=8), v), pa, align=8)
        builder.store(builder.fadd(builder.load(pb, align=8), v), pb, align=8)
        return context.get_dummy_value()
    return sig, codegen

