// mk_gemm.h: a shared-memory tiled GEMM whose operands are gathered from convolution tensors.
//
// The includer defines, for its direction (MK_DIR), the GEMM view of the convolution per group:
//   MK_DEVICE void  mk_gemm_dims(const ConvShape& s, int& M, int& N, int& R);
//   MK_DEVICE float mk_gemm_a(const ConvShape& s, const ConvPtrs& p, int grp, int m, int r);
//   MK_DEVICE float mk_gemm_b(const ConvShape& s, const ConvPtrs& p, int grp, int r, int n);
//   MK_DEVICE void  mk_gemm_c(const ConvShape& s, const ConvPtrs& p, int grp, int m, int n,
//                             float v);
// and then calls MK_GEMM_BODY(s, p) in its kernel. C[M x N] = A[M x R] * B[R x N], one group
// per blockIdx.z, one MK_TM x MK_TN tile per block, each thread an MK_RM x MK_RN micro-tile
// strided across the tile (so that a warp's shared-memory reads hit distinct banks).
// Accumulation is in float whatever the storage type.
#ifndef MK_GEMM_H
#define MK_GEMM_H

#include "mk_conv.h"

#ifndef MK_TM
#define MK_TM 64
#endif
#ifndef MK_TN
#define MK_TN 64
#endif
#ifndef MK_TK
#define MK_TK 8
#endif
#ifndef MK_RM
#define MK_RM 4
#endif
#ifndef MK_RN
#define MK_RN 4
#endif
#define MK_GM (MK_TM / MK_RM)  // threads along M
#define MK_GN (MK_TN / MK_RN)  // threads along N
#define MK_NT (MK_GM * MK_GN)  // threads per block

#if MK_TM % MK_RM || MK_TN % MK_RN
#error "tile sizes must be multiples of the micro-tile sizes"
#endif

struct ConvPtrs {
  mk_t* in;
  mk_t* wei;
  mk_t* out;
};

MK_DEVICE void mk_gemm_dims(const ConvShape& s, int& M, int& N, int& R);
MK_DEVICE float mk_gemm_a(const ConvShape& s, const ConvPtrs& p, int grp, int m, int r);
MK_DEVICE float mk_gemm_b(const ConvShape& s, const ConvPtrs& p, int grp, int r, int n);
MK_DEVICE void mk_gemm_c(const ConvShape& s, const ConvPtrs& p, int grp, int m, int n, float v);

// The body of a GEMM kernel; needs the shared tiles declared in the kernel itself because
// NVRTC and clang treat __shared__ inside device functions differently across versions.
#define MK_GEMM_BODY(s, p)                                                               \
  MK_SHARED float mk_as[MK_TK][MK_TM];                                                   \
  MK_SHARED float mk_bs[MK_TK][MK_TN];                                                   \
  mk_gemm_tiles(s, p, mk_as, mk_bs)

MK_DEVICE void mk_gemm_tiles(const ConvShape& s, const ConvPtrs& p, float (*as)[MK_TM],
                             float (*bs)[MK_TN]) {
  int M, N, R;
  mk_gemm_dims(s, M, N, R);
  const int grp = mk_bid_z();
  const int m0 = mk_bid_y() * MK_TM;
  const int n0 = mk_bid_x() * MK_TN;
  const int tid = mk_tid_x();
  const int tm = tid / MK_GN;
  const int tn = tid % MK_GN;
  float acc[MK_RM][MK_RN];
#pragma unroll
  for (int i = 0; i < MK_RM; ++i)
#pragma unroll
    for (int j = 0; j < MK_RN; ++j) acc[i][j] = 0.0f;

  for (int r0 = 0; r0 < R; r0 += MK_TK) {
    for (int i = tid; i < MK_TM * MK_TK; i += MK_NT) {
      const int mm = i % MK_TM, kk = i / MK_TM;
      const int m = m0 + mm, r = r0 + kk;
      as[kk][mm] = (m < M && r < R) ? mk_gemm_a(s, p, grp, m, r) : 0.0f;
    }
    for (int i = tid; i < MK_TN * MK_TK; i += MK_NT) {
      const int nn = i % MK_TN, kk = i / MK_TN;
      const int n = n0 + nn, r = r0 + kk;
      bs[kk][nn] = (n < N && r < R) ? mk_gemm_b(s, p, grp, r, n) : 0.0f;
    }
    mk_sync();
#pragma unroll
    for (int kk = 0; kk < MK_TK; ++kk) {
      float a[MK_RM], b[MK_RN];
#pragma unroll
      for (int i = 0; i < MK_RM; ++i) a[i] = as[kk][tm + i * MK_GM];
#pragma unroll
      for (int j = 0; j < MK_RN; ++j) b[j] = bs[kk][tn + j * MK_GN];
#pragma unroll
      for (int i = 0; i < MK_RM; ++i)
#pragma unroll
        for (int j = 0; j < MK_RN; ++j) acc[i][j] += a[i] * b[j];
    }
    mk_sync();  // the next tile overwrites as/bs
  }
#pragma unroll
  for (int i = 0; i < MK_RM; ++i) {
    const int m = m0 + tm + i * MK_GM;
    if (m >= M) continue;
#pragma unroll
    for (int j = 0; j < MK_RN; ++j) {
      const int n = n0 + tn + j * MK_GN;
      if (n < N) mk_gemm_c(s, p, grp, m, n, acc[i][j]);
    }
  }
}

#endif  // MK_GEMM_H
