// --dsa-cpu-pipeline cpu=NAME (dsa-cpu-set-target, compiler/lib/Conversion/DSAToCPU/CPUTarget.cpp): every function gets
// target_cpu and target_features (the CPU's features with the ones they imply), which LLVM's code generation
// honours per function whatever target machine compiles it (the JIT's is the host's by default): the llc lines
// compile under a target machine with AVX-512 (x86-64-v4) and one with only the x86-64 baseline. fptoui f32 -> i64
// is one AVX-512F instruction (vcvttss2usi); without AVX-512 a sequence around vcvttss2si.
// RUN: dsa-opt %s --dsa-cpu-pipeline="cpu=x86-64-v3" | FileCheck %s --check-prefix=V3 \
// RUN:   --implicit-check-not="llvm.fptrunc" --implicit-check-not="__truncsfbf2" --implicit-check-not="bf16"
// RUN: dsa-opt %s --dsa-cpu-pipeline="parallel=true cpu=x86-64-v3" | FileCheck %s --check-prefix=V3 \
// RUN:   --implicit-check-not="llvm.fptrunc" --implicit-check-not="__truncsfbf2" --implicit-check-not="bf16"
// RUN: dsa-opt %s --dsa-cpu-pipeline="cpu=x86-64-v3" | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=V3IR
// RUN: dsa-opt %s --dsa-cpu-pipeline="cpu=x86-64-v3" | mlir-translate --mlir-to-llvmir | llc -O2 -mcpu=x86-64-v4 \
// RUN:   | FileCheck %s --check-prefix=AVX2 --implicit-check-not="vcvttss2usi"
// RUN: dsa-opt %s --dsa-cpu-pipeline="cpu=x86-64-v4" | mlir-translate --mlir-to-llvmir | llc -O2 -mcpu=x86-64 \
// RUN:   | FileCheck %s --check-prefix=AVX512
// Without cpu=, no target attributes (the compiling target machine decides).
// RUN: dsa-opt %s --dsa-cpu-pipeline | FileCheck %s --check-prefix=NONE --implicit-check-not="target_cpu" \
// RUN:   --implicit-check-not="target_features" --implicit-check-not="llvm.fptrunc" --implicit-check-not="bf16"
// RUN: dsa-opt %s --dsa-cpu-pipeline | mlir-translate --mlir-to-llvmir | llc -O2 -mcpu=x86-64-v4 | FileCheck %s --check-prefix=AVX512
// cpu=host: the running CPU, exactly its features (on and off).
// RUN: dsa-opt %s --dsa-cpu-pipeline="cpu=host" | FileCheck %s --check-prefix=HOST
// An unknown name is an error.
// RUN: not dsa-opt %s --dsa-cpu-pipeline="cpu=pentium-9000" 2>&1 | FileCheck %s --check-prefix=BAD

// x86-64-v3 as the x86-64 psABI defines it (baseline cmov, cx8, x87, fxsr, mmx, sse, sse2; v2 cx16, sahf, popcnt,
// sse3, ssse3, sse4.1, sse4.2 (LLVM's crc32 with it); v3 avx, avx2, bmi, bmi2, f16c, fma, lzcnt, movbe, xsave):
// V3: llvm.func @to_unsigned(%{{.*}}: f32) -> i64 attributes {target_cpu = "x86-64-v3", target_features = #llvm.target_features<["+avx", "+avx2", "+bmi", "+bmi2", "+cmov", "+crc32", "+cx16", "+cx8", "+f16c", "+fma", "+fxsr", "+lzcnt", "+mmx", "+movbe", "+popcnt", "+sahf", "+sse", "+sse2", "+sse3", "+sse4.1", "+sse4.2", "+ssse3", "+x87", "+xsave"]>}
// V3IR: define i64 @to_unsigned(float %{{.*}}) #[[ATTRS:[0-9]+]]
// V3IR: attributes #[[ATTRS]] = { "target-cpu"="x86-64-v3" "target-features"="+avx,+avx2,+bmi,+bmi2,+cmov,+crc32,+cx16,+cx8,+f16c,+fma,+fxsr,+lzcnt,+mmx,+movbe,+popcnt,+sahf,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+x87,+xsave" }

// AVX2-LABEL: to_unsigned:
// AVX2: vcvttss2si

// AVX512-LABEL: to_unsigned:
// AVX512: vcvttss2usi

// NONE: llvm.func @to_unsigned(%{{.*}}: f32) -> i64 {

// HOST: llvm.func @to_unsigned(%{{.*}}: f32) -> i64 attributes {target_cpu = "{{[a-z0-9-]+}}", target_features = #llvm.target_features<[{{.*}}"+sse2"{{.*}}]>}

// BAD: error: dsa-cpu-set-target: unknown CPU 'pentium-9000': expected 'host' or an LLVM x86-64 CPU name (x86-64, x86-64-v2, x86-64-v3, x86-64-v4, skylake-avx512, sapphirerapids, znver4, ...; `llc -mcpu=help` lists them)

func.func @to_unsigned(%x: f32) -> i64 {
  %r = arith.fptoui %x : f32 to i64
  return %r : i64
}
