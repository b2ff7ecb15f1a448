// softmax.hip: softmax (or log-softmax) over the channel axis, independently at every
// (n, spatial position); one thread per position, three passes over C (max, sum, write) so
// that large logits do not overflow. Layout through strides: NCHW passes n_stride = C*S,
// c_stride = S, s_stride = 1; NHWC passes n_stride = S*C, c_stride = 1, s_stride = C.
//
// Symbol: mk_softmax_fwd; `log_mode` 1 writes log-softmax.
#include "mk_portable.h"

#ifndef MK_BLOCK
#define MK_BLOCK 256
#endif

MK_KERNEL MK_BOUNDS(MK_BLOCK) void mk_softmax_fwd(void* p_x, void* p_y, int n, int c,
                                                  int spatial, int n_stride, int c_stride,
                                                  int s_stride, int log_mode) {
  const mk_t* x = (const mk_t*)p_x;
  mk_t* y = (mk_t*)p_y;
  const int pos = mk_bid_x() * MK_BLOCK + mk_tid_x();
  if (pos >= n * spatial) return;
  const int base = (pos / spatial) * n_stride + (pos % spatial) * s_stride;
  float peak = mk_neg_inf();
  for (int i = 0; i < c; ++i) peak = mk_fmax(peak, mk_load(x, base + i * c_stride));
  float sum = 0.0f;
  for (int i = 0; i < c; ++i) sum += mk_exp(mk_load(x, base + i * c_stride) - peak);
  const float inv = 1.0f / sum;
  const float log_sum = log_mode ? mk_log(sum) : 0.0f;
  for (int i = 0; i < c; ++i) {
    const float e = mk_load(x, base + i * c_stride) - peak;
    mk_store(y, base + i * c_stride, log_mode ? e - log_sum : mk_exp(e) * inv);
  }
}
