//===- BufferCache.h - the allocation functions code compiled for the CPU calls (MLIR-free) ------------------===//
//
// The CPU pipeline (--dsa-cpu-pipeline) lowers memref.alloc / memref.dealloc to malloc / free, and its output keeps
// those names (test/Conversion/DSAToCPU/pipeline.mlir). The CPU backend (the JIT and AOT step libraries) renames
// the two calls in the optimised LLVM module to `dsa_cpu_alloc` / `dsa_cpu_free`, defined here (runtime/cpu/
// BufferCache.cpp, library DSACPURuntime; the JIT binds them in its symbol map, a step library links its own copy).
//
// Why: a prefill step allocates and frees buffers of tens of MiB (f32 [tokens, heads, head_dim] and the like),
// above glibc's mmap threshold (at most 32 MiB), so every call mapped fresh pages and the kernel zeroed them
// (clear_page, page faults: about 13% of a 512-token prefill on a 2-core Zen 3 host, perf; docs/benchmarks.md).
// dsa_cpu_free keeps blocks of at least kCachedMinBytes for the next dsa_cpu_alloc of a size they fit; the blocks
// are ordinary malloc'ed memory, so a result buffer that the caller frees with free() is fine.
//
// The cache is process-wide (per step library: each .so has its own), thread-safe, and bounded: it holds at most
// bufferCacheLimit() bytes (default 1 GiB; environment DSA_CPU_BUFFER_CACHE_MB at the first call, 0 = no cache),
// releasing the oldest blocks first. Nothing the compiled code computes depends on it.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_ABI_BUFFERCACHE_H
#define DSA_ABI_BUFFERCACHE_H

#include <cstddef>
#include <cstdint>

namespace dsa::abi {

/// The symbols the backend gives the compiled code's malloc and free.
inline constexpr const char *kAllocSymbol = "dsa_cpu_alloc";
inline constexpr const char *kFreeSymbol = "dsa_cpu_free";

/// Blocks smaller than this (bytes, as malloc_usable_size reports them) go straight to malloc / free.
inline constexpr size_t kCachedMinBytes = size_t(1) << 20;

/// The most bytes the cache holds (blocks released beyond it, oldest first). Setting it releases what exceeds it.
size_t bufferCacheLimit();
void setBufferCacheLimit(size_t bytes);
/// Bytes held by the cache now (blocks freed by the compiled code and not yet reused).
size_t bufferCacheBytes();
/// Frees every cached block (e.g. after a long prefill, before a phase that needs the memory elsewhere).
void releaseCachedBuffers();

} // namespace dsa::abi

extern "C" {

/// malloc(bytes), or a cached block of usable size in [bytes, 2 * bytes] when bytes >= kCachedMinBytes. Null only
/// when malloc fails (the compiled code then fails as it would with malloc).
void *dsa_cpu_alloc(uint64_t bytes);
/// free(block), or keeps it in the cache when it is at least kCachedMinBytes and the limit allows. Null: nothing.
void dsa_cpu_free(void *block);

} // extern "C"

#endif
