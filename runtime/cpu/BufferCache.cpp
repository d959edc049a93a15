//===- BufferCache.cpp - dsa_cpu_alloc / dsa_cpu_free: malloc with a bounded cache of large blocks ------------===//
//
// core/include/dsa/ABI/BufferCache.h. The cache is a short list, searched under a mutex for the smallest block that
// fits; small blocks never take the lock. Fresh large blocks are rounded up to a size class (at most 1/8 more), and
// blocks idle for kIdleAllocations large allocations are freed, so that sizes that stop recurring do not stay.
//
//===----------------------------------------------------------------------------------------------------------===//
#include "dsa/ABI/BufferCache.h"

#include <malloc.h>

#include <cstdlib>
#include <deque>
#include <mutex>

namespace dsa::abi {
namespace {

/// A cached block that no allocation took during this many large allocations (>= kCachedMinBytes) is freed (a
/// 512-token prefill step makes about 300; a decode step fewer).
constexpr uint64_t kIdleAllocations = 1024;

struct CachedBlock {
  void *block;
  size_t usable;
  uint64_t since; // the allocation clock when it was kept
};

size_t limitFromEnvironment() {
  const char *env = std::getenv("DSA_CPU_BUFFER_CACHE_MB");
  if (env == nullptr || *env == '\0')
    return size_t(1) << 30;
  char *end = nullptr;
  unsigned long long mb = std::strtoull(env, &end, 10);
  if (end == env || *end != '\0' || mb > (size_t(1) << 24))
    return size_t(1) << 30; // not a number of MiB (or over 16 TiB): the default
  return static_cast<size_t>(mb) << 20;
}

class Cache {
public:
  ~Cache() { release(0); }

  /// The smallest cached block of usable size in [bytes, 2 * bytes], or null.
  void *take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++clock_;
    releaseIdleLocked();
    auto best = blocks_.end();
    for (auto it = blocks_.begin(); it != blocks_.end(); ++it)
      if (it->usable >= bytes && it->usable / 2 <= bytes && (best == blocks_.end() || it->usable < best->usable))
        best = it;
    if (best == blocks_.end())
      return nullptr;
    void *block = best->block;
    held_ -= best->usable;
    blocks_.erase(best);
    return block;
  }

  /// False when the block does not fit under the limit at all (the caller frees it).
  bool keep(void *block, size_t usable) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (usable > limit_)
      return false;
    blocks_.push_back({block, usable, clock_});
    held_ += usable;
    releaseLocked(limit_);
    return true;
  }

  void release(size_t keepAtMost) {
    std::lock_guard<std::mutex> lock(mutex_);
    releaseLocked(keepAtMost);
  }
  size_t held() {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_;
  }
  size_t limit() {
    std::lock_guard<std::mutex> lock(mutex_);
    return limit_;
  }
  void setLimit(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    limit_ = bytes;
    releaseLocked(limit_);
  }

private:
  void releaseFront() {
    held_ -= blocks_.front().usable;
    std::free(blocks_.front().block);
    blocks_.pop_front();
  }
  void releaseLocked(size_t keepAtMost) {
    while (held_ > keepAtMost && !blocks_.empty())
      releaseFront();
  }
  // Blocks that no allocation took over kIdleAllocations large allocations (sizes that stopped recurring: a
  // growing context, another batch size). blocks_ is oldest first, so `since` ascends.
  void releaseIdleLocked() {
    while (!blocks_.empty() && clock_ - blocks_.front().since > kIdleAllocations)
      releaseFront();
  }

  std::mutex mutex_;
  std::deque<CachedBlock> blocks_; // oldest first
  size_t held_ = 0;
  size_t limit_ = limitFromEnvironment();
  uint64_t clock_ = 0; // large allocations so far
};

Cache &cache() {
  static Cache instance;
  return instance;
}

} // namespace

size_t bufferCacheLimit() { return cache().limit(); }
void setBufferCacheLimit(size_t bytes) { cache().setLimit(bytes); }
size_t bufferCacheBytes() { return cache().held(); }
void releaseCachedBuffers() { cache().release(0); }

} // namespace dsa::abi

extern "C" void *dsa_cpu_alloc(uint64_t bytes) {
  if (bytes < dsa::abi::kCachedMinBytes)
    return std::malloc(static_cast<size_t>(bytes));
  if (void *block = dsa::abi::cache().take(static_cast<size_t>(bytes)))
    return block;
  // A fresh block of the size class (1/8 of the power of two below): sizes that grow a little each step (buffers
  // over a context's visible rows) keep fitting the block the last step freed.
  const uint64_t step = (uint64_t(1) << (63 - __builtin_clzll(bytes))) / 8;
  const uint64_t rounded = (bytes + step - 1) / step * step;
  return std::malloc(static_cast<size_t>(rounded));
}

extern "C" void dsa_cpu_free(void *block) {
  if (block == nullptr)
    return;
  const size_t usable = malloc_usable_size(block);
  if (usable >= dsa::abi::kCachedMinBytes && dsa::abi::cache().keep(block, usable))
    return;
  std::free(block);
}
