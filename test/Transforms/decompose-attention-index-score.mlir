// dsa-decompose-attention's option probe-index-scores: every index source also probes `L<l>.index_score`, the
// scores its indexer_topk reads (after compress_visibility; after apply_candidates for a layer that uses the
// candidate mask, which the candidate source itself does not). Readers (L3) have no indexer and no such probe.
// Without the option (the default, what the lowerings and the benchmark run) there is none.
// RUN: dsa-opt --dsa-decompose-attention=probe-index-scores=true %S/decompose-attention-compressed.mlir | FileCheck %s
// RUN: dsa-opt --dsa-decompose-attention %S/decompose-attention-compressed.mlir | FileCheck %s --check-prefix=DEFAULT

// CHECK-LABEL: func.func @ratio2_source_then_reader(
// CHECK:       %[[VIS2:.+]] = dsa.compress_visibility
// CHECK-NEXT:  dsa.probe "L2.index_score" %[[VIS2]] : tensor<?x?xbf16>
// CHECK-NEXT:  dsa.indexer_topk %[[VIS2]]
// CHECK-NOT:   "L3.index_score"
// CHECK-LABEL: func.func @ratio1_candidate_source_then_user(
// CHECK:       %[[VIS4:.+]] = dsa.compress_visibility
// CHECK-NEXT:  dsa.select_candidate_blocks %[[VIS4]]
// CHECK-NEXT:  tensor.cast
// CHECK-NEXT:  dsa.probe "L4.index_score" %[[VIS4]]
// CHECK-NEXT:  dsa.indexer_topk %[[VIS4]]
// CHECK:       %[[MASKED5:.+]] = dsa.apply_candidates
// CHECK-NEXT:  dsa.probe "L5.index_score" %[[MASKED5]] : tensor<1x?xbf16>
// CHECK-NEXT:  dsa.indexer_topk %[[MASKED5]]
// CHECK-LABEL: func.func @own_cache_decode_step(
// CHECK:       dsa.probe "L8.index_score"

// DEFAULT-NOT: index_score
