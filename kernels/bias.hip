// bias.hip: y = x + bias[c] per channel (in place allowed), any layout: the channel of element
// i is (i / c_stride) % c, so NCHW passes c_stride = H*W and NHWC passes 1.
//
// Symbol: mk_bias_fwd; grid-stride over elements. The bias has the tensor's element type.
#include "mk_portable.h"

#ifndef MK_BLOCK
#define MK_BLOCK 256
#endif

MK_KERNEL MK_BOUNDS(MK_BLOCK) void mk_bias_fwd(void* p_x, void* p_bias, void* p_y, int count,
                                               int c, int c_stride) {
  const mk_t* x = (const mk_t*)p_x;
  const mk_t* bias = (const mk_t*)p_bias;
  mk_t* y = (mk_t*)p_y;
  const int step = mk_gdim_x() * MK_BLOCK;
  for (int i = mk_bid_x() * MK_BLOCK + mk_tid_x(); i < count; i += step) {
    mk_store(y, i, mk_load(x, i) + mk_load(bias, (i / c_stride) % c));
  }
}
