// batchnorm.hip: batch normalisation in inference (spatial mode, per channel), any layout:
//   y = scale[c] * (x - mean[c]) / sqrt(var[c] + epsilon) + bias[c]
// with the channel of element i being (i / c_stride) % c. scale, bias, mean and var are FP32
// whatever the tensor type (MIOpen keeps the statistics in float for FP16/BF16 tensors).
//
// Symbol: mk_batchnorm_infer; grid-stride over elements.
#include "mk_portable.h"

#ifndef MK_BLOCK
#define MK_BLOCK 256
#endif

MK_KERNEL MK_BOUNDS(MK_BLOCK) void mk_batchnorm_infer(void* p_x, void* p_y, void* p_scale,
                                                      void* p_bias, void* p_mean, void* p_var,
                                                      int count, int c, int c_stride,
                                                      float epsilon) {
  const mk_t* x = (const mk_t*)p_x;
  mk_t* y = (mk_t*)p_y;
  const float* scale = (const float*)p_scale;
  const float* bias = (const float*)p_bias;
  const float* mean = (const float*)p_mean;
  const float* var = (const float*)p_var;
  const int step = mk_gdim_x() * MK_BLOCK;
  for (int i = mk_bid_x() * MK_BLOCK + mk_tid_x(); i < count; i += step) {
    const int ch = (i / c_stride) % c;
    const float inv = 1.0f / mk_sqrt(var[ch] + epsilon);
    mk_store(y, i, scale[ch] * (mk_load(x, i) - mean[ch]) * inv + bias[ch]);
  }
}
