// dsa-cpu-check-bf16 (the last pass of --dsa-cpu-pipeline; compiler/lib/Backend/CPU's lowerForCPU runs the same check):
// every LLVM-dialect op that would make LLVM convert or compute on bf16 is an error naming it; ops that only move
// bf16 bits are fine (expand-bf16-invalid.mlir: what dsa-cpu-expand-bf16 refuses to expand).
// RUN: dsa-opt %s --split-input-file --verify-diagnostics --dsa-cpu-check-bf16
// dsa-cpu-bf16-as-i16 (bf16 values as i16) runs the same check first:
// RUN: dsa-opt %s --split-input-file --verify-diagnostics --dsa-cpu-bf16-as-i16

llvm.func @trunc(%a: f32) -> bf16 {
  // expected-error @+1 {{dsa-cpu-check-bf16: llvm.fptrunc to bf16 reached the LLVM dialect}}
  %0 = llvm.fptrunc %a : f32 to bf16
  llvm.return %0 : bf16
}

// -----

llvm.func @trunc_vector(%a: vector<8xf32>) -> vector<8xbf16> {
  // expected-error @+1 {{llvm.fptrunc to bf16 reached the LLVM dialect}}
  %0 = llvm.fptrunc %a : vector<8xf32> to vector<8xbf16>
  llvm.return %0 : vector<8xbf16>
}

// -----

llvm.func @ext(%a: bf16) -> f32 {
  // expected-error @+1 {{llvm.fpext from bf16 reached the LLVM dialect}}
  %0 = llvm.fpext %a : bf16 to f32
  llvm.return %0 : f32
}

// -----

// expected-error @+1 {{declares the bf16 conversion routine __truncsfbf2}}
llvm.func @__truncsfbf2(f32) -> bf16
llvm.func @call(%a: f32) -> bf16 {
  // expected-error @+1 {{a call of __truncsfbf2}}
  %0 = llvm.call @__truncsfbf2(%a) : (f32) -> bf16
  llvm.return %0 : bf16
}

// -----

llvm.func @add(%a: bf16, %b: bf16) -> bf16 {
  // expected-error @+1 {{'llvm.fadd' converts or computes on bf16 values in LLVM}}
  %0 = llvm.fadd %a, %b : bf16
  llvm.return %0 : bf16
}

// -----

llvm.func @max(%a: vector<8xbf16>, %b: vector<8xbf16>) -> vector<8xbf16> {
  // expected-error @+1 {{'llvm.intr.maxnum' converts or computes on bf16 values in LLVM}}
  %0 = llvm.intr.maxnum(%a, %b) : (vector<8xbf16>, vector<8xbf16>) -> vector<8xbf16>
  llvm.return %0 : vector<8xbf16>
}

// -----

llvm.func @from_int(%a: i32) -> bf16 {
  // expected-error @+1 {{'llvm.sitofp' converts or computes on bf16 values in LLVM}}
  %0 = llvm.sitofp %a : i32 to bf16
  llvm.return %0 : bf16
}

// -----

llvm.func @external(bf16) -> bf16
llvm.func @call_external(%a: bf16) -> bf16 {
  // expected-error @+1 {{'llvm.call' converts or computes on bf16 values in LLVM}}
  %0 = llvm.call @external(%a) : (bf16) -> bf16
  llvm.return %0 : bf16
}

// -----

// Moving bits is fine: loads, stores, bitcasts, constants, select, vector element ops, branches, calls within
// the module.
llvm.func @helper(%a: bf16) -> bf16 {
  llvm.return %a : bf16
}
llvm.func @moves(%p: !llvm.ptr, %q: !llvm.ptr, %c: i1, %i: i16) -> bf16 {
  %0 = llvm.load %p : !llvm.ptr -> bf16
  %1 = llvm.bitcast %i : i16 to bf16
  %2 = llvm.mlir.constant(1.0 : bf16) : bf16
  %3 = llvm.select %c, %0, %1 : i1, bf16
  %4 = llvm.load %q : !llvm.ptr -> vector<8xbf16>
  %k = llvm.mlir.constant(3 : i64) : i64
  %5 = llvm.extractelement %4[%k : i64] : vector<8xbf16>
  %6 = llvm.insertelement %2, %4[%k : i64] : vector<8xbf16>
  llvm.store %6, %q : vector<8xbf16>, !llvm.ptr
  llvm.store %5, %p : bf16, !llvm.ptr
  %7 = llvm.call @helper(%3) : (bf16) -> bf16
  llvm.cond_br %c, ^a(%7 : bf16), ^a(%2 : bf16)
^a(%r: bf16):
  llvm.return %r : bf16
}

