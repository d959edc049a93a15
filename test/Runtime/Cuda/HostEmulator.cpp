//===- HostEmulator.cpp - work items as coroutines, barriers as a block-wide rendezvous, race checks -----------===//
//
// The hooks of core/include/dsa/ABI/GpuHostEmulation.h, called by the kernels dsa-gpu-to-host-emulation lowered,
// and the scheduler behind them (HostEmulator.h describes the semantics).
//
//===----------------------------------------------------------------------------------------------------------===//
#include "Runtime/Cuda/HostEmulator.h"

#include "dsa/ABI/GpuHostEmulation.h"
#include "dsa/ABI/GpuKernels.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <unordered_map>
#include <vector>

namespace dsa::cuda {

namespace {

constexpr size_t kStackBytes = 256 * 1024;
constexpr size_t kMaxItems = 1024;
constexpr int64_t kStaticSharedBytes = 48 * 1024; // static __shared__ per block on every CUDA architecture
constexpr int64_t kNoBlock = -1, kManyBlocks = -2;
constexpr uint32_t kManyItems = UINT32_MAX;

/// Who last wrote a byte and who read it since (blocks are linear block ids, epochs count barrier intervals over
/// the whole launch, so that an epoch names one interval of one block).
struct Shadow {
  int64_t wBlock = kNoBlock;
  uint64_t wEpoch = 0;
  uint32_t wItem = 0;
  int64_t rBlock = kNoBlock; // kManyBlocks: read by two or more blocks
  uint64_t rEpoch = 0;
  uint32_t rItem = 0; // kManyItems: read by two or more items in rEpoch
};

enum class State { Ready, AtBarrier, Done };

struct Item {
  ucontext_t ctx;
  char *stackLo = nullptr, *stackHi = nullptr;
  State state = State::Ready;
  int32_t site = -1;
  int64_t tid[3] = {0, 0, 0};
};

struct Workgroup {
  std::vector<unsigned char> storage;
  unsigned char *data = nullptr;
  int64_t bytes = 0;
};

struct Launch {
  void (*entry)(void **) = nullptr;
  void **params = nullptr;
  size_t numParams = 0;
  const std::string *kernel = nullptr;
  const char *layout = nullptr; // GpuKernels.def's parameter layout, when the kernel is in the table
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  int64_t blockId[3] = {0, 0, 0};
  int64_t blockLinear = 0;
  std::vector<Item> *items = nullptr;
  size_t current = 0;
  ucontext_t scheduler;
  std::vector<Workgroup> workgroup;
  bool checks = true;
  uint64_t epoch = 0;
  std::unordered_map<uint64_t, Shadow> global, shared;
  bool failed = false;
  std::string error;
  EmulationStats *stats = nullptr;
};

thread_local Launch *gLaunch = nullptr;

Launch &current() {
  if (!gLaunch) {
    std::fprintf(stderr, "dsa host emulator: an emulated kernel ran outside HostEmulator::launch\n");
    std::abort();
  }
  return *gLaunch;
}

/// The process's work item stacks (mmap'ed, a PROT_NONE guard page below each), grown on demand.
std::vector<char *> &stackPool() {
  static std::vector<char *> pool;
  return pool;
}

Status ensureStacks(size_t n) {
  std::vector<char *> &pool = stackPool();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  while (pool.size() < n) {
    void *m = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
      return makeError("host emulator: cannot map a work item stack of " + std::to_string(kStackBytes) + " bytes");
    if (mprotect(m, page, PROT_NONE) != 0)
      return makeError("host emulator: cannot protect a stack guard page");
    pool.push_back(static_cast<char *>(m) + page);
  }
  return Status::success();
}

std::string itemName(const Item &it) {
  return "(" + std::to_string(it.tid[0]) + ", " + std::to_string(it.tid[1]) + ", " + std::to_string(it.tid[2]) + ")";
}

std::string blockName(const Launch &L) {
  return "block (" + std::to_string(L.blockId[0]) + ", " + std::to_string(L.blockId[1]) + ", " +
         std::to_string(L.blockId[2]) + ")";
}

/// Where an address lies: a workgroup attribution, else the memref parameter whose aligned pointer is the closest
/// below it (GpuKernels.def's layout tells which parameters are memrefs), else the raw address.
std::string describe(const Launch &L, uint64_t a) {
  for (size_t i = 0; i < L.workgroup.size(); ++i) {
    const Workgroup &w = L.workgroup[i];
    const uint64_t lo = reinterpret_cast<uint64_t>(w.data);
    if (w.data && a >= lo && a < lo + static_cast<uint64_t>(w.bytes))
      return "workgroup attribution " + std::to_string(i) + " byte " + std::to_string(a - lo);
  }
  if (L.layout) {
    size_t slot = 0;
    int best = -1, memrefIndex = 0;
    uint64_t bestBase = 0;
    for (const char *c = L.layout; *c; ++c) {
      if (*c == 'm') {
        if (slot + 1 >= L.numParams)
          break;
        uint64_t base;
        std::memcpy(&base, L.params[slot + 1], 8);
        if (base <= a && (best < 0 || base > bestBase)) {
          best = memrefIndex;
          bestBase = base;
        }
        ++memrefIndex;
        slot += 5;
      } else if (*c == 'q' || *c == 'w') {
        ++slot;
      }
    }
    if (best >= 0)
      return "memref parameter " + std::to_string(best) + " byte " + std::to_string(a - bestBase);
  }
  std::ostringstream os;
  os << "address 0x" << std::hex << a;
  return os.str();
}

/// Records the error and returns to the scheduler for good: the item's coroutine is abandoned (it holds nothing
/// that needs releasing: kernel code and the hooks' frames only).
[[noreturn]] void abandon(Launch &L) {
  L.failed = true;
  Item &it = (*L.items)[L.current];
  swapcontext(&it.ctx, &L.scheduler);
  std::abort(); // never resumed
}

void trampoline() {
  Launch &L = current();
  L.entry(L.params);
  (*L.items)[L.current].state = State::Done;
  // returning resumes uc_link, the scheduler
}

void race(Launch &L, const char *kind, uint64_t a, int64_t otherBlock, uint32_t otherItem) {
  const Item &it = (*L.items)[L.current];
  std::string other;
  if (otherBlock == kManyBlocks)
    other = "work items of other blocks";
  else if (otherBlock != L.blockLinear)
    other = "a work item of block #" + std::to_string(otherBlock);
  else if (otherItem == kManyItems)
    other = "other work items of the block";
  else
    other = "work item " + itemName((*L.items)[otherItem]);
  L.error = *L.kernel + ": data race (" + kind + ") on " + describe(L, a) + ": work item " + itemName(it) + " of " +
            blockName(L) + " and " + other + " without a barrier between them";
}

/// A fresh coroutine for `it` at the kernel's entry (getcontext returns twice: kept out of launch()).
__attribute__((noinline)) void start(Launch &L, Item &it) {
  getcontext(&it.ctx);
  it.ctx.uc_stack.ss_sp = it.stackLo;
  it.ctx.uc_stack.ss_size = kStackBytes;
  it.ctx.uc_link = &L.scheduler;
  makecontext(&it.ctx, trampoline, 0);
  it.state = State::Ready;
  it.site = -1;
}

/// Runs work item i until it reaches a barrier, returns or fails (swapcontext returns twice: kept out of launch()).
__attribute__((noinline)) void resume(Launch &L, size_t i) {
  L.current = i;
  swapcontext(&L.scheduler, &(*L.items)[i].ctx);
}

bool conflicts(const Launch &L, int64_t block, uint64_t epoch, uint32_t item) {
  return block != L.blockLinear || (epoch == L.epoch && item != L.current);
}

} // namespace

//===----------------------------------------------------------------------===//
// The hooks the lowered kernels call
//===----------------------------------------------------------------------===//

extern "C" {

int64_t dsa_emu_thread_id(int32_t dim) {
  Launch &L = current();
  return dim >= 0 && dim < 3 ? (*L.items)[L.current].tid[dim] : 0;
}
int64_t dsa_emu_block_id(int32_t dim) {
  Launch &L = current();
  return dim >= 0 && dim < 3 ? L.blockId[dim] : 0;
}
int64_t dsa_emu_block_dim(int32_t dim) {
  Launch &L = current();
  return dim >= 0 && dim < 3 ? L.block[dim] : 1;
}
int64_t dsa_emu_grid_dim(int32_t dim) {
  Launch &L = current();
  return dim >= 0 && dim < 3 ? L.grid[dim] : 1;
}

void dsa_emu_barrier(int32_t site) {
  Launch &L = current();
  Item &it = (*L.items)[L.current];
  it.state = State::AtBarrier;
  it.site = site;
  swapcontext(&it.ctx, &L.scheduler);
}

void *dsa_emu_workgroup(int32_t index, int64_t bytes) {
  Launch &L = current();
  if (index < 0 || bytes < 0) {
    L.error =
        *L.kernel + ": workgroup attribution " + std::to_string(index) + " of " + std::to_string(bytes) + " bytes";
    abandon(L);
  }
  if (static_cast<size_t>(index) >= L.workgroup.size())
    L.workgroup.resize(index + 1);
  Workgroup &w = L.workgroup[index];
  if (!w.data) {
    int64_t total = bytes;
    for (const Workgroup &o : L.workgroup)
      total += o.bytes;
    if (total > kStaticSharedBytes) {
      L.error = *L.kernel + ": " + std::to_string(total) + " bytes of workgroup memory per block, more than CUDA's " +
                std::to_string(kStaticSharedBytes) + " of static shared memory";
      abandon(L);
    }
    // First request of this block: fresh storage, poisoned (0xFF bytes: NaN as f32, -1 as integers).
    w.storage.assign(static_cast<size_t>(bytes) + abi::kEmuWorkgroupAlign, 0xFF);
    const uintptr_t p = reinterpret_cast<uintptr_t>(w.storage.data());
    w.data =
        reinterpret_cast<unsigned char *>((p + abi::kEmuWorkgroupAlign - 1) & ~uintptr_t(abi::kEmuWorkgroupAlign - 1));
    w.bytes = bytes;
  } else if (w.bytes != bytes) {
    L.error = *L.kernel + ": workgroup attribution " + std::to_string(index) + " requested with " +
              std::to_string(bytes) + " bytes, earlier with " + std::to_string(w.bytes);
    abandon(L);
  }
  return w.data;
}

void dsa_emu_access(int64_t address, int64_t bytes, int32_t isWrite) {
  Launch &L = current();
  if (!L.checks)
    return;
  Item &it = (*L.items)[L.current];
  const uint64_t a0 = static_cast<uint64_t>(address);
  if (a0 >= reinterpret_cast<uint64_t>(it.stackLo) && a0 < reinterpret_cast<uint64_t>(it.stackHi))
    return; // private memory
  ++L.stats->checkedAccesses;
  bool isShared = false;
  for (const Workgroup &w : L.workgroup) {
    const uint64_t lo = reinterpret_cast<uint64_t>(w.data);
    if (w.data && a0 >= lo && a0 < lo + static_cast<uint64_t>(w.bytes))
      isShared = true;
  }
  std::unordered_map<uint64_t, Shadow> &map = isShared ? L.shared : L.global;
  const uint32_t me = static_cast<uint32_t>(L.current);
  for (int64_t b = 0; b < bytes; ++b) {
    const uint64_t a = a0 + static_cast<uint64_t>(b);
    Shadow &s = map[a];
    if (!isWrite) {
      if (s.wBlock != kNoBlock && conflicts(L, s.wBlock, s.wEpoch, s.wItem)) {
        race(L, "a read of a value another work item wrote", a, s.wBlock, s.wItem);
        abandon(L);
      }
      if (isShared && s.wBlock == kNoBlock) {
        L.error = *L.kernel + ": work item " + itemName(it) + " of " + blockName(L) + " reads " + describe(L, a) +
                  ", which no work item of the block has written";
        abandon(L);
      }
      if (s.rBlock == kNoBlock) {
        s.rBlock = L.blockLinear;
        s.rEpoch = L.epoch;
        s.rItem = me;
      } else if (s.rBlock == kManyBlocks) {
      } else if (s.rBlock != L.blockLinear) {
        s.rBlock = kManyBlocks;
      } else if (s.rEpoch != L.epoch) {
        s.rEpoch = L.epoch;
        s.rItem = me;
      } else if (s.rItem != me) {
        s.rItem = kManyItems;
      }
    } else {
      if (s.wBlock != kNoBlock && conflicts(L, s.wBlock, s.wEpoch, s.wItem)) {
        race(L, "two writes", a, s.wBlock, s.wItem);
        abandon(L);
      }
      if (s.rBlock == kManyBlocks || (s.rBlock != kNoBlock && s.rBlock != L.blockLinear)) {
        race(L, "a write of a value another block read", a, s.rBlock, s.rItem);
        abandon(L);
      }
      if (s.rBlock == L.blockLinear && s.rEpoch == L.epoch && s.rItem != me) {
        race(L, "a write of a value another work item read", a, s.rBlock, s.rItem);
        abandon(L);
      }
      s.wBlock = L.blockLinear;
      s.wEpoch = L.epoch;
      s.wItem = me;
      s.rBlock = kNoBlock;
    }
  }
}

} // extern "C"

//===----------------------------------------------------------------------===//
// HostEmulator
//===----------------------------------------------------------------------===//

Result<std::unique_ptr<HostEmulator>> HostEmulator::load(const std::string &sharedObject) {
  void *h = dlopen(sharedObject.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return makeError(std::string("host emulator: dlopen: ") + dlerror());
  return std::unique_ptr<HostEmulator>(new HostEmulator(h));
}

HostEmulator::~HostEmulator() {
  if (handle_)
    dlclose(handle_);
}

void *HostEmulator::symbol(const std::string &name) const { return dlsym(handle_, name.c_str()); }

Status HostEmulator::launch(const std::string &kernel, const LaunchShape &shape, KernelArgs &args) {
  if (gLaunch)
    return makeError(kernel + ": a launch from inside an emulated kernel");
  auto entry = reinterpret_cast<void (*)(void **)>(symbol(kernel + abi::kEmuEntrySuffix));
  auto count = static_cast<const int64_t *>(symbol(kernel + abi::kEmuParamCountSuffix));
  if (!entry || !count)
    return makeError("host emulator: the kernel library has no kernel '" + kernel + "' (no " + kernel +
                     abi::kEmuEntrySuffix + ")");
  if (*count != static_cast<int64_t>(args.size()))
    return makeError(kernel + ": " + std::to_string(args.size()) + " parameters packed, the kernel reads " +
                     std::to_string(*count));
  uint64_t items = 1;
  for (int d = 0; d < 3; ++d) {
    if (shape.grid[d] == 0 || shape.block[d] == 0)
      return makeError(kernel + ": an empty grid or block");
    items *= shape.block[d];
  }
  if (items > kMaxItems)
    return makeError(kernel + ": a block of " + std::to_string(items) + " work items (at most " +
                     std::to_string(kMaxItems) + ")");
  if (shape.grid[1] > 65535 || shape.grid[2] > 65535 || shape.grid[0] > 0x7FFFFFFFu)
    return makeError(kernel + ": the grid exceeds CUDA's limits");
  if (Status st = ensureStacks(items); !st.ok())
    return st;

  Launch L;
  L.entry = entry;
  L.params = args.params();
  L.numParams = args.size();
  L.kernel = &kernel;
  for (const abi::GpuKernelInfo &k : abi::kGpuKernels) {
    const std::string sym = k.symbol;
    // The kernel itself, or a variant of it named <symbol>__<suffix> (the tests' mutants), has the table's layout.
    if (kernel == sym || kernel.rfind(sym + "__", 0) == 0)
      L.layout = k.parameters;
  }
  for (int d = 0; d < 3; ++d) {
    L.grid[d] = shape.grid[d];
    L.block[d] = shape.block[d];
  }
  L.checks = raceChecks_;
  L.stats = &stats_;
  std::vector<Item> work(items);
  L.items = &work;
  for (size_t i = 0; i < items; ++i) {
    work[i].stackLo = stackPool()[i];
    work[i].stackHi = stackPool()[i] + kStackBytes;
    work[i].tid[0] = static_cast<int64_t>(i % shape.block[0]);
    work[i].tid[1] = static_cast<int64_t>((i / shape.block[0]) % shape.block[1]);
    work[i].tid[2] = static_cast<int64_t>(i / (static_cast<uint64_t>(shape.block[0]) * shape.block[1]));
  }
  ++stats_.launches;
  gLaunch = &L;
  struct Reset {
    ~Reset() { gLaunch = nullptr; }
  } reset;

  for (unsigned bz = 0; bz < shape.grid[2]; ++bz)
    for (unsigned by = 0; by < shape.grid[1]; ++by)
      for (unsigned bx = 0; bx < shape.grid[0]; ++bx) {
        L.blockId[0] = bx;
        L.blockId[1] = by;
        L.blockId[2] = bz;
        L.blockLinear = (static_cast<int64_t>(bz) * shape.grid[1] + by) * shape.grid[0] + bx;
        ++L.epoch;
        for (Workgroup &w : L.workgroup)
          w = Workgroup();
        L.shared.clear();
        ++stats_.blocks;
        stats_.workItems += items;
        for (Item &it : work)
          start(L, it);
        for (;;) {
          for (size_t n = 0; n < items; ++n) {
            const size_t i = reverse_ ? items - 1 - n : n;
            if (work[i].state != State::Ready)
              continue;
            resume(L, i);
            if (L.failed)
              return makeError(L.error);
          }
          // Every item has returned or waits at a barrier.
          size_t waiting = 0, done = 0, firstWaiting = 0, firstDone = 0;
          for (size_t i = 0; i < items; ++i) {
            if (work[i].state == State::AtBarrier && waiting++ == 0)
              firstWaiting = i;
            if (work[i].state == State::Done && done++ == 0)
              firstDone = i;
          }
          if (waiting == 0)
            break;
          if (done > 0)
            return makeError(kernel + ": divergent barrier in " + blockName(L) + ": " + std::to_string(waiting) +
                             " work items (the first " + itemName(work[firstWaiting]) + ") wait at barrier #" +
                             std::to_string(work[firstWaiting].site) + " while " + std::to_string(done) +
                             " (the first " + itemName(work[firstDone]) + ") have returned");
          for (size_t i = 0; i < items; ++i)
            if (work[i].site != work[firstWaiting].site)
              return makeError(kernel + ": divergent barrier in " + blockName(L) + ": work item " +
                               itemName(work[firstWaiting]) + " waits at barrier #" +
                               std::to_string(work[firstWaiting].site) + ", work item " + itemName(work[i]) +
                               " at barrier #" + std::to_string(work[i].site));
          ++stats_.barriers;
          ++L.epoch;
          for (Item &it : work)
            it.state = State::Ready;
        }
      }
  return Status::success();
}

} // namespace dsa::cuda
