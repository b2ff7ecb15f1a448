// conv_igemm.hip: implicit GEMM, every direction, 2D and 3D, groups, stride, dilation, pad;
// operands are gathered from the tensors as the tile is loaded (no im2col buffer).
//
//   forward           M = K/G  N = N*Do*Ho*Wo  R = C/G*Z*Y*X   A = wei, B = in (gathered)
//   backward data     M = C/G  N = N*D*H*W     R = K/G*Z*Y*X   A = wei^T, B = out (scattered)
//   backward weights  M = K/G  N = C/G*Z*Y*X   R = N*Do*Ho*Wo  A = out, B = in (gathered)
//
// Symbols: mk_conv_igemm_fwd / _bwd / _wrw; tile parameters MK_TM MK_TN MK_TK MK_RM MK_RN.
#include "mk_gemm.h"

#if MK_DIR == 0
#define MK_NAME mk_conv_igemm_fwd
#elif MK_DIR == 1
#define MK_NAME mk_conv_igemm_bwd
#else
#define MK_NAME mk_conv_igemm_wrw
#endif

// Splits a filter-tap index into (z, y, x).
MK_DEVICE void mk_tap(const ConvShape& s, int t, int& z, int& y, int& x) {
  x = t % s.fil_w;
  y = (t / s.fil_w) % s.fil_h;
  z = t / (s.fil_w * s.fil_h);
}

// Splits a position index over (n, d, h, w) of the given extents.
MK_DEVICE void mk_pos(int i, int d_, int h_, int w_, int& n, int& d, int& h, int& w) {
  w = i % w_;
  h = (i / w_) % h_;
  d = (i / (w_ * h_)) % d_;
  n = i / (w_ * h_ * d_);
}

MK_DEVICE void mk_gemm_dims(const ConvShape& s, int& M, int& N, int& R) {
  const int taps = s.fil_d * s.fil_h * s.fil_w;
#if MK_DIR == 0
  M = s.k / s.g;
  N = s.n * s.out_d * s.out_h * s.out_w;
  R = (s.c / s.g) * taps;
#elif MK_DIR == 1
  M = s.c / s.g;
  N = s.n * s.in_d * s.in_h * s.in_w;
  R = (s.k / s.g) * taps;
#else
  M = s.k / s.g;
  N = (s.c / s.g) * taps;
  R = s.n * s.out_d * s.out_h * s.out_w;
#endif
}

#if MK_DIR != 1
// x[n, c, od*s - p + z*d, ...] or 0 in the padding.
MK_DEVICE float mk_gather_in(const ConvShape& s, const ConvPtrs& p, int n, int c, int od,
                             int oh, int ow, int z, int y, int x) {
  const int id = od * s.str_d - s.pad_d + z * s.dil_d;
  const int ih = oh * s.str_h - s.pad_h + y * s.dil_h;
  const int iw = ow * s.str_w - s.pad_w + x * s.dil_w;
  if (id < 0 || id >= s.in_d || ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w) return 0.0f;
  return mk_load(p.in, mk_in_off(s, n, c, id, ih, iw));
}
#endif

MK_DEVICE float mk_gemm_a(const ConvShape& s, const ConvPtrs& p, int grp, int m, int r) {
  const int taps = s.fil_d * s.fil_h * s.fil_w;
  const int kg = s.k / s.g;
#if MK_DIR == 0
  int z, y, x;
  mk_tap(s, r % taps, z, y, x);
  return mk_load(p.wei, mk_wei_off(s, grp * kg + m, r / taps, z, y, x));
#elif MK_DIR == 1
  int z, y, x;
  mk_tap(s, r % taps, z, y, x);
  return mk_load(p.wei, mk_wei_off(s, grp * kg + r / taps, m, z, y, x));
#else
  (void)taps;
  int n, od, oh, ow;
  mk_pos(r, s.out_d, s.out_h, s.out_w, n, od, oh, ow);
  return mk_load(p.out, mk_out_off(s, n, grp * kg + m, od, oh, ow));
#endif
}

MK_DEVICE float mk_gemm_b(const ConvShape& s, const ConvPtrs& p, int grp, int r, int col) {
  const int taps = s.fil_d * s.fil_h * s.fil_w;
  const int cg = s.c / s.g;
  const int kg = s.k / s.g;
  int z, y, x, n, d, h, w;
#if MK_DIR == 0
  (void)kg;
  mk_tap(s, r % taps, z, y, x);
  mk_pos(col, s.out_d, s.out_h, s.out_w, n, d, h, w);
  return mk_gather_in(s, p, n, grp * cg + r / taps, d, h, w, z, y, x);
#elif MK_DIR == 1
  (void)cg;
  mk_tap(s, r % taps, z, y, x);
  mk_pos(col, s.in_d, s.in_h, s.in_w, n, d, h, w);
  const int od = mk_out_pos(d, z, s.pad_d, s.str_d, s.dil_d, s.out_d);
  const int oh = mk_out_pos(h, y, s.pad_h, s.str_h, s.dil_h, s.out_h);
  const int ow = mk_out_pos(w, x, s.pad_w, s.str_w, s.dil_w, s.out_w);
  if (od < 0 || oh < 0 || ow < 0) return 0.0f;
  return mk_load(p.out, mk_out_off(s, n, grp * kg + r / taps, od, oh, ow));
#else
  (void)kg;
  mk_tap(s, col % taps, z, y, x);
  mk_pos(r, s.out_d, s.out_h, s.out_w, n, d, h, w);
  return mk_gather_in(s, p, n, grp * cg + col / taps, d, h, w, z, y, x);
#endif
}

MK_DEVICE void mk_gemm_c(const ConvShape& s, const ConvPtrs& p, int grp, int m, int col,
                         float v) {
  int n, d, h, w;
#if MK_DIR == 0
  mk_pos(col, s.out_d, s.out_h, s.out_w, n, d, h, w);
  mk_store(p.out, mk_out_off(s, n, grp * (s.k / s.g) + m, d, h, w), v);
#elif MK_DIR == 1
  mk_pos(col, s.in_d, s.in_h, s.in_w, n, d, h, w);
  mk_store(p.in, mk_in_off(s, n, grp * (s.c / s.g) + m, d, h, w), v);
#else
  const int taps = s.fil_d * s.fil_h * s.fil_w;
  (void)n;
  mk_tap(s, col % taps, d, h, w);
  mk_store(p.wei, mk_wei_off(s, grp * (s.k / s.g) + m, col / taps, d, h, w), v);
#endif
}

MK_KERNEL MK_BOUNDS(MK_NT) void MK_NAME(void* p_in, void* p_wei, void* p_out MK_CONV_PARAMS) {
  MK_CONV_SHAPE(s);
  MK_CONV_UNUSED;
  const ConvPtrs p = {(mk_t*)p_in, (mk_t*)p_wei, (mk_t*)p_out};
  MK_GEMM_BODY(s, p);
}
