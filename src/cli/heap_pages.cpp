// Why: a symmetric simulation of Llama 3 405B on 16,384 GPUs touches about
// 16 MiB once (communicators of every rank, the engine's state) and runs in
// tens of milliseconds. On a virtual machine each first touch of a 4 KiB page
// is a fault that costs microseconds: perf showed a third of such a run in
// the kernel's page-fault path. Backed by huge pages the same memory faults
// 512 times less often. The heap is grown once up front (without touching it:
// no page is allocated until used) and kept, and blocks up to glibc's largest
// mmap threshold come from it rather than from mappings of their own.
#include "heap_pages.hpp"

#if defined(__linux__) && defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define PTSIM_HUGE_HEAP 1
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#endif

namespace ptsim::cli {

void prefer_huge_heap_pages() {
#ifdef PTSIM_HUGE_HEAP
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  constexpr std::uintptr_t kHugePage = 2 * kMiB;
  // glibc's largest mmap threshold on 64-bit is 32 MiB (DEFAULT_MMAP_THRESHOLD_MAX).
  if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(32 * kMiB)) == 0) return;
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(512 * kMiB));  // a grown heap is kept
  mallopt(M_TOP_PAD, static_cast<int>(64 * kMiB));          // and grows 64 MiB at a time
  void* block = std::malloc(24 * kMiB);                     // grows the heap now, touching nothing
  if (block == nullptr) return;
  const auto top = reinterpret_cast<std::uintptr_t>(sbrk(0));
  const auto first = (reinterpret_cast<std::uintptr_t>(block) + kHugePage - 1) & ~(kHugePage - 1);
  std::free(block);
  const std::uintptr_t last = top & ~(kHugePage - 1);
  // Advice only: where the kernel has no transparent huge pages this fails and changes nothing.
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#endif
}

}  // namespace ptsim::cli
