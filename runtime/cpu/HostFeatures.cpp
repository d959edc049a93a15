//===- HostFeatures.cpp - the x86-64 features of the running CPU (cpuid + xgetbv) -------===//
#include "dsa/Runtime/CPU/HostFeatures.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define DSA_HOST_X86 1
#endif

namespace dsa::cpu {

namespace {

/// Which register state the OS must save for a feature to be usable (XCR0).
enum class SavedState { None, Avx, Avx512, Amx };

/// One feature: cpuid leaf / subleaf, register (0 eax, 1 ebx, 2 ecx, 3 edx), bit, and the state it needs.
struct FeatureBit {
  const char *name;
  uint32_t leaf, subleaf;
  int reg;
  int bit;
  SavedState state;
};

constexpr uint32_t kExt1 = 0x80000001u, kExt8 = 0x80000008u;
constexpr int EAX = 0, EBX = 1, ECX = 2, EDX = 3;
using S = SavedState;

// Intel SDM vol. 2A "CPUID", AMD APM vol. 3 appendix E; names and saved-state rules as LLVM's getHostCPUFeatures.
const FeatureBit kBits[] = {
    {"x87", 1, 0, EDX, 0, S::None},          {"cx8", 1, 0, EDX, 8, S::None},
    {"cmov", 1, 0, EDX, 15, S::None},        {"mmx", 1, 0, EDX, 23, S::None},
    {"fxsr", 1, 0, EDX, 24, S::None},        {"sse", 1, 0, EDX, 25, S::None},
    {"sse2", 1, 0, EDX, 26, S::None},        {"sse3", 1, 0, ECX, 0, S::None},
    {"pclmul", 1, 0, ECX, 1, S::None},       {"ssse3", 1, 0, ECX, 9, S::None},
    {"fma", 1, 0, ECX, 12, S::Avx},          {"cx16", 1, 0, ECX, 13, S::None},
    {"sse4.1", 1, 0, ECX, 19, S::None},      {"sse4.2", 1, 0, ECX, 20, S::None},
    {"crc32", 1, 0, ECX, 20, S::None},       {"movbe", 1, 0, ECX, 22, S::None},
    {"popcnt", 1, 0, ECX, 23, S::None},      {"aes", 1, 0, ECX, 25, S::None},
    {"xsave", 1, 0, ECX, 26, S::Avx},        {"f16c", 1, 0, ECX, 29, S::Avx},
    {"rdrnd", 1, 0, ECX, 30, S::None},
    {"sahf", kExt1, 0, ECX, 0, S::None},     {"lzcnt", kExt1, 0, ECX, 5, S::None},
    {"sse4a", kExt1, 0, ECX, 6, S::None},    {"prfchw", kExt1, 0, ECX, 8, S::None},
    {"xop", kExt1, 0, ECX, 11, S::Avx},      {"lwp", kExt1, 0, ECX, 15, S::None},
    {"fma4", kExt1, 0, ECX, 16, S::Avx},     {"tbm", kExt1, 0, ECX, 21, S::None},
    {"mwaitx", kExt1, 0, ECX, 29, S::None},  {"64bit", kExt1, 0, EDX, 29, S::None},
    {"clzero", kExt8, 0, EBX, 0, S::None},   {"rdpru", kExt8, 0, EBX, 4, S::None},
    {"wbnoinvd", kExt8, 0, EBX, 9, S::None},
    {"fsgsbase", 7, 0, EBX, 0, S::None},     {"sgx", 7, 0, EBX, 2, S::None},
    {"bmi", 7, 0, EBX, 3, S::None},          {"avx2", 7, 0, EBX, 5, S::Avx},
    {"bmi2", 7, 0, EBX, 8, S::None},         {"invpcid", 7, 0, EBX, 10, S::None},
    {"rtm", 7, 0, EBX, 11, S::None},         {"avx512f", 7, 0, EBX, 16, S::Avx512},
    {"avx512dq", 7, 0, EBX, 17, S::Avx512},  {"rdseed", 7, 0, EBX, 18, S::None},
    {"adx", 7, 0, EBX, 19, S::None},         {"avx512ifma", 7, 0, EBX, 21, S::Avx512},
    {"clflushopt", 7, 0, EBX, 23, S::None},  {"clwb", 7, 0, EBX, 24, S::None},
    {"avx512cd", 7, 0, EBX, 28, S::Avx512},  {"sha", 7, 0, EBX, 29, S::None},
    {"avx512bw", 7, 0, EBX, 30, S::Avx512},  {"avx512vl", 7, 0, EBX, 31, S::Avx512},
    {"avx512vbmi", 7, 0, ECX, 1, S::Avx512}, {"pku", 7, 0, ECX, 4, S::None},
    {"waitpkg", 7, 0, ECX, 5, S::None},      {"avx512vbmi2", 7, 0, ECX, 6, S::Avx512},
    {"shstk", 7, 0, ECX, 7, S::None},        {"gfni", 7, 0, ECX, 8, S::None},
    {"vaes", 7, 0, ECX, 9, S::Avx},          {"vpclmulqdq", 7, 0, ECX, 10, S::Avx},
    {"avx512vnni", 7, 0, ECX, 11, S::Avx512}, {"avx512bitalg", 7, 0, ECX, 12, S::Avx512},
    {"avx512vpopcntdq", 7, 0, ECX, 14, S::Avx512}, {"rdpid", 7, 0, ECX, 22, S::None},
    {"kl", 7, 0, ECX, 23, S::None},          {"cldemote", 7, 0, ECX, 25, S::None},
    {"movdiri", 7, 0, ECX, 27, S::None},     {"movdir64b", 7, 0, ECX, 28, S::None},
    {"enqcmd", 7, 0, ECX, 29, S::None},
    {"uintr", 7, 0, EDX, 5, S::None},        {"avx512vp2intersect", 7, 0, EDX, 8, S::Avx512},
    {"serialize", 7, 0, EDX, 14, S::None},   {"tsxldtrk", 7, 0, EDX, 16, S::None},
    {"pconfig", 7, 0, EDX, 18, S::None},     {"amx-bf16", 7, 0, EDX, 22, S::Amx},
    {"avx512fp16", 7, 0, EDX, 23, S::Avx512}, {"amx-tile", 7, 0, EDX, 24, S::Amx},
    {"amx-int8", 7, 0, EDX, 25, S::Amx},
    {"sha512", 7, 1, EAX, 0, S::None},       {"sm3", 7, 1, EAX, 1, S::None},
    {"sm4", 7, 1, EAX, 2, S::None},          {"raoint", 7, 1, EAX, 3, S::None},
    {"avxvnni", 7, 1, EAX, 4, S::Avx},       {"avx512bf16", 7, 1, EAX, 5, S::Avx512},
    {"cmpccxadd", 7, 1, EAX, 7, S::None},    {"amx-fp16", 7, 1, EAX, 21, S::Amx},
    {"hreset", 7, 1, EAX, 22, S::None},      {"avxifma", 7, 1, EAX, 23, S::Avx},
    {"movrs", 7, 1, EAX, 31, S::None},
    {"avxvnniint8", 7, 1, EDX, 4, S::Avx},   {"avxneconvert", 7, 1, EDX, 5, S::Avx},
    {"amx-complex", 7, 1, EDX, 8, S::Amx},   {"avxvnniint16", 7, 1, EDX, 10, S::Avx},
    {"prefetchi", 7, 1, EDX, 14, S::None},   {"usermsr", 7, 1, EDX, 15, S::None},
    // APX: one cpuid bit, LLVM's sub-features.
    {"apxf", 7, 1, EDX, 21, S::None},        {"egpr", 7, 1, EDX, 21, S::None},
    {"push2pop2", 7, 1, EDX, 21, S::None},   {"ppx", 7, 1, EDX, 21, S::None},
    {"ndd", 7, 1, EDX, 21, S::None},         {"ccmp", 7, 1, EDX, 21, S::None},
    {"nf", 7, 1, EDX, 21, S::None},          {"cf", 7, 1, EDX, 21, S::None},
    {"zu", 7, 1, EDX, 21, S::None},
    {"xsaveopt", 0xD, 1, EAX, 0, S::Avx},    {"xsavec", 0xD, 1, EAX, 1, S::Avx},
    {"xsaves", 0xD, 1, EAX, 3, S::Avx},
    {"ptwrite", 0x14, 0, EBX, 4, S::None},
    {"widekl", 0x19, 0, EBX, 2, S::None},
    {"amx-fp8", 0x1E, 1, EAX, 4, S::Amx},    {"amx-transpose", 0x1E, 1, EAX, 5, S::Amx},
    {"amx-tf32", 0x1E, 1, EAX, 6, S::Amx},   {"amx-avx512", 0x1E, 1, EAX, 7, S::Amx},
    {"amx-movrs", 0x1E, 1, EAX, 8, S::Amx},
};

/// Features computed from more than one bit (detectHostFeatures below).
const char *const kDerived[] = {"avx", "avx10.1", "avx10.2"};

#ifdef DSA_HOST_X86
struct Regs {
  uint32_t r[4] = {0, 0, 0, 0};
  bool valid = false;
};

Regs cpuid(uint32_t leaf, uint32_t subleaf) {
  Regs out;
  out.valid = __get_cpuid_count(leaf, subleaf, &out.r[0], &out.r[1], &out.r[2], &out.r[3]) != 0;
  return out;
}

std::vector<std::string> detectHostFeatures() {
  std::set<std::string> found;
  const Regs leaf0 = cpuid(0, 0);
  if (!leaf0.valid)
    return {};
  const uint32_t maxLeaf = leaf0.r[EAX];
  const Regs leaf1 = cpuid(1, 0);
  // The OS saves the AVX (XCR0 bits 1-2), AVX-512 (5-7) and AMX (17-18) state only if XGETBV says so; XGETBV
  // exists when CPUID.1:ECX.OSXSAVE (bit 27) is set.
  uint64_t xcr0 = 0;
  const bool osxsave = leaf1.valid && ((leaf1.r[ECX] >> 27) & 1);
  if (osxsave) {
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
  }
  const bool avxSave = osxsave && ((leaf1.r[ECX] >> 28) & 1) && (xcr0 & 0x6) == 0x6;
  const bool avx512Save = avxSave && (xcr0 & 0xE0) == 0xE0;
  const bool amxSave = osxsave && (xcr0 & 0x60000) == 0x60000;
  if (avxSave)
    found.insert("avx");

  const Regs ext0 = cpuid(0x80000000u, 0);
  const uint32_t maxExt = ext0.valid ? ext0.r[EAX] : 0;
  const Regs leaf7 = maxLeaf >= 7 ? cpuid(7, 0) : Regs();
  auto read = [&](uint32_t leaf, uint32_t subleaf) -> Regs {
    if (leaf >= 0x80000000u)
      return leaf <= maxExt ? cpuid(leaf, subleaf) : Regs();
    if (leaf > maxLeaf)
      return Regs();
    if (leaf == 7 && subleaf == 1 && !(leaf7.valid && leaf7.r[EAX] >= 1)) // the highest subleaf of leaf 7
      return Regs();
    if (leaf == 0x19 && !leaf7.valid)
      return Regs();
    return cpuid(leaf, subleaf);
  };
  struct Key {
    uint32_t leaf, subleaf;
    bool operator<(const Key &o) const { return leaf != o.leaf ? leaf < o.leaf : subleaf < o.subleaf; }
  };
  std::map<Key, Regs> cache;
  for (const FeatureBit &f : kBits) {
    auto it = cache.find({f.leaf, f.subleaf});
    if (it == cache.end())
      it = cache.emplace(Key{f.leaf, f.subleaf}, read(f.leaf, f.subleaf)).first;
    const Regs &regs = it->second;
    if (!regs.valid || !((regs.r[f.reg] >> f.bit) & 1))
      continue;
    const bool saved = f.state == S::None || (f.state == S::Avx && avxSave) ||
                       (f.state == S::Avx512 && avx512Save) || (f.state == S::Amx && amxSave);
    if (saved)
      found.insert(f.name);
  }
  // AVX10: CPUID.(7,1):EDX[19], the version in CPUID.24h:EBX[7:0].
  const Regs leaf71 = read(7, 1);
  if (leaf71.valid && ((leaf71.r[EDX] >> 19) & 1)) {
    const Regs leaf24 = read(0x24, 0);
    const uint32_t version = leaf24.valid ? (leaf24.r[EBX] & 0xFF) : 0;
    if (version >= 1)
      found.insert("avx10.1");
    if (version >= 2)
      found.insert("avx10.2");
  }
  return std::vector<std::string>(found.begin(), found.end());
}
#else
std::vector<std::string> detectHostFeatures() { return {}; }
#endif

} // namespace

const std::vector<std::string> &knownCpuFeatures() {
  static const std::vector<std::string> known = [] {
    std::set<std::string> names;
    for (const FeatureBit &f : kBits)
      names.insert(f.name);
    for (const char *d : kDerived)
      names.insert(d);
    return std::vector<std::string>(names.begin(), names.end());
  }();
  return known;
}

const std::vector<std::string> &hostCpuFeatures() {
  static const std::vector<std::string> host = detectHostFeatures();
  return host;
}

Status checkHostHasFeatures(const std::string &what, const std::string &cpu, const std::vector<std::string> &required) {
  const std::vector<std::string> &known = knownCpuFeatures();
  const std::vector<std::string> &host = hostCpuFeatures();
  std::set<std::string> missing, unknown;
  for (const std::string &f : required) {
    if (!std::binary_search(known.begin(), known.end(), f))
      unknown.insert(f);
    else if (!std::binary_search(host.begin(), host.end(), f))
      missing.insert(f);
  }
  if (missing.empty() && unknown.empty())
    return Status::success();
  auto list = [](const std::set<std::string> &names) {
    std::string s;
    for (const std::string &n : names)
      s += (s.empty() ? "" : ", ") + n;
    return s;
  };
  std::string message = what + " was built for " + (cpu.empty() ? std::string("an unnamed CPU") : cpu);
  if (!missing.empty())
    message += "; this host lacks " + list(missing);
  if (!unknown.empty())
    message += std::string(missing.empty() ? "; it" : ", and it") + " requires " + list(unknown) +
               ", which this runtime cannot detect";
  return makeError(message);
}

} // namespace dsa::cpu
