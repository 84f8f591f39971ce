#include "heap_count.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace stagecraft {
namespace {

std::atomic<int64_t> heap_live_bytes{0};
std::atomic<int64_t> heap_peak_bytes{0};

}  // namespace

void CountAllocation(void* block) {
  if (block == nullptr) return;
  const auto bytes = static_cast<int64_t>(malloc_usable_size(block));
  const int64_t live = heap_live_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t peak = heap_peak_bytes.load(std::memory_order_relaxed);
  while (live > peak && !heap_peak_bytes.compare_exchange_weak(peak, live)) {
  }
}

void CountRelease(void* block) {
  if (block == nullptr) return;
  heap_live_bytes.fetch_sub(static_cast<int64_t>(malloc_usable_size(block)),
                            std::memory_order_relaxed);
}

int64_t ResetHeapPeak() {
  const int64_t live = heap_live_bytes.load();
  heap_peak_bytes.store(live);
  return live;
}

int64_t HeapPeakBytes() { return heap_peak_bytes.load(); }

}  // namespace stagecraft

// Every allocation of the program goes through these. libstdc++'s nothrow forms call them; its
// aligned forms do not, and are not counted.
void* operator new(std::size_t size) {
  void* block = std::malloc(size == 0 ? 1 : size);
  if (block == nullptr) throw std::bad_alloc();
  stagecraft::CountAllocation(block);
  return block;
}
void* operator new[](std::size_t size) { return operator new(size); }
void operator delete(void* block) noexcept {
  stagecraft::CountRelease(block);
  std::free(block);
}
void operator delete[](void* block) noexcept { operator delete(block); }
void operator delete(void* block, std::size_t) noexcept { operator delete(block); }
void operator delete[](void* block, std::size_t) noexcept { operator delete(block); }
