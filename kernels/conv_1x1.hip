// conv_1x1.hip: 1x1 filters without padding as a plain GEMM per group (any stride, 2D or 3D):
// no filter-tap arithmetic and no bounds tests on the forward gather.
//
//   forward           M = K/G  N = N*Do*Ho*Wo  R = C/G          A = wei, B = in[.., o*stride]
//   backward data     M = C/G  N = N*D*H*W     R = K/G          A = wei^T, B = out (strided hit)
//   backward weights  M = K/G  N = C/G         R = N*Do*Ho*Wo   A = out, B = in[.., o*stride]
//
// Symbols: mk_conv_1x1_fwd / _bwd / _wrw; tile parameters as in mk_gemm.h.
#include "mk_gemm.h"

#if MK_DIR == 0
#define MK_NAME mk_conv_1x1_fwd
#elif MK_DIR == 1
#define MK_NAME mk_conv_1x1_bwd
#else
#define MK_NAME mk_conv_1x1_wrw
#endif

MK_DEVICE void mk_pos(int i, int d_, int h_, int w_, int& n, int& d, int& h, int& w) {
  w = i % w_;
  h = (i / w_) % h_;
  d = (i / (w_ * h_)) % d_;
  n = i / (w_ * h_ * d_);
}

MK_DEVICE void mk_gemm_dims(const ConvShape& s, int& M, int& N, int& R) {
#if MK_DIR == 0
  M = s.k / s.g;
  N = s.n * s.out_d * s.out_h * s.out_w;
  R = s.c / s.g;
#elif MK_DIR == 1
  M = s.c / s.g;
  N = s.n * s.in_d * s.in_h * s.in_w;
  R = s.k / s.g;
#else
  M = s.k / s.g;
  N = s.c / s.g;
  R = s.n * s.out_d * s.out_h * s.out_w;
#endif
}

#if MK_DIR != 1
// The input element under output position (n, od, oh, ow): always inside, as there is no pad.
MK_DEVICE int mk_in_at(const ConvShape& s, int c, int o) {
  int n, d, h, w;
  mk_pos(o, s.out_d, s.out_h, s.out_w, n, d, h, w);
  return mk_in_off(s, n, c, d * s.str_d, h * s.str_h, w * s.str_w);
}
#endif

MK_DEVICE float mk_gemm_a(const ConvShape& s, const ConvPtrs& p, int grp, int m, int r) {
  const int kg = s.k / s.g;
#if MK_DIR == 0
  return mk_load(p.wei, (grp * kg + m) * s.ws_k + r * s.ws_c);
#elif MK_DIR == 1
  return mk_load(p.wei, (grp * kg + r) * s.ws_k + m * s.ws_c);
#else
  int n, d, h, w;
  mk_pos(r, s.out_d, s.out_h, s.out_w, n, d, h, w);
  return mk_load(p.out, mk_out_off(s, n, grp * kg + m, d, h, w));
#endif
}

MK_DEVICE float mk_gemm_b(const ConvShape& s, const ConvPtrs& p, int grp, int r, int col) {
#if MK_DIR == 0
  return mk_load(p.in, mk_in_at(s, grp * (s.c / s.g) + r, col));
#elif MK_DIR == 1
  int n, d, h, w;
  mk_pos(col, s.in_d, s.in_h, s.in_w, n, d, h, w);
  // Without padding, input position i meets output i / stride when the stride divides it.
  if (d % s.str_d || h % s.str_h || w % s.str_w) return 0.0f;
  const int od = d / s.str_d, oh = h / s.str_h, ow = w / s.str_w;
  if (od >= s.out_d || oh >= s.out_h || ow >= s.out_w) return 0.0f;
  return mk_load(p.out, mk_out_off(s, n, grp * (s.k / s.g) + r, od, oh, ow));
#else
  return mk_load(p.in, mk_in_at(s, grp * (s.c / s.g) + col, r));
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
  (void)n; (void)d; (void)h; (void)w;
  mk_store(p.wei, (grp * (s.k / s.g) + m) * s.ws_k + col * s.ws_c, v);
#endif
}

MK_KERNEL MK_BOUNDS(MK_NT) void MK_NAME(void* p_in, void* p_wei, void* p_out MK_CONV_PARAMS) {
  MK_CONV_SHAPE(s);
  MK_CONV_UNUSED;
  const ConvPtrs p = {(mk_t*)p_in, (mk_t*)p_wei, (mk_t*)p_out};
  MK_GEMM_BODY(s, p);
}
