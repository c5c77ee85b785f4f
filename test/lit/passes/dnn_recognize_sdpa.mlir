// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-recognize-sdpa)' | FileCheck %s

// matmul(q, k^T) * c + bias -> softmax -> matmul(., v) is one sdpa; the scale
// constant, the transpose and the matmuls go.
// CHECK-LABEL: func.func @mul_scale_and_bias
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x3x5x4xf32>, %[[K:[^:]*]]: tensor<2x3x7x4xf32>, %[[V:[^:]*]]: tensor<2x3x7x6xf32>, %[[B:[^:]*]]: tensor<1x3x5x7xf32>)
// CHECK-NEXT: %[[O:.*]] = "dnn.sdpa"(%[[Q]], %[[K]], %[[V]], %[[B]]) {causal = false, diagonal = "top_left", dnn.name = "attn", generate_stats = false, max_seq_len_kv = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, padding = false, ragged_strides = array<i64>, scale = 1.250000e-01 : f64, window = 0 : i64} : (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x6xf32>, tensor<1x3x5x7xf32>) -> tensor<2x3x5x6xf32>
// CHECK-NEXT: return %[[O]]
func.func @mul_scale_and_bias(%q: tensor<2x3x5x4xf32>, %k: tensor<2x3x7x4xf32>, %v: tensor<2x3x7x6xf32>, %bias: tensor<1x3x5x7xf32>) -> tensor<2x3x5x6xf32> {
  %0 = "dnn.transpose"(%k) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<2x3x7x4xf32>) -> tensor<2x3x4x7xf32>
  %1 = "dnn.matmul"(%q, %0) {compute_type = f32} : (tensor<2x3x5x4xf32>, tensor<2x3x4x7xf32>) -> tensor<2x3x5x7xf32>
  %2 = "dnn.constant"() {value = 1.250000e-01 : f64} : () -> tensor<f32>
  %3 = "dnn.mul"(%1, %2) : (tensor<2x3x5x7xf32>, tensor<f32>) -> tensor<2x3x5x7xf32>
  %4 = "dnn.add"(%3, %bias) : (tensor<2x3x5x7xf32>, tensor<1x3x5x7xf32>) -> tensor<2x3x5x7xf32>
  %5 = "dnn.softmax"(%4) {axis = 3 : i64} : (tensor<2x3x5x7xf32>) -> tensor<2x3x5x7xf32>
  %6 = "dnn.matmul"(%5, %v) {compute_type = f32, dnn.name = "attn"} : (tensor<2x3x5x7xf32>, tensor<2x3x7x6xf32>) -> tensor<2x3x5x6xf32>
  return %6 : tensor<2x3x5x6xf32>
}

// -----

// Division by a constant is a scale of 1 / c; the constant may be on either side
// of a mul and the bias on either side of the add. o keeps the final matmul's type.
// CHECK-LABEL: func.func @div_scale_bias_first
// CHECK-NOT: dnn.constant
// CHECK: %[[O:.*]] = "dnn.sdpa"(%arg0, %arg1, %arg2, %arg3) {causal = false, diagonal = "top_left", generate_stats = false, max_seq_len_kv = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, padding = false, ragged_strides = array<i64>, scale = 2.500000e-01 : f64, window = 0 : i64} : {{.*}} -> tensor<1x2x3x4xbf16>
// CHECK-NEXT: return %[[O]]
func.func @div_scale_bias_first(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>, %bias: tensor<1x1x1x5xf32>) -> tensor<1x2x3x4xbf16> {
  %0 = "dnn.transpose"(%k) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %1 = "dnn.matmul"(%q, %0) {compute_type = f32} : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %2 = "dnn.constant"() {value = 4.0 : f64} : () -> tensor<f32>
  %3 = "dnn.div"(%1, %2) : (tensor<1x2x3x5xf32>, tensor<f32>) -> tensor<1x2x3x5xf32>
  %4 = "dnn.add"(%bias, %3) : (tensor<1x1x1x5xf32>, tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %5 = "dnn.softmax"(%4) {axis = 3 : i64} : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %6 = "dnn.matmul"(%5, %v) {compute_type = f32} : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xbf16>
  return %6 : tensor<1x2x3x4xbf16>
}

// -----

// CHECK-LABEL: func.func @constant_on_the_left_no_bias
// CHECK: "dnn.sdpa"(%arg0, %arg1, %arg2) {causal = false, diagonal = "top_left", generate_stats = false, max_seq_len_kv = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>, padding = false, ragged_strides = array<i64>, scale = 5.000000e-01 : f64, window = 0 : i64}
func.func @constant_on_the_left_no_bias(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32> {
  %0 = "dnn.transpose"(%k) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %1 = "dnn.matmul"(%q, %0) {compute_type = f32} : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %2 = "dnn.constant"() {value = 5.000000e-01 : f64} : () -> tensor<f32>
  %3 = "dnn.mul"(%2, %1) : (tensor<f32>, tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %4 = "dnn.softmax"(%3) {axis = 3 : i64} : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %5 = "dnn.matmul"(%4, %v) {compute_type = f32} : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %5 : tensor<1x2x3x4xf32>
}

// -----

// Without a scale op the scale is 1.0.
// CHECK-LABEL: func.func @no_scale
// CHECK: "dnn.sdpa"(%arg0, %arg1, %arg2) {causal = false, diagonal = "top_left", generate_stats = false, max_seq_len_kv = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>, padding = false, ragged_strides = array<i64>, scale = 1.000000e+00 : f64, window = 0 : i64}
func.func @no_scale(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32> {
  %0 = "dnn.transpose"(%k) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %1 = "dnn.matmul"(%q, %0) {compute_type = f32} : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %2 = "dnn.softmax"(%1) {axis = 3 : i64} : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %3 = "dnn.matmul"(%2, %v) {compute_type = f32} : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %3 : tensor<1x2x3x4xf32>
}

// -----

// A scale constant with another user stays for that user.
// CHECK-LABEL: func.func @shared_scale_constant
// CHECK: %[[C:.*]] = "dnn.constant"() {value = 5.000000e-01 : f64}
// CHECK: "dnn.sdpa"(%arg0, %arg1, %arg2) {causal = false, diagonal = "top_left", generate_stats = false, max_seq_len_kv = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>, padding = false, ragged_strides = array<i64>, scale = 5.000000e-01 : f64, window = 0 : i64}
// CHECK: "dnn.mul"(%arg0, %[[C]])
func.func @shared_scale_constant(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x8xf32>) {
  %0 = "dnn.transpose"(%k) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %1 = "dnn.matmul"(%q, %0) {compute_type = f32} : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %2 = "dnn.constant"() {value = 5.000000e-01 : f64} : () -> tensor<f32>
  %3 = "dnn.mul"(%1, %2) : (tensor<1x2x3x5xf32>, tensor<f32>) -> tensor<1x2x3x5xf32>
  %4 = "dnn.softmax"(%3) {axis = 3 : i64} : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %5 = "dnn.matmul"(%4, %v) {compute_type = f32} : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  %6 = "dnn.mul"(%q, %2) : (tensor<1x2x3x8xf32>, tensor<f32>) -> tensor<1x2x3x8xf32>
  return %5, %6 : tensor<1x2x3x4xf32>, tensor<1x2x3x8xf32>
}

// -----

// The scores are also returned: the pattern is left alone.
// CHECK-LABEL: func.func @scores_used_twice
// CHECK-NOT: dnn.sdpa
// CHECK: "dnn.softmax"
// CHECK-NOT: dnn.sdpa
func.func @scores_used_twice(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x5xf32>) {
  %0 = "dnn.transpose"(%k) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %1 = "dnn.matmul"(%q, %0) {compute_type = f32} : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %2 = "dnn.softmax"(%1) {axis = 3 : i64} : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %3 = "dnn.matmul"(%2, %v) {compute_type = f32} : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %3, %1 : tensor<1x2x3x4xf32>, tensor<1x2x3x5xf32>
}

// -----

// The probabilities have a second user: left alone.
// CHECK-LABEL: func.func @probabilities_used_twice
// CHECK-NOT: dnn.sdpa
// CHECK: "dnn.softmax"
// CHECK-NOT: dnn.sdpa
func.func @probabilities_used_twice(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x5xf32>) {
  %0 = "dnn.transpose"(%k) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %1 = "dnn.matmul"(%q, %0) {compute_type = f32} : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %2 = "dnn.softmax"(%1) {axis = 3 : i64} : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %3 = "dnn.matmul"(%2, %v) {compute_type = f32} : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  %4 = "dnn.exp"(%2) : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  return %3, %4 : tensor<1x2x3x4xf32>, tensor<1x2x3x5xf32>
}

// -----

// The scale is a tensor, not a constant: left alone.
// CHECK-LABEL: func.func @non_constant_scale
// CHECK-NOT: dnn.sdpa
// CHECK: "dnn.softmax"
// CHECK-NOT: dnn.sdpa
func.func @non_constant_scale(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>, %s: tensor<1x1x1x1xf32>) -> tensor<1x2x3x4xf32> {
  %0 = "dnn.transpose"(%k) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %1 = "dnn.matmul"(%q, %0) {compute_type = f32} : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %2 = "dnn.mul"(%1, %s) : (tensor<1x2x3x5xf32>, tensor<1x1x1x1xf32>) -> tensor<1x2x3x5xf32>
  %3 = "dnn.softmax"(%2) {axis = 3 : i64} : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %4 = "dnn.matmul"(%3, %v) {compute_type = f32} : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %4 : tensor<1x2x3x4xf32>
}

// -----

// A constant numerator (c / s) is not a scale: left alone.
// CHECK-LABEL: func.func @constant_divided_by_scores
// CHECK-NOT: dnn.sdpa
// CHECK: "dnn.div"
// CHECK-NOT: dnn.sdpa
func.func @constant_divided_by_scores(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32> {
  %0 = "dnn.transpose"(%k) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %1 = "dnn.matmul"(%q, %0) {compute_type = f32} : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %2 = "dnn.constant"() {value = 2.0 : f64} : () -> tensor<f32>
  %3 = "dnn.div"(%2, %1) : (tensor<f32>, tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %4 = "dnn.softmax"(%3) {axis = 3 : i64} : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %5 = "dnn.matmul"(%4, %v) {compute_type = f32} : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %5 : tensor<1x2x3x4xf32>
}

// -----

// Softmax over the query axis is not attention: left alone.
// CHECK-LABEL: func.func @softmax_not_over_keys
// CHECK-NOT: dnn.sdpa
// CHECK: "dnn.softmax"
// CHECK-NOT: dnn.sdpa
func.func @softmax_not_over_keys(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32> {
  %0 = "dnn.transpose"(%k) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %1 = "dnn.matmul"(%q, %0) {compute_type = f32} : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %2 = "dnn.softmax"(%1) {axis = 2 : i64} : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %3 = "dnn.matmul"(%2, %v) {compute_type = f32} : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %3 : tensor<1x2x3x4xf32>
}

// -----

// k is not transposed over its last two dims: left alone.
// CHECK-LABEL: func.func @wrong_transpose
// CHECK-NOT: dnn.sdpa
// CHECK: "dnn.softmax"
// CHECK-NOT: dnn.sdpa
func.func @wrong_transpose(%q: tensor<2x2x3x8xf32>, %k: tensor<2x2x8x5xf32>, %v: tensor<2x2x5x4xf32>) -> tensor<2x2x3x4xf32> {
  %0 = "dnn.transpose"(%k) {permutation = array<i64: 1, 0, 2, 3>} : (tensor<2x2x8x5xf32>) -> tensor<2x2x8x5xf32>
  %1 = "dnn.matmul"(%q, %0) {compute_type = f32} : (tensor<2x2x3x8xf32>, tensor<2x2x8x5xf32>) -> tensor<2x2x3x5xf32>
  %2 = "dnn.softmax"(%1) {axis = 3 : i64} : (tensor<2x2x3x5xf32>) -> tensor<2x2x3x5xf32>
  %3 = "dnn.matmul"(%2, %v) {compute_type = f32} : (tensor<2x2x3x5xf32>, tensor<2x2x5x4xf32>) -> tensor<2x2x3x4xf32>
  return %3 : tensor<2x2x3x4xf32>
}

// -----

// k with q's two heads and v with one, broadcast: an sdpa's k and v share
// their heads, so this is not one.
// CHECK-LABEL: func.func @mismatched_kv_heads
// CHECK-NOT: dnn.sdpa
// CHECK: "dnn.softmax"
// CHECK-NOT: dnn.sdpa
func.func @mismatched_kv_heads(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x1x5x4xf32>) -> tensor<1x2x3x4xf32> {
  %0 = "dnn.transpose"(%k) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %1 = "dnn.matmul"(%q, %0) {compute_type = f32} : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %2 = "dnn.softmax"(%1) {axis = 3 : i64} : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %3 = "dnn.matmul"(%2, %v) {compute_type = f32} : (tensor<1x2x3x5xf32>, tensor<1x1x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %3 : tensor<1x2x3x4xf32>
}

// -----

// A rank-2 mask is not an sdpa bias (rank 4): left alone.
// CHECK-LABEL: func.func @rank_2_bias
// CHECK-NOT: dnn.sdpa
// CHECK: "dnn.softmax"
// CHECK-NOT: dnn.sdpa
func.func @rank_2_bias(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>, %mask: tensor<3x5xf32>) -> tensor<1x2x3x4xf32> {
  %0 = "dnn.transpose"(%k) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %1 = "dnn.matmul"(%q, %0) {compute_type = f32} : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %2 = "dnn.add"(%1, %mask) : (tensor<1x2x3x5xf32>, tensor<3x5xf32>) -> tensor<1x2x3x5xf32>
  %3 = "dnn.softmax"(%2) {axis = 3 : i64} : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %4 = "dnn.matmul"(%3, %v) {compute_type = f32} : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %4 : tensor<1x2x3x4xf32>
}

// -----

// tf32 matmuls: sdpa has no tf32 mode, so the pattern is left alone.
// CHECK-LABEL: func.func @tf32_matmuls
// CHECK-NOT: dnn.sdpa
// CHECK: "dnn.softmax"
// CHECK-NOT: dnn.sdpa
func.func @tf32_matmuls(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32> {
  %0 = "dnn.transpose"(%k) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %1 = "dnn.matmul"(%q, %0) {compute_type = tf32} : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %2 = "dnn.softmax"(%1) {axis = 3 : i64} : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %3 = "dnn.matmul"(%2, %v) {compute_type = tf32} : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %3 : tensor<1x2x3x4xf32>
}

// -----

// The scale applied to q before the product, as PyTorch code often writes
// it, folds into the sdpa's scale; casts of the scores to f32 for the
// softmax and of the probabilities back to bf16 are the sdpa's own
// roundings. Everything between q, k, v and o goes.
// CHECK-LABEL: func.func @scaled_q_and_casts
// CHECK-NOT: dnn.cast
// CHECK: %[[O:.*]] = "dnn.sdpa"(%arg0, %arg1, %arg2) {causal = false, diagonal = "top_left", generate_stats = false, max_seq_len_kv = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>, padding = false, ragged_strides = array<i64>, scale = 1.250000e-01 : f64, window = 0 : i64} : {{.*}} -> tensor<1x2x3x4xbf16>
// CHECK-NEXT: return %[[O]]
func.func @scaled_q_and_casts(%q: tensor<1x2x3x8xbf16>, %k: tensor<1x2x5x8xbf16>, %v: tensor<1x2x5x4xbf16>) -> tensor<1x2x3x4xbf16> {
  %c = "dnn.constant"() {value = 1.250000e-01 : f64} : () -> tensor<f32>
  %qs = "dnn.mul"(%q, %c) : (tensor<1x2x3x8xbf16>, tensor<f32>) -> tensor<1x2x3x8xbf16>
  %kt = "dnn.transpose"(%k) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xbf16>) -> tensor<1x2x8x5xbf16>
  %s = "dnn.matmul"(%qs, %kt) {compute_type = f32} : (tensor<1x2x3x8xbf16>, tensor<1x2x8x5xbf16>) -> tensor<1x2x3x5xbf16>
  %sf = "dnn.cast"(%s) : (tensor<1x2x3x5xbf16>) -> tensor<1x2x3x5xf32>
  %p = "dnn.softmax"(%sf) {axis = 3 : i64} : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %pb = "dnn.cast"(%p) : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xbf16>
  %o = "dnn.matmul"(%pb, %v) {compute_type = f32} : (tensor<1x2x3x5xbf16>, tensor<1x2x5x4xbf16>) -> tensor<1x2x3x4xbf16>
  return %o : tensor<1x2x3x4xbf16>
}

// -----

// k divided by a constant before its transpose, and the product scaled
// again: the scales multiply (0.5 / 2 = 0.25).
// CHECK-LABEL: func.func @scaled_k
// CHECK: "dnn.sdpa"(%arg0, %arg1, %arg2) {causal = false, diagonal = "top_left", generate_stats = false, max_seq_len_kv = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>, padding = false, ragged_strides = array<i64>, scale = 2.500000e-01 : f64, window = 0 : i64}
// CHECK-NOT: dnn.div
func.func @scaled_k(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32> {
  %two = "dnn.constant"() {value = 2.000000e+00 : f64} : () -> tensor<f32>
  %half = "dnn.constant"() {value = 5.000000e-01 : f64} : () -> tensor<f32>
  %ks = "dnn.div"(%k, %two) : (tensor<1x2x5x8xf32>, tensor<f32>) -> tensor<1x2x5x8xf32>
  %kt = "dnn.transpose"(%ks) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x8x5xf32>
  %s = "dnn.matmul"(%q, %kt) {compute_type = f32} : (tensor<1x2x3x8xf32>, tensor<1x2x8x5xf32>) -> tensor<1x2x3x5xf32>
  %ss = "dnn.mul"(%s, %half) : (tensor<1x2x3x5xf32>, tensor<f32>) -> tensor<1x2x3x5xf32>
  %p = "dnn.softmax"(%ss) {axis = 3 : i64} : (tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
  %o = "dnn.matmul"(%p, %v) {compute_type = f32} : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// k and v with one head, broadcast by the matmuls over q's three:
// multi-query attention, an sdpa with one kv head.
// CHECK-LABEL: func.func @multi_query
// CHECK: "dnn.sdpa"(%arg0, %arg1, %arg2) {causal = false, diagonal = "top_left", generate_stats = false, max_seq_len_kv = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>, padding = false, ragged_strides = array<i64>, scale = 1.000000e+00 : f64, window = 0 : i64} : (tensor<2x3x5x8xf32>, tensor<2x1x7x8xf32>, tensor<2x1x7x4xf32>) -> tensor<2x3x5x4xf32>
func.func @multi_query(%q: tensor<2x3x5x8xf32>, %k: tensor<2x1x7x8xf32>, %v: tensor<2x1x7x4xf32>) -> tensor<2x3x5x4xf32> {
  %kt = "dnn.transpose"(%k) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<2x1x7x8xf32>) -> tensor<2x1x8x7xf32>
  %s = "dnn.matmul"(%q, %kt) {compute_type = f32} : (tensor<2x3x5x8xf32>, tensor<2x1x8x7xf32>) -> tensor<2x3x5x7xf32>
  %p = "dnn.softmax"(%s) {axis = 3 : i64} : (tensor<2x3x5x7xf32>) -> tensor<2x3x5x7xf32>
  %o = "dnn.matmul"(%p, %v) {compute_type = f32} : (tensor<2x3x5x7xf32>, tensor<2x1x7x4xf32>) -> tensor<2x3x5x4xf32>
  return %o : tensor<2x3x5x4xf32>
}
