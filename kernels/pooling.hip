// pooling.hip: max and average pooling, forward, 2D and 3D (D = 1 for 2D), any layout through
// element strides; one output element per thread.
// mode: 0 max; 1 average over the window's elements inside the input (padding excluded,
// MIOpen's miopenPoolingAverage); 2 average over the whole window (miopenPoolingAverageInclusive).
//
// Symbol: mk_pooling_fwd.
#include "mk_portable.h"

#ifndef MK_BLOCK
#define MK_BLOCK 256
#endif

MK_KERNEL MK_BOUNDS(MK_BLOCK) void mk_pooling_fwd(
    void* p_x, void* p_y, int n, int c, int in_d, int in_h, int in_w, int out_d, int out_h,
    int out_w, int win_d, int win_h, int win_w, int pad_d, int pad_h, int pad_w, int str_d,
    int str_h, int str_w, int xs_n, int xs_c, int xs_d, int xs_h, int xs_w, int ys_n, int ys_c,
    int ys_d, int ys_h, int ys_w, int mode) {
  const mk_t* x = (const mk_t*)p_x;
  mk_t* y = (mk_t*)p_y;
  const int spatial = out_d * out_h * out_w;
  const int idx = mk_bid_x() * MK_BLOCK + mk_tid_x();
  if (idx >= n * c * spatial) return;
  int ch, sp, nn;
  if (ys_c == 1) {  // channel-last: neighbouring threads take neighbouring channels
    ch = idx % c;
    sp = (idx / c) % spatial;
    nn = idx / (c * spatial);
  } else {
    sp = idx % spatial;
    ch = (idx / spatial) % c;
    nn = idx / (spatial * c);
  }
  const int ow = sp % out_w, oh = (sp / out_w) % out_h, od = sp / (out_w * out_h);
  const int base = nn * xs_n + ch * xs_c;
  float acc = mode == 0 ? mk_neg_inf() : 0.0f;
  int count = 0;
  for (int z = 0; z < win_d; ++z) {
    const int id = od * str_d - pad_d + z;
    if (id < 0 || id >= in_d) continue;
    for (int yy = 0; yy < win_h; ++yy) {
      const int ih = oh * str_h - pad_h + yy;
      if (ih < 0 || ih >= in_h) continue;
      for (int xx = 0; xx < win_w; ++xx) {
        const int iw = ow * str_w - pad_w + xx;
        if (iw < 0 || iw >= in_w) continue;
        const float v = mk_load(x, base + id * xs_d + ih * xs_h + iw * xs_w);
        acc = mode == 0 ? mk_fmax(acc, v) : acc + v;
        ++count;
      }
    }
  }
  if (mode == 1) acc = count ? acc / (float)count : 0.0f;
  if (mode == 2) acc = acc / (float)(win_d * win_h * win_w);
  mk_store(y, nn * ys_n + ch * ys_c + od * ys_d + oh * ys_h + ow * ys_w, acc);
}
