//===- Quant.h - the reference's block quantisers (round trips) --------------===//
//
// The in-place quantise/dequantise round trips of attention-semantics.md section 2. Each works on consecutive
// blocks of `block` elements of one row (n must be a multiple of block) and leaves bf16-exact values. In f32:
//   act_quant_fp8  (block 32): amax = max(max|x|, 1e-4);     s = pow2_ceil(amax/448); x = bf16(e4m3(clamp(x/s, -448, 448)) * s)
//   fp4_quant_e8m0 (block 32): amax = max(max|x|, 6*2^-126); s = pow2_ceil(amax/6);   x = bf16(e2m1(clamp(x/s, -6, 6)) * s)
//   fp4_quant_e4m3 (block 16): amax = max(max|x|, 6*2^-9);   s = e4m3(amax/6);        x = bf16(e2m1(clamp(x/s, -6, 6)) * s)
// x/s is an f32 division (for fp4_quant_e4m3, s is not a power of two, so this differs from x * (1/s)).
// A NaN in a block makes amax NaN, as torch's amax does, so the whole block becomes NaN.
// The block sizes used by the model are kActQuantBlock / kFp4E8M0Block / kFp4E4M3Block; other positive sizes work.
//
// Errors (dsa::Status, nothing is modified): block <= 0, n < 0, n not a multiple of block, row null while n > 0.
//
//===----------------------------------------------------------------------------------------------------------===//
#ifndef DSA_NUMERICS_QUANT_H
#define DSA_NUMERICS_QUANT_H

#include "dsa/Support/Result.h"

#include <cstdint>

namespace dsa::numerics {

inline constexpr int64_t kActQuantBlock = 32; ///< act_quant_fp8 on the window KV row
inline constexpr int64_t kFp4E8M0Block = 32;  ///< fp4_quant_e8m0 on the indexer queries and keys
inline constexpr int64_t kFp4E4M3Block = 16;  ///< fp4_quant_e4m3 on the compressed KV latent

/// act_quant(x, block, "ue8m0", inplace=True): e4m3 values with power-of-two scales, on row[0..n).
Status actQuantFp8(float *row, int64_t n, int64_t block);
/// fp4_act_quant(x, block, inplace=True) with e8m0 (power-of-two) scales (indexer q and keys), on row[0..n).
Status fp4QuantE8M0(float *row, int64_t n, int64_t block);
/// fp4_act_quant(x, block, inplace=True, scale_dtype=e4m3) (the compressed KV latent), on row[0..n).
Status fp4QuantE4M3(float *row, int64_t n, int64_t block);

} // namespace dsa::numerics

#endif
