// mk_host.h: run a kernel on the CPU, for tests on machines without a GPU.
//
// Compile a kernel file as C++20 with -DMK_HOST=1 into a shared library; it then also exports
// mk_host_launch(). Each block runs its threads as std::threads meeting at a std::barrier
// (blocks run one after another), so __shared__ data can be function-level statics and
// mk_sync() is a real barrier: the emulation checks a kernel's indexing, arithmetic and
// synchronisation, not its speed.
#ifndef MK_HOST_H
#define MK_HOST_H

#include <barrier>
#include <cmath>
#include <thread>
#include <vector>

#define MK_DEVICE static inline
#define MK_BOUNDS(n)
#define MK_KERNEL extern "C"
#define MK_SHARED static  // one block at a time, so a static is that block's shared memory
#define __restrict__ __restrict

struct MkHostIds {
  int tid, bid_x, bid_y, bid_z, bdim_x, gdim_x;
};
inline thread_local MkHostIds mk_host_ids;
inline std::barrier<>* mk_host_barrier = nullptr;

MK_DEVICE int mk_tid_x() { return mk_host_ids.tid; }
MK_DEVICE int mk_bid_x() { return mk_host_ids.bid_x; }
MK_DEVICE int mk_bid_y() { return mk_host_ids.bid_y; }
MK_DEVICE int mk_bid_z() { return mk_host_ids.bid_z; }
MK_DEVICE int mk_bdim_x() { return mk_host_ids.bdim_x; }
MK_DEVICE int mk_gdim_x() { return mk_host_ids.gdim_x; }
MK_DEVICE void mk_sync() { mk_host_barrier->arrive_and_wait(); }

// Runs `thunk(ctx)` as every thread of a (gx, gy, gz) x bx launch; the thunk calls the kernel
// with its arguments (the test's ctypes callback).
extern "C" void mk_host_launch(void (*thunk)(void*), void* ctx, int gx, int gy, int gz,
                               int bx) {
  for (int z = 0; z < gz; ++z)
    for (int y = 0; y < gy; ++y)
      for (int x = 0; x < gx; ++x) {
        std::barrier<> bar(bx);
        mk_host_barrier = &bar;
        std::vector<std::thread> threads;
        threads.reserve(bx);
        for (int t = 0; t < bx; ++t) {
          threads.emplace_back([=] {
            mk_host_ids = MkHostIds{t, x, y, z, bx, gx};
            thunk(ctx);
          });
        }
        for (auto& th : threads) th.join();
      }
}

#endif  // MK_HOST_H
