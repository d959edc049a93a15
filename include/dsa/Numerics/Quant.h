//===- Quant.h - the reference's block quantisers (round trips) --------------===//
//
// The in-place quantise/dequantise round trips of attention-semantics.md section 2. Each works on consecutive
// blocks of `block` elements of one row (n must be a multiple of block) and leaves bf16-exact values.
//   act_quant_fp8    (block 32): amax = max(max|x|, 1e-4); s = pow2_ceil(amax/448); x = bf16(e4m3(clamp(x/s)) * s)
//   fp4_quant_e8m0   (block 32): amax = max(max|x|, 6*2^-126); s = pow2_ceil(amax/6); x = bf16(e2m1(clamp(x/s)) * s)
//   fp4_quant_e4m3   (block 16): amax = max(max|x|, 6*2^-9); s = e4m3(amax/6); x = bf16(e2m1(clamp(x/s)) * s)
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_NUMERICS_QUANT_H
#define DSA_NUMERICS_QUANT_H

#include <cstdint>

namespace dsa::numerics {

/// act_quant(x, block, "ue8m0", inplace=True): e4m3 values with power-of-two scales. Precondition n % block == 0.
void actQuantFp8(float *row, int64_t n, int64_t block);
/// fp4_act_quant(x, block, inplace=True) with e8m0 (power-of-two) scales (indexer q and keys).
void fp4QuantE8M0(float *row, int64_t n, int64_t block);
/// fp4_act_quant(x, block, inplace=True, scale_dtype=e4m3) (the compressed KV latent).
void fp4QuantE4M3(float *row, int64_t n, int64_t block);

} // namespace dsa::numerics

#endif
