// mk_host.h: run a kernel on the CPU, for tests on machines without a GPU.
//
// Compile a kernel file as C++ with -DMK_HOST=1 (plus a small entry wrapper that calls the
// kernel with its arguments) into a shared library. mk_host_launch() runs every block one
// after another; a block's threads are fibers (ucontext) on one OS thread, scheduled round
// robin, and mk_sync() switches to the next fiber, so every thread of the block reaches a
// barrier before any passes it. __shared__ data are function-level statics (one block at a
// time). This checks a kernel's indexing, arithmetic and synchronisation, not its speed.
#ifndef MK_HOST_H
#define MK_HOST_H

#include <ucontext.h>

#include <cmath>
#include <vector>

#define MK_DEVICE static inline
#define MK_BOUNDS(n)
#define MK_KERNEL extern "C"
#define MK_SHARED static  // one block at a time, so a static is that block's shared memory
#define __restrict__ __restrict

struct MkHostIds {
  int tid, bid_x, bid_y, bid_z, bdim_x, gdim_x;
};
struct MkHostFiber {
  ucontext_t ctx;
  std::vector<char> stack;
  bool done;
};
inline MkHostIds mk_host_ids;
inline ucontext_t mk_host_sched;
inline std::vector<MkHostFiber>* mk_host_fibers = nullptr;
inline void (*mk_host_entry_fn)(void**) = nullptr;
inline void** mk_host_args = nullptr;

MK_DEVICE int mk_tid_x() { return mk_host_ids.tid; }
MK_DEVICE int mk_bid_x() { return mk_host_ids.bid_x; }
MK_DEVICE int mk_bid_y() { return mk_host_ids.bid_y; }
MK_DEVICE int mk_bid_z() { return mk_host_ids.bid_z; }
MK_DEVICE int mk_bdim_x() { return mk_host_ids.bdim_x; }
MK_DEVICE int mk_gdim_x() { return mk_host_ids.gdim_x; }
MK_DEVICE void mk_sync() {
  swapcontext(&(*mk_host_fibers)[mk_host_ids.tid].ctx, &mk_host_sched);
}

inline void mk_host_fiber_main() {
  mk_host_entry_fn(mk_host_args);
  (*mk_host_fibers)[mk_host_ids.tid].done = true;  // returns to mk_host_sched (uc_link)
}

// Runs `entry(args)` as every thread of a (gx, gy, gz) x bx launch.
extern "C" void mk_host_launch(void (*entry)(void**), void** args, int gx, int gy, int gz,
                               int bx) {
  mk_host_entry_fn = entry;
  mk_host_args = args;
  std::vector<MkHostFiber> fibers(bx);
  for (MkHostFiber& f : fibers) f.stack.resize(1 << 16);  // reused by every block
  mk_host_fibers = &fibers;
  for (int z = 0; z < gz; ++z)
    for (int y = 0; y < gy; ++y)
      for (int x = 0; x < gx; ++x) {
        for (int t = 0; t < bx; ++t) {
          MkHostFiber& f = fibers[t];
          f.done = false;
          getcontext(&f.ctx);
          f.ctx.uc_stack.ss_sp = f.stack.data();
          f.ctx.uc_stack.ss_size = f.stack.size();
          f.ctx.uc_link = &mk_host_sched;
          makecontext(&f.ctx, mk_host_fiber_main, 0);
        }
        for (bool alive = true; alive;) {
          alive = false;
          for (int t = 0; t < bx; ++t) {
            if (fibers[t].done) continue;
            mk_host_ids = MkHostIds{t, x, y, z, bx, gx};
            swapcontext(&mk_host_sched, &fibers[t].ctx);
            alive = alive || !fibers[t].done;
          }
        }
      }
  mk_host_fibers = nullptr;
}

#endif  // MK_HOST_H
