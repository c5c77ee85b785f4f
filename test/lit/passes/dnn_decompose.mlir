// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-decompose)' | FileCheck %s
// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-decompose{all=true})' | FileCheck %s --check-prefix=ALL
// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-decompose{ops=batchnorm,batchnorm_backward,batchnorm_inference})' | FileCheck %s --check-prefix=BN

// Default options: inference batchnorm becomes a per-channel multiply-add
// (a = scale * rsqrt(var + eps), c = bias - mean * a, y = x * a + c).

// CHECK-LABEL: func.func @batchnorm_inference(
// CHECK-SAME: %[[X:.*]]: tensor<2x3x4x4xf32>, %[[SCALE:.*]]: tensor<1x3x1x1xf32>, %[[BIAS:.*]]: tensor<1x3x1x1xf32>, %[[MEAN:.*]]: tensor<1x3x1x1xf32>, %[[VAR:.*]]: tensor<1x3x1x1xf32>)
// CHECK-NOT: dnn.batchnorm_inference
// CHECK: %[[EPS:.*]] = "dnn.constant"() {value = 1.000000e-05 : f64} : () -> tensor<f32>
// CHECK: %[[VE:.*]] = "dnn.add"(%[[VAR]], %[[EPS]])
// CHECK: %[[INV:.*]] = "dnn.rsqrt"(%[[VE]])
// CHECK: %[[A:.*]] = "dnn.mul"(%[[SCALE]], %[[INV]])
// CHECK: %[[MA:.*]] = "dnn.mul"(%[[MEAN]], %[[A]])
// CHECK: %[[C:.*]] = "dnn.sub"(%[[BIAS]], %[[MA]])
// CHECK: %[[XA:.*]] = "dnn.mul"(%[[X]], %[[A]]) : (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xf32>
// CHECK: %[[Y:.*]] = "dnn.add"(%[[XA]], %[[C]]) : (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xf32>
// CHECK: return %[[Y]]
func.func @batchnorm_inference(%x: tensor<2x3x4x4xf32>, %scale: tensor<1x3x1x1xf32>, %bias: tensor<1x3x1x1xf32>, %mean: tensor<1x3x1x1xf32>, %var: tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xf32> {
  %0 = "dnn.batchnorm_inference"(%x, %scale, %bias, %mean, %var) {epsilon = 1.0e-05 : f64} : (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xf32>
  return %0 : tensor<2x3x4x4xf32>
}

// -----

// Default options: instancenorm becomes groupnorm with groups = C; the bf16
// output and the f32 statistics keep their types.

// CHECK-LABEL: func.func @instancenorm(
// CHECK-SAME: %[[X:.*]]: tensor<2x6x5x5xbf16>, %[[SCALE:.*]]: tensor<1x6x1x1xbf16>, %[[BIAS:.*]]: tensor<1x6x1x1xbf16>)
// CHECK-NOT: dnn.instancenorm
// CHECK: %[[G:.*]]:3 = "dnn.groupnorm"(%[[X]], %[[SCALE]], %[[BIAS]])
// CHECK-SAME: epsilon = 1.000000e-03 : f64, groups = 6 : i64
// CHECK-SAME: training = true
// CHECK-SAME: -> (tensor<2x6x5x5xbf16>, tensor<2x6x1x1xf32>, tensor<2x6x1x1xf32>)
// CHECK: return %[[G]]#0, %[[G]]#1, %[[G]]#2
// ALL-LABEL: func.func @instancenorm(
// ALL-NOT: dnn.groupnorm
// ALL-NOT: dnn.instancenorm
// ALL: "dnn.reshape"(%{{.*}}) : (tensor<2x6x5x5xbf16>) -> tensor<2x6x1x25xbf16>
// ALL: "dnn.reduction"(%{{.*}}) {axes = array<i64: 3>, keepdims = true, mode = "mean"} : (tensor<2x6x1x25xbf16>) -> tensor<2x6x1x1xf32>
// ALL: %[[Y:.*]] = "dnn.add"(%{{.*}}, %{{.*}}) : (tensor<2x6x1x25xf32>, tensor<1x6x1x1xbf16>) -> tensor<2x6x1x25xbf16>
// ALL: %[[R:.*]] = "dnn.reshape"(%[[Y]]) : (tensor<2x6x1x25xbf16>) -> tensor<2x6x5x5xbf16>
// ALL: return %[[R]]
func.func @instancenorm(%x: tensor<2x6x5x5xbf16>, %scale: tensor<1x6x1x1xbf16>, %bias: tensor<1x6x1x1xbf16>) -> (tensor<2x6x5x5xbf16>, tensor<2x6x1x1xf32>, tensor<2x6x1x1xf32>) {
  %y, %mean, %inv = "dnn.instancenorm"(%x, %scale, %bias) {epsilon = 1.0e-03 : f64, training = true, operandSegmentSizes = array<i32: 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x6x5x5xbf16>, tensor<1x6x1x1xbf16>, tensor<1x6x1x1xbf16>) -> (tensor<2x6x5x5xbf16>, tensor<2x6x1x1xf32>, tensor<2x6x1x1xf32>)
  return %y, %mean, %inv : tensor<2x6x5x5xbf16>, tensor<2x6x1x1xf32>, tensor<2x6x1x1xf32>
}

// -----

// groupnorm normalizes one (sample, group) per row: x viewed as (N, G, C/G,
// spatial) over its last two dims, the scale and bias as (1, G, C/G, 1), so
// that the statistics and y are one row program.

// ALL-LABEL: func.func @groupnorm(
// ALL: %[[V:.*]] = "dnn.reshape"(%{{.*}}) : (tensor<2x6x5x5xf32>) -> tensor<2x3x2x25xf32>
// ALL: "dnn.reduction"(%[[V]]) {axes = array<i64: 2, 3>, keepdims = true, mode = "mean"} : (tensor<2x3x2x25xf32>) -> tensor<2x3x1x1xf32>
// ALL: %[[S:.*]] = "dnn.reshape"(%{{.*}}) : (tensor<1x6x1x1xf32>) -> tensor<1x3x2x1xf32>
// ALL: %[[B:.*]] = "dnn.reshape"(%{{.*}}) : (tensor<1x6x1x1xf32>) -> tensor<1x3x2x1xf32>
// ALL: "dnn.mul"(%{{.*}}, %[[S]]) : (tensor<2x3x2x25xf32>, tensor<1x3x2x1xf32>) -> tensor<2x3x2x25xf32>
// ALL: %[[Y:.*]] = "dnn.add"(%{{.*}}, %[[B]]) : (tensor<2x3x2x25xf32>, tensor<1x3x2x1xf32>) -> tensor<2x3x2x25xf32>
// ALL: %[[R:.*]] = "dnn.reshape"(%[[Y]]) : (tensor<2x3x2x25xf32>) -> tensor<2x6x5x5xf32>
// ALL: return %[[R]]
func.func @groupnorm(%x: tensor<2x6x5x5xf32>, %scale: tensor<1x6x1x1xf32>, %bias: tensor<1x6x1x1xf32>) -> tensor<2x6x5x5xf32> {
  %y = "dnn.groupnorm"(%x, %scale, %bias) {epsilon = 1.0e-05 : f64, groups = 3 : i64, training = false, operandSegmentSizes = array<i32: 1, 1, 1>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x6x5x5xf32>, tensor<1x6x1x1xf32>, tensor<1x6x1x1xf32>) -> (tensor<2x6x5x5xf32>)
  return %y : tensor<2x6x5x5xf32>
}

// -----

// Default options: instancenorm_backward becomes groupnorm_backward, groups = C.

// CHECK-LABEL: func.func @instancenorm_backward(
// CHECK-SAME: %[[DY:.*]]: tensor<2x4x6xf32>, %[[X:.*]]: tensor<2x4x6xf32>, %[[MEAN:.*]]: tensor<2x4x1xf32>, %[[INV:.*]]: tensor<2x4x1xf32>)
// CHECK-NOT: dnn.instancenorm_backward
// CHECK: %[[G:.*]]:2 = "dnn.groupnorm_backward"(%[[DY]], %[[X]], %[[MEAN]], %[[INV]])
// CHECK-SAME: groups = 4 : i64, has_bias = true
// CHECK: return %[[G]]#0, %[[G]]#1
func.func @instancenorm_backward(%dy: tensor<2x4x6xf32>, %x: tensor<2x4x6xf32>, %mean: tensor<2x4x1xf32>, %inv: tensor<2x4x1xf32>) -> (tensor<2x4x6xf32>, tensor<1x4x1xf32>) {
  %dx, %dbias = "dnn.instancenorm_backward"(%dy, %x, %mean, %inv) {has_bias = true, resultSegmentSizes = array<i32: 1, 0, 1>} : (tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>) -> (tensor<2x4x6xf32>, tensor<1x4x1xf32>)
  return %dx, %dbias : tensor<2x4x6xf32>, tensor<1x4x1xf32>
}

// -----

// Default options: softmax_backward: dx = y * (dy - sum(dy * y)).

// CHECK-LABEL: func.func @softmax_backward(
// CHECK-SAME: %[[DY:.*]]: tensor<4x7xf32>, %[[Y:.*]]: tensor<4x7xf32>)
// CHECK-NOT: dnn.softmax_backward
// CHECK: %[[P:.*]] = "dnn.mul"(%[[DY]], %[[Y]])
// CHECK: %[[S:.*]] = "dnn.reduction"(%[[P]]) {axes = array<i64: 1>, keepdims = true, mode = "sum"} : (tensor<4x7xf32>) -> tensor<4x1xf32>
// CHECK: %[[D:.*]] = "dnn.sub"(%[[DY]], %[[S]])
// CHECK: %[[DX:.*]] = "dnn.mul"(%[[Y]], %[[D]])
// CHECK: return %[[DX]]
func.func @softmax_backward(%dy: tensor<4x7xf32>, %y: tensor<4x7xf32>) -> tensor<4x7xf32> {
  %0 = "dnn.softmax_backward"(%dy, %y) {axis = 1 : i64} : (tensor<4x7xf32>, tensor<4x7xf32>) -> tensor<4x7xf32>
  return %0 : tensor<4x7xf32>
}

// -----

// Default options: log_softmax_backward: dx = dy - exp(y) * sum(dy); a bf16
// result comes from the last op, the intermediates are f32.

// CHECK-LABEL: func.func @log_softmax_backward(
// CHECK-SAME: %[[DY:.*]]: tensor<4x7xbf16>, %[[Y:.*]]: tensor<4x7xbf16>)
// CHECK-NOT: dnn.log_softmax_backward
// CHECK: %[[E:.*]] = "dnn.exp"(%[[Y]]) : (tensor<4x7xbf16>) -> tensor<4x7xf32>
// CHECK: %[[S:.*]] = "dnn.reduction"(%[[DY]]) {axes = array<i64: 0>, keepdims = true, mode = "sum"} : (tensor<4x7xbf16>) -> tensor<1x7xf32>
// CHECK: %[[W:.*]] = "dnn.mul"(%[[E]], %[[S]]) : (tensor<4x7xf32>, tensor<1x7xf32>) -> tensor<4x7xf32>
// CHECK: %[[DX:.*]] = "dnn.sub"(%[[DY]], %[[W]]) : (tensor<4x7xbf16>, tensor<4x7xf32>) -> tensor<4x7xbf16>
// CHECK: return %[[DX]]
func.func @log_softmax_backward(%dy: tensor<4x7xbf16>, %y: tensor<4x7xbf16>) -> tensor<4x7xbf16> {
  %0 = "dnn.log_softmax_backward"(%dy, %y) {axis = 0 : i64} : (tensor<4x7xbf16>, tensor<4x7xbf16>) -> tensor<4x7xbf16>
  return %0 : tensor<4x7xbf16>
}

// -----

// Default options keep the ops that have a kernel; all=true expands softmax
// with the row maximum subtracted (0 for a row that is all -inf) and the sum
// kept at least 1, so such a row gives zeros, not NaN.

// CHECK-LABEL: func.func @softmax(
// CHECK: "dnn.softmax"
// ALL-LABEL: func.func @softmax(
// ALL-SAME: %[[X:.*]]: tensor<4x7xf32>)
// ALL-NOT: dnn.softmax
// ALL: %[[M:.*]] = "dnn.reduction"(%[[X]]) {axes = array<i64: 1>, keepdims = true, mode = "max"} : (tensor<4x7xf32>) -> tensor<4x1xf32>
// ALL: %[[NEGINF:.*]] = "dnn.constant"() {value = 0xFFF0000000000000 : f64}
// ALL: %[[EMPTY:.*]] = "dnn.cmp_eq"(%[[M]], %[[NEGINF]])
// ALL: %[[ZERO:.*]] = "dnn.constant"() {value = 0.000000e+00 : f64}
// ALL: %[[MS:.*]] = "dnn.select"(%[[EMPTY]], %[[ZERO]], %[[M]])
// ALL: %[[SH:.*]] = "dnn.sub"(%[[X]], %[[MS]])
// ALL: %[[E:.*]] = "dnn.exp"(%[[SH]])
// ALL: %[[S:.*]] = "dnn.reduction"(%[[E]]) {axes = array<i64: 1>, keepdims = true, mode = "sum"}
// ALL: %[[ONE:.*]] = "dnn.constant"() {value = 1.000000e+00 : f64}
// ALL: %[[SAFE:.*]] = "dnn.max"(%[[S]], %[[ONE]])
// ALL: %[[Y:.*]] = "dnn.div"(%[[E]], %[[SAFE]])
// ALL: return %[[Y]]
func.func @softmax(%x: tensor<4x7xf32>) -> tensor<4x7xf32> {
  %0 = "dnn.softmax"(%x) {axis = 1 : i64} : (tensor<4x7xf32>) -> tensor<4x7xf32>
  return %0 : tensor<4x7xf32>
}

// -----

// Default options keep layernorm; all=true gives mean, biased variance and
// rsqrt, in f32, with the statistics as results.

// CHECK-LABEL: func.func @layernorm(
// CHECK: "dnn.layernorm"
// ALL-LABEL: func.func @layernorm(
// ALL-SAME: %[[X:.*]]: tensor<3x5x8xf32>, %[[SCALE:.*]]: tensor<1x5x8xf32>, %[[BIAS:.*]]: tensor<1x5x8xf32>)
// ALL-NOT: dnn.layernorm
// ALL: %[[MEAN:.*]] = "dnn.reduction"(%[[X]]) {axes = array<i64: 1, 2>, keepdims = true, mode = "mean"} : (tensor<3x5x8xf32>) -> tensor<3x1x1xf32>
// ALL: %[[C:.*]] = "dnn.sub"(%[[X]], %[[MEAN]])
// ALL: %[[SQ:.*]] = "dnn.square"(%[[C]])
// ALL: %[[VAR:.*]] = "dnn.reduction"(%[[SQ]]) {axes = array<i64: 1, 2>, keepdims = true, mode = "mean"}
// ALL: %[[EPS:.*]] = "dnn.constant"() {value = 1.000000e-05 : f64}
// ALL: %[[VE:.*]] = "dnn.add"(%[[VAR]], %[[EPS]])
// ALL: %[[INV:.*]] = "dnn.rsqrt"(%[[VE]])
// ALL: %[[XHAT:.*]] = "dnn.mul"(%[[C]], %[[INV]])
// ALL: %[[XS:.*]] = "dnn.mul"(%[[XHAT]], %[[SCALE]])
// ALL: %[[Y:.*]] = "dnn.add"(%[[XS]], %[[BIAS]])
// ALL: return %[[Y]], %[[MEAN]], %[[INV]]
func.func @layernorm(%x: tensor<3x5x8xf32>, %scale: tensor<1x5x8xf32>, %bias: tensor<1x5x8xf32>) -> (tensor<3x5x8xf32>, tensor<3x1x1xf32>, tensor<3x1x1xf32>) {
  %y, %mean, %inv = "dnn.layernorm"(%x, %scale, %bias) {axis = 1 : i64, epsilon = 1.0e-05 : f64, training = true, operandSegmentSizes = array<i32: 1, 1, 1, 0>, resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<3x5x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>) -> (tensor<3x5x8xf32>, tensor<3x1x1xf32>, tensor<3x1x1xf32>)
  return %y, %mean, %inv : tensor<3x5x8xf32>, tensor<3x1x1xf32>, tensor<3x1x1xf32>
}

// -----

// An rmsnorm whose epsilon is an operand (a runtime scalar: a rank-0 graph
// argument marked dnn.by_value) adds that operand, not a constant.

// CHECK-LABEL: func.func @rmsnorm_runtime_epsilon(
// CHECK: "dnn.rmsnorm"
// ALL-LABEL: func.func @rmsnorm_runtime_epsilon(
// ALL-SAME: %[[X:.*]]: tensor<4x16xf32>, %[[EPS:.*]]: tensor<f32> {dnn.by_value, dnn.name = "eps"})
// ALL-NOT: dnn.rmsnorm
// ALL-NOT: dnn.constant
// ALL: %[[MS:.*]] = "dnn.reduction"
// ALL-NEXT: %[[VE:.*]] = "dnn.add"(%[[MS]], %[[EPS]]) : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
// ALL-NEXT: %[[INV:.*]] = "dnn.rsqrt"(%[[VE]])
// ALL-NEXT: %[[Y:.*]] = "dnn.mul"(%[[X]], %[[INV]])
// ALL: return %[[Y]], %[[INV]]
func.func @rmsnorm_runtime_epsilon(%x: tensor<4x16xf32>, %eps: tensor<f32> {dnn.by_value, dnn.name = "eps"}) -> (tensor<4x16xf32>, tensor<4x1xf32>) {
  %y, %inv = "dnn.rmsnorm"(%x, %eps) {axis = 1 : i64, epsilon = 1.0e-05 : f64, training = true, operandSegmentSizes = array<i32: 1, 0, 0, 1>} : (tensor<4x16xf32>, tensor<f32>) -> (tensor<4x16xf32>, tensor<4x1xf32>)
  return %y, %inv : tensor<4x16xf32>, tensor<4x1xf32>
}

// -----

// Default options keep sdpa; all=true gives GQA through 5-D broadcast
// matmuls, the causal mask from gen_index, and guards for fully masked rows.

// CHECK-LABEL: func.func @sdpa_gqa_causal(
// CHECK: "dnn.sdpa"
// ALL-LABEL: func.func @sdpa_gqa_causal(
// ALL-SAME: %[[Q:.*]]: tensor<1x4x5x8xbf16>, %[[K:.*]]: tensor<1x2x7x8xbf16>, %[[V:.*]]: tensor<1x2x7x8xbf16>)
// ALL-NOT: dnn.sdpa
// ALL: %[[QG:.*]] = "dnn.reshape"(%[[Q]]) : (tensor<1x4x5x8xbf16>) -> tensor<1x2x2x5x8xbf16>
// ALL: %[[KT:.*]] = "dnn.transpose"(%[[K]]) {permutation = array<i64: 0, 1, 3, 2>}
// ALL: %[[KG:.*]] = "dnn.reshape"(%[[KT]]) : (tensor<1x2x8x7xbf16>) -> tensor<1x2x1x8x7xbf16>
// ALL: %[[QK:.*]] = "dnn.matmul"(%[[QG]], %[[KG]]) {compute_type = f32} : (tensor<1x2x2x5x8xbf16>, tensor<1x2x1x8x7xbf16>) -> tensor<1x2x2x5x7xf32>
// ALL: %[[SCALE:.*]] = "dnn.constant"() {value = 1.250000e-01 : f64}
// ALL: %[[S:.*]] = "dnn.mul"(%[[QK]], %[[SCALE]])
// ALL: %[[ROW:.*]] = "dnn.gen_index"(%[[S]]) {axis = 3 : i64}
// ALL: %[[COL:.*]] = "dnn.gen_index"(%[[S]]) {axis = 4 : i64}
// ALL: %[[ABOVE:.*]] = "dnn.cmp_gt"(%[[COL]], %[[ROW]])
// ALL: %[[NINF:.*]] = "dnn.constant"() {value = 0xFFF0000000000000 : f64}
// ALL: %[[SM:.*]] = "dnn.select"(%[[ABOVE]], %[[NINF]], %[[S]])
// ALL: %[[M:.*]] = "dnn.reduction"(%[[SM]]) {axes = array<i64: 4>, keepdims = true, mode = "max"}
// ALL: %[[MASKED:.*]] = "dnn.cmp_eq"(%[[M]], %[[NINF]])
// ALL: %[[ZERO:.*]] = "dnn.constant"() {value = 0.000000e+00 : f64}
// ALL: %[[SHIFT:.*]] = "dnn.select"(%[[MASKED]], %[[ZERO]], %[[M]])
// ALL: %[[D:.*]] = "dnn.sub"(%[[SM]], %[[SHIFT]])
// ALL: %[[E:.*]] = "dnn.exp"(%[[D]])
// ALL: %[[L:.*]] = "dnn.reduction"(%[[E]]) {axes = array<i64: 4>, keepdims = true, mode = "sum"}
// ALL: %[[VG:.*]] = "dnn.reshape"(%[[V]]) : (tensor<1x2x7x8xbf16>) -> tensor<1x2x1x7x8xbf16>
// ALL: %[[EV:.*]] = "dnn.matmul"(%[[E]], %[[VG]])
// ALL: %[[EMPTY:.*]] = "dnn.cmp_eq"(%[[L]], %[[ZERO]])
// ALL: %[[ONE:.*]] = "dnn.constant"() {value = 1.000000e+00 : f64}
// ALL: %[[DEN:.*]] = "dnn.select"(%[[EMPTY]], %[[ONE]], %[[L]])
// ALL: %[[OG:.*]] = "dnn.div"(%[[EV]], %[[DEN]]) : (tensor<1x2x2x5x8xf32>, tensor<1x2x2x5x1xf32>) -> tensor<1x2x2x5x8xbf16>
// ALL: %[[O:.*]] = "dnn.reshape"(%[[OG]]) : (tensor<1x2x2x5x8xbf16>) -> tensor<1x4x5x8xbf16>
// ALL: %[[LOGL:.*]] = "dnn.log"(%[[L]])
// ALL: %[[LSE:.*]] = "dnn.add"(%[[SHIFT]], %[[LOGL]])
// ALL: %[[STATS:.*]] = "dnn.reshape"(%[[LSE]]) : (tensor<1x2x2x5x1xf32>) -> tensor<1x4x5x1xf32>
// ALL: return %[[O]], %[[STATS]]
func.func @sdpa_gqa_causal(%q: tensor<1x4x5x8xbf16>, %k: tensor<1x2x7x8xbf16>, %v: tensor<1x2x7x8xbf16>) -> (tensor<1x4x5x8xbf16>, tensor<1x4x5x1xf32>) {
  %o, %stats = "dnn.sdpa"(%q, %k, %v) {scale = 0.125 : f64, causal = true, generate_stats = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x4x5x8xbf16>, tensor<1x2x7x8xbf16>, tensor<1x2x7x8xbf16>) -> (tensor<1x4x5x8xbf16>, tensor<1x4x5x1xf32>)
  return %o, %stats : tensor<1x4x5x8xbf16>, tensor<1x4x5x1xf32>
}

// -----

// sdpa with a padding mask under all=true: the int32 lengths are cast to f32,
// clamped to [0, S], and mask the rows at or past Lq and the columns at or
// past Lkv; the bottom-right diagonal's shift is Lkv - Lq.

// CHECK-LABEL: func.func @sdpa_padding(
// CHECK: "dnn.sdpa"
// ALL-LABEL: func.func @sdpa_padding(
// ALL-SAME: %[[LQ:[^:]*]]: tensor<2x1x1x1xi32>, %[[LKV:[^:]*]]: tensor<2x1x1x1xi32>)
// ALL-NOT: dnn.sdpa
// ALL: %[[ROW:.*]] = "dnn.gen_index"(%[[S:.*]]) {axis = 2 : i64}
// ALL: %[[COL:.*]] = "dnn.gen_index"(%[[S]]) {axis = 3 : i64}
// ALL: %[[Q32:.*]] = "dnn.cast"(%[[LQ]]) : (tensor<2x1x1x1xi32>) -> tensor<2x1x1x1xf32>
// ALL: "dnn.min"(%[[Q32]],
// ALL: %[[Q:.*]] = "dnn.max"(
// ALL: %[[KV32:.*]] = "dnn.cast"(%[[LKV]]) : (tensor<2x1x1x1xi32>) -> tensor<2x1x1x1xf32>
// ALL: "dnn.min"(%[[KV32]],
// ALL: %[[KV:.*]] = "dnn.max"(
// ALL: %[[PADROW:.*]] = "dnn.cmp_ge"(%[[ROW]], %[[Q]])
// ALL: %[[PADCOL:.*]] = "dnn.cmp_ge"(%[[COL]], %[[KV]])
// ALL: %[[PAD:.*]] = "dnn.logical_or"(%[[PADROW]], %[[PADCOL]])
// ALL: %[[SP:.*]] = "dnn.select"(%[[PAD]], %{{.*}}, %[[S]])
// ALL: %[[SHIFT:.*]] = "dnn.sub"(%[[KV]], %[[Q]])
// ALL: %[[DIAG:.*]] = "dnn.add"(%[[ROW]], %[[SHIFT]])
// ALL: %[[ABOVE:.*]] = "dnn.cmp_gt"(%[[COL]], %[[DIAG]])
// ALL: "dnn.select"(%[[ABOVE]], %{{.*}}, %[[SP]])
func.func @sdpa_padding(%q: tensor<2x2x5x8xf32>, %k: tensor<2x2x7x8xf32>, %v: tensor<2x2x7x8xf32>, %lq: tensor<2x1x1x1xi32>, %lkv: tensor<2x1x1x1xi32>) -> tensor<2x2x5x8xf32> {
  %o = "dnn.sdpa"(%q, %k, %v, %lq, %lkv) {scale = 0.125 : f64, causal = true, diagonal = "bottom_right", padding = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<2x2x5x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x1x1x1xi32>, tensor<2x1x1x1xi32>) -> tensor<2x2x5x8xf32>
  return %o : tensor<2x2x5x8xf32>
}

// -----

// sdpa with a paged KV cache under all=true: each cache is gathered into a
// contiguous (B, Hk, Skv, D) tensor without a gather op: the table entries
// (as f32) are compared with the page index, the matching page selected and
// summed over the pages, the slots laid end to end, cut to max_seq_len_kv,
// and the positions at or past Lkv zeroed; attention then reads those.

// CHECK-LABEL: func.func @sdpa_paged(
// CHECK: "dnn.sdpa"
// ALL-LABEL: func.func @sdpa_paged(
// ALL-SAME: %[[Q:[^:]*]]: tensor<2x2x3x8xf32>, %[[KC:[^:]*]]: tensor<5x1x4x8xf32>, %[[VC:[^:]*]]: tensor<5x1x4x8xf32>, %[[LQ:[^:]*]]: tensor<2x1x1x1xi32>, %[[LKV:[^:]*]]: tensor<2x1x1x1xi32>, %[[KT:[^:]*]]: tensor<2x1x2x1xi32>, %[[VT:[^:]*]]: tensor<2x1x2x1xi32>)
// ALL-NOT: dnn.sdpa
// ALL: %[[L32:.*]] = "dnn.cast"(%[[LKV]])
// ALL: %[[L:.*]] = "dnn.max"(
// ALL: %[[WIDE:.*]] = "dnn.reshape"(%[[KC]]) : (tensor<5x1x4x8xf32>) -> tensor<1x1x5x1x4x8xf32>
// ALL: %[[T32:.*]] = "dnn.cast"(%[[KT]]) : (tensor<2x1x2x1xi32>) -> tensor<2x1x2x1xf32>
// ALL: %[[T:.*]] = "dnn.reshape"(%[[T32]]) : (tensor<2x1x2x1xf32>) -> tensor<2x2x1x1x1x1xf32>
// ALL: %[[P:.*]] = "dnn.gen_index"(%[[WIDE]]) {axis = 2 : i64}
// ALL: %[[HIT:.*]] = "dnn.cmp_eq"(%[[T]], %[[P]]) : (tensor<2x2x1x1x1x1xf32>, tensor<1x1x5x1x4x8xf32>) -> tensor<2x2x5x1x4x8xi1>
// ALL: %[[PICK:.*]] = "dnn.select"(%[[HIT]], %[[WIDE]], %{{.*}})
// ALL: %[[PAGES:.*]] = "dnn.reduction"(%[[PICK]]) {axes = array<i64: 2>, keepdims = false, mode = "sum"} : (tensor<2x2x5x1x4x8xf32>) -> tensor<2x2x1x4x8xf32>
// ALL: %[[SLOTS:.*]] = "dnn.transpose"(%[[PAGES]]) {permutation = array<i64: 0, 2, 1, 3, 4>}
// ALL: %[[ROWS:.*]] = "dnn.reshape"(%[[SLOTS]]) : (tensor<2x1x2x4x8xf32>) -> tensor<2x1x8x8xf32>
// ALL: %[[CUT:.*]] = "dnn.slice"(%[[ROWS]]) {limit = array<i64: 2, 1, 7, 8>, start = array<i64: 0, 0, 0, 0>, step = array<i64: 1, 1, 1, 1>}
// ALL: %[[POS:.*]] = "dnn.gen_index"(%[[CUT]]) {axis = 2 : i64}
// ALL: %[[PAST:.*]] = "dnn.cmp_ge"(%[[POS]], %[[L]])
// ALL: %[[K:.*]] = "dnn.select"(%[[PAST]], %{{.*}}, %[[CUT]]) : {{.*}} -> tensor<2x1x7x8xf32>
// ALL: "dnn.cast"(%[[VT]])
// ALL: "dnn.transpose"(%[[K]])
// ALL: "dnn.matmul"(
func.func @sdpa_paged(%q: tensor<2x2x3x8xf32>, %kc: tensor<5x1x4x8xf32>, %vc: tensor<5x1x4x8xf32>, %lq: tensor<2x1x1x1xi32>, %lkv: tensor<2x1x1x1xi32>, %kt: tensor<2x1x2x1xi32>, %vt: tensor<2x1x2x1xi32>) -> tensor<2x2x3x8xf32> {
  %o = "dnn.sdpa"(%q, %kc, %vc, %lq, %lkv, %kt, %vt) {scale = 0.125 : f64, causal = false, padding = true, max_seq_len_kv = 7 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0>} : (tensor<2x2x3x8xf32>, tensor<5x1x4x8xf32>, tensor<5x1x4x8xf32>, tensor<2x1x1x1xi32>, tensor<2x1x1x1xi32>, tensor<2x1x2x1xi32>, tensor<2x1x2x1xi32>) -> tensor<2x2x3x8xf32>
  return %o : tensor<2x2x3x8xf32>
}

// -----

// sdpa with a ragged (packed) q and o under all=true: q is gathered into a
// padded tensor without a gather op (each entry's first packed row
// floor(offset / stride + 1/2) plus the row, compared with the index of the
// B x S packed rows below the entry's length, selected and summed), and o
// scattered back the same way, summed over the entries' rows.

// CHECK-LABEL: func.func @sdpa_ragged(
// CHECK: "dnn.sdpa"
// ALL-LABEL: func.func @sdpa_ragged(
// ALL-SAME: %[[Q:[^:]*]]: tensor<2x2x3x8xf32>, %{{[^:]*}}: tensor<2x2x4x8xf32>, %{{[^:]*}}: tensor<2x2x4x8xf32>, %[[LQ:[^:]*]]: tensor<2x1x1x1xi32>, %{{[^:]*}}: tensor<2x1x1x1xi32>, %[[OFF:[^:]*]]: tensor<3x1x1x1xi32>)
// ALL-NOT: dnn.sdpa
// ALL: %[[BSHD:.*]] = "dnn.transpose"(%[[Q]]) {permutation = array<i64: 0, 2, 1, 3>}
// ALL: %[[PACKED:.*]] = "dnn.reshape"(%[[BSHD]]) : (tensor<2x3x2x8xf32>) -> tensor<1x1x6x2x8xf32>
// ALL: %[[FIRST:.*]] = "dnn.slice"(%[[OFF]]) {limit = array<i64: 2, 1, 1, 1>
// ALL: "dnn.floor"
// ALL: %[[HIT:.*]] = "dnn.cmp_eq"({{.*}}) : (tensor<1x1x6x2x8xf32>, tensor<2x3x1x2x8xf32>) -> tensor<2x3x6x2x8xi1>
// ALL: %[[OWNED:.*]] = "dnn.logical_and"(%[[HIT]], %{{.*}})
// ALL: %[[PICK:.*]] = "dnn.select"(%[[OWNED]], %[[PACKED]], %{{.*}})
// ALL: "dnn.reduction"(%[[PICK]]) {axes = array<i64: 2>, keepdims = false, mode = "sum"} : (tensor<2x3x6x2x8xf32>) -> tensor<2x3x2x8xf32>
// ALL: "dnn.matmul"(
// ALL: "dnn.slice"(%[[OFF]])
// ALL: %[[OUT:.*]] = "dnn.select"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<2x3x6x2x8xi1>, tensor<2x3x1x2x8xf32>, tensor<f32>) -> tensor<2x3x6x2x8xf32>
// ALL: "dnn.reduction"(%[[OUT]]) {axes = array<i64: 0, 1>, keepdims = false, mode = "sum"} : (tensor<2x3x6x2x8xf32>) -> tensor<6x2x8xf32>
func.func @sdpa_ragged(%q: tensor<2x2x3x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %lq: tensor<2x1x1x1xi32>, %lkv: tensor<2x1x1x1xi32>, %oq: tensor<3x1x1x1xi32>) -> tensor<2x2x3x8xf32> {
  %o = "dnn.sdpa"(%q, %k, %v, %lq, %lkv, %oq, %oq) {scale = 0.125 : f64, causal = false, padding = true, ragged_strides = array<i64: 16, 0, 0, 16>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 1>} : (tensor<2x2x3x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x1x1x1xi32>, tensor<2x1x1x1xi32>, tensor<3x1x1x1xi32>, tensor<3x1x1x1xi32>) -> tensor<2x2x3x8xf32>
  return %o : tensor<2x2x3x8xf32>
}

// -----

// sdpa_backward with GQA under all=true: dk and dv are summed over the group
// dim of the 5-D view.

// CHECK-LABEL: func.func @sdpa_backward_gqa(
// CHECK: "dnn.sdpa_backward"
// ALL-LABEL: func.func @sdpa_backward_gqa(
// ALL-NOT: dnn.sdpa_backward
// ALL: "dnn.reduction"(%{{.*}}) {axes = array<i64: 2>, keepdims = false, mode = "sum"} : (tensor<1x2x2x7x8xf32>) -> tensor<1x2x7x8xf32>
// ALL: %[[DK:.*]] = "dnn.mul"
// ALL: %[[DV:.*]] = "dnn.reduction"(%{{.*}}) {axes = array<i64: 2>, keepdims = false, mode = "sum"} : (tensor<1x2x2x7x8xf32>) -> tensor<1x2x7x8xf32>
// ALL: return %{{.*}}, %[[DK]], %[[DV]]
func.func @sdpa_backward_gqa(%q: tensor<1x4x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>, %o: tensor<1x4x5x8xf32>, %do: tensor<1x4x5x8xf32>, %stats: tensor<1x4x5x1xf32>) -> (tensor<1x4x5x8xf32>, tensor<1x2x7x8xf32>, tensor<1x2x7x8xf32>) {
  %dq, %dk, %dv = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats) {scale = 0.125 : f64, causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x4x5x8xf32>, tensor<1x2x7x8xf32>, tensor<1x2x7x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x1xf32>) -> (tensor<1x4x5x8xf32>, tensor<1x2x7x8xf32>, tensor<1x2x7x8xf32>)
  return %dq, %dk, %dv : tensor<1x4x5x8xf32>, tensor<1x2x7x8xf32>, tensor<1x2x7x8xf32>
}

// -----

// Batchnorm (ops=batchnorm,...): x stored channels-last (a graph input whose
// strides put C innermost) is read in its memory order as (N*H*W, C): the
// per-channel sums are column sums (mean, then the centered second moment),
// y = (x - mean) * (inv * scale) + bias runs on the same view and goes back
// through the inverse transpose.

// BN-LABEL: func.func @batchnorm_channels_last(
//  BN-SAME:     %[[X:[^:]*]]: tensor<2x3x4x5xf32> {dnn.strides = array<i64: 60, 1, 15, 3>}
//       BN:   %[[T:.*]] = "dnn.transpose"(%[[X]]) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32>
//       BN:   %[[R:.*]] = "dnn.reshape"(%[[T]]) : (tensor<2x4x5x3xf32>) -> tensor<40x3xf32>
//       BN:   %[[S:.*]] = "dnn.reduction"(%[[R]]) {axes = array<i64: 0>, keepdims = true, mode = "sum"} : (tensor<40x3xf32>) -> tensor<1x3xf32>
//       BN:   %[[MEAN:.*]] = "dnn.mul"(%[[S]], %{{.*}})
//       BN:   %[[C:.*]] = "dnn.sub"(%[[R]], %[[MEAN]])
//       BN:   %[[SQ:.*]] = "dnn.square"(%[[C]])
//       BN:   "dnn.reduction"(%[[SQ]]) {axes = array<i64: 0>, keepdims = true, mode = "sum"} : (tensor<40x3xf32>) -> tensor<1x3xf32>
//       BN:   %[[INV:.*]] = "dnn.rsqrt"
//       BN:   %[[A:.*]] = "dnn.mul"(%[[INV]], %{{.*}}) : (tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
//       BN:   %[[XA:.*]] = "dnn.mul"(%[[C]], %[[A]]) : (tensor<40x3xf32>, tensor<1x3xf32>) -> tensor<40x3xf32>
//       BN:   %[[Y:.*]] = "dnn.add"(%[[XA]], %{{.*}}) : (tensor<40x3xf32>, tensor<1x3xf32>) -> tensor<40x3xf32>
//       BN:   %[[Y4:.*]] = "dnn.reshape"(%[[Y]]) : (tensor<40x3xf32>) -> tensor<2x4x5x3xf32>
//       BN:   %[[YT:.*]] = "dnn.transpose"(%[[Y4]]) {permutation = array<i64: 0, 3, 1, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x3x4x5xf32>
//       BN:   %[[M:.*]] = "dnn.reshape"(%[[MEAN]]) : (tensor<1x3xf32>) -> tensor<1x3x1x1xf32>
//       BN:   %[[I:.*]] = "dnn.reshape"(%[[INV]]) : (tensor<1x3xf32>) -> tensor<1x3x1x1xf32>
//       BN:   return %[[YT]], %[[M]], %[[I]]
func.func @batchnorm_channels_last(%x: tensor<2x3x4x5xf32> {dnn.strides = array<i64: 60, 1, 15, 3>}, %scale: tensor<1x3x1x1xf32>, %bias: tensor<1x3x1x1xf32>) -> (tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) attributes {dnn.graph} {
  %y, %mean, %inv = "dnn.batchnorm"(%x, %scale, %bias) {epsilon = 1.0e-05 : f64, momentum = 1.0e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
  return %y, %mean, %inv : tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>
}

// -----

// A training batchnorm of a convolution's output: the GPU's convolutions
// write channels-last, so x is read as (N*H*W, C) as above (column sums),
// not in (N, C, H*W) planes. An inference batchnorm of it stays on x as it
// is (a per-channel multiply-add that joins the convolution's epilogue).

// BN-LABEL: func.func @batchnorm_of_convolution(
//       BN:   %[[Y:.*]] = "dnn.conv_fprop"
//       BN:   %[[T:.*]] = "dnn.transpose"(%[[Y]]) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<2x8x4x5xf32>) -> tensor<2x4x5x8xf32>
//       BN:   %[[R:.*]] = "dnn.reshape"(%[[T]]) : (tensor<2x4x5x8xf32>) -> tensor<40x8xf32>
//       BN:   "dnn.reduction"(%[[R]]) {axes = array<i64: 0>, keepdims = true, mode = "sum"} : (tensor<40x8xf32>) -> tensor<1x8xf32>
//       BN:   "dnn.transpose"(%{{.*}}) {permutation = array<i64: 0, 3, 1, 2>} : (tensor<2x4x5x8xf32>) -> tensor<2x8x4x5xf32>
//   BN-NOT:   dnn.transpose
//       BN:   return
func.func @batchnorm_of_convolution(%x: tensor<2x3x4x5xf32>, %w: tensor<8x3x1x1xf32>, %scale: tensor<1x8x1x1xf32>, %bias: tensor<1x8x1x1xf32>, %m: tensor<1x8x1x1xf32>, %v: tensor<1x8x1x1xf32>) -> (tensor<2x8x4x5xf32>, tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>, tensor<2x8x4x5xf32>) attributes {dnn.graph} {
  %c = "dnn.conv_fprop"(%x, %w) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x3x4x5xf32>, tensor<8x3x1x1xf32>) -> tensor<2x8x4x5xf32>
  %y, %mean, %inv = "dnn.batchnorm"(%c, %scale, %bias) {epsilon = 1.0e-05 : f64, momentum = 1.0e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<2x8x4x5xf32>, tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>) -> (tensor<2x8x4x5xf32>, tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>)
  %z = "dnn.batchnorm_inference"(%c, %scale, %bias, %m, %v) {epsilon = 1.0e-05 : f64} : (tensor<2x8x4x5xf32>, tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>) -> tensor<2x8x4x5xf32>
  return %y, %mean, %inv, %z : tensor<2x8x4x5xf32>, tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>, tensor<2x8x4x5xf32>
}

// -----

// Batchnorm backward on row-major x: (N, C, H*W) planes; dbias and dscale
// are row sums over H*W per (sample, channel), then column sums over N.

// BN-LABEL: func.func @batchnorm_backward_planes(
//   BN-NOT:   dnn.transpose
//       BN:   %[[DY:.*]] = "dnn.reshape"(%{{.*}}) : (tensor<2x3x4x5xf32>) -> tensor<2x3x20xf32>
//       BN:   %[[DB:.*]] = "dnn.reduction"(%[[DY]]) {axes = array<i64: 2>, keepdims = true, mode = "sum"} : (tensor<2x3x20xf32>) -> tensor<2x3x1xf32>
//       BN:   %[[DBN:.*]] = "dnn.reshape"(%[[DB]]) : (tensor<2x3x1xf32>) -> tensor<2x3xf32>
//       BN:   %[[DBIAS:.*]] = "dnn.reduction"(%[[DBN]]) {axes = array<i64: 0>, keepdims = true, mode = "sum"} : (tensor<2x3xf32>) -> tensor<1x3xf32>
//       BN:   %[[G:.*]] = "dnn.mul"(%[[DY]], %{{.*}}) : (tensor<2x3x20xf32>, tensor<2x3x20xf32>) -> tensor<2x3x20xf32>
//       BN:   "dnn.reduction"(%[[G]]) {axes = array<i64: 2>, keepdims = true, mode = "sum"} : (tensor<2x3x20xf32>) -> tensor<2x3x1xf32>
//       BN:   "dnn.reduction"(%{{.*}}) {axes = array<i64: 0>, keepdims = true, mode = "sum"} : (tensor<2x3xf32>) -> tensor<1x3xf32>
//       BN:   %[[DX:.*]] = "dnn.reshape"(%{{.*}}) : (tensor<2x3x20xf32>) -> tensor<2x3x4x5xf32>
//       BN:   return %[[DX]]
func.func @batchnorm_backward_planes(%dy: tensor<2x3x4x5xf32>, %x: tensor<2x3x4x5xf32>, %scale: tensor<1x3x1x1xf32>, %mean: tensor<1x3x1x1xf32>, %inv: tensor<1x3x1x1xf32>) -> (tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) attributes {dnn.graph} {
  %dx, %dscale, %dbias = "dnn.batchnorm_backward"(%dy, %x, %scale, %mean, %inv) : (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
  return %dx, %dscale, %dbias : tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>
}

// -----

// Inference batchnorm on channels-last x: y = x * a + c on the (N*H*W, C)
// view, a = scale * rsqrt(var + eps) and c = bias - mean * a per channel.

// BN-LABEL: func.func @batchnorm_inference_channels_last(
//       BN:   %[[A:.*]] = "dnn.mul"(%{{.*}}, %{{.*}}) : (tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
//       BN:   %[[C:.*]] = "dnn.sub"
//       BN:   %[[T:.*]] = "dnn.transpose"(%{{.*}}) {permutation = array<i64: 0, 2, 3, 1>}
//       BN:   %[[R:.*]] = "dnn.reshape"(%[[T]]) : (tensor<2x4x5x3xf32>) -> tensor<40x3xf32>
//       BN:   %[[XA:.*]] = "dnn.mul"(%[[R]], %[[A]]) : (tensor<40x3xf32>, tensor<1x3xf32>) -> tensor<40x3xf32>
//       BN:   %[[Y:.*]] = "dnn.add"(%[[XA]], %[[C]])
//       BN:   "dnn.transpose"(%{{.*}}) {permutation = array<i64: 0, 3, 1, 2>}
func.func @batchnorm_inference_channels_last(%x: tensor<2x3x4x5xf32> {dnn.strides = array<i64: 60, 1, 15, 3>}, %scale: tensor<1x3x1x1xf32>, %bias: tensor<1x3x1x1xf32>, %mean: tensor<1x3x1x1xf32>, %var: tensor<1x3x1x1xf32>) -> tensor<2x3x4x5xf32> attributes {dnn.graph} {
  %0 = "dnn.batchnorm_inference"(%x, %scale, %bias, %mean, %var) {epsilon = 1.0e-05 : f64} : (tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// groupnorm of a channels-last x: x in its memory order, (N, S, C); the
// per-channel sums over S (a column program per sample), then per group
// over C/G; the mean and inv spread back per channel; the parameters read as
// (1, 1, C); y back through the inverse transpose.

// ALL-LABEL: func.func @groupnorm_channels_last(
// ALL: %[[T:.*]] = "dnn.transpose"(%{{.*}}) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<2x6x4x5xf32>) -> tensor<2x4x5x6xf32>
// ALL: %[[V:.*]] = "dnn.reshape"(%[[T]]) : (tensor<2x4x5x6xf32>) -> tensor<2x20x6xf32>
// ALL: %[[SUMS:.*]] = "dnn.reduction"(%[[V]]) {axes = array<i64: 1>, keepdims = true, mode = "sum"} : (tensor<2x20x6xf32>) -> tensor<2x1x6xf32>
// ALL: %[[G:.*]] = "dnn.reshape"(%[[SUMS]]) : (tensor<2x1x6xf32>) -> tensor<2x3x2xf32>
// ALL: "dnn.reduction"(%[[G]]) {axes = array<i64: 2>, keepdims = true, mode = "sum"} : (tensor<2x3x2xf32>) -> tensor<2x3x1xf32>
// ALL: %[[MEAN:.*]] = "dnn.reshape"(%{{.*}}) : (tensor<2x3x2xf32>) -> tensor<2x1x6xf32>
// ALL: %[[D:.*]] = "dnn.sub"(%[[V]], %[[MEAN]]) : (tensor<2x20x6xf32>, tensor<2x1x6xf32>) -> tensor<2x20x6xf32>
// ALL: "dnn.reduction"(%{{.*}}) {axes = array<i64: 1>, keepdims = true, mode = "sum"} : (tensor<2x20x6xf32>) -> tensor<2x1x6xf32>
// ALL: "dnn.reduction"(%{{.*}}) {axes = array<i64: 2>, keepdims = true, mode = "sum"} : (tensor<2x3x2xf32>) -> tensor<2x3x1xf32>
// ALL: %[[S:.*]] = "dnn.reshape"(%{{.*}}) : (tensor<1x6x1x1xf32>) -> tensor<1x1x6xf32>
// ALL: %[[B:.*]] = "dnn.reshape"(%{{.*}}) : (tensor<1x6x1x1xf32>) -> tensor<1x1x6xf32>
// ALL: %[[INV:.*]] = "dnn.reshape"(%{{.*}}) : (tensor<2x3x2xf32>) -> tensor<2x1x6xf32>
// ALL: %[[XHAT:.*]] = "dnn.mul"(%[[D]], %[[INV]])
// ALL: %[[YS:.*]] = "dnn.mul"(%[[XHAT]], %[[S]]) : (tensor<2x20x6xf32>, tensor<1x1x6xf32>) -> tensor<2x20x6xf32>
// ALL: %[[Y:.*]] = "dnn.add"(%[[YS]], %[[B]]) : (tensor<2x20x6xf32>, tensor<1x1x6xf32>) -> tensor<2x20x6xf32>
// ALL: %[[YM:.*]] = "dnn.reshape"(%[[Y]]) : (tensor<2x20x6xf32>) -> tensor<2x4x5x6xf32>
// ALL: %[[R:.*]] = "dnn.transpose"(%[[YM]]) {permutation = array<i64: 0, 3, 1, 2>} : (tensor<2x4x5x6xf32>) -> tensor<2x6x4x5xf32>
// ALL: return %[[R]]
func.func @groupnorm_channels_last(%x: tensor<2x6x4x5xf32> {dnn.strides = array<i64: 120, 1, 30, 6>}, %scale: tensor<1x6x1x1xf32> {dnn.strides = array<i64: 6, 1, 6, 6>}, %bias: tensor<1x6x1x1xf32>) -> (tensor<2x6x4x5xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) attributes {dnn.graph} {
  %y, %mean, %inv = "dnn.groupnorm"(%x, %scale, %bias) {epsilon = 1.0e-05 : f64, groups = 3 : i64, training = true, operandSegmentSizes = array<i32: 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x6x4x5xf32>, tensor<1x6x1x1xf32>, tensor<1x6x1x1xf32>) -> (tensor<2x6x4x5xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>)
  return %y, %mean, %inv : tensor<2x6x4x5xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>
}

// -----

// instancenorm_backward of a channels-last dy and x: ds = sum(dy * x) and
// db = sum(dy) over the middle axis of (N, S, C), the coefficients of dx on
// (N, 1, C) (mean and inv viewed so), dx in the same view, dscale and dbias
// sums over the samples.

// ALL-LABEL: func.func @instancenorm_backward_channels_last(
// ALL: %[[DY:.*]] = "dnn.reshape"(%{{.*}}) : (tensor<2x4x5x3xf32>) -> tensor<2x20x3xf32>
// ALL: %[[X:.*]] = "dnn.reshape"(%{{.*}}) : (tensor<2x4x5x3xf32>) -> tensor<2x20x3xf32>
// ALL: %[[DYX:.*]] = "dnn.mul"(%[[DY]], %[[X]])
// ALL: %[[DS:.*]] = "dnn.reduction"(%[[DYX]]) {axes = array<i64: 1>, keepdims = true, mode = "sum"} : (tensor<2x20x3xf32>) -> tensor<2x1x3xf32>
// ALL: %[[DB:.*]] = "dnn.reduction"(%[[DY]]) {axes = array<i64: 1>, keepdims = true, mode = "sum"} : (tensor<2x20x3xf32>) -> tensor<2x1x3xf32>
// ALL: "dnn.reshape"(%{{.*}}) : (tensor<2x3x1x1xf32>) -> tensor<2x1x3xf32>
// ALL: "dnn.reshape"(%{{.*}}) : (tensor<1x3x1x1xf32>) -> tensor<1x1x3xf32>
// ALL-NOT: dnn.transpose
// ALL: %[[DX:.*]] = "dnn.add"(%{{.*}}, %{{.*}}) : (tensor<2x20x3xf32>, tensor<2x1x3xf32>) -> tensor<2x20x3xf32>
// ALL: "dnn.reshape"(%[[DX]]) : (tensor<2x20x3xf32>) -> tensor<2x4x5x3xf32>
// ALL: "dnn.transpose"(%{{.*}}) {permutation = array<i64: 0, 3, 1, 2>}
// ALL: "dnn.reduction"(%{{.*}}) {axes = array<i64: 0>, keepdims = true, mode = "sum"} : (tensor<2x3xf32>) -> tensor<1x3xf32>
// ALL: "dnn.reduction"(%{{.*}}) {axes = array<i64: 0>, keepdims = true, mode = "sum"} : (tensor<2x3xf32>) -> tensor<1x3xf32>
func.func @instancenorm_backward_channels_last(%dy: tensor<2x3x4x5xf32> {dnn.strides = array<i64: 60, 1, 15, 3>}, %x: tensor<2x3x4x5xf32> {dnn.strides = array<i64: 60, 1, 15, 3>}, %scale: tensor<1x3x1x1xf32>, %mean: tensor<2x3x1x1xf32>, %inv: tensor<2x3x1x1xf32>) -> (tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) attributes {dnn.graph} {
  %dx, %ds, %db = "dnn.instancenorm_backward"(%dy, %x, %scale, %mean, %inv) {has_bias = true, resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) -> (tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
  return %dx, %ds, %db : tensor<2x3x4x5xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>
}
