// activation.hip: element-wise activations, y = f(x), in place allowed (x == y).
// mode (run-time): 0 relu, 1 leaky relu (alpha * x below 0), 2 clipped relu (min(max(x,0),
// alpha)), 3 tanh, 4 sigmoid. Layout does not matter: the tensor is `count` packed elements.
//
// Symbol: mk_activation_fwd; grid-stride over elements, MK_BLOCK threads per block.
#include "mk_portable.h"

#ifndef MK_BLOCK
#define MK_BLOCK 256
#endif

MK_DEVICE float mk_activate(int mode, float x, float alpha) {
  switch (mode) {
    case 0: return x > 0.0f ? x : 0.0f;
    case 1: return x > 0.0f ? x : alpha * x;
    case 2: return mk_fmin(mk_fmax(x, 0.0f), alpha);
    case 3: return mk_tanh(x);
    default: return mk_sigmoid(x);
  }
}

MK_KERNEL MK_BOUNDS(MK_BLOCK) void mk_activation_fwd(void* p_x, void* p_y, int count, int mode,
                                                     float alpha) {
  const mk_t* x = (const mk_t*)p_x;
  mk_t* y = (mk_t*)p_y;
  const int step = mk_gdim_x() * MK_BLOCK;
  for (int i = mk_bid_x() * MK_BLOCK + mk_tid_x(); i < count; i += step) {
    mk_store(y, i, mk_activate(mode, mk_load(x, i), alpha));
  }
}
