// conv_direct.hip: the reference convolution, every direction, 2D and 3D, any group count,
// stride, dilation and padding, any layout (through strides). One output element per thread
// for forward and backward data; one block per weight element for backward weights, which
// reduces over N and the output positions in shared memory.
//
// Symbols: mk_conv_direct_fwd / _bwd / _wrw (picked by MK_DIR); block size MK_BLOCK.
#include "mk_conv.h"

#ifndef MK_BLOCK
#define MK_BLOCK 256
#endif

#if MK_DIR == 0
#define MK_NAME mk_conv_direct_fwd
#elif MK_DIR == 1
#define MK_NAME mk_conv_direct_bwd
#else
#define MK_NAME mk_conv_direct_wrw
#endif

MK_KERNEL MK_BOUNDS(MK_BLOCK) void MK_NAME(void* p_in, void* p_wei, void* p_out MK_CONV_PARAMS) {
  MK_CONV_SHAPE(s);
  MK_CONV_UNUSED;
  mk_t* in = (mk_t*)p_in;
  mk_t* wei = (mk_t*)p_wei;
  mk_t* out = (mk_t*)p_out;
  const int cg = s.c / s.g;  // channels per group, input side
  const int kg = s.k / s.g;  // channels per group, output side

#if MK_DIR == 0
  // One thread per output element. Channel-last layouts put the channel index fastest so that
  // neighbouring threads touch neighbouring addresses.
  const int spatial = s.out_d * s.out_h * s.out_w;
  const int total = s.n * s.k * spatial;
  const int idx = mk_bid_x() * MK_BLOCK + mk_tid_x();
  if (idx >= total) return;
  int k, sp, n;
  if (s.ys_k == 1) {
    k = idx % s.k;
    sp = (idx / s.k) % spatial;
    n = idx / (s.k * spatial);
  } else {
    sp = idx % spatial;
    k = (idx / spatial) % s.k;
    n = idx / (spatial * s.k);
  }
  const int ow = sp % s.out_w, oh = (sp / s.out_w) % s.out_h, od = sp / (s.out_w * s.out_h);
  const int grp = k / kg;
  float acc = 0.0f;
  for (int z = 0; z < s.fil_d; ++z) {
    const int id = od * s.str_d - s.pad_d + z * s.dil_d;
    if (id < 0 || id >= s.in_d) continue;
    for (int y = 0; y < s.fil_h; ++y) {
      const int ih = oh * s.str_h - s.pad_h + y * s.dil_h;
      if (ih < 0 || ih >= s.in_h) continue;
      for (int x = 0; x < s.fil_w; ++x) {
        const int iw = ow * s.str_w - s.pad_w + x * s.dil_w;
        if (iw < 0 || iw >= s.in_w) continue;
        const int ib = mk_in_off(s, n, grp * cg, id, ih, iw);
        const int wb = mk_wei_off(s, k, 0, z, y, x);
        for (int c = 0; c < cg; ++c) {
          acc += mk_load(in, ib + c * s.xs_c) * mk_load(wei, wb + c * s.ws_c);
        }
      }
    }
  }
  mk_store(out, mk_out_off(s, n, k, od, oh, ow), acc);

#elif MK_DIR == 1
  // One thread per input-gradient element: gather every (k, tap) whose output position maps
  // back onto it.
  const int spatial = s.in_d * s.in_h * s.in_w;
  const int total = s.n * s.c * spatial;
  const int idx = mk_bid_x() * MK_BLOCK + mk_tid_x();
  if (idx >= total) return;
  int c, sp, n;
  if (s.xs_c == 1) {
    c = idx % s.c;
    sp = (idx / s.c) % spatial;
    n = idx / (s.c * spatial);
  } else {
    sp = idx % spatial;
    c = (idx / spatial) % s.c;
    n = idx / (spatial * s.c);
  }
  const int iw = sp % s.in_w, ih = (sp / s.in_w) % s.in_h, id = sp / (s.in_w * s.in_h);
  const int grp = c / cg;
  const int cl = c - grp * cg;
  float acc = 0.0f;
  for (int z = 0; z < s.fil_d; ++z) {
    const int od = mk_out_pos(id, z, s.pad_d, s.str_d, s.dil_d, s.out_d);
    if (od < 0) continue;
    for (int y = 0; y < s.fil_h; ++y) {
      const int oh = mk_out_pos(ih, y, s.pad_h, s.str_h, s.dil_h, s.out_h);
      if (oh < 0) continue;
      for (int x = 0; x < s.fil_w; ++x) {
        const int ow = mk_out_pos(iw, x, s.pad_w, s.str_w, s.dil_w, s.out_w);
        if (ow < 0) continue;
        const int ob = mk_out_off(s, n, grp * kg, od, oh, ow);
        const int wb = mk_wei_off(s, grp * kg, cl, z, y, x);
        for (int k = 0; k < kg; ++k) {
          acc += mk_load(out, ob + k * s.ys_k) * mk_load(wei, wb + k * s.ws_k);
        }
      }
    }
  }
  mk_store(in, mk_in_off(s, n, c, id, ih, iw), acc);

#else
  // One block per weight element (grid-stride over them): the block's threads split the
  // N x output-positions sum, then a shared-memory tree adds the partial sums.
  MK_SHARED float part[MK_BLOCK];
  const int taps = s.fil_d * s.fil_h * s.fil_w;
  const int nwei = s.k * cg * taps;
  const int spatial = s.out_d * s.out_h * s.out_w;
  const int terms = s.n * spatial;
  const int tid = mk_tid_x();
  for (int e = mk_bid_x(); e < nwei; e += mk_gdim_x()) {
    const int tap = e % taps;
    const int cl = (e / taps) % cg;
    const int k = e / (taps * cg);
    const int x = tap % s.fil_w, y = (tap / s.fil_w) % s.fil_h, z = tap / (s.fil_w * s.fil_h);
    const int c = (k / kg) * cg + cl;
    float acc = 0.0f;
    for (int t = tid; t < terms; t += MK_BLOCK) {
      const int sp = t % spatial;
      const int n = t / spatial;
      const int ow = sp % s.out_w, oh = (sp / s.out_w) % s.out_h, od = sp / (s.out_w * s.out_h);
      const int id = od * s.str_d - s.pad_d + z * s.dil_d;
      const int ih = oh * s.str_h - s.pad_h + y * s.dil_h;
      const int iw = ow * s.str_w - s.pad_w + x * s.dil_w;
      if (id < 0 || id >= s.in_d || ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w) continue;
      acc += mk_load(in, mk_in_off(s, n, c, id, ih, iw)) *
             mk_load(out, mk_out_off(s, n, k, od, oh, ow));
    }
    part[tid] = acc;
    mk_sync();
    for (int half = MK_BLOCK / 2; half > 0; half >>= 1) {
      if (tid < half) part[tid] += part[tid + half];
      mk_sync();
    }
    if (tid == 0) mk_store(wei, mk_wei_off(s, k, cl, z, y, x), part[0]);
    mk_sync();  // part[] is reused by the next weight element
  }
#endif
}
