"""A product of row-major operands as one strided-batched call of the GEMM library (cuBLAS's
column-major terms): what the library solvers (solvers/blas_1x1.py, blas_relayout.py,
triton_kn2row.py, blas_im2col.py) hand backends/cublas.py."""

from __future__ import annotations

from typing import Any

from .._record import dataclass

__all__ = ["GemmCall", "product_call"]

_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class GemmCall:
    """A strided-batched GEMM in cuBLAS's column-major terms: C (m x n) = op(A) op(B) per
    batch entry, each operand a pointer name of the problem's direction (x, dy, w...) with
    its leading dimension and its stride between batch entries, in elements. C is of the
    operands' type unless `c_type` names another (FP32 partial sums of 16-bit operands)."""

    transa: bool
    transb: bool
    m: int
    n: int
    k: int
    a: str
    lda: int
    stride_a: int
    b: str
    ldb: int
    stride_b: int
    c: str
    ldc: int
    stride_c: int
    batch: int
    c_type: str = ""

    def astuple(self) -> tuple[Any, ...]:
        return (self.transa, self.transb, self.m, self.n, self.k, self.a, self.lda,
                self.stride_a, self.b, self.ldb, self.stride_b, self.c, self.ldc, self.stride_c,
                self.batch)


@dataclass(frozen=True)
class _Matrix:
    """A row-major operand of the product: `rows` x `cols` as the equation reads it, stored
    as itself or (`stored_t`) as its transpose, `ld` elements between stored rows."""

    name: str
    rows: int
    cols: int
    stored_t: bool
    ld: int
    stride: int

    def t(self) -> _Matrix:
        return _Matrix(self.name, self.cols, self.rows, not self.stored_t, self.ld, self.stride)


def product_call(out: _Matrix, left: _Matrix, right: _Matrix, batch: int, c_type: str = ""
                 ) -> GemmCall | None:
    """out = left @ right (row-major, as the equation reads them) as one call (`out` of
    `c_type` where given), or None where a size or a leading dimension passes cuBLAS's 32
    bits."""
    if out.stored_t:  # out^T = right^T left^T, stored as it is
        out, left, right = out.t(), right.t(), left.t()
    # Row-major out (M x N) is column-major out^T = right^T left^T: cuBLAS's A is `right`.
    call = GemmCall(transa=right.stored_t, transb=left.stored_t, m=out.cols, n=out.rows,
                    k=left.cols, a=right.name, lda=right.ld, stride_a=right.stride,
                    b=left.name, ldb=left.ld, stride_b=left.stride, c=out.name, ldc=out.ld,
                    stride_c=out.stride, batch=batch, c_type=c_type)
    if max(call.m, call.n, call.k, call.lda, call.ldb, call.ldc) > _INT32_MAX:
        return None
    return call
