// conv_winograd.hip: Winograd F(2x2, 3x3) for 3x3 filters, stride 1, dilation 1 (2D).
//
// Each thread computes one 2x2 output tile of one output channel (blockIdx.y): per input
// channel it transforms a 4x4 input patch (V = B^T d B), multiplies element-wise with the
// transformed filter (U = G g G^T, built once per block and channel chunk in shared memory)
// and accumulates; the output transform (A^T M A) runs once at the end. 16 multiplies per
// channel instead of 36.
//
// Backward data is the same correlation run from dy to dx with the filter rotated by 180
// degrees, its two channel axes exchanged and padding 2 - pad (which needs pad <= 2).
//
// Symbols: mk_conv_winograd_fwd / _bwd; MK_WB threads per block, MK_WCH channels per chunk.
#include "mk_conv.h"

#ifndef MK_WB
#define MK_WB 128
#endif
#ifndef MK_WCH
#define MK_WCH 32
#endif

#if MK_DIR == 0
#define MK_NAME mk_conv_winograd_fwd
#elif MK_DIR == 1
#define MK_NAME mk_conv_winograd_bwd
#else
#error "conv_winograd.hip has forward (MK_DIR=0) and backward data (MK_DIR=1) kernels only"
#endif

// U = G g G^T with G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1]; g is 3x3 row-major, u 4x4.
MK_DEVICE void mk_filter_transform(const float* g, float* u) {
  float t[4][3];
  for (int j = 0; j < 3; ++j) {
    t[0][j] = g[j];
    t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
    t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
    t[3][j] = g[6 + j];
  }
  for (int i = 0; i < 4; ++i) {
    u[i * 4 + 0] = t[i][0];
    u[i * 4 + 1] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
    u[i * 4 + 2] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
    u[i * 4 + 3] = t[i][2];
  }
}

// V = B^T d B with B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]; in place on a 4x4 tile.
MK_DEVICE void mk_input_transform(float* d) {
  for (int j = 0; j < 4; ++j) {
    const float a = d[j], b = d[4 + j], c = d[8 + j], e = d[12 + j];
    d[j] = a - c;
    d[4 + j] = b + c;
    d[8 + j] = c - b;
    d[12 + j] = b - e;
  }
  for (int i = 0; i < 4; ++i) {
    float* r = d + 4 * i;
    const float a = r[0], b = r[1], c = r[2], e = r[3];
    r[0] = a - c;
    r[1] = b + c;
    r[2] = c - b;
    r[3] = b - e;
  }
}

MK_KERNEL MK_BOUNDS(MK_WB) void MK_NAME(void* p_in, void* p_wei, void* p_out MK_CONV_PARAMS) {
  MK_CONV_SHAPE(s);
  MK_CONV_UNUSED;
  MK_SHARED float u[MK_WCH][16];
  const mk_t* wei = (const mk_t*)p_wei;
#if MK_DIR == 0
  const mk_t* src = (const mk_t*)p_in;
  mk_t* dst = (mk_t*)p_out;
  const int src_c = s.c, dst_c = s.k;
  const int src_h = s.in_h, src_w = s.in_w, dst_h = s.out_h, dst_w = s.out_w;
  const int pad_h = s.pad_h, pad_w = s.pad_w;
  const int ss_n = s.xs_n, ss_c = s.xs_c, ss_h = s.xs_h, ss_w = s.xs_w;
  const int ds_n = s.ys_n, ds_c = s.ys_k, ds_h = s.ys_h, ds_w = s.ys_w;
#else
  const mk_t* src = (const mk_t*)p_out;
  mk_t* dst = (mk_t*)p_in;
  const int src_c = s.k, dst_c = s.c;
  const int src_h = s.out_h, src_w = s.out_w, dst_h = s.in_h, dst_w = s.in_w;
  const int pad_h = 2 - s.pad_h, pad_w = 2 - s.pad_w;
  const int ss_n = s.ys_n, ss_c = s.ys_k, ss_h = s.ys_h, ss_w = s.ys_w;
  const int ds_n = s.xs_n, ds_c = s.xs_c, ds_h = s.xs_h, ds_w = s.xs_w;
#endif
  const int sg = src_c / s.g, dg = dst_c / s.g;
  const int o = mk_bid_y();
  const int grp = o / dg;
  const int tiles_h = (dst_h + 1) / 2, tiles_w = (dst_w + 1) / 2;
  const int t = mk_bid_x() * MK_WB + mk_tid_x();
  // Threads past the last tile still help build U and meet every barrier.
  const bool live = t < s.n * tiles_h * tiles_w;
  const int tx = t % tiles_w, ty = (t / tiles_w) % tiles_h, n = t / (tiles_w * tiles_h);
  const int y0 = 2 * ty - pad_h, x0 = 2 * tx - pad_w;
  float m[16];
  for (int i = 0; i < 16; ++i) m[i] = 0.0f;

  for (int c0 = 0; c0 < sg; c0 += MK_WCH) {
    for (int i = mk_tid_x(); i < MK_WCH; i += MK_WB) {
      float g[9];
      for (int j = 0; j < 9; ++j) g[j] = 0.0f;
      if (c0 + i < sg) {
        for (int y = 0; y < 3; ++y)
          for (int x = 0; x < 3; ++x) {
#if MK_DIR == 0
            g[y * 3 + x] = mk_load(wei, mk_wei_off(s, o, c0 + i, 0, y, x));
#else
            g[y * 3 + x] =
                mk_load(wei, mk_wei_off(s, grp * sg + c0 + i, o - grp * dg, 0, 2 - y, 2 - x));
#endif
          }
      }
      mk_filter_transform(g, u[i]);
    }
    mk_sync();
    if (live) {
      const int cn = sg - c0 < MK_WCH ? sg - c0 : MK_WCH;
      for (int i = 0; i < cn; ++i) {
        const int base = n * ss_n + (grp * sg + c0 + i) * ss_c;
        float d[16];
        for (int y = 0; y < 4; ++y)
          for (int x = 0; x < 4; ++x) {
            const int h = y0 + y, w = x0 + x;
            const bool inside = h >= 0 && h < src_h && w >= 0 && w < src_w;
            d[y * 4 + x] = inside ? mk_load(src, base + h * ss_h + w * ss_w) : 0.0f;
          }
        mk_input_transform(d);
        for (int j = 0; j < 16; ++j) m[j] += u[i][j] * d[j];
      }
    }
    mk_sync();  // the next chunk overwrites u
  }
  if (!live) return;
  // Y = A^T M A with A^T = [1 1 1 0; 0 1 -1 -1].
  float r0[4], r1[4];
  for (int j = 0; j < 4; ++j) {
    r0[j] = m[j] + m[4 + j] + m[8 + j];
    r1[j] = m[4 + j] - m[8 + j] - m[12 + j];
  }
  const float yv[4] = {r0[0] + r0[1] + r0[2], r0[1] - r0[2] - r0[3], r1[0] + r1[1] + r1[2],
                       r1[1] - r1[2] - r1[3]};
  const int base = n * ds_n + o * ds_c;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      const int h = 2 * ty + i, w = 2 * tx + j;
      if (h < dst_h && w < dst_w) mk_store(dst, base + h * ds_h + w * ds_w, yv[i * 2 + j]);
    }
}
