// mk_portable.h: one kernel text for AMD (clang/hipcc in HIP mode) and NVIDIA (NVRTC).
//
// AMD builds use -nogpuinc -nogpulib: no HIP headers and no ROCm device libraries, so any arch
// the compiler knows builds (gfx1201 with clang-19) and nothing outside this header is needed.
// Everything a kernel uses from the "runtime" is therefore spelled here with clang builtins.
// NVRTC builds need no CUDA headers either: threadIdx, __syncthreads, expf... are built in.
//
// Kernels see:  MK_KERNEL, MK_DEVICE, MK_SHARED, MK_BOUNDS(n), mk_tid_x(), mk_bid_x/y/z(),
//               mk_bdim_x(), mk_gdim_x(), mk_sync(), mk_t (storage type), mk_load/mk_store
//               (float conversion), mk_exp, mk_log, mk_tanh, mk_sigmoid, mk_neg_inf, mk_sqrt, mk_fmax, mk_fmin.
// MK_TYPE selects the element type: 0 FP32, 1 FP16, 2 BF16 (storage only; math in float).
#ifndef MK_PORTABLE_H
#define MK_PORTABLE_H

#if defined(MK_HOST)
// Host emulation for tests (mk_host.h): plain C++, one std::thread per GPU thread.
#define MK_AMD 0
#elif defined(__AMDGCN__)
#define MK_AMD 1
#elif defined(__CUDACC__)
#define MK_NVIDIA 1
#else
#error "mk_portable.h: compile as HIP for amdgcn (clang -x hip) or with NVRTC"
#endif

#ifndef MK_TYPE
#define MK_TYPE 0
#endif

// ----------------------------------------------------------------------------- qualifiers
#if defined(MK_HOST)
#include "mk_host.h"
#elif MK_AMD
#ifndef __global__
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#endif
#define MK_DEVICE static __device__ inline __attribute__((always_inline))
// The flat work-group size bound lets the backend allocate registers for the real block size.
#define MK_BOUNDS(n) __attribute__((amdgpu_flat_work_group_size(1, n)))
#else
// Not static: NVRTC warns about every unused static function of this header.
#define MK_DEVICE __device__ __forceinline__
#define MK_BOUNDS(n) __launch_bounds__(n)
#endif
#if !defined(MK_HOST)
#define MK_KERNEL extern "C" __global__
#define MK_SHARED __shared__
#endif

// ----------------------------------------------------------------------------- indices
#if defined(MK_HOST)
// mk_host.h defines the index functions and mk_sync.
#elif MK_AMD
MK_DEVICE int mk_tid_x() { return (int)__builtin_amdgcn_workitem_id_x(); }
MK_DEVICE int mk_bid_x() { return (int)__builtin_amdgcn_workgroup_id_x(); }
MK_DEVICE int mk_bid_y() { return (int)__builtin_amdgcn_workgroup_id_y(); }
MK_DEVICE int mk_bid_z() { return (int)__builtin_amdgcn_workgroup_id_z(); }
// Block and grid sizes live in the HSA dispatch packet: workgroup_size_x is the u16 at byte 4,
// grid_size_x (in work-items, not blocks) the u32 at byte 12. The device libraries read them
// the same way; reading them here keeps the build free of those libraries.
typedef __attribute__((address_space(4))) const unsigned short mk_const_u16;
typedef __attribute__((address_space(4))) const unsigned int mk_const_u32;
MK_DEVICE int mk_bdim_x() {
  return (int)((mk_const_u16*)__builtin_amdgcn_dispatch_ptr())[2];
}
MK_DEVICE int mk_gdim_x() {
  const unsigned int grid = ((mk_const_u32*)__builtin_amdgcn_dispatch_ptr())[3];
  const unsigned int block = (unsigned int)mk_bdim_x();
  return (int)((grid + block - 1) / block);
}
MK_DEVICE void mk_sync() {
  // What HIP's __syncthreads does: make LDS and global writes visible, then meet.
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
#else
MK_DEVICE int mk_tid_x() { return (int)threadIdx.x; }
MK_DEVICE int mk_bid_x() { return (int)blockIdx.x; }
MK_DEVICE int mk_bid_y() { return (int)blockIdx.y; }
MK_DEVICE int mk_bid_z() { return (int)blockIdx.z; }
MK_DEVICE int mk_bdim_x() { return (int)blockDim.x; }
MK_DEVICE int mk_gdim_x() { return (int)gridDim.x; }
MK_DEVICE void mk_sync() { __syncthreads(); }
#endif

// ----------------------------------------------------------------------------- math
#if MK_AMD || defined(MK_HOST)
// Clang lowers these builtins to LLVM intrinsics the AMDGPU backend expands itself; a libm
// name (tanhf, ...) would need the device libraries, so tanh is built from exp below.
MK_DEVICE float mk_exp(float x) { return __builtin_expf(x); }
MK_DEVICE float mk_log(float x) { return __builtin_logf(x); }
MK_DEVICE float mk_sqrt(float x) { return __builtin_sqrtf(x); }
MK_DEVICE float mk_fmax(float a, float b) { return __builtin_fmaxf(a, b); }
MK_DEVICE float mk_fmin(float a, float b) { return __builtin_fminf(a, b); }
#else
MK_DEVICE float mk_exp(float x) { return expf(x); }
MK_DEVICE float mk_log(float x) { return logf(x); }
MK_DEVICE float mk_sqrt(float x) { return sqrtf(x); }
MK_DEVICE float mk_fmax(float a, float b) { return fmaxf(a, b); }
MK_DEVICE float mk_fmin(float a, float b) { return fminf(a, b); }
#endif
MK_DEVICE float mk_tanh(float x) {
  // tanh(x) = 1 - 2 / (exp(2x) + 1): exact at both tails (exp overflow gives 1, underflow -1).
  return 1.0f - 2.0f / (mk_exp(2.0f * x) + 1.0f);
}
MK_DEVICE float mk_sigmoid(float x) { return 1.0f / (1.0f + mk_exp(-x)); }

// ----------------------------------------------------------------------------- element types
#if MK_AMD || defined(MK_HOST)
MK_DEVICE float mk_as_float(unsigned int u) { return __builtin_bit_cast(float, u); }
MK_DEVICE unsigned int mk_as_uint(float f) { return __builtin_bit_cast(unsigned int, f); }
#else
MK_DEVICE float mk_as_float(unsigned int u) { return __uint_as_float(u); }
MK_DEVICE unsigned int mk_as_uint(float f) { return __float_as_uint(f); }
#endif
MK_DEVICE float mk_bf16_to_float(unsigned short b) { return mk_as_float((unsigned int)b << 16); }
MK_DEVICE float mk_neg_inf() { return mk_as_float(0xff800000u); }
MK_DEVICE unsigned short mk_float_to_bf16(float f) {
  unsigned int u = mk_as_uint(f);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) {
    return (unsigned short)((u >> 16) | 0x0040u);  // keep NaN a (quiet) NaN
  }
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return (unsigned short)(u >> 16);
}

#if MK_TYPE == 0
typedef float mk_t;
MK_DEVICE float mk_to_float(mk_t v) { return v; }
MK_DEVICE mk_t mk_from_float(float f) { return f; }
#elif MK_TYPE == 1
#if MK_AMD || defined(MK_HOST)
typedef _Float16 mk_t;  // hardware conversions (v_cvt_f32_f16 / v_cvt_f16_f32)
MK_DEVICE float mk_to_float(mk_t v) { return (float)v; }
MK_DEVICE mk_t mk_from_float(float f) { return (mk_t)f; }
#else
typedef unsigned short mk_t;  // IEEE half bits; cvt instructions avoid needing cuda_fp16.h
MK_DEVICE float mk_to_float(mk_t v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
  return f;
}
MK_DEVICE mk_t mk_from_float(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#endif
#elif MK_TYPE == 2
typedef unsigned short mk_t;
MK_DEVICE float mk_to_float(mk_t v) { return mk_bf16_to_float(v); }
MK_DEVICE mk_t mk_from_float(float f) { return mk_float_to_bf16(f); }
#else
#error "MK_TYPE must be 0 (FP32), 1 (FP16) or 2 (BF16)"
#endif

MK_DEVICE float mk_load(const mk_t* p, int i) { return mk_to_float(p[i]); }
MK_DEVICE void mk_store(mk_t* p, int i, float v) { p[i] = mk_from_float(v); }

#endif  // MK_PORTABLE_H
