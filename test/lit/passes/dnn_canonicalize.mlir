// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-canonicalize)' | FileCheck %s

// dnn ops are pure: an op whose results are unused goes, and so does a producer
// that only fed it.
// CHECK-LABEL: func.func @dead_ops_are_erased
// CHECK-NEXT: return %arg0
func.func @dead_ops_are_erased(%arg0: tensor<4x7xf32>) -> tensor<4x7xf32> {
  %0 = "dnn.exp"(%arg0) : (tensor<4x7xf32>) -> tensor<4x7xf32>
  %1 = "dnn.relu"(%0) : (tensor<4x7xf32>) -> tensor<4x7xf32>
  return %arg0 : tensor<4x7xf32>
}

// -----

// CHECK-LABEL: func.func @cast_to_same_type
// CHECK-NOT: dnn.cast
// CHECK: return %arg0
func.func @cast_to_same_type(%arg0: tensor<4x7xf16>) -> tensor<4x7xf16> {
  %0 = "dnn.cast"(%arg0) : (tensor<4x7xf16>) -> tensor<4x7xf16>
  return %0 : tensor<4x7xf16>
}

// -----

// f16 -> f32 is exact, so f16 -> f32 -> bf16 is f16 -> bf16.
// CHECK-LABEL: func.func @exact_inner_cast_folds
// CHECK-NEXT: %[[Y:.*]] = "dnn.cast"(%arg0) : (tensor<4x7xf16>) -> tensor<4x7xbf16>
// CHECK-NEXT: return %[[Y]]
func.func @exact_inner_cast_folds(%arg0: tensor<4x7xf16>) -> tensor<4x7xbf16> {
  %0 = "dnn.cast"(%arg0) : (tensor<4x7xf16>) -> tensor<4x7xf32>
  %1 = "dnn.cast"(%0) : (tensor<4x7xf32>) -> tensor<4x7xbf16>
  return %1 : tensor<4x7xbf16>
}

// -----

// CHECK-LABEL: func.func @fp8_widening_round_trip_folds_away
// CHECK-NOT: dnn.cast
// CHECK: return %arg0
func.func @fp8_widening_round_trip_folds_away(%arg0: tensor<3xf8E4M3FN>) -> tensor<3xf8E4M3FN> {
  %0 = "dnn.cast"(%arg0) : (tensor<3xf8E4M3FN>) -> tensor<3xbf16>
  %1 = "dnn.cast"(%0) : (tensor<3xbf16>) -> tensor<3xf8E4M3FN>
  return %1 : tensor<3xf8E4M3FN>
}

// -----

// f32 -> bf16 rounds: the chain is kept as written.
// CHECK-LABEL: func.func @rounding_inner_cast_is_kept
// CHECK-NEXT: %[[B:.*]] = "dnn.cast"(%arg0) : (tensor<4x7xf32>) -> tensor<4x7xbf16>
// CHECK-NEXT: %[[H:.*]] = "dnn.cast"(%[[B]]) : (tensor<4x7xbf16>) -> tensor<4x7xf16>
// CHECK-NEXT: return %[[H]]
func.func @rounding_inner_cast_is_kept(%arg0: tensor<4x7xf32>) -> tensor<4x7xf16> {
  %0 = "dnn.cast"(%arg0) : (tensor<4x7xf32>) -> tensor<4x7xbf16>
  %1 = "dnn.cast"(%0) : (tensor<4x7xbf16>) -> tensor<4x7xf16>
  return %1 : tensor<4x7xf16>
}

// -----

// f16 does not hold every bf16 value (range): kept.
// CHECK-LABEL: func.func @bf16_to_f16_is_not_widening
// CHECK-COUNT-2: "dnn.cast"
// CHECK-NOT: "dnn.cast"
func.func @bf16_to_f16_is_not_widening(%arg0: tensor<4xbf16>) -> tensor<4xf32> {
  %0 = "dnn.cast"(%arg0) : (tensor<4xbf16>) -> tensor<4xf16>
  %1 = "dnn.cast"(%0) : (tensor<4xf16>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// The intermediate cast has another user: it stays, the outer one still folds.
// CHECK-LABEL: func.func @shared_inner_cast
// CHECK-DAG: %[[W:.*]] = "dnn.cast"(%arg0) : (tensor<4xf16>) -> tensor<4xf32>
// CHECK-DAG: %[[B:.*]] = "dnn.cast"(%arg0) : (tensor<4xf16>) -> tensor<4xbf16>
// CHECK: return %[[W]], %[[B]]
func.func @shared_inner_cast(%arg0: tensor<4xf16>) -> (tensor<4xf32>, tensor<4xbf16>) {
  %0 = "dnn.cast"(%arg0) : (tensor<4xf16>) -> tensor<4xf32>
  %1 = "dnn.cast"(%0) : (tensor<4xf32>) -> tensor<4xbf16>
  return %0, %1 : tensor<4xf32>, tensor<4xbf16>
}

// -----

// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-NEXT: %[[Y:.*]] = "dnn.reshape"(%arg0) : (tensor<4x6xf32>) -> tensor<2x12xf32>
// CHECK-NEXT: return %[[Y]]
func.func @reshape_of_reshape(%arg0: tensor<4x6xf32>) -> tensor<2x12xf32> {
  %0 = "dnn.reshape"(%arg0) : (tensor<4x6xf32>) -> tensor<24xf32>
  %1 = "dnn.reshape"(%0) : (tensor<24xf32>) -> tensor<3x8xf32>
  %2 = "dnn.reshape"(%1) : (tensor<3x8xf32>) -> tensor<2x12xf32>
  return %2 : tensor<2x12xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_back_to_the_same_shape
// CHECK-NOT: dnn.reshape
// CHECK: return %arg0
func.func @reshape_back_to_the_same_shape(%arg0: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %0 = "dnn.reshape"(%arg0) : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %1 = "dnn.reshape"(%0) : (tensor<6x4xf32>) -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// -----

// y[j] = x[p1[p2[j]]]: [1, 2, 0] twice is [2, 0, 1].
// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-NEXT: %[[Y:.*]] = "dnn.transpose"(%arg0) {permutation = array<i64: 2, 0, 1>} : (tensor<2x3x5xf32>) -> tensor<5x2x3xf32>
// CHECK-NEXT: return %[[Y]]
func.func @transpose_of_transpose(%arg0: tensor<2x3x5xf32>) -> tensor<5x2x3xf32> {
  %0 = "dnn.transpose"(%arg0) {permutation = array<i64: 1, 2, 0>} : (tensor<2x3x5xf32>) -> tensor<3x5x2xf32>
  %1 = "dnn.transpose"(%0) {permutation = array<i64: 1, 2, 0>} : (tensor<3x5x2xf32>) -> tensor<5x2x3xf32>
  return %1 : tensor<5x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @inverse_transposes_cancel
// CHECK-NOT: dnn.transpose
// CHECK: return %arg0
func.func @inverse_transposes_cancel(%arg0: tensor<2x3x5xf32>) -> tensor<2x3x5xf32> {
  %0 = "dnn.transpose"(%arg0) {permutation = array<i64: 1, 2, 0>} : (tensor<2x3x5xf32>) -> tensor<3x5x2xf32>
  %1 = "dnn.transpose"(%0) {permutation = array<i64: 2, 0, 1>} : (tensor<3x5x2xf32>) -> tensor<2x3x5xf32>
  return %1 : tensor<2x3x5xf32>
}

// -----

// CHECK-LABEL: func.func @identity_transpose
// CHECK-NOT: dnn.transpose
// CHECK: return %arg0
func.func @identity_transpose(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dnn.transpose"(%arg0) {permutation = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @full_slice
// CHECK-NOT: dnn.slice
// CHECK: return %arg0
func.func @full_slice(%arg0: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %0 = "dnn.slice"(%arg0) {limit = array<i64: 4, 6>, start = array<i64: 0, 0>, step = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

// CHECK-LABEL: func.func @partial_slice_is_kept
// CHECK-NEXT: %[[Y:.*]] = "dnn.slice"(%arg0)
// CHECK-NEXT: return %[[Y]]
func.func @partial_slice_is_kept(%arg0: tensor<4x6xf32>) -> tensor<4x3xf32> {
  %0 = "dnn.slice"(%arg0) {limit = array<i64: 4, 6>, start = array<i64: 0, 0>, step = array<i64: 1, 2>} : (tensor<4x6xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @concat_of_two_inputs_is_kept
// CHECK-NEXT: %[[Y:.*]] = "dnn.concat"(%arg0, %arg0) {axis = 1 : i64}
// CHECK-NEXT: return %[[Y]]
func.func @concat_of_two_inputs_is_kept(%arg0: tensor<4x6xf32>) -> tensor<4x12xf32> {
  %0 = "dnn.concat"(%arg0, %arg0) {axis = 1 : i64} : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x12xf32>
  return %0 : tensor<4x12xf32>
}

// -----

// Folds feed each other until nothing changes: the slice goes, which makes the
// transposes adjacent, which cancel, which makes the casts adjacent.
// CHECK-LABEL: func.func @fixed_point
// CHECK-NEXT: %[[Y:.*]] = "dnn.cast"(%arg0) : (tensor<2x3xf16>) -> tensor<2x3xbf16>
// CHECK-NEXT: return %[[Y]]
func.func @fixed_point(%arg0: tensor<2x3xf16>) -> tensor<2x3xbf16> {
  %0 = "dnn.cast"(%arg0) : (tensor<2x3xf16>) -> tensor<2x3xf32>
  %1 = "dnn.transpose"(%0) {permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %2 = "dnn.slice"(%1) {limit = array<i64: 3, 2>, start = array<i64: 0, 0>, step = array<i64: 1, 1>} : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %3 = "dnn.transpose"(%2) {permutation = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %4 = "dnn.cast"(%3) : (tensor<2x3xf32>) -> tensor<2x3xbf16>
  return %4 : tensor<2x3xbf16>
}

// -----

// A bf16 cast of an f32 reduction that nothing else reads, directly or
// through a reshape (a layernorm's dscale of [1, 1, 768] returned as [768]):
// the reduction stores bf16 itself (it accumulates in f32 either way).
// CHECK-LABEL: func.func @cast_of_reduction_rounds_in_it
//  CHECK-NEXT: %[[S:.*]] = "dnn.reduction"(%arg0) {axes = array<i64: 0, 1>, keepdims = true, mode = "sum"} : (tensor<2x4x8xbf16>) -> tensor<1x1x8xbf16>
//  CHECK-NEXT: %[[R:.*]] = "dnn.reshape"(%[[S]]) : (tensor<1x1x8xbf16>) -> tensor<8xbf16>
//  CHECK-NEXT: %[[M:.*]] = "dnn.reduction"(%arg0) {axes = array<i64: 2>, keepdims = true, mode = "max"} : (tensor<2x4x8xbf16>) -> tensor<2x4x1xf16>
//  CHECK-NEXT: return %[[R]], %[[M]]
func.func @cast_of_reduction_rounds_in_it(%arg0: tensor<2x4x8xbf16>) -> (tensor<8xbf16>, tensor<2x4x1xf16>) {
  %0 = "dnn.reduction"(%arg0) {axes = array<i64: 0, 1>, keepdims = true, mode = "sum"} : (tensor<2x4x8xbf16>) -> tensor<1x1x8xf32>
  %1 = "dnn.reshape"(%0) : (tensor<1x1x8xf32>) -> tensor<8xf32>
  %2 = "dnn.cast"(%1) : (tensor<8xf32>) -> tensor<8xbf16>
  %3 = "dnn.reduction"(%arg0) {axes = array<i64: 2>, keepdims = true, mode = "max"} : (tensor<2x4x8xbf16>) -> tensor<2x4x1xf32>
  %4 = "dnn.cast"(%3) : (tensor<2x4x1xf32>) -> tensor<2x4x1xf16>
  return %2, %4 : tensor<8xbf16>, tensor<2x4x1xf16>
}

// -----

// Kept: the f32 sum is read too (rounding it would change that reader), and
// a cast to f32 of a bf16 reduction is a widening of a value already
// rounded.
// CHECK-LABEL: func.func @cast_of_reduction_kept
//  CHECK-NEXT: %[[S:.*]] = "dnn.reduction"(%arg0) {{.*}} -> tensor<1x1x8xf32>
//  CHECK-NEXT: %[[C:.*]] = "dnn.cast"(%[[S]]) : (tensor<1x1x8xf32>) -> tensor<1x1x8xbf16>
//  CHECK-NEXT: %[[B:.*]] = "dnn.reduction"(%arg0) {{.*}} -> tensor<1x1x8xbf16>
//  CHECK-NEXT: %[[W:.*]] = "dnn.cast"(%[[B]]) : (tensor<1x1x8xbf16>) -> tensor<1x1x8xf32>
//  CHECK-NEXT: return %[[C]], %[[S]], %[[W]]
func.func @cast_of_reduction_kept(%arg0: tensor<2x4x8xbf16>) -> (tensor<1x1x8xbf16>, tensor<1x1x8xf32>, tensor<1x1x8xf32>) {
  %0 = "dnn.reduction"(%arg0) {axes = array<i64: 0, 1>, keepdims = true, mode = "sum"} : (tensor<2x4x8xbf16>) -> tensor<1x1x8xf32>
  %1 = "dnn.cast"(%0) : (tensor<1x1x8xf32>) -> tensor<1x1x8xbf16>
  %2 = "dnn.reduction"(%arg0) {axes = array<i64: 0, 1>, keepdims = true, mode = "sum"} : (tensor<2x4x8xbf16>) -> tensor<1x1x8xbf16>
  %3 = "dnn.cast"(%2) : (tensor<1x1x8xbf16>) -> tensor<1x1x8xf32>
  return %1, %0, %3 : tensor<1x1x8xbf16>, tensor<1x1x8xf32>, tensor<1x1x8xf32>
}
