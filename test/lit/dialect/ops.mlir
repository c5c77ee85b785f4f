// Round trip of every dnn op: each prints back as it was written, and the
// printed form parses and prints again unchanged. Each element type
// (f32, f16, bf16, f8E4M3FN, f8E5M2, i1, i32, si8, ui8) appears somewhere.

// RUN: dnnc-opt %s --split-input-file | FileCheck %s
// RUN: dnnc-opt %s --split-input-file | dnnc-opt --split-input-file | FileCheck %s

// ============================================================================
// Pointwise: unary math and activations, binary ops with broadcasting,
// comparisons and logic on i1, select, gen_index, activation backward.
// ============================================================================

// CHECK-LABEL: func.func @relu(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.relu"(%[[X]]) : (tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @relu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @gelu_exact(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf16>) -> tensor<2x3xf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.gelu"(%[[X]]) : (tensor<2x3xf16>) -> tensor<2x3xf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf16>
func.func @gelu_exact(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %y = "dnn.gelu"(%x) : (tensor<2x3xf16>) -> tensor<2x3xf16>
  return %y : tensor<2x3xf16>
}

// -----

// CHECK-LABEL: func.func @gelu_tanh(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf16>) -> tensor<2x3xf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.gelu"(%[[X]]) {approximate = "tanh"} : (tensor<2x3xf16>) -> tensor<2x3xf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf16>
func.func @gelu_tanh(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %y = "dnn.gelu"(%x) {approximate = "tanh"} : (tensor<2x3xf16>) -> tensor<2x3xf16>
  return %y : tensor<2x3xf16>
}

// -----

// CHECK-LABEL: func.func @silu(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xbf16>) -> tensor<2x3xbf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.silu"(%[[X]]) : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xbf16>
func.func @silu(%x: tensor<2x3xbf16>) -> tensor<2x3xbf16> {
  %y = "dnn.silu"(%x) : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
  return %y : tensor<2x3xbf16>
}

// -----

// CHECK-LABEL: func.func @swish_beta(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.swish"(%[[X]]) {beta = 2.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @swish_beta(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.swish"(%x) {beta = 2.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @sigmoid_fp8_e4m3(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf8E4M3FN>) -> tensor<2x3xf8E4M3FN>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.sigmoid"(%[[X]]) : (tensor<2x3xf8E4M3FN>) -> tensor<2x3xf8E4M3FN>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf8E4M3FN>
func.func @sigmoid_fp8_e4m3(%x: tensor<2x3xf8E4M3FN>) -> tensor<2x3xf8E4M3FN> {
  %y = "dnn.sigmoid"(%x) : (tensor<2x3xf8E4M3FN>) -> tensor<2x3xf8E4M3FN>
  return %y : tensor<2x3xf8E4M3FN>
}

// -----

// CHECK-LABEL: func.func @tanh_fp8_e5m2(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf8E5M2>) -> tensor<2x3xf8E5M2>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.tanh"(%[[X]]) : (tensor<2x3xf8E5M2>) -> tensor<2x3xf8E5M2>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf8E5M2>
func.func @tanh_fp8_e5m2(%x: tensor<2x3xf8E5M2>) -> tensor<2x3xf8E5M2> {
  %y = "dnn.tanh"(%x) : (tensor<2x3xf8E5M2>) -> tensor<2x3xf8E5M2>
  return %y : tensor<2x3xf8E5M2>
}

// -----

// CHECK-LABEL: func.func @elu_alpha(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.elu"(%[[X]]) {alpha = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @elu_alpha(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.elu"(%x) {alpha = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @leaky_relu_slope(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xbf16>) -> tensor<2x3xbf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.leaky_relu"(%[[X]]) {negative_slope = 2.000000e-01 : f64} : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xbf16>
func.func @leaky_relu_slope(%x: tensor<2x3xbf16>) -> tensor<2x3xbf16> {
  %y = "dnn.leaky_relu"(%x) {negative_slope = 2.000000e-01 : f64} : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
  return %y : tensor<2x3xbf16>
}

// -----

// CHECK-LABEL: func.func @softplus_beta_threshold(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.softplus"(%[[X]]) {beta = 2.000000e+00 : f64, threshold = 1.000000e+01 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @softplus_beta_threshold(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.softplus"(%x) {beta = 2.000000e+00 : f64, threshold = 1.000000e+01 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @exp(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf16>) -> tensor<2x3xf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.exp"(%[[X]]) : (tensor<2x3xf16>) -> tensor<2x3xf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf16>
func.func @exp(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %y = "dnn.exp"(%x) : (tensor<2x3xf16>) -> tensor<2x3xf16>
  return %y : tensor<2x3xf16>
}

// -----

// CHECK-LABEL: func.func @log(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.log"(%[[X]]) : (tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @log(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.log"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @sqrt(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.sqrt"(%[[X]]) : (tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @sqrt(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.sqrt"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @rsqrt(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xbf16>) -> tensor<2x3xbf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.rsqrt"(%[[X]]) : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xbf16>
func.func @rsqrt(%x: tensor<2x3xbf16>) -> tensor<2x3xbf16> {
  %y = "dnn.rsqrt"(%x) : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
  return %y : tensor<2x3xbf16>
}

// -----

// CHECK-LABEL: func.func @abs(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.abs"(%[[X]]) : (tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @abs(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.abs"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @neg(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf16>) -> tensor<2x3xf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.neg"(%[[X]]) : (tensor<2x3xf16>) -> tensor<2x3xf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf16>
func.func @neg(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %y = "dnn.neg"(%x) : (tensor<2x3xf16>) -> tensor<2x3xf16>
  return %y : tensor<2x3xf16>
}

// -----

// CHECK-LABEL: func.func @square(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.square"(%[[X]]) : (tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @square(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.square"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @reciprocal(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.reciprocal"(%[[X]]) : (tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @reciprocal(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.reciprocal"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @sin(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.sin"(%[[X]]) : (tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @sin(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.sin"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @cos(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.cos"(%[[X]]) : (tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @cos(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.cos"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @erf(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.erf"(%[[X]]) : (tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @erf(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.erf"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @floor(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.floor"(%[[X]]) : (tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @floor(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.floor"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @ceil(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.ceil"(%[[X]]) : (tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @ceil(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.ceil"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @unary_result_type_may_differ(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xbf16>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.exp"(%[[X]]) : (tensor<2x3xbf16>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @unary_result_type_may_differ(%x: tensor<2x3xbf16>) -> tensor<2x3xf32> {
  %y = "dnn.exp"(%x) : (tensor<2x3xbf16>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @add_broadcast_trailing(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.add"(%[[A]], %[[B]]) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @add_broadcast_trailing(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @sub_broadcast_both(
//  CHECK-SAME:     %[[A:.*]]: tensor<4x1xf16>, %[[B:.*]]: tensor<1x5xf16>) -> tensor<4x5xf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.sub"(%[[A]], %[[B]]) : (tensor<4x1xf16>, tensor<1x5xf16>) -> tensor<4x5xf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<4x5xf16>
func.func @sub_broadcast_both(%a: tensor<4x1xf16>, %b: tensor<1x5xf16>) -> tensor<4x5xf16> {
  %y = "dnn.sub"(%a, %b) : (tensor<4x1xf16>, tensor<1x5xf16>) -> tensor<4x5xf16>
  return %y : tensor<4x5xf16>
}

// -----

// CHECK-LABEL: func.func @mul(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x3xbf16>, %[[B:.*]]: tensor<2x3xbf16>) -> tensor<2x3xbf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.mul"(%[[A]], %[[B]]) : (tensor<2x3xbf16>, tensor<2x3xbf16>) -> tensor<2x3xbf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xbf16>
func.func @mul(%a: tensor<2x3xbf16>, %b: tensor<2x3xbf16>) -> tensor<2x3xbf16> {
  %y = "dnn.mul"(%a, %b) : (tensor<2x3xbf16>, tensor<2x3xbf16>) -> tensor<2x3xbf16>
  return %y : tensor<2x3xbf16>
}

// -----

// CHECK-LABEL: func.func @div_by_scalar(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<f32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.div"(%[[A]], %[[B]]) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @div_by_scalar(%a: tensor<2x3xf32>, %b: tensor<f32>) -> tensor<2x3xf32> {
  %y = "dnn.div"(%a, %b) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @max(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.max"(%[[A]], %[[B]]) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @max(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.max"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @min(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.min"(%[[A]], %[[B]]) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @min(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.min"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @pow(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.pow"(%[[A]], %[[B]]) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @pow(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.pow"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @cmp_eq_gives_i1(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>) -> tensor<2x3xi1>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.cmp_eq"(%[[A]], %[[B]]) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xi1>
func.func @cmp_eq_gives_i1(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xi1> {
  %y = "dnn.cmp_eq"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @cmp_ne(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x3xf32>) -> tensor<2x3xi1>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.cmp_ne"(%[[A]], %[[B]]) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xi1>
func.func @cmp_ne(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xi1> {
  %y = "dnn.cmp_ne"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @cmp_lt(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x3xf16>, %[[B:.*]]: tensor<2x3xf16>) -> tensor<2x3xi1>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.cmp_lt"(%[[A]], %[[B]]) : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xi1>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xi1>
func.func @cmp_lt(%a: tensor<2x3xf16>, %b: tensor<2x3xf16>) -> tensor<2x3xi1> {
  %y = "dnn.cmp_lt"(%a, %b) : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @cmp_le(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x3xf32>) -> tensor<2x3xi1>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.cmp_le"(%[[A]], %[[B]]) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xi1>
func.func @cmp_le(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xi1> {
  %y = "dnn.cmp_le"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @cmp_gt(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x3xbf16>, %[[B:.*]]: tensor<bf16>) -> tensor<2x3xi1>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.cmp_gt"(%[[A]], %[[B]]) : (tensor<2x3xbf16>, tensor<bf16>) -> tensor<2x3xi1>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xi1>
func.func @cmp_gt(%a: tensor<2x3xbf16>, %b: tensor<bf16>) -> tensor<2x3xi1> {
  %y = "dnn.cmp_gt"(%a, %b) : (tensor<2x3xbf16>, tensor<bf16>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @cmp_ge(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x3xf32>) -> tensor<2x3xi1>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.cmp_ge"(%[[A]], %[[B]]) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xi1>
func.func @cmp_ge(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xi1> {
  %y = "dnn.cmp_ge"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @logical_and(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x3xi1>, %[[B:.*]]: tensor<2x3xi1>) -> tensor<2x3xi1>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.logical_and"(%[[A]], %[[B]]) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xi1>
func.func @logical_and(%a: tensor<2x3xi1>, %b: tensor<2x3xi1>) -> tensor<2x3xi1> {
  %y = "dnn.logical_and"(%a, %b) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @logical_or_broadcast(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x1xi1>, %[[B:.*]]: tensor<1x3xi1>) -> tensor<2x3xi1>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.logical_or"(%[[A]], %[[B]]) : (tensor<2x1xi1>, tensor<1x3xi1>) -> tensor<2x3xi1>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xi1>
func.func @logical_or_broadcast(%a: tensor<2x1xi1>, %b: tensor<1x3xi1>) -> tensor<2x3xi1> {
  %y = "dnn.logical_or"(%a, %b) : (tensor<2x1xi1>, tensor<1x3xi1>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @logical_not(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xi1>) -> tensor<2x3xi1>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.logical_not"(%[[X]]) : (tensor<2x3xi1>) -> tensor<2x3xi1>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xi1>
func.func @logical_not(%x: tensor<2x3xi1>) -> tensor<2x3xi1> {
  %y = "dnn.logical_not"(%x) : (tensor<2x3xi1>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @select_broadcast(
//  CHECK-SAME:     %[[COND:.*]]: tensor<2x3xi1>, %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<f32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.select"(%[[COND]], %[[A]], %[[B]]) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @select_broadcast(%cond: tensor<2x3xi1>, %a: tensor<2x3xf32>, %b: tensor<f32>) -> tensor<2x3xf32> {
  %y = "dnn.select"(%cond, %a, %b) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @gen_index(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf16>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.gen_index"(%[[X]]) {axis = 1 : i64} : (tensor<2x3xf16>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @gen_index(%x: tensor<2x3xf16>) -> tensor<2x3xf32> {
  %y = "dnn.gen_index"(%x) {axis = 1 : i64} : (tensor<2x3xf16>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @gen_index_of_i1(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xi1>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.gen_index"(%[[X]]) {axis = 0 : i64} : (tensor<2x3xi1>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @gen_index_of_i1(%x: tensor<2x3xi1>) -> tensor<2x3xf32> {
  %y = "dnn.gen_index"(%x) {axis = 0 : i64} : (tensor<2x3xi1>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @relu_backward(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3xf32>, %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.relu_backward"(%[[DY]], %[[X]]) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[DX]] : tensor<2x3xf32>
func.func @relu_backward(%dy: tensor<2x3xf32>, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %dx = "dnn.relu_backward"(%dy, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %dx : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @gelu_backward_tanh(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3xbf16>, %[[X:.*]]: tensor<2x3xbf16>) -> tensor<2x3xbf16>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.gelu_backward"(%[[DY]], %[[X]]) {approximate = "tanh"} : (tensor<2x3xbf16>, tensor<2x3xbf16>) -> tensor<2x3xbf16>
//  CHECK-NEXT:   return %[[DX]] : tensor<2x3xbf16>
func.func @gelu_backward_tanh(%dy: tensor<2x3xbf16>, %x: tensor<2x3xbf16>) -> tensor<2x3xbf16> {
  %dx = "dnn.gelu_backward"(%dy, %x) {approximate = "tanh"} : (tensor<2x3xbf16>, tensor<2x3xbf16>) -> tensor<2x3xbf16>
  return %dx : tensor<2x3xbf16>
}

// -----

// CHECK-LABEL: func.func @silu_backward(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3xf32>, %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.silu_backward"(%[[DY]], %[[X]]) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[DX]] : tensor<2x3xf32>
func.func @silu_backward(%dy: tensor<2x3xf32>, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %dx = "dnn.silu_backward"(%dy, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %dx : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @sigmoid_backward(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3xf32>, %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.sigmoid_backward"(%[[DY]], %[[X]]) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[DX]] : tensor<2x3xf32>
func.func @sigmoid_backward(%dy: tensor<2x3xf32>, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %dx = "dnn.sigmoid_backward"(%dy, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %dx : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @tanh_backward(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3xf16>, %[[X:.*]]: tensor<2x3xf16>) -> tensor<2x3xf16>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.tanh_backward"(%[[DY]], %[[X]]) : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
//  CHECK-NEXT:   return %[[DX]] : tensor<2x3xf16>
func.func @tanh_backward(%dy: tensor<2x3xf16>, %x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %dx = "dnn.tanh_backward"(%dy, %x) : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
  return %dx : tensor<2x3xf16>
}

// -----

// CHECK-LABEL: func.func @softplus_backward_attrs(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3xbf16>, %[[X:.*]]: tensor<3xbf16>) -> tensor<2x3xbf16>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.softplus_backward"(%[[DY]], %[[X]]) {beta = 2.000000e+00 : f64, threshold = 1.000000e+01 : f64} : (tensor<2x3xbf16>, tensor<3xbf16>) -> tensor<2x3xbf16>
//  CHECK-NEXT:   return %[[DX]] : tensor<2x3xbf16>
func.func @softplus_backward_attrs(%dy: tensor<2x3xbf16>, %x: tensor<3xbf16>) -> tensor<2x3xbf16> {
  %dx = "dnn.softplus_backward"(%dy, %x) {beta = 2.000000e+00 : f64, threshold = 1.000000e+01 : f64} : (tensor<2x3xbf16>, tensor<3xbf16>) -> tensor<2x3xbf16>
  return %dx : tensor<2x3xbf16>
}

// -----

// CHECK-LABEL: func.func @elu_backward_default_alpha(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3xf32>, %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.elu_backward"(%[[DY]], %[[X]]) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[DX]] : tensor<2x3xf32>
func.func @elu_backward_default_alpha(%dy: tensor<2x3xf32>, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %dx = "dnn.elu_backward"(%dy, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %dx : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @leaky_relu_backward_slope(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3xf16>, %[[X:.*]]: tensor<2x3xf16>) -> tensor<2x3xf16>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.leaky_relu_backward"(%[[DY]], %[[X]]) {negative_slope = 2.000000e-01 : f64} : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
//  CHECK-NEXT:   return %[[DX]] : tensor<2x3xf16>
func.func @leaky_relu_backward_slope(%dy: tensor<2x3xf16>, %x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %dx = "dnn.leaky_relu_backward"(%dy, %x) {negative_slope = 2.000000e-01 : f64} : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
  return %dx : tensor<2x3xf16>
}

// -----

// CHECK-LABEL: func.func @swish_backward_beta(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3xf32>, %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.swish_backward"(%[[DY]], %[[X]]) {beta = 1.702000e+00 : f64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[DX]] : tensor<2x3xf32>
func.func @swish_backward_beta(%dy: tensor<2x3xf32>, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %dx = "dnn.swish_backward"(%dy, %x) {beta = 1.702000e+00 : f64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %dx : tensor<2x3xf32>
}

// -----

// ============================================================================
// Tensor ops: cast, constant, reshape, transpose, slice, concat.
// ============================================================================

// CHECK-LABEL: func.func @cast_between_float_types(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>, %[[H:.*]]: tensor<2x3xf16>) -> (tensor<2x3xbf16>, tensor<2x3xf8E4M3FN>, tensor<2x3xf8E5M2>)
//  CHECK-NEXT:   %[[BF:.*]] = "dnn.cast"(%[[X]]) : (tensor<2x3xf32>) -> tensor<2x3xbf16>
//  CHECK-NEXT:   %[[E4:.*]] = "dnn.cast"(%[[H]]) : (tensor<2x3xf16>) -> tensor<2x3xf8E4M3FN>
//  CHECK-NEXT:   %[[E5:.*]] = "dnn.cast"(%[[X]]) : (tensor<2x3xf32>) -> tensor<2x3xf8E5M2>
//  CHECK-NEXT:   return %[[BF]], %[[E4]], %[[E5]] : tensor<2x3xbf16>, tensor<2x3xf8E4M3FN>, tensor<2x3xf8E5M2>
func.func @cast_between_float_types(%x: tensor<2x3xf32>, %h: tensor<2x3xf16>) -> (tensor<2x3xbf16>, tensor<2x3xf8E4M3FN>, tensor<2x3xf8E5M2>) {
  %bf = "dnn.cast"(%x) : (tensor<2x3xf32>) -> tensor<2x3xbf16>
  %e4 = "dnn.cast"(%h) : (tensor<2x3xf16>) -> tensor<2x3xf8E4M3FN>
  %e5 = "dnn.cast"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf8E5M2>
  return %bf, %e4, %e5 : tensor<2x3xbf16>, tensor<2x3xf8E4M3FN>, tensor<2x3xf8E5M2>
}

// -----

// CHECK-LABEL: func.func @cast_to_and_from_i1(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>, %[[M:.*]]: tensor<2x3xi1>) -> (tensor<2x3xi1>, tensor<2x3xf16>)
//  CHECK-NEXT:   %[[B:.*]] = "dnn.cast"(%[[X]]) : (tensor<2x3xf32>) -> tensor<2x3xi1>
//  CHECK-NEXT:   %[[F:.*]] = "dnn.cast"(%[[M]]) : (tensor<2x3xi1>) -> tensor<2x3xf16>
//  CHECK-NEXT:   return %[[B]], %[[F]] : tensor<2x3xi1>, tensor<2x3xf16>
func.func @cast_to_and_from_i1(%x: tensor<2x3xf32>, %m: tensor<2x3xi1>) -> (tensor<2x3xi1>, tensor<2x3xf16>) {
  %b = "dnn.cast"(%x) : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %f = "dnn.cast"(%m) : (tensor<2x3xi1>) -> tensor<2x3xf16>
  return %b, %f : tensor<2x3xi1>, tensor<2x3xf16>
}

// -----

// CHECK-LABEL: func.func @constant_scalar(
//  CHECK-SAME:     ) -> (tensor<f32>, tensor<bf16>)
//  CHECK-NEXT:   %[[C:.*]] = "dnn.constant"() {value = 2.500000e+00 : f64} : () -> tensor<f32>
//  CHECK-NEXT:   %[[N:.*]] = "dnn.constant"() {value = -1.000000e+00 : f64} : () -> tensor<bf16>
//  CHECK-NEXT:   return %[[C]], %[[N]] : tensor<f32>, tensor<bf16>
func.func @constant_scalar() -> (tensor<f32>, tensor<bf16>) {
  %c = "dnn.constant"() {value = 2.500000e+00 : f64} : () -> tensor<f32>
  %n = "dnn.constant"() {value = -1.000000e+00 : f64} : () -> tensor<bf16>
  return %c, %n : tensor<f32>, tensor<bf16>
}

// -----

// CHECK-LABEL: func.func @reshape(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3x4xf32>) -> tensor<6x4xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.reshape"(%[[X]]) : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<6x4xf32>
func.func @reshape(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %y = "dnn.reshape"(%x) : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  return %y : tensor<6x4xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_i1_to_scalar(
//  CHECK-SAME:     %[[X:.*]]: tensor<1x1xi1>) -> tensor<i1>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.reshape"(%[[X]]) : (tensor<1x1xi1>) -> tensor<i1>
//  CHECK-NEXT:   return %[[Y]] : tensor<i1>
func.func @reshape_i1_to_scalar(%x: tensor<1x1xi1>) -> tensor<i1> {
  %y = "dnn.reshape"(%x) : (tensor<1x1xi1>) -> tensor<i1>
  return %y : tensor<i1>
}

// -----

// CHECK-LABEL: func.func @transpose(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3x4xf16>) -> tensor<4x2x3xf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.transpose"(%[[X]]) {permutation = array<i64: 2, 0, 1>} : (tensor<2x3x4xf16>) -> tensor<4x2x3xf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<4x2x3xf16>
func.func @transpose(%x: tensor<2x3x4xf16>) -> tensor<4x2x3xf16> {
  %y = "dnn.transpose"(%x) {permutation = array<i64: 2, 0, 1>} : (tensor<2x3x4xf16>) -> tensor<4x2x3xf16>
  return %y : tensor<4x2x3xf16>
}

// -----

// CHECK-LABEL: func.func @slice_with_steps(
//  CHECK-SAME:     %[[X:.*]]: tensor<8x6xf32>) -> tensor<3x2xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.slice"(%[[X]]) {limit = array<i64: 7, 6>, start = array<i64: 1, 0>, step = array<i64: 2, 3>} : (tensor<8x6xf32>) -> tensor<3x2xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<3x2xf32>
func.func @slice_with_steps(%x: tensor<8x6xf32>) -> tensor<3x2xf32> {
  %y = "dnn.slice"(%x) {limit = array<i64: 7, 6>, start = array<i64: 1, 0>, step = array<i64: 2, 3>} : (tensor<8x6xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @slice_empty(
//  CHECK-SAME:     %[[X:.*]]: tensor<8x6xf32>) -> tensor<0x6xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.slice"(%[[X]]) {limit = array<i64: 4, 6>, start = array<i64: 4, 0>, step = array<i64: 1, 1>} : (tensor<8x6xf32>) -> tensor<0x6xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<0x6xf32>
func.func @slice_empty(%x: tensor<8x6xf32>) -> tensor<0x6xf32> {
  %y = "dnn.slice"(%x) {limit = array<i64: 4, 6>, start = array<i64: 4, 0>, step = array<i64: 1, 1>} : (tensor<8x6xf32>) -> tensor<0x6xf32>
  return %y : tensor<0x6xf32>
}

// -----

// CHECK-LABEL: func.func @concat_different_sizes(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x3xf16>, %[[B:.*]]: tensor<2x5xf16>) -> tensor<2x8xf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.concat"(%[[A]], %[[B]]) {axis = 1 : i64} : (tensor<2x3xf16>, tensor<2x5xf16>) -> tensor<2x8xf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x8xf16>
func.func @concat_different_sizes(%a: tensor<2x3xf16>, %b: tensor<2x5xf16>) -> tensor<2x8xf16> {
  %y = "dnn.concat"(%a, %b) {axis = 1 : i64} : (tensor<2x3xf16>, tensor<2x5xf16>) -> tensor<2x8xf16>
  return %y : tensor<2x8xf16>
}

// -----

// CHECK-LABEL: func.func @concat_chain_of_booleans(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x3xi1>, %[[B:.*]]: tensor<1x3xi1>) -> tensor<5x3xi1>
//  CHECK-NEXT:   %[[AB:.*]] = "dnn.concat"(%[[A]], %[[B]]) {axis = 0 : i64} : (tensor<2x3xi1>, tensor<1x3xi1>) -> tensor<3x3xi1>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.concat"(%[[AB]], %[[A]]) {axis = 0 : i64} : (tensor<3x3xi1>, tensor<2x3xi1>) -> tensor<5x3xi1>
//  CHECK-NEXT:   return %[[Y]] : tensor<5x3xi1>
func.func @concat_chain_of_booleans(%a: tensor<2x3xi1>, %b: tensor<1x3xi1>) -> tensor<5x3xi1> {
  %ab = "dnn.concat"(%a, %b) {axis = 0 : i64} : (tensor<2x3xi1>, tensor<1x3xi1>) -> tensor<3x3xi1>
  %y = "dnn.concat"(%ab, %a) {axis = 0 : i64} : (tensor<3x3xi1>, tensor<2x3xi1>) -> tensor<5x3xi1>
  return %y : tensor<5x3xi1>
}

// -----

// ============================================================================
// Matmul and convolution (2D and 3D, forward, data and filter gradient).
// ============================================================================

// CHECK-LABEL: func.func @matmul(
//  CHECK-SAME:     %[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x5xf32>) -> tensor<4x5xf32>
//  CHECK-NEXT:   %[[C:.*]] = "dnn.matmul"(%[[A]], %[[B]]) : (tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
//  CHECK-NEXT:   return %[[C]] : tensor<4x5xf32>
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>) -> tensor<4x5xf32> {
  %c = "dnn.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
  return %c : tensor<4x5xf32>
}

// -----

// fp8 operands with 1x128 scales of a (one per row and 128-wide K block) and
// 128x128 scales of b: K = 200 is two blocks, N = 130 two column blocks.
// CHECK-LABEL: func.func @matmul_block_scaled(
//  CHECK-SAME:     %[[A:.*]]: tensor<4x200xf8E4M3FN>, %[[B:.*]]: tensor<200x130xf8E5M2>, %[[SA:.*]]: tensor<4x2xf32>, %[[SB:.*]]: tensor<2x2xf32>) -> tensor<4x130xbf16>
//  CHECK-NEXT:   %[[C:.*]] = "dnn.matmul_block_scaled"(%[[A]], %[[B]], %[[SA]], %[[SB]]) : (tensor<4x200xf8E4M3FN>, tensor<200x130xf8E5M2>, tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x130xbf16>
//  CHECK-NEXT:   return %[[C]] : tensor<4x130xbf16>
func.func @matmul_block_scaled(%a: tensor<4x200xf8E4M3FN>, %b: tensor<200x130xf8E5M2>, %sa: tensor<4x2xf32>, %sb: tensor<2x2xf32>) -> tensor<4x130xbf16> {
  %c = "dnn.matmul_block_scaled"(%a, %b, %sa, %sb) : (tensor<4x200xf8E4M3FN>, tensor<200x130xf8E5M2>, tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x130xbf16>
  return %c : tensor<4x130xbf16>
}

// -----

// CHECK-LABEL: func.func @matmul_batch_broadcast(
//  CHECK-SAME:     %[[A:.*]]: tensor<1x4x8xbf16>, %[[B:.*]]: tensor<3x8x5xbf16>) -> tensor<3x4x5xbf16>
//  CHECK-NEXT:   %[[C:.*]] = "dnn.matmul"(%[[A]], %[[B]]) : (tensor<1x4x8xbf16>, tensor<3x8x5xbf16>) -> tensor<3x4x5xbf16>
//  CHECK-NEXT:   return %[[C]] : tensor<3x4x5xbf16>
func.func @matmul_batch_broadcast(%a: tensor<1x4x8xbf16>, %b: tensor<3x8x5xbf16>) -> tensor<3x4x5xbf16> {
  %c = "dnn.matmul"(%a, %b) : (tensor<1x4x8xbf16>, tensor<3x8x5xbf16>) -> tensor<3x4x5xbf16>
  return %c : tensor<3x4x5xbf16>
}

// -----

// CHECK-LABEL: func.func @matmul_rank2_times_batched(
//  CHECK-SAME:     %[[A:.*]]: tensor<4x8xf16>, %[[B:.*]]: tensor<2x3x8x5xf16>) -> tensor<2x3x4x5xf16>
//  CHECK-NEXT:   %[[C:.*]] = "dnn.matmul"(%[[A]], %[[B]]) : (tensor<4x8xf16>, tensor<2x3x8x5xf16>) -> tensor<2x3x4x5xf16>
//  CHECK-NEXT:   return %[[C]] : tensor<2x3x4x5xf16>
func.func @matmul_rank2_times_batched(%a: tensor<4x8xf16>, %b: tensor<2x3x8x5xf16>) -> tensor<2x3x4x5xf16> {
  %c = "dnn.matmul"(%a, %b) : (tensor<4x8xf16>, tensor<2x3x8x5xf16>) -> tensor<2x3x4x5xf16>
  return %c : tensor<2x3x4x5xf16>
}

// -----

// CHECK-LABEL: func.func @matmul_tf32(
//  CHECK-SAME:     %[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x5xf32>) -> tensor<4x5xf32>
//  CHECK-NEXT:   %[[C:.*]] = "dnn.matmul"(%[[A]], %[[B]]) {compute_type = tf32} : (tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
//  CHECK-NEXT:   return %[[C]] : tensor<4x5xf32>
func.func @matmul_tf32(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>) -> tensor<4x5xf32> {
  %c = "dnn.matmul"(%a, %b) {compute_type = tf32} : (tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
  return %c : tensor<4x5xf32>
}

// -----

// int8 / uint8 operands accumulate in int32 (compute_type i32).
// CHECK-LABEL: func.func @matmul_int8(
//  CHECK-SAME:     %[[A:.*]]: tensor<4x8xsi8>, %[[B:.*]]: tensor<8x5xui8>) -> tensor<4x5xi32>
//  CHECK-NEXT:   %[[C:.*]] = "dnn.matmul"(%[[A]], %[[B]]) {compute_type = i32} : (tensor<4x8xsi8>, tensor<8x5xui8>) -> tensor<4x5xi32>
//  CHECK-NEXT:   return %[[C]] : tensor<4x5xi32>
func.func @matmul_int8(%a: tensor<4x8xsi8>, %b: tensor<8x5xui8>) -> tensor<4x5xi32> {
  %c = "dnn.matmul"(%a, %b) {compute_type = i32} : (tensor<4x8xsi8>, tensor<8x5xui8>) -> tensor<4x5xi32>
  return %c : tensor<4x5xi32>
}

// -----

// CHECK-LABEL: func.func @conv_fprop_int8_to_int8(
//  CHECK-SAME:     %[[X:.*]]: tensor<1x4x5x5xsi8>, %[[W:.*]]: tensor<2x4x3x3xsi8>) -> (tensor<1x2x3x3xsi8>, tensor<1x2x3x3xf32>)
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.conv_fprop"(%[[X]], %[[W]]) {compute_type = i32, dilation = array<i64: 1, 1>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x5x5xsi8>, tensor<2x4x3x3xsi8>) -> tensor<1x2x3x3xsi8>
//  CHECK-NEXT:   %[[F:.*]] = "dnn.cast"(%[[Y]]) : (tensor<1x2x3x3xsi8>) -> tensor<1x2x3x3xf32>
//  CHECK-NEXT:   return %[[Y]], %[[F]] : tensor<1x2x3x3xsi8>, tensor<1x2x3x3xf32>
func.func @conv_fprop_int8_to_int8(%x: tensor<1x4x5x5xsi8>, %w: tensor<2x4x3x3xsi8>) -> (tensor<1x2x3x3xsi8>, tensor<1x2x3x3xf32>) {
  %y = "dnn.conv_fprop"(%x, %w) {compute_type = i32, dilation = array<i64: 1, 1>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x5x5xsi8>, tensor<2x4x3x3xsi8>) -> tensor<1x2x3x3xsi8>
  %f = "dnn.cast"(%y) : (tensor<1x2x3x3xsi8>) -> tensor<1x2x3x3xf32>
  return %y, %f : tensor<1x2x3x3xsi8>, tensor<1x2x3x3xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_fp8_to_bf16(
//  CHECK-SAME:     %[[A:.*]]: tensor<4x8xf8E4M3FN>, %[[B:.*]]: tensor<8x5xf8E5M2>) -> tensor<4x5xbf16>
//  CHECK-NEXT:   %[[C:.*]] = "dnn.matmul"(%[[A]], %[[B]]) {compute_type = f32} : (tensor<4x8xf8E4M3FN>, tensor<8x5xf8E5M2>) -> tensor<4x5xbf16>
//  CHECK-NEXT:   return %[[C]] : tensor<4x5xbf16>
func.func @matmul_fp8_to_bf16(%a: tensor<4x8xf8E4M3FN>, %b: tensor<8x5xf8E5M2>) -> tensor<4x5xbf16> {
  %c = "dnn.matmul"(%a, %b) {compute_type = f32} : (tensor<4x8xf8E4M3FN>, tensor<8x5xf8E5M2>) -> tensor<4x5xbf16>
  return %c : tensor<4x5xbf16>
}

// -----

// CHECK-LABEL: func.func @conv_fprop_grouped_strided(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x4x8x8xf16>, %[[W:.*]]: tensor<6x2x3x3xf16>) -> tensor<2x6x4x4xf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.conv_fprop"(%[[X]], %[[W]]) {dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x4x8x8xf16>, tensor<6x2x3x3xf16>) -> tensor<2x6x4x4xf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x6x4x4xf16>
func.func @conv_fprop_grouped_strided(%x: tensor<2x4x8x8xf16>, %w: tensor<6x2x3x3xf16>) -> tensor<2x6x4x4xf16> {
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x4x8x8xf16>, tensor<6x2x3x3xf16>) -> tensor<2x6x4x4xf16>
  return %y : tensor<2x6x4x4xf16>
}

// -----

// CHECK-LABEL: func.func @conv_fprop_convolution_mode_tf32(
//  CHECK-SAME:     %[[X:.*]]: tensor<1x3x5x5xf32>, %[[W:.*]]: tensor<2x3x3x3xf32>) -> tensor<1x2x3x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.conv_fprop"(%[[X]], %[[W]]) {compute_type = tf32, dilation = array<i64: 1, 1>, mode = "convolution", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x3x5x5xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x3x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<1x2x3x3xf32>
func.func @conv_fprop_convolution_mode_tf32(%x: tensor<1x3x5x5xf32>, %w: tensor<2x3x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %y = "dnn.conv_fprop"(%x, %w) {compute_type = tf32, dilation = array<i64: 1, 1>, mode = "convolution", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x3x5x5xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x3x3xf32>
  return %y : tensor<1x2x3x3xf32>
}

// -----

// CHECK-LABEL: func.func @conv_fprop_3d_dilated(
//  CHECK-SAME:     %[[X:.*]]: tensor<1x2x4x6x6xf32>, %[[W:.*]]: tensor<3x2x2x3x3xf32>) -> tensor<1x3x3x4x4xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.conv_fprop"(%[[X]], %[[W]]) {dilation = array<i64: 1, 2, 2>, post_padding = array<i64: 0, 1, 1>, pre_padding = array<i64: 0, 1, 1>, stride = array<i64: 1, 1, 1>} : (tensor<1x2x4x6x6xf32>, tensor<3x2x2x3x3xf32>) -> tensor<1x3x3x4x4xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<1x3x3x4x4xf32>
func.func @conv_fprop_3d_dilated(%x: tensor<1x2x4x6x6xf32>, %w: tensor<3x2x2x3x3xf32>) -> tensor<1x3x3x4x4xf32> {
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 2, 2>, post_padding = array<i64: 0, 1, 1>, pre_padding = array<i64: 0, 1, 1>, stride = array<i64: 1, 1, 1>} : (tensor<1x2x4x6x6xf32>, tensor<3x2x2x3x3xf32>) -> tensor<1x3x3x4x4xf32>
  return %y : tensor<1x3x3x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @conv_dgrad(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x6x4x4xf16>, %[[W:.*]]: tensor<6x2x3x3xf16>) -> tensor<2x4x8x8xf16>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.conv_dgrad"(%[[DY]], %[[W]]) {dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x6x4x4xf16>, tensor<6x2x3x3xf16>) -> tensor<2x4x8x8xf16>
//  CHECK-NEXT:   return %[[DX]] : tensor<2x4x8x8xf16>
func.func @conv_dgrad(%dy: tensor<2x6x4x4xf16>, %w: tensor<6x2x3x3xf16>) -> tensor<2x4x8x8xf16> {
  %dx = "dnn.conv_dgrad"(%dy, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x6x4x4xf16>, tensor<6x2x3x3xf16>) -> tensor<2x4x8x8xf16>
  return %dx : tensor<2x4x8x8xf16>
}

// -----

// CHECK-LABEL: func.func @conv_dgrad_3d(
//  CHECK-SAME:     %[[DY:.*]]: tensor<1x3x3x4x4xf32>, %[[W:.*]]: tensor<3x2x2x3x3xf32>) -> tensor<1x2x4x6x6xf32>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.conv_dgrad"(%[[DY]], %[[W]]) {dilation = array<i64: 1, 2, 2>, post_padding = array<i64: 0, 1, 1>, pre_padding = array<i64: 0, 1, 1>, stride = array<i64: 1, 1, 1>} : (tensor<1x3x3x4x4xf32>, tensor<3x2x2x3x3xf32>) -> tensor<1x2x4x6x6xf32>
//  CHECK-NEXT:   return %[[DX]] : tensor<1x2x4x6x6xf32>
func.func @conv_dgrad_3d(%dy: tensor<1x3x3x4x4xf32>, %w: tensor<3x2x2x3x3xf32>) -> tensor<1x2x4x6x6xf32> {
  %dx = "dnn.conv_dgrad"(%dy, %w) {dilation = array<i64: 1, 2, 2>, post_padding = array<i64: 0, 1, 1>, pre_padding = array<i64: 0, 1, 1>, stride = array<i64: 1, 1, 1>} : (tensor<1x3x3x4x4xf32>, tensor<3x2x2x3x3xf32>) -> tensor<1x2x4x6x6xf32>
  return %dx : tensor<1x2x4x6x6xf32>
}

// -----

// CHECK-LABEL: func.func @conv_wgrad(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x6x4x4xf16>, %[[X:.*]]: tensor<2x4x8x8xf16>) -> tensor<6x2x3x3xf32>
//  CHECK-NEXT:   %[[DW:.*]] = "dnn.conv_wgrad"(%[[DY]], %[[X]]) {dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x6x4x4xf16>, tensor<2x4x8x8xf16>) -> tensor<6x2x3x3xf32>
//  CHECK-NEXT:   return %[[DW]] : tensor<6x2x3x3xf32>
func.func @conv_wgrad(%dy: tensor<2x6x4x4xf16>, %x: tensor<2x4x8x8xf16>) -> tensor<6x2x3x3xf32> {
  %dw = "dnn.conv_wgrad"(%dy, %x) {dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x6x4x4xf16>, tensor<2x4x8x8xf16>) -> tensor<6x2x3x3xf32>
  return %dw : tensor<6x2x3x3xf32>
}

// -----

// ============================================================================
// Scaled dot-product attention, forward and backward.
// ============================================================================

// CHECK-LABEL: func.func @sdpa(
//  CHECK-SAME:     %[[Q:.*]]: tensor<2x4x16x8xbf16>, %[[K:.*]]: tensor<2x4x32x8xbf16>, %[[V:.*]]: tensor<2x4x32x8xbf16>) -> tensor<2x4x16x8xbf16>
//  CHECK-NEXT:   %[[O:.*]] = "dnn.sdpa"(%[[Q]], %[[K]], %[[V]]) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<2x4x16x8xbf16>, tensor<2x4x32x8xbf16>, tensor<2x4x32x8xbf16>) -> tensor<2x4x16x8xbf16>
//  CHECK-NEXT:   return %[[O]] : tensor<2x4x16x8xbf16>
func.func @sdpa(%q: tensor<2x4x16x8xbf16>, %k: tensor<2x4x32x8xbf16>, %v: tensor<2x4x32x8xbf16>) -> tensor<2x4x16x8xbf16> {
  %o = "dnn.sdpa"(%q, %k, %v) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xbf16>, tensor<2x4x32x8xbf16>, tensor<2x4x32x8xbf16>) -> tensor<2x4x16x8xbf16>
  return %o : tensor<2x4x16x8xbf16>
}

// -----

// A paged KV cache: k and v are (pages, Hk, page_size, D), the int32 tables
// (B, 1, T, 1), max_seq_len_kv is Skv.

// CHECK-LABEL: func.func @sdpa_paged(
//  CHECK-SAME:     %[[Q:[^:]*]]: tensor<2x4x1x8xf16>, %[[K:[^:]*]]: tensor<9x2x16x8xf16>, %[[V:[^:]*]]: tensor<9x2x16x8xf16>, %[[LQ:[^:]*]]: tensor<2x1x1x1xi32>, %[[LKV:[^:]*]]: tensor<2x1x1x1xi32>, %[[KT:[^:]*]]: tensor<2x1x4x1xi32>, %[[VT:[^:]*]]: tensor<2x1x4x1xi32>) -> tensor<2x4x1x8xf16>
//  CHECK-NEXT:   %[[O:.*]] = "dnn.sdpa"(%[[Q]], %[[K]], %[[V]], %[[LQ]], %[[LKV]], %[[KT]], %[[VT]]) {max_seq_len_kv = 60 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0>, padding = true, scale = 1.250000e-01 : f64} : (tensor<2x4x1x8xf16>, tensor<9x2x16x8xf16>, tensor<9x2x16x8xf16>, tensor<2x1x1x1xi32>, tensor<2x1x1x1xi32>, tensor<2x1x4x1xi32>, tensor<2x1x4x1xi32>) -> tensor<2x4x1x8xf16>
func.func @sdpa_paged(%q: tensor<2x4x1x8xf16>, %k: tensor<9x2x16x8xf16>, %v: tensor<9x2x16x8xf16>, %lq: tensor<2x1x1x1xi32>, %lkv: tensor<2x1x1x1xi32>, %kt: tensor<2x1x4x1xi32>, %vt: tensor<2x1x4x1xi32>) -> tensor<2x4x1x8xf16> {
  %o = "dnn.sdpa"(%q, %k, %v, %lq, %lkv, %kt, %vt) {max_seq_len_kv = 60 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0>, padding = true, scale = 1.250000e-01 : f64} : (tensor<2x4x1x8xf16>, tensor<9x2x16x8xf16>, tensor<9x2x16x8xf16>, tensor<2x1x1x1xi32>, tensor<2x1x1x1xi32>, tensor<2x1x4x1xi32>, tensor<2x1x4x1xi32>) -> tensor<2x4x1x8xf16>
  return %o : tensor<2x4x1x8xf16>
}

// -----

// Ragged (packed) q, k, v and o: int32 offsets (B + 1, 1, 1, 1) of each,
// their sequence strides in ragged_strides, with the padding mask's lengths.

// CHECK-LABEL: func.func @sdpa_ragged(
//  CHECK-SAME:     %[[Q:[^:]*]]: tensor<2x4x6x8xf16>, %[[K:[^:]*]]: tensor<2x2x9x8xf16>, %[[V:[^:]*]]: tensor<2x2x9x8xf16>, %[[LQ:[^:]*]]: tensor<2x1x1x1xi32>, %[[LKV:[^:]*]]: tensor<2x1x1x1xi32>, %[[OQ:[^:]*]]: tensor<3x1x1x1xi32>, %[[OKV:[^:]*]]: tensor<3x1x1x1xi32>) -> tensor<2x4x6x8xf16>
//  CHECK-NEXT:   %[[O:.*]] = "dnn.sdpa"(%[[Q]], %[[K]], %[[V]], %[[LQ]], %[[LKV]], %[[OQ]], %[[OKV]], %[[OKV]], %[[OQ]]) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 1, 1>, padding = true, ragged_strides = array<i64: 32, 16, 16, 32>, scale = 1.250000e-01 : f64} : (tensor<2x4x6x8xf16>, tensor<2x2x9x8xf16>, tensor<2x2x9x8xf16>, tensor<2x1x1x1xi32>, tensor<2x1x1x1xi32>, tensor<3x1x1x1xi32>, tensor<3x1x1x1xi32>, tensor<3x1x1x1xi32>, tensor<3x1x1x1xi32>) -> tensor<2x4x6x8xf16>
func.func @sdpa_ragged(%q: tensor<2x4x6x8xf16>, %k: tensor<2x2x9x8xf16>, %v: tensor<2x2x9x8xf16>, %lq: tensor<2x1x1x1xi32>, %lkv: tensor<2x1x1x1xi32>, %oq: tensor<3x1x1x1xi32>, %okv: tensor<3x1x1x1xi32>) -> tensor<2x4x6x8xf16> {
  %o = "dnn.sdpa"(%q, %k, %v, %lq, %lkv, %oq, %okv, %okv, %oq) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 1, 1>, padding = true, ragged_strides = array<i64: 32, 16, 16, 32>, scale = 1.250000e-01 : f64} : (tensor<2x4x6x8xf16>, tensor<2x2x9x8xf16>, tensor<2x2x9x8xf16>, tensor<2x1x1x1xi32>, tensor<2x1x1x1xi32>, tensor<3x1x1x1xi32>, tensor<3x1x1x1xi32>, tensor<3x1x1x1xi32>, tensor<3x1x1x1xi32>) -> tensor<2x4x6x8xf16>
  return %o : tensor<2x4x6x8xf16>
}

// -----

// CHECK-LABEL: func.func @sdpa_gqa_causal(
//  CHECK-SAME:     %[[Q:.*]]: tensor<2x4x16x8xf16>, %[[K:.*]]: tensor<2x2x16x8xf16>, %[[V:.*]]: tensor<2x2x16x16xf16>) -> tensor<2x4x16x16xf16>
//  CHECK-NEXT:   %[[O:.*]] = "dnn.sdpa"(%[[Q]], %[[K]], %[[V]]) {causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<2x4x16x8xf16>, tensor<2x2x16x8xf16>, tensor<2x2x16x16xf16>) -> tensor<2x4x16x16xf16>
//  CHECK-NEXT:   return %[[O]] : tensor<2x4x16x16xf16>
func.func @sdpa_gqa_causal(%q: tensor<2x4x16x8xf16>, %k: tensor<2x2x16x8xf16>, %v: tensor<2x2x16x16xf16>) -> tensor<2x4x16x16xf16> {
  %o = "dnn.sdpa"(%q, %k, %v) {causal = true, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf16>, tensor<2x2x16x8xf16>, tensor<2x2x16x16xf16>) -> tensor<2x4x16x16xf16>
  return %o : tensor<2x4x16x16xf16>
}

// -----

// CHECK-LABEL: func.func @sdpa_bias_and_stats(
//  CHECK-SAME:     %[[Q:.*]]: tensor<2x4x16x8xbf16>, %[[K:.*]]: tensor<2x4x32x8xbf16>, %[[V:.*]]: tensor<2x4x32x8xbf16>, %[[BIAS:.*]]: tensor<1x4x16x32xbf16>) -> (tensor<2x4x16x8xbf16>, tensor<2x4x16x1xf32>)
//  CHECK-NEXT:   %[[R:.*]]:2 = "dnn.sdpa"(%[[Q]], %[[K]], %[[V]], %[[BIAS]]) {generate_stats = true, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<2x4x16x8xbf16>, tensor<2x4x32x8xbf16>, tensor<2x4x32x8xbf16>, tensor<1x4x16x32xbf16>) -> (tensor<2x4x16x8xbf16>, tensor<2x4x16x1xf32>)
//  CHECK-NEXT:   return %[[R]]#0, %[[R]]#1 : tensor<2x4x16x8xbf16>, tensor<2x4x16x1xf32>
func.func @sdpa_bias_and_stats(%q: tensor<2x4x16x8xbf16>, %k: tensor<2x4x32x8xbf16>, %v: tensor<2x4x32x8xbf16>, %bias: tensor<1x4x16x32xbf16>) -> (tensor<2x4x16x8xbf16>, tensor<2x4x16x1xf32>) {
  %r:2 = "dnn.sdpa"(%q, %k, %v, %bias) {generate_stats = true, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xbf16>, tensor<2x4x32x8xbf16>, tensor<2x4x32x8xbf16>, tensor<1x4x16x32xbf16>) -> (tensor<2x4x16x8xbf16>, tensor<2x4x16x1xf32>)
  return %r#0, %r#1 : tensor<2x4x16x8xbf16>, tensor<2x4x16x1xf32>
}

// -----

// CHECK-LABEL: func.func @sdpa_backward(
//  CHECK-SAME:     %[[Q:.*]]: tensor<2x4x16x8xbf16>, %[[K:.*]]: tensor<2x2x32x8xbf16>, %[[V:.*]]: tensor<2x2x32x8xbf16>, %[[O:.*]]: tensor<2x4x16x8xbf16>, %[[DO:.*]]: tensor<2x4x16x8xbf16>, %[[STATS:.*]]: tensor<2x4x16x1xf32>) -> (tensor<2x4x16x8xbf16>, tensor<2x2x32x8xbf16>, tensor<2x2x32x8xbf16>)
//  CHECK-NEXT:   %[[R:.*]]:3 = "dnn.sdpa_backward"(%[[Q]], %[[K]], %[[V]], %[[O]], %[[DO]], %[[STATS]]) {causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<2x4x16x8xbf16>, tensor<2x2x32x8xbf16>, tensor<2x2x32x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x1xf32>) -> (tensor<2x4x16x8xbf16>, tensor<2x2x32x8xbf16>, tensor<2x2x32x8xbf16>)
//  CHECK-NEXT:   return %[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<2x4x16x8xbf16>, tensor<2x2x32x8xbf16>, tensor<2x2x32x8xbf16>
func.func @sdpa_backward(%q: tensor<2x4x16x8xbf16>, %k: tensor<2x2x32x8xbf16>, %v: tensor<2x2x32x8xbf16>, %o: tensor<2x4x16x8xbf16>, %do: tensor<2x4x16x8xbf16>, %stats: tensor<2x4x16x1xf32>) -> (tensor<2x4x16x8xbf16>, tensor<2x2x32x8xbf16>, tensor<2x2x32x8xbf16>) {
  %r:3 = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats) {causal = true, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xbf16>, tensor<2x2x32x8xbf16>, tensor<2x2x32x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>, tensor<2x4x16x1xf32>) -> (tensor<2x4x16x8xbf16>, tensor<2x2x32x8xbf16>, tensor<2x2x32x8xbf16>)
  return %r#0, %r#1, %r#2 : tensor<2x4x16x8xbf16>, tensor<2x2x32x8xbf16>, tensor<2x2x32x8xbf16>
}

// -----

// CHECK-LABEL: func.func @sdpa_backward_bias(
//  CHECK-SAME:     %[[Q:.*]]: tensor<1x2x4x8xf16>, %[[K:.*]]: tensor<1x2x6x8xf16>, %[[V:.*]]: tensor<1x2x6x8xf16>, %[[O:.*]]: tensor<1x2x4x8xf16>, %[[DO:.*]]: tensor<1x2x4x8xf16>, %[[STATS:.*]]: tensor<1x2x4x1xf32>, %[[BIAS:.*]]: tensor<1x1x4x6xf16>) -> (tensor<1x2x4x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>)
//  CHECK-NEXT:   %[[R:.*]]:3 = "dnn.sdpa_backward"(%[[Q]], %[[K]], %[[V]], %[[O]], %[[DO]], %[[STATS]], %[[BIAS]]) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<1x2x4x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x1xf32>, tensor<1x1x4x6xf16>) -> (tensor<1x2x4x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>)
//  CHECK-NEXT:   return %[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<1x2x4x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>
func.func @sdpa_backward_bias(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x6x8xf16>, %v: tensor<1x2x6x8xf16>, %o: tensor<1x2x4x8xf16>, %do: tensor<1x2x4x8xf16>, %stats: tensor<1x2x4x1xf32>, %bias: tensor<1x1x4x6xf16>) -> (tensor<1x2x4x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>) {
  %r:3 = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats, %bias) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x4x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x1xf32>, tensor<1x1x4x6xf16>) -> (tensor<1x2x4x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>)
  return %r#0, %r#1, %r#2 : tensor<1x2x4x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>
}

// -----

// compute_dbias adds a fourth result, dbias, of the bias's shape and type.

// CHECK-LABEL: func.func @sdpa_backward_dbias(
//  CHECK-NEXT:   %[[R:.*]]:4 = "dnn.sdpa_backward"({{.*}}) {compute_dbias = true, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.250000e-01 : f64} : ({{.*}}) -> (tensor<1x2x4x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x4x6xbf16>)
//  CHECK-NEXT:   return %[[R]]#3 : tensor<1x2x4x6xbf16>
func.func @sdpa_backward_dbias(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x6x8xf16>, %v: tensor<1x2x6x8xf16>, %o: tensor<1x2x4x8xf16>, %do: tensor<1x2x4x8xf16>, %stats: tensor<1x2x4x1xf32>, %bias: tensor<1x2x4x6xbf16>) -> tensor<1x2x4x6xbf16> {
  %r:4 = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats, %bias) {compute_dbias = true, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x4x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x1xf32>, tensor<1x2x4x6xbf16>) -> (tensor<1x2x4x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x4x6xbf16>)
  return %r#3 : tensor<1x2x4x6xbf16>
}

// -----

// ============================================================================
// Normalizations: optional scale/bias operands and optional statistics results.
// ============================================================================

// CHECK-LABEL: func.func @layernorm_no_scale_no_bias(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.layernorm"(%[[X]]) {axis = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3x4xf32>
func.func @layernorm_no_scale_no_bias(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %y = "dnn.layernorm"(%x) {axis = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @layernorm_bias_only(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3x4xf16>, %[[BIAS:.*]]: tensor<1x1x4xf16>) -> tensor<2x3x4xf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.layernorm"(%[[X]], %[[BIAS]]) {axis = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xf16>, tensor<1x1x4xf16>) -> tensor<2x3x4xf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3x4xf16>
func.func @layernorm_bias_only(%x: tensor<2x3x4xf16>, %bias: tensor<1x1x4xf16>) -> tensor<2x3x4xf16> {
  %y = "dnn.layernorm"(%x, %bias) {axis = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xf16>, tensor<1x1x4xf16>) -> tensor<2x3x4xf16>
  return %y : tensor<2x3x4xf16>
}

// -----

// The epsilon of layernorm and rmsnorm may be a rank-0 operand: a runtime
// scalar, an argument marked dnn.by_value.

// CHECK-LABEL: func.func @layernorm_runtime_epsilon(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3x4xf32>, %[[EPS:.*]]: tensor<f32> {dnn.by_value, dnn.name = "eps"}) -> tensor<2x3x4xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.layernorm"(%[[X]], %[[EPS]]) {axis = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 1>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3x4xf32>
func.func @layernorm_runtime_epsilon(%x: tensor<2x3x4xf32>, %eps: tensor<f32> {dnn.by_value, dnn.name = "eps"}) -> tensor<2x3x4xf32> {
  %y = "dnn.layernorm"(%x, %eps) {axis = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 1>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @layernorm_training_scale_bias(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3x4xbf16>, %[[SCALE:.*]]: tensor<1x1x4xbf16>, %[[BIAS:.*]]: tensor<1x1x4xbf16>) -> (tensor<2x3x4xbf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
//  CHECK-NEXT:   %[[R:.*]]:3 = "dnn.layernorm"(%[[X]], %[[SCALE]], %[[BIAS]]) {axis = 2 : i64, epsilon = 1.000000e-03 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0>, resultSegmentSizes = array<i32: 1, 1, 1>, training = true} : (tensor<2x3x4xbf16>, tensor<1x1x4xbf16>, tensor<1x1x4xbf16>) -> (tensor<2x3x4xbf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
//  CHECK-NEXT:   return %[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<2x3x4xbf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
func.func @layernorm_training_scale_bias(%x: tensor<2x3x4xbf16>, %scale: tensor<1x1x4xbf16>, %bias: tensor<1x1x4xbf16>) -> (tensor<2x3x4xbf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32>) {
  %r:3 = "dnn.layernorm"(%x, %scale, %bias) {axis = 2 : i64, epsilon = 1.000000e-03 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0>, resultSegmentSizes = array<i32: 1, 1, 1>, training = true} : (tensor<2x3x4xbf16>, tensor<1x1x4xbf16>, tensor<1x1x4xbf16>) -> (tensor<2x3x4xbf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  return %r#0, %r#1, %r#2 : tensor<2x3x4xbf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
}

// -----

// CHECK-LABEL: func.func @rmsnorm(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.rmsnorm"(%[[X]]) {axis = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3x4xf32>
func.func @rmsnorm(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %y = "dnn.rmsnorm"(%x) {axis = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @rmsnorm_training_scale(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3x4xf16>, %[[SCALE:.*]]: tensor<1x3x4xf16>) -> (tensor<2x3x4xf16>, tensor<2x1x1xf32>)
//  CHECK-NEXT:   %[[R:.*]]:2 = "dnn.rmsnorm"(%[[X]], %[[SCALE]]) {axis = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0>, training = true} : (tensor<2x3x4xf16>, tensor<1x3x4xf16>) -> (tensor<2x3x4xf16>, tensor<2x1x1xf32>)
//  CHECK-NEXT:   return %[[R]]#0, %[[R]]#1 : tensor<2x3x4xf16>, tensor<2x1x1xf32>
func.func @rmsnorm_training_scale(%x: tensor<2x3x4xf16>, %scale: tensor<1x3x4xf16>) -> (tensor<2x3x4xf16>, tensor<2x1x1xf32>) {
  %r:2 = "dnn.rmsnorm"(%x, %scale) {axis = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0>, training = true} : (tensor<2x3x4xf16>, tensor<1x3x4xf16>) -> (tensor<2x3x4xf16>, tensor<2x1x1xf32>)
  return %r#0, %r#1 : tensor<2x3x4xf16>, tensor<2x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @layernorm_backward(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3x4xf32>, %[[X:.*]]: tensor<2x3x4xf32>, %[[SCALE:.*]]: tensor<1x1x4xf32>, %[[MEAN:.*]]: tensor<2x3x1xf32>, %[[INV_VARIANCE:.*]]: tensor<2x3x1xf32>) -> (tensor<2x3x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>)
//  CHECK-NEXT:   %[[R:.*]]:3 = "dnn.layernorm_backward"(%[[DY]], %[[X]], %[[SCALE]], %[[MEAN]], %[[INV_VARIANCE]]) {axis = 2 : i64, resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<1x1x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>) -> (tensor<2x3x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>)
//  CHECK-NEXT:   return %[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<2x3x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>
func.func @layernorm_backward(%dy: tensor<2x3x4xf32>, %x: tensor<2x3x4xf32>, %scale: tensor<1x1x4xf32>, %mean: tensor<2x3x1xf32>, %inv_variance: tensor<2x3x1xf32>) -> (tensor<2x3x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>) {
  %r:3 = "dnn.layernorm_backward"(%dy, %x, %scale, %mean, %inv_variance) {axis = 2 : i64, resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<1x1x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>) -> (tensor<2x3x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>)
  return %r#0, %r#1, %r#2 : tensor<2x3x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>
}

// -----

// CHECK-LABEL: func.func @layernorm_backward_no_scale_no_bias(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3x4xbf16>, %[[X:.*]]: tensor<2x3x4xbf16>, %[[MEAN:.*]]: tensor<2x1x1xf32>, %[[INV_VARIANCE:.*]]: tensor<2x1x1xf32>) -> tensor<2x3x4xbf16>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.layernorm_backward"(%[[DY]], %[[X]], %[[MEAN]], %[[INV_VARIANCE]]) {axis = 1 : i64, has_bias = false, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xbf16>, tensor<2x3x4xbf16>, tensor<2x1x1xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xbf16>
//  CHECK-NEXT:   return %[[DX]] : tensor<2x3x4xbf16>
func.func @layernorm_backward_no_scale_no_bias(%dy: tensor<2x3x4xbf16>, %x: tensor<2x3x4xbf16>, %mean: tensor<2x1x1xf32>, %inv_variance: tensor<2x1x1xf32>) -> tensor<2x3x4xbf16> {
  %dx = "dnn.layernorm_backward"(%dy, %x, %mean, %inv_variance) {axis = 1 : i64, has_bias = false, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xbf16>, tensor<2x3x4xbf16>, tensor<2x1x1xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xbf16>
  return %dx : tensor<2x3x4xbf16>
}

// -----

// CHECK-LABEL: func.func @rmsnorm_backward_scale(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3x4xf16>, %[[X:.*]]: tensor<2x3x4xf16>, %[[SCALE:.*]]: tensor<1x1x4xf16>, %[[INV_RMS:.*]]: tensor<2x3x1xf32>) -> (tensor<2x3x4xf16>, tensor<1x1x4xf16>)
//  CHECK-NEXT:   %[[R:.*]]:2 = "dnn.rmsnorm_backward"(%[[DY]], %[[X]], %[[SCALE]], %[[INV_RMS]]) {axis = 2 : i64, resultSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3x4xf16>, tensor<2x3x4xf16>, tensor<1x1x4xf16>, tensor<2x3x1xf32>) -> (tensor<2x3x4xf16>, tensor<1x1x4xf16>)
//  CHECK-NEXT:   return %[[R]]#0, %[[R]]#1 : tensor<2x3x4xf16>, tensor<1x1x4xf16>
func.func @rmsnorm_backward_scale(%dy: tensor<2x3x4xf16>, %x: tensor<2x3x4xf16>, %scale: tensor<1x1x4xf16>, %inv_rms: tensor<2x3x1xf32>) -> (tensor<2x3x4xf16>, tensor<1x1x4xf16>) {
  %r:2 = "dnn.rmsnorm_backward"(%dy, %x, %scale, %inv_rms) {axis = 2 : i64, resultSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3x4xf16>, tensor<2x3x4xf16>, tensor<1x1x4xf16>, tensor<2x3x1xf32>) -> (tensor<2x3x4xf16>, tensor<1x1x4xf16>)
  return %r#0, %r#1 : tensor<2x3x4xf16>, tensor<1x1x4xf16>
}

// -----

// CHECK-LABEL: func.func @rmsnorm_backward_bias_only(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3x4xf32>, %[[X:.*]]: tensor<2x3x4xf32>, %[[INV_RMS:.*]]: tensor<2x3x1xf32>) -> (tensor<2x3x4xf32>, tensor<1x1x4xf32>)
//  CHECK-NEXT:   %[[R:.*]]:2 = "dnn.rmsnorm_backward"(%[[DY]], %[[X]], %[[INV_RMS]]) {axis = 2 : i64, has_bias = true, resultSegmentSizes = array<i32: 1, 0, 1>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> (tensor<2x3x4xf32>, tensor<1x1x4xf32>)
//  CHECK-NEXT:   return %[[R]]#0, %[[R]]#1 : tensor<2x3x4xf32>, tensor<1x1x4xf32>
func.func @rmsnorm_backward_bias_only(%dy: tensor<2x3x4xf32>, %x: tensor<2x3x4xf32>, %inv_rms: tensor<2x3x1xf32>) -> (tensor<2x3x4xf32>, tensor<1x1x4xf32>) {
  %r:2 = "dnn.rmsnorm_backward"(%dy, %x, %inv_rms) {axis = 2 : i64, has_bias = true, resultSegmentSizes = array<i32: 1, 0, 1>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> (tensor<2x3x4xf32>, tensor<1x1x4xf32>)
  return %r#0, %r#1 : tensor<2x3x4xf32>, tensor<1x1x4xf32>
}

// -----

// CHECK-LABEL: func.func @batchnorm_running_stats(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3x4x4xf16>, %[[SCALE:.*]]: tensor<1x3x1x1xf32>, %[[BIAS:.*]]: tensor<1x3x1x1xf32>, %[[RUNNING_MEAN:.*]]: tensor<1x3x1x1xf32>, %[[RUNNING_VAR:.*]]: tensor<1x3x1x1xf32>) -> (tensor<2x3x4x4xf16>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
//  CHECK-NEXT:   %[[R:.*]]:5 = "dnn.batchnorm"(%[[X]], %[[SCALE]], %[[BIAS]], %[[RUNNING_MEAN]], %[[RUNNING_VAR]]) {epsilon = 1.000000e-03 : f64, momentum = 2.000000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<2x3x4x4xf16>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x4x4xf16>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
//  CHECK-NEXT:   return %[[R]]#0, %[[R]]#1, %[[R]]#2, %[[R]]#3, %[[R]]#4 : tensor<2x3x4x4xf16>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>
func.func @batchnorm_running_stats(%x: tensor<2x3x4x4xf16>, %scale: tensor<1x3x1x1xf32>, %bias: tensor<1x3x1x1xf32>, %running_mean: tensor<1x3x1x1xf32>, %running_var: tensor<1x3x1x1xf32>) -> (tensor<2x3x4x4xf16>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) {
  %r:5 = "dnn.batchnorm"(%x, %scale, %bias, %running_mean, %running_var) {epsilon = 1.000000e-03 : f64, momentum = 2.000000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<2x3x4x4xf16>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x4x4xf16>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
  return %r#0, %r#1, %r#2, %r#3, %r#4 : tensor<2x3x4x4xf16>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @batchnorm_no_running_stats(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>, %[[SCALE:.*]]: tensor<1x3xf32>, %[[BIAS:.*]]: tensor<1x3xf32>) -> (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>)
//  CHECK-NEXT:   %[[R:.*]]:3 = "dnn.batchnorm"(%[[X]], %[[SCALE]], %[[BIAS]]) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>) -> (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>)
//  CHECK-NEXT:   return %[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>
func.func @batchnorm_no_running_stats(%x: tensor<2x3xf32>, %scale: tensor<1x3xf32>, %bias: tensor<1x3xf32>) -> (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>) {
  %r:3 = "dnn.batchnorm"(%x, %scale, %bias) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>) -> (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>)
  return %r#0, %r#1, %r#2 : tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>
}

// -----

// CHECK-LABEL: func.func @batchnorm_inference(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3x4x4xbf16>, %[[SCALE:.*]]: tensor<1x3x1x1xf32>, %[[BIAS:.*]]: tensor<1x3x1x1xf32>, %[[MEAN:.*]]: tensor<1x3x1x1xf32>, %[[VARIANCE:.*]]: tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xbf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.batchnorm_inference"(%[[X]], %[[SCALE]], %[[BIAS]], %[[MEAN]], %[[VARIANCE]]) {epsilon = 1.000000e-03 : f64} : (tensor<2x3x4x4xbf16>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xbf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3x4x4xbf16>
func.func @batchnorm_inference(%x: tensor<2x3x4x4xbf16>, %scale: tensor<1x3x1x1xf32>, %bias: tensor<1x3x1x1xf32>, %mean: tensor<1x3x1x1xf32>, %variance: tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xbf16> {
  %y = "dnn.batchnorm_inference"(%x, %scale, %bias, %mean, %variance) {epsilon = 1.000000e-03 : f64} : (tensor<2x3x4x4xbf16>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xbf16>
  return %y : tensor<2x3x4x4xbf16>
}

// -----

// CHECK-LABEL: func.func @batchnorm_backward(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3x4x4xf32>, %[[X:.*]]: tensor<2x3x4x4xf32>, %[[SCALE:.*]]: tensor<1x3x1x1xf32>, %[[MEAN:.*]]: tensor<1x3x1x1xf32>, %[[INV_VARIANCE:.*]]: tensor<1x3x1x1xf32>) -> (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
//  CHECK-NEXT:   %[[R:.*]]:3 = "dnn.batchnorm_backward"(%[[DY]], %[[X]], %[[SCALE]], %[[MEAN]], %[[INV_VARIANCE]]) : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
//  CHECK-NEXT:   return %[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>
func.func @batchnorm_backward(%dy: tensor<2x3x4x4xf32>, %x: tensor<2x3x4x4xf32>, %scale: tensor<1x3x1x1xf32>, %mean: tensor<1x3x1x1xf32>, %inv_variance: tensor<1x3x1x1xf32>) -> (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) {
  %r:3 = "dnn.batchnorm_backward"(%dy, %x, %scale, %mean, %inv_variance) : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
  return %r#0, %r#1, %r#2 : tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @groupnorm_training(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x6x4x4xf32>, %[[SCALE:.*]]: tensor<1x6x1x1xf32>, %[[BIAS:.*]]: tensor<1x6x1x1xf32>) -> (tensor<2x6x4x4xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>)
//  CHECK-NEXT:   %[[R:.*]]:3 = "dnn.groupnorm"(%[[X]], %[[SCALE]], %[[BIAS]]) {groups = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1>, training = true} : (tensor<2x6x4x4xf32>, tensor<1x6x1x1xf32>, tensor<1x6x1x1xf32>) -> (tensor<2x6x4x4xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>)
//  CHECK-NEXT:   return %[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<2x6x4x4xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>
func.func @groupnorm_training(%x: tensor<2x6x4x4xf32>, %scale: tensor<1x6x1x1xf32>, %bias: tensor<1x6x1x1xf32>) -> (tensor<2x6x4x4xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) {
  %r:3 = "dnn.groupnorm"(%x, %scale, %bias) {groups = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1>, training = true} : (tensor<2x6x4x4xf32>, tensor<1x6x1x1xf32>, tensor<1x6x1x1xf32>) -> (tensor<2x6x4x4xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>)
  return %r#0, %r#1, %r#2 : tensor<2x6x4x4xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @groupnorm_inference(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x6x4x4xf16>) -> tensor<2x6x4x4xf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.groupnorm"(%[[X]]) {epsilon = 1.000000e-03 : f64, groups = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x6x4x4xf16>) -> tensor<2x6x4x4xf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x6x4x4xf16>
func.func @groupnorm_inference(%x: tensor<2x6x4x4xf16>) -> tensor<2x6x4x4xf16> {
  %y = "dnn.groupnorm"(%x) {epsilon = 1.000000e-03 : f64, groups = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x6x4x4xf16>) -> tensor<2x6x4x4xf16>
  return %y : tensor<2x6x4x4xf16>
}

// -----

// CHECK-LABEL: func.func @groupnorm_backward(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x6x4x4xf32>, %[[X:.*]]: tensor<2x6x4x4xf32>, %[[SCALE:.*]]: tensor<1x6x1x1xf32>, %[[MEAN:.*]]: tensor<2x3x1x1xf32>, %[[INV_VARIANCE:.*]]: tensor<2x3x1x1xf32>) -> (tensor<2x6x4x4xf32>, tensor<1x6x1x1xf32>, tensor<1x6x1x1xf32>)
//  CHECK-NEXT:   %[[R:.*]]:3 = "dnn.groupnorm_backward"(%[[DY]], %[[X]], %[[SCALE]], %[[MEAN]], %[[INV_VARIANCE]]) {groups = 3 : i64, resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x6x4x4xf32>, tensor<2x6x4x4xf32>, tensor<1x6x1x1xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) -> (tensor<2x6x4x4xf32>, tensor<1x6x1x1xf32>, tensor<1x6x1x1xf32>)
//  CHECK-NEXT:   return %[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<2x6x4x4xf32>, tensor<1x6x1x1xf32>, tensor<1x6x1x1xf32>
func.func @groupnorm_backward(%dy: tensor<2x6x4x4xf32>, %x: tensor<2x6x4x4xf32>, %scale: tensor<1x6x1x1xf32>, %mean: tensor<2x3x1x1xf32>, %inv_variance: tensor<2x3x1x1xf32>) -> (tensor<2x6x4x4xf32>, tensor<1x6x1x1xf32>, tensor<1x6x1x1xf32>) {
  %r:3 = "dnn.groupnorm_backward"(%dy, %x, %scale, %mean, %inv_variance) {groups = 3 : i64, resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x6x4x4xf32>, tensor<2x6x4x4xf32>, tensor<1x6x1x1xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) -> (tensor<2x6x4x4xf32>, tensor<1x6x1x1xf32>, tensor<1x6x1x1xf32>)
  return %r#0, %r#1, %r#2 : tensor<2x6x4x4xf32>, tensor<1x6x1x1xf32>, tensor<1x6x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @instancenorm_training(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3x4x4xbf16>, %[[SCALE:.*]]: tensor<1x3x1x1xbf16>, %[[BIAS:.*]]: tensor<1x3x1x1xbf16>) -> (tensor<2x3x4x4xbf16>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>)
//  CHECK-NEXT:   %[[R:.*]]:3 = "dnn.instancenorm"(%[[X]], %[[SCALE]], %[[BIAS]]) {operandSegmentSizes = array<i32: 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1>, training = true} : (tensor<2x3x4x4xbf16>, tensor<1x3x1x1xbf16>, tensor<1x3x1x1xbf16>) -> (tensor<2x3x4x4xbf16>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>)
//  CHECK-NEXT:   return %[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<2x3x4x4xbf16>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>
func.func @instancenorm_training(%x: tensor<2x3x4x4xbf16>, %scale: tensor<1x3x1x1xbf16>, %bias: tensor<1x3x1x1xbf16>) -> (tensor<2x3x4x4xbf16>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) {
  %r:3 = "dnn.instancenorm"(%x, %scale, %bias) {operandSegmentSizes = array<i32: 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1>, training = true} : (tensor<2x3x4x4xbf16>, tensor<1x3x1x1xbf16>, tensor<1x3x1x1xbf16>) -> (tensor<2x3x4x4xbf16>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>)
  return %r#0, %r#1, %r#2 : tensor<2x3x4x4xbf16>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @instancenorm_3d_scale_only(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3x2x4x4xf32>, %[[SCALE:.*]]: tensor<1x3x1x1x1xf32>) -> tensor<2x3x2x4x4xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.instancenorm"(%[[X]], %[[SCALE]]) {operandSegmentSizes = array<i32: 1, 1, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x2x4x4xf32>, tensor<1x3x1x1x1xf32>) -> tensor<2x3x2x4x4xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3x2x4x4xf32>
func.func @instancenorm_3d_scale_only(%x: tensor<2x3x2x4x4xf32>, %scale: tensor<1x3x1x1x1xf32>) -> tensor<2x3x2x4x4xf32> {
  %y = "dnn.instancenorm"(%x, %scale) {operandSegmentSizes = array<i32: 1, 1, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x2x4x4xf32>, tensor<1x3x1x1x1xf32>) -> tensor<2x3x2x4x4xf32>
  return %y : tensor<2x3x2x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @instancenorm_backward_no_bias(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3x4x4xf32>, %[[X:.*]]: tensor<2x3x4x4xf32>, %[[MEAN:.*]]: tensor<2x3x1x1xf32>, %[[INV_VARIANCE:.*]]: tensor<2x3x1x1xf32>) -> tensor<2x3x4x4xf32>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.instancenorm_backward"(%[[DY]], %[[X]], %[[MEAN]], %[[INV_VARIANCE]]) {has_bias = false, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) -> tensor<2x3x4x4xf32>
//  CHECK-NEXT:   return %[[DX]] : tensor<2x3x4x4xf32>
func.func @instancenorm_backward_no_bias(%dy: tensor<2x3x4x4xf32>, %x: tensor<2x3x4x4xf32>, %mean: tensor<2x3x1x1xf32>, %inv_variance: tensor<2x3x1x1xf32>) -> tensor<2x3x4x4xf32> {
  %dx = "dnn.instancenorm_backward"(%dy, %x, %mean, %inv_variance) {has_bias = false, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) -> tensor<2x3x4x4xf32>
  return %dx : tensor<2x3x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @instancenorm_backward(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3x4x4xf32>, %[[X:.*]]: tensor<2x3x4x4xf32>, %[[SCALE:.*]]: tensor<1x3x1x1xf32>, %[[MEAN:.*]]: tensor<2x3x1x1xf32>, %[[INV_VARIANCE:.*]]: tensor<2x3x1x1xf32>) -> (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
//  CHECK-NEXT:   %[[R:.*]]:3 = "dnn.instancenorm_backward"(%[[DY]], %[[X]], %[[SCALE]], %[[MEAN]], %[[INV_VARIANCE]]) {resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) -> (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
//  CHECK-NEXT:   return %[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>
func.func @instancenorm_backward(%dy: tensor<2x3x4x4xf32>, %x: tensor<2x3x4x4xf32>, %scale: tensor<1x3x1x1xf32>, %mean: tensor<2x3x1x1xf32>, %inv_variance: tensor<2x3x1x1xf32>) -> (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) {
  %r:3 = "dnn.instancenorm_backward"(%dy, %x, %scale, %mean, %inv_variance) {resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) -> (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
  return %r#0, %r#1, %r#2 : tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>
}

// -----

// ============================================================================
// Softmax family, every reduction mode, both pooling modes.
// ============================================================================

// CHECK-LABEL: func.func @softmax(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf16>) -> tensor<2x3xf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.softmax"(%[[X]]) {axis = 1 : i64} : (tensor<2x3xf16>) -> tensor<2x3xf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf16>
func.func @softmax(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %y = "dnn.softmax"(%x) {axis = 1 : i64} : (tensor<2x3xf16>) -> tensor<2x3xf16>
  return %y : tensor<2x3xf16>
}

// -----

// CHECK-LABEL: func.func @log_softmax(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.log_softmax"(%[[X]]) {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @log_softmax(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.log_softmax"(%x) {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @softmax_backward(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.softmax_backward"(%[[DY]], %[[Y]]) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[DX]] : tensor<2x3xf32>
func.func @softmax_backward(%dy: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %dx = "dnn.softmax_backward"(%dy, %y) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %dx : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @log_softmax_backward(
//  CHECK-SAME:     %[[DY:.*]]: tensor<2x3xbf16>, %[[Y:.*]]: tensor<2x3xbf16>) -> tensor<2x3xbf16>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.log_softmax_backward"(%[[DY]], %[[Y]]) {axis = 1 : i64} : (tensor<2x3xbf16>, tensor<2x3xbf16>) -> tensor<2x3xbf16>
//  CHECK-NEXT:   return %[[DX]] : tensor<2x3xbf16>
func.func @log_softmax_backward(%dy: tensor<2x3xbf16>, %y: tensor<2x3xbf16>) -> tensor<2x3xbf16> {
  %dx = "dnn.log_softmax_backward"(%dy, %y) {axis = 1 : i64} : (tensor<2x3xbf16>, tensor<2x3xbf16>) -> tensor<2x3xbf16>
  return %dx : tensor<2x3xbf16>
}

// -----

// CHECK-LABEL: func.func @reduction_sum_keepdims(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.reduction"(%[[X]]) {axes = array<i64: 1>, mode = "sum"} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x1x4xf32>
func.func @reduction_sum_keepdims(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  %y = "dnn.reduction"(%x) {axes = array<i64: 1>, mode = "sum"} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  return %y : tensor<2x1x4xf32>
}

// -----

// CHECK-LABEL: func.func @reduction_mean_dropdims(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3x4xf32>) -> tensor<3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.reduction"(%[[X]]) {axes = array<i64: 0, 2>, keepdims = false, mode = "mean"} : (tensor<2x3x4xf32>) -> tensor<3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<3xf32>
func.func @reduction_mean_dropdims(%x: tensor<2x3x4xf32>) -> tensor<3xf32> {
  %y = "dnn.reduction"(%x) {axes = array<i64: 0, 2>, keepdims = false, mode = "mean"} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @reduction_max_to_scalar(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf16>) -> tensor<f16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.reduction"(%[[X]]) {axes = array<i64: 0, 1>, keepdims = false, mode = "max"} : (tensor<2x3xf16>) -> tensor<f16>
//  CHECK-NEXT:   return %[[Y]] : tensor<f16>
func.func @reduction_max_to_scalar(%x: tensor<2x3xf16>) -> tensor<f16> {
  %y = "dnn.reduction"(%x) {axes = array<i64: 0, 1>, keepdims = false, mode = "max"} : (tensor<2x3xf16>) -> tensor<f16>
  return %y : tensor<f16>
}

// -----

// CHECK-LABEL: func.func @reduction_min(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xbf16>) -> tensor<2x1xbf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.reduction"(%[[X]]) {axes = array<i64: 1>, mode = "min"} : (tensor<2x3xbf16>) -> tensor<2x1xbf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x1xbf16>
func.func @reduction_min(%x: tensor<2x3xbf16>) -> tensor<2x1xbf16> {
  %y = "dnn.reduction"(%x) {axes = array<i64: 1>, mode = "min"} : (tensor<2x3xbf16>) -> tensor<2x1xbf16>
  return %y : tensor<2x1xbf16>
}

// -----

// CHECK-LABEL: func.func @reduction_prod(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<1x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.reduction"(%[[X]]) {axes = array<i64: 0>, mode = "prod"} : (tensor<2x3xf32>) -> tensor<1x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<1x3xf32>
func.func @reduction_prod(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
  %y = "dnn.reduction"(%x) {axes = array<i64: 0>, mode = "prod"} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  return %y : tensor<1x3xf32>
}

// -----

// CHECK-LABEL: func.func @reduction_amax(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<1x1xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.reduction"(%[[X]]) {axes = array<i64: 0, 1>, mode = "amax"} : (tensor<2x3xf32>) -> tensor<1x1xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<1x1xf32>
func.func @reduction_amax(%x: tensor<2x3xf32>) -> tensor<1x1xf32> {
  %y = "dnn.reduction"(%x) {axes = array<i64: 0, 1>, mode = "amax"} : (tensor<2x3xf32>) -> tensor<1x1xf32>
  return %y : tensor<1x1xf32>
}

// -----

// CHECK-LABEL: func.func @reduction_norm1(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.reduction"(%[[X]]) {axes = array<i64: 1>, keepdims = false, mode = "norm1"} : (tensor<2x3xf32>) -> tensor<2xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2xf32>
func.func @reduction_norm1(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %y = "dnn.reduction"(%x) {axes = array<i64: 1>, keepdims = false, mode = "norm1"} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @reduction_norm2(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x1xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.reduction"(%[[X]]) {axes = array<i64: 1>, keepdims = true, mode = "norm2"} : (tensor<2x3xf32>) -> tensor<2x1xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x1xf32>
func.func @reduction_norm2(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  %y = "dnn.reduction"(%x) {axes = array<i64: 1>, keepdims = true, mode = "norm2"} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %y : tensor<2x1xf32>
}

// -----

// CHECK-LABEL: func.func @reduction_no_axes_is_identity(
//  CHECK-SAME:     %[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.reduction"(%[[X]]) {axes = array<i64>, mode = "sum"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<2x3xf32>
func.func @reduction_no_axes_is_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = "dnn.reduction"(%x) {axes = array<i64>, mode = "sum"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @pooling_max_padded(
//  CHECK-SAME:     %[[X:.*]]: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.pooling"(%[[X]]) {mode = "max", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, window = array<i64: 3, 3>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
//  CHECK-NEXT:   return %[[Y]] : tensor<1x2x3x3xf32>
func.func @pooling_max_padded(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %y = "dnn.pooling"(%x) {mode = "max", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, window = array<i64: 3, 3>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  return %y : tensor<1x2x3x3xf32>
}

// -----

// CHECK-LABEL: func.func @pooling_avg_count_include_pad(
//  CHECK-SAME:     %[[X:.*]]: tensor<1x2x5x5xf16>) -> tensor<1x2x3x3xf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.pooling"(%[[X]]) {count_include_pad = true, mode = "avg", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, window = array<i64: 3, 3>} : (tensor<1x2x5x5xf16>) -> tensor<1x2x3x3xf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<1x2x3x3xf16>
func.func @pooling_avg_count_include_pad(%x: tensor<1x2x5x5xf16>) -> tensor<1x2x3x3xf16> {
  %y = "dnn.pooling"(%x) {count_include_pad = true, mode = "avg", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, window = array<i64: 3, 3>} : (tensor<1x2x5x5xf16>) -> tensor<1x2x3x3xf16>
  return %y : tensor<1x2x3x3xf16>
}

// -----

// CHECK-LABEL: func.func @pooling_avg_3d(
//  CHECK-SAME:     %[[X:.*]]: tensor<1x2x4x4x4xbf16>) -> tensor<1x2x2x2x2xbf16>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.pooling"(%[[X]]) {mode = "avg", post_padding = array<i64: 0, 0, 0>, pre_padding = array<i64: 0, 0, 0>, stride = array<i64: 2, 2, 2>, window = array<i64: 2, 2, 2>} : (tensor<1x2x4x4x4xbf16>) -> tensor<1x2x2x2x2xbf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<1x2x2x2x2xbf16>
func.func @pooling_avg_3d(%x: tensor<1x2x4x4x4xbf16>) -> tensor<1x2x2x2x2xbf16> {
  %y = "dnn.pooling"(%x) {mode = "avg", post_padding = array<i64: 0, 0, 0>, pre_padding = array<i64: 0, 0, 0>, stride = array<i64: 2, 2, 2>, window = array<i64: 2, 2, 2>} : (tensor<1x2x4x4x4xbf16>) -> tensor<1x2x2x2x2xbf16>
  return %y : tensor<1x2x2x2x2xbf16>
}

// -----

// CHECK-LABEL: func.func @pooling_backward_max(
//  CHECK-SAME:     %[[DY:.*]]: tensor<1x2x3x3xf32>, %[[X:.*]]: tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.pooling_backward"(%[[DY]], %[[X]]) {mode = "max", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, window = array<i64: 3, 3>} : (tensor<1x2x3x3xf32>, tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
//  CHECK-NEXT:   return %[[DX]] : tensor<1x2x5x5xf32>
func.func @pooling_backward_max(%dy: tensor<1x2x3x3xf32>, %x: tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32> {
  %dx = "dnn.pooling_backward"(%dy, %x) {mode = "max", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, window = array<i64: 3, 3>} : (tensor<1x2x3x3xf32>, tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  return %dx : tensor<1x2x5x5xf32>
}

// -----

// CHECK-LABEL: func.func @pooling_backward_avg(
//  CHECK-SAME:     %[[DY:.*]]: tensor<1x2x2x2xf32>, %[[X:.*]]: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
//  CHECK-NEXT:   %[[DX:.*]] = "dnn.pooling_backward"(%[[DY]], %[[X]]) {count_include_pad = false, mode = "avg", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 2>, window = array<i64: 2, 2>} : (tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
//  CHECK-NEXT:   return %[[DX]] : tensor<1x2x4x4xf32>
func.func @pooling_backward_avg(%dy: tensor<1x2x2x2xf32>, %x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %dx = "dnn.pooling_backward"(%dy, %x) {count_include_pad = false, mode = "avg", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 2>, window = array<i64: 2, 2>} : (tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %dx : tensor<1x2x4x4xf32>
}
