// mk_conv.h: the convolution shape every conv kernel takes, dynamic or specialised.
//
// Kernels see the plain (non-transposed) convolution "in (N,C,D,H,W) * wei (K,C/G,Z,Y,X) ->
// out (N,K,Do,Ho,Wo)"; a 2D problem has D = Z = 1. Each tensor is addressed through element
// strides, so one binary serves NCHW, NHWC and their 3D forms. The library's
// solvers/_conv.py writes these fields in this order (as i32 kernel arguments, or as
// -DMK_S_<field>=<value> for a specialised kernel, where the arguments are then ignored and
// the compiler folds the index arithmetic).
//
// MK_DIR: 0 forward (out from in, wei), 1 backward data (in from out, wei),
//         2 backward weights (wei from in, out).
#ifndef MK_CONV_H
#define MK_CONV_H

#include "mk_portable.h"

#ifndef MK_DIR
#define MK_DIR 0
#endif

#define MK_CONV_FIELDS(X)                                                                \
  X(n) X(c) X(k) X(g) X(in_d) X(in_h) X(in_w) X(out_d) X(out_h) X(out_w) X(fil_d)        \
  X(fil_h) X(fil_w) X(pad_d) X(pad_h) X(pad_w) X(str_d) X(str_h) X(str_w) X(dil_d)       \
  X(dil_h) X(dil_w) X(xs_n) X(xs_c) X(xs_d) X(xs_h) X(xs_w) X(ws_k) X(ws_c) X(ws_d)      \
  X(ws_h) X(ws_w) X(ys_n) X(ys_k) X(ys_d) X(ys_h) X(ys_w)

#define MK_CONV_PARAM_(f) , int a_##f
// Kernel parameter list after the three pointers: "void* p_in, void* p_wei, void* p_out".
#define MK_CONV_PARAMS MK_CONV_FIELDS(MK_CONV_PARAM_)

#define MK_CONV_MEMBER_(f) int f;
struct ConvShape {
  MK_CONV_FIELDS(MK_CONV_MEMBER_)
};

#if defined(MK_SPEC) && MK_SPEC
#define MK_SV_(f) MK_S_##f
#else
#define MK_SV_(f) a_##f
#endif
#define MK_CONV_SET_(f) s.f = MK_SV_(f);
// Declares `ConvShape s` from the kernel arguments, or from the -D constants when specialised.
#define MK_CONV_SHAPE(s) \
  ConvShape s;           \
  MK_CONV_FIELDS(MK_CONV_SET_)

#define MK_CONV_UNUSED_(f) (void)a_##f;
// Specialised kernels keep the argument list (one launch description for both kinds).
#define MK_CONV_UNUSED MK_CONV_FIELDS(MK_CONV_UNUSED_)

// Offsets of one element of each tensor (group-local channel indices are the caller's job).
MK_DEVICE int mk_in_off(const ConvShape& s, int n, int c, int d, int h, int w) {
  return n * s.xs_n + c * s.xs_c + d * s.xs_d + h * s.xs_h + w * s.xs_w;
}
MK_DEVICE int mk_out_off(const ConvShape& s, int n, int k, int d, int h, int w) {
  return n * s.ys_n + k * s.ys_k + d * s.ys_d + h * s.ys_h + w * s.ys_w;
}
MK_DEVICE int mk_wei_off(const ConvShape& s, int k, int c, int z, int y, int x) {
  return k * s.ws_k + c * s.ws_c + z * s.ws_d + y * s.ws_h + x * s.ws_w;
}

// The output position that input position `i` meets through filter tap `f`, or -1 when the
// strided grid misses it or it falls outside [0, out): the backward-data gather.
MK_DEVICE int mk_out_pos(int i, int f, int pad, int str, int dil, int out) {
  const int t = i + pad - f * dil;
  if (t < 0) return -1;
  const int o = t / str;
  return (o * str == t && o < out) ? o : -1;
}

#endif  // MK_CONV_H
