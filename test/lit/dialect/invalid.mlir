// Every way a dnn op can be invalid, one chunk per rule, with the exact
// error text. Each CHECK sits above the line the error points at.

// RUN: not dnnc-opt %s --split-input-file 2>&1 | FileCheck %s --implicit-check-not=error:

// ============================================================================
// Structure, checked by IRDL when the IR is parsed: operand and result counts,
// tensor types, segment sizes. Then element types and attribute kinds.
// ============================================================================

func.func @unknown_op(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: unregistered operation 'dnn.relu6' found in dialect ('dnn') that does not allow unknown operations
  %y = "dnn.relu6"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @too_many_operands(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.exp' op expects exactly 1 operands, but got 2
  %y = "dnn.exp"(%x, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @too_few_operands() -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.neg' op expects exactly 1 operands, but got 0
  %y = "dnn.neg"() : () -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @too_few_operands_binary(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pow' op expects exactly 2 operands, but got 1
  %y = "dnn.pow"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @too_few_operands_with_optionals(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op element 2 in 'operandSegmentSizes' attribute must be equal to 1
  %o = "dnn.sdpa"(%q, %k) {operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

func.func @constant_takes_no_operands(%x: tensor<f32>) -> tensor<f32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.constant' op expects exactly 0 operands, but got 1
  %y = "dnn.constant"(%x) {value = 1.000000e+00 : f64} : (tensor<f32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

func.func @too_many_results(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.cos' op expects exactly 1 results, but got 2
  %y:2 = "dnn.cos"(%x) : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
  return %y#0 : tensor<2x3xf32>
}

// -----

func.func @no_result(%x: tensor<2x3xf32>) {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.relu' op expects exactly 1 results, but got 0
  "dnn.relu"(%x) : (tensor<2x3xf32>) -> ()
  return
}

// -----

func.func @memref_operand(%x: memref<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.square' op expected base type 'builtin.tensor' but got 'builtin.memref'
  %y = "dnn.square"(%x) : (memref<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @unranked_operand(%x: tensor<*xf32>) -> tensor<*xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.reciprocal' op expected base type 'builtin.tensor' but got 'builtin.unranked_tensor'
  %y = "dnn.reciprocal"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

func.func @missing_operand_segment_sizes(%x: tensor<2x3xf32>, %s: tensor<1x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm' op 'operandSegmentSizes' attribute is expected but not provided
  %y = "dnn.layernorm"(%x, %s) {axis = 1 : i64, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @missing_result_segment_sizes(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm' op 'resultSegmentSizes' attribute is expected but not provided
  %y = "dnn.layernorm"(%x) {axis = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @segment_sizes_wrong_length(%x: tensor<2x3xf32>, %s: tensor<1x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm' op 'operandSegmentSizes' attribute for specifying operand segments must have 4 elements, but got 2
  %y = "dnn.layernorm"(%x, %s) {axis = 1 : i64, operandSegmentSizes = array<i32: 1, 1>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @segment_sizes_wrong_sum(%x: tensor<2x3xf32>, %s: tensor<1x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm' op sum of elements in 'operandSegmentSizes' attribute must be equal to the number of operands
  %y = "dnn.layernorm"(%x, %s) {axis = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @segment_of_optional_operand_above_one(%x: tensor<2x3xf32>, %s: tensor<1x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm' op element 1 in 'operandSegmentSizes' attribute must be equal to 0 or 1
  %y = "dnn.layernorm"(%x, %s, %s) {axis = 1 : i64, operandSegmentSizes = array<i32: 1, 2, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @segment_of_required_result_zero(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm' op element 0 in 'resultSegmentSizes' attribute must be equal to 1
  %m = "dnn.layernorm"(%x) {axis = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 1, 0>, training = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %m : tensor<2x1xf32>
}

// -----

func.func @unsupported_element_type(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sin' op operand 'x': expected element type f32, f16, bf16, f8E4M3FN, f8E5M2, i1, i32, si8 or ui8, got f64
  %y = "dnn.sin"(%x) : (tensor<2x3xf64>) -> tensor<2x3xf64>
  return %y : tensor<2x3xf64>
}

// -----

func.func @float_operand_expected(%x: tensor<2x3xi1>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.relu' op operand 'x': expected a floating-point tensor, got i1
  %y = "dnn.relu"(%x) : (tensor<2x3xi1>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @int8_operand_of_float_op(%x: tensor<2x3xsi8>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.relu' op operand 'x': expected a floating-point tensor, got si8
  %y = "dnn.relu"(%x) : (tensor<2x3xsi8>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @int8_matmul_with_a_float_operand(%a: tensor<2x3xsi8>, %b: tensor<3x4xbf16>) -> tensor<2x4xi32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.matmul' op operand 'b': expected si8 or ui8 (as operand 'a'), got bf16
  %c = "dnn.matmul"(%a, %b) {compute_type = i32} : (tensor<2x3xsi8>, tensor<3x4xbf16>) -> tensor<2x4xi32>
  return %c : tensor<2x4xi32>
}

// -----

func.func @block_scaled_matmul_of_bf16(%a: tensor<4x200xbf16>, %b: tensor<200x130xf8E4M3FN>, %sa: tensor<4x2xf32>, %sb: tensor<2x2xf32>) -> tensor<4x130xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.matmul_block_scaled' op operand 'a': expected f8E4M3FN or f8E5M2, got bf16
  %c = "dnn.matmul_block_scaled"(%a, %b, %sa, %sb) : (tensor<4x200xbf16>, tensor<200x130xf8E4M3FN>, tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x130xf32>
  return %c : tensor<4x130xf32>
}

// -----

func.func @block_scales_of_a_too_few(%a: tensor<4x200xf8E4M3FN>, %b: tensor<200x130xf8E4M3FN>, %sa: tensor<4x1xf32>, %sb: tensor<2x2xf32>) -> tensor<4x130xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.matmul_block_scaled' op operand 'a_scale' dim 1: expected 2 (a_scale is M x ceil(K / 128): one per row and 128-wide K block of 'a'), got 1
  %c = "dnn.matmul_block_scaled"(%a, %b, %sa, %sb) : (tensor<4x200xf8E4M3FN>, tensor<200x130xf8E4M3FN>, tensor<4x1xf32>, tensor<2x2xf32>) -> tensor<4x130xf32>
  return %c : tensor<4x130xf32>
}

// -----

func.func @block_scales_of_b_per_column(%a: tensor<4x200xf8E4M3FN>, %b: tensor<200x130xf8E4M3FN>, %sa: tensor<4x2xf32>, %sb: tensor<2x130xf32>) -> tensor<4x130xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.matmul_block_scaled' op operand 'b_scale' dim 1: expected 2 (b_scale is ceil(K / 128) x ceil(N / 128): one per 128 x 128 block of 'b'), got 130
  %c = "dnn.matmul_block_scaled"(%a, %b, %sa, %sb) : (tensor<4x200xf8E4M3FN>, tensor<200x130xf8E4M3FN>, tensor<4x2xf32>, tensor<2x130xf32>) -> tensor<4x130xf32>
  return %c : tensor<4x130xf32>
}

// -----

func.func @block_scales_in_bf16(%a: tensor<4x200xf8E4M3FN>, %b: tensor<200x130xf8E4M3FN>, %sa: tensor<4x2xbf16>, %sb: tensor<2x2xf32>) -> tensor<4x130xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.matmul_block_scaled' op operand 'a_scale': expected element type f32, got bf16
  %c = "dnn.matmul_block_scaled"(%a, %b, %sa, %sb) : (tensor<4x200xf8E4M3FN>, tensor<200x130xf8E4M3FN>, tensor<4x2xbf16>, tensor<2x2xf32>) -> tensor<4x130xf32>
  return %c : tensor<4x130xf32>
}

// -----

func.func @int8_conv_with_float_compute(%x: tensor<1x2x4x4xsi8>, %w: tensor<2x2x1x1xui8>) -> tensor<1x2x4x4xi32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op attribute 'compute_type': expected i32 (the accumulation of si8 / ui8 operands), got f32
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x4x4xsi8>, tensor<2x2x1x1xui8>) -> tensor<1x2x4x4xi32>
  return %y : tensor<1x2x4x4xi32>
}

// -----

func.func @int32_compute_of_float_operands(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.matmul' op attribute 'compute_type': i32 takes si8 or ui8 operands: expected f32 or tf32 for operand 'a' of f32, got i32
  %c = "dnn.matmul"(%a, %b) {compute_type = i32} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %c : tensor<2x4xf32>
}

// -----

func.func @int8_data_gradient(%dy: tensor<1x2x4x4xsi8>, %w: tensor<2x2x1x1xsi8>) -> tensor<1x2x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_dgrad' op operand 'dy': expected a floating-point tensor, got si8
  %dx = "dnn.conv_dgrad"(%dy, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x4x4xsi8>, tensor<2x2x1x1xsi8>) -> tensor<1x2x4x4xf32>
  return %dx : tensor<1x2x4x4xf32>
}

// -----

func.func @signless_i8_is_not_a_dnn_type(%x: tensor<2x3xi8>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.cast' op operand 'x': expected element type f32, f16, bf16, f8E4M3FN, f8E5M2, i1, i32, si8 or ui8, got i8
  %y = "dnn.cast"(%x) : (tensor<2x3xi8>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @bool_operand_expected(%a: tensor<2x3xf32>, %b: tensor<2x3xi1>) -> tensor<2x3xi1> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.logical_and' op operand 'a': expected a tensor of i1, got f32
  %y = "dnn.logical_and"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xi1>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

func.func @float_result_expected(%x: tensor<2x3xf32>) -> tensor<2x3xi1> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.abs' op result 'y': expected a floating-point or integer element type, got i1
  %y = "dnn.abs"(%x) : (tensor<2x3xf32>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

func.func @result_shape_mismatch(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.log' op result 'y': expected shape 2x3, got 2x4
  %y = "dnn.log"(%x) : (tensor<2x3xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

func.func @result_rank_mismatch(%x: tensor<2x3xbf16>) -> tensor<6xbf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.rsqrt' op result 'y': expected shape 2x3, got 6
  %y = "dnn.rsqrt"(%x) : (tensor<2x3xbf16>) -> tensor<6xbf16>
  return %y : tensor<6xbf16>
}

// -----

func.func @unknown_attribute_on_op_without_attributes(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.tanh' op attribute 'approximate': unknown attribute; the op has no attributes
  %y = "dnn.tanh"(%x) {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @unknown_attribute(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.softplus' op attribute 'alpha': unknown attribute; expected one of beta, threshold
  %y = "dnn.softplus"(%x) {alpha = 1.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @missing_required_attribute(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.softmax' op attribute 'axis': expected a value, got none
  %y = "dnn.softmax"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @int_attribute_given_float(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.softmax' op attribute 'axis': expected an i64 integer, got 1.000000e+00 : f64
  %y = "dnn.softmax"(%x) {axis = 1.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @int_attribute_given_bool(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.log_softmax' op attribute 'axis': expected an i64 integer, got true
  %y = "dnn.log_softmax"(%x) {axis = true} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @ints_attribute_given_array_attr(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.transpose' op attribute 'permutation': expected array<i64: ...>, got [1, 0]
  %y = "dnn.transpose"(%x) {permutation = [1, 0]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

func.func @ints_attribute_given_i32_array(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.transpose' op attribute 'permutation': expected array<i64: ...>, got array<i32: 1, 0>
  %y = "dnn.transpose"(%x) {permutation = array<i32: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

func.func @float_attribute_given_int(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.swish' op attribute 'beta': expected an f64 float, got 2 : i64
  %y = "dnn.swish"(%x) {beta = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @float_attribute_given_string(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.elu' op attribute 'alpha': expected an f64 float, got "one"
  %y = "dnn.elu"(%x) {alpha = "one"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @bool_attribute_given_int(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm' op attribute 'training': expected true or false, got 1 : i64
  %y = "dnn.layernorm"(%x) {axis = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>, training = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @str_attribute_given_int(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.gelu' op attribute 'approximate': expected a string, got 1 : i64
  %y = "dnn.gelu"(%x) {approximate = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @type_attribute_given_string(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.matmul' op attribute 'compute_type': expected a type, got "tf32"
  %c = "dnn.matmul"(%a, %b) {compute_type = "tf32"} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %c : tensor<2x4xf32>
}

// -----

func.func @unknown_choice(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.gelu' op attribute 'approximate': expected one of none, tanh, got erf
  %y = "dnn.gelu"(%x) {approximate = "erf"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// ============================================================================
// Pointwise ops.
// ============================================================================

func.func @silu_result_shape(%x: tensor<2x3xbf16>) -> tensor<3x2xbf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.silu' op result 'y': expected shape 2x3, got 3x2
  %y = "dnn.silu"(%x) : (tensor<2x3xbf16>) -> tensor<3x2xbf16>
  return %y : tensor<3x2xbf16>
}

// -----

func.func @sigmoid_i1_result(%x: tensor<2x3xf8E4M3FN>) -> tensor<2x3xi1> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sigmoid' op result 'y': expected a floating-point or integer element type, got i1
  %y = "dnn.sigmoid"(%x) : (tensor<2x3xf8E4M3FN>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

func.func @leaky_relu_slope_as_int(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.leaky_relu' op attribute 'negative_slope': expected an f64 float, got 0 : i64
  %y = "dnn.leaky_relu"(%x) {negative_slope = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @sqrt_i1_operand(%x: tensor<2x3xi1>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sqrt' op operand 'x': expected a floating-point tensor, got i1
  %y = "dnn.sqrt"(%x) : (tensor<2x3xi1>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @erf_result_shape(%x: tensor<2x3xf32>) -> tensor<2x3x1xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.erf' op result 'y': expected shape 2x3, got 2x3x1
  %y = "dnn.erf"(%x) : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
  return %y : tensor<2x3x1xf32>
}

// -----

func.func @floor_i1_operand(%x: tensor<2x3xi1>) -> tensor<2x3xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.floor' op operand 'x': expected a floating-point tensor, got i1
  %y = "dnn.floor"(%x) : (tensor<2x3xi1>) -> tensor<2x3xf16>
  return %y : tensor<2x3xf16>
}

// -----

func.func @ceil_result_shape(%x: tensor<2x3xf32>) -> tensor<f32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.ceil' op result 'y': expected shape 2x3, got scalar
  %y = "dnn.ceil"(%x) : (tensor<2x3xf32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

func.func @square_result_shape(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.square' op result 'y': expected shape 2x3, got 2x2
  %y = "dnn.square"(%x) : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

func.func @reciprocal_i1_operand(%x: tensor<2x3xi1>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.reciprocal' op operand 'x': expected a floating-point tensor, got i1
  %y = "dnn.reciprocal"(%x) : (tensor<2x3xi1>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @sin_i1_result(%x: tensor<2x3xf32>) -> tensor<2x3xi1> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sin' op result 'y': expected a floating-point or integer element type, got i1
  %y = "dnn.sin"(%x) : (tensor<2x3xf32>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

func.func @add_no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.add' op operand 'b' dim 0: expected 3 or 1 (broadcast against 'a'), got 4
  %y = "dnn.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @sub_result_is_broadcast_shape(%a: tensor<4x1xf16>, %b: tensor<1x5xf16>) -> tensor<4x1xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sub' op result 'y': expected shape 4x5, got 4x1
  %y = "dnn.sub"(%a, %b) : (tensor<4x1xf16>, tensor<1x5xf16>) -> tensor<4x1xf16>
  return %y : tensor<4x1xf16>
}

// -----

func.func @mul_i1_operand(%a: tensor<2x3xf32>, %b: tensor<2x3xi1>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.mul' op operand 'b': expected a floating-point tensor, got i1
  %y = "dnn.mul"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xi1>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @div_no_broadcast_leading_dim(%a: tensor<2x3xf32>, %b: tensor<5x4x3xf32>) -> tensor<5x2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.div' op operand 'b' dim 1: expected 2 or 1 (broadcast against 'a'), got 4
  %y = "dnn.div"(%a, %b) : (tensor<2x3xf32>, tensor<5x4x3xf32>) -> tensor<5x2x3xf32>
  return %y : tensor<5x2x3xf32>
}

// -----

func.func @max_i1_result(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xi1> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.max' op result 'y': expected a floating-point or integer element type, got i1
  %y = "dnn.max"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

func.func @min_result_shape(%a: tensor<2x3xf32>, %b: tensor<f32>) -> tensor<3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.min' op result 'y': expected shape 2x3, got 3
  %y = "dnn.min"(%a, %b) : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

func.func @cmp_eq_result_not_i1(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.cmp_eq' op result 'y': expected element type i1, got f32
  %y = "dnn.cmp_eq"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @cmp_ne_no_broadcast(%a: tensor<2x3xf32>, %b: tensor<2x2xf32>) -> tensor<2x3xi1> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.cmp_ne' op operand 'b' dim 1: expected 3 or 1 (broadcast against 'a'), got 2
  %y = "dnn.cmp_ne"(%a, %b) : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

func.func @cmp_lt_i1_operand(%a: tensor<2x3xi1>, %b: tensor<2x3xf32>) -> tensor<2x3xi1> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.cmp_lt' op operand 'a': expected a floating-point tensor, got i1
  %y = "dnn.cmp_lt"(%a, %b) : (tensor<2x3xi1>, tensor<2x3xf32>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

func.func @cmp_le_result_shape(%a: tensor<2x1xf32>, %b: tensor<3xf32>) -> tensor<2x1xi1> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.cmp_le' op result 'y': expected shape 2x3, got 2x1
  %y = "dnn.cmp_le"(%a, %b) : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x1xi1>
  return %y : tensor<2x1xi1>
}

// -----

func.func @cmp_gt_result_not_i1(%a: tensor<2x3xf16>, %b: tensor<2x3xf16>) -> tensor<2x3xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.cmp_gt' op result 'y': expected element type i1, got f16
  %y = "dnn.cmp_gt"(%a, %b) : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
  return %y : tensor<2x3xf16>
}

// -----

func.func @cmp_ge_no_broadcast(%a: tensor<4x3xf32>, %b: tensor<2x3xf32>) -> tensor<4x3xi1> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.cmp_ge' op operand 'b' dim 0: expected 4 or 1 (broadcast against 'a'), got 2
  %y = "dnn.cmp_ge"(%a, %b) : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x3xi1>
  return %y : tensor<4x3xi1>
}

// -----

func.func @logical_or_result_not_i1(%a: tensor<2x3xi1>, %b: tensor<2x3xi1>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.logical_or' op result 'y': expected element type i1, got f32
  %y = "dnn.logical_or"(%a, %b) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @logical_or_no_broadcast(%a: tensor<2x3xi1>, %b: tensor<3x3xi1>) -> tensor<2x3xi1> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.logical_or' op operand 'b' dim 0: expected 2 or 1 (broadcast against 'a'), got 3
  %y = "dnn.logical_or"(%a, %b) : (tensor<2x3xi1>, tensor<3x3xi1>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

func.func @logical_not_float_operand(%x: tensor<2x3xf16>) -> tensor<2x3xi1> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.logical_not' op operand 'x': expected a tensor of i1, got f16
  %y = "dnn.logical_not"(%x) : (tensor<2x3xf16>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

func.func @select_float_cond(%cond: tensor<2x3xf32>, %a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.select' op operand 'cond': expected a tensor of i1, got f32
  %y = "dnn.select"(%cond, %a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @select_no_broadcast(%cond: tensor<2x1xi1>, %a: tensor<1x3xf32>, %b: tensor<4x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.select' op operand 'b' dim 0: expected 2 or 1 (broadcast against 'cond'), got 4
  %y = "dnn.select"(%cond, %a, %b) : (tensor<2x1xi1>, tensor<1x3xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @select_i1_operand(%cond: tensor<2x3xi1>, %a: tensor<2x3xi1>, %b: tensor<2x3xi1>) -> tensor<2x3xi1> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.select' op operand 'a': expected a floating-point tensor, got i1
  %y = "dnn.select"(%cond, %a, %b) : (tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

func.func @gen_index_axis_out_of_range(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.gen_index' op attribute 'axis': expected an axis in [0, 2), got 2
  %y = "dnn.gen_index"(%x) {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @gen_index_i1_result(%x: tensor<2x3xi1>) -> tensor<2x3xi1> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.gen_index' op result 'y': expected a floating-point or integer element type, got i1
  %y = "dnn.gen_index"(%x) {axis = 0 : i64} : (tensor<2x3xi1>) -> tensor<2x3xi1>
  return %y : tensor<2x3xi1>
}

// -----

func.func @relu_backward_no_broadcast(%dy: tensor<2x3xf32>, %x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.relu_backward' op operand 'x' dim 1: expected 3 or 1 (broadcast against 'dy'), got 4
  %dx = "dnn.relu_backward"(%dy, %x) : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x3xf32>
  return %dx : tensor<2x3xf32>
}

// -----

func.func @gelu_backward_unknown_approximation(%dy: tensor<2x3xf32>, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.gelu_backward' op attribute 'approximate': expected one of none, tanh, got sigmoid
  %dx = "dnn.gelu_backward"(%dy, %x) {approximate = "sigmoid"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %dx : tensor<2x3xf32>
}

// -----

func.func @silu_backward_result_shape(%dy: tensor<2x3xf32>, %x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.silu_backward' op result 'dx': expected shape 2x3, got 2x1
  %dx = "dnn.silu_backward"(%dy, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x1xf32>
  return %dx : tensor<2x1xf32>
}

// -----

func.func @sigmoid_backward_i1_operand(%dy: tensor<2x3xi1>, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sigmoid_backward' op operand 'dy': expected a floating-point tensor, got i1
  %dx = "dnn.sigmoid_backward"(%dy, %x) : (tensor<2x3xi1>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %dx : tensor<2x3xf32>
}

// -----

func.func @tanh_backward_i1_result(%dy: tensor<2x3xf16>, %x: tensor<2x3xf16>) -> tensor<2x3xi1> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.tanh_backward' op result 'dx': expected a floating-point or integer element type, got i1
  %dx = "dnn.tanh_backward"(%dy, %x) : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xi1>
  return %dx : tensor<2x3xi1>
}

// -----

func.func @swish_backward_result_shape(%dy: tensor<2x3xf32>, %x: tensor<3xf32>) -> tensor<3x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.swish_backward' op result 'dx': expected shape 2x3, got 3x3
  %dx = "dnn.swish_backward"(%dy, %x) {beta = 1.500000e+00 : f64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
  return %dx : tensor<3x3xf32>
}

// -----

func.func @elu_backward_i1_operand(%dy: tensor<2x3xf32>, %x: tensor<2x3xi1>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.elu_backward' op operand 'x': expected a floating-point tensor, got i1
  %dx = "dnn.elu_backward"(%dy, %x) : (tensor<2x3xf32>, tensor<2x3xi1>) -> tensor<2x3xf32>
  return %dx : tensor<2x3xf32>
}

// -----

func.func @leaky_relu_backward_i1_result(%dy: tensor<2x3xbf16>, %x: tensor<2x3xbf16>) -> tensor<2x3xi1> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.leaky_relu_backward' op result 'dx': expected a floating-point or integer element type, got i1
  %dx = "dnn.leaky_relu_backward"(%dy, %x) : (tensor<2x3xbf16>, tensor<2x3xbf16>) -> tensor<2x3xi1>
  return %dx : tensor<2x3xi1>
}

// -----

func.func @softplus_backward_result_shape(%dy: tensor<2x3xf16>, %x: tensor<1x3xf16>) -> tensor<1x3xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.softplus_backward' op result 'dx': expected shape 2x3, got 1x3
  %dx = "dnn.softplus_backward"(%dy, %x) : (tensor<2x3xf16>, tensor<1x3xf16>) -> tensor<1x3xf16>
  return %dx : tensor<1x3xf16>
}

// -----

// ============================================================================
// Tensor ops.
// ============================================================================

func.func @cast_result_shape(%x: tensor<2x3xf32>) -> tensor<3x2xbf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.cast' op result 'y': expected shape 2x3, got 3x2
  %y = "dnn.cast"(%x) : (tensor<2x3xf32>) -> tensor<3x2xbf16>
  return %y : tensor<3x2xbf16>
}

// -----

func.func @constant_missing_value() -> tensor<f32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.constant' op attribute 'value': expected a value, got none
  %y = "dnn.constant"() : () -> tensor<f32>
  return %y : tensor<f32>
}

// -----

func.func @constant_value_as_int() -> tensor<f32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.constant' op attribute 'value': expected an f64 float, got 1 : i64
  %y = "dnn.constant"() {value = 1 : i64} : () -> tensor<f32>
  return %y : tensor<f32>
}

// -----

func.func @constant_not_scalar() -> tensor<4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.constant' op result 'y': expected shape scalar, got 4
  %y = "dnn.constant"() {value = 1.000000e+00 : f64} : () -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @reshape_element_count(%x: tensor<2x3x4xf32>) -> tensor<5x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.reshape' op result 'y': expected 24 elements (the number in operand 'x', 2x3x4), got 20
  %y = "dnn.reshape"(%x) : (tensor<2x3x4xf32>) -> tensor<5x4xf32>
  return %y : tensor<5x4xf32>
}

// -----

func.func @reshape_scalar_element_count(%x: tensor<f32>) -> tensor<2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.reshape' op result 'y': expected 1 elements (the number in operand 'x', a scalar), got 2
  %y = "dnn.reshape"(%x) : (tensor<f32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

func.func @reshape_changes_element_type(%x: tensor<2x3xf32>) -> tensor<6xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.reshape' op result 'y': expected element type f32, got f16
  %y = "dnn.reshape"(%x) : (tensor<2x3xf32>) -> tensor<6xf16>
  return %y : tensor<6xf16>
}

// -----

func.func @transpose_permutation_length(%x: tensor<2x3x4xf32>) -> tensor<3x2x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.transpose' op attribute 'permutation': expected 3 values (rank of 'x'), got 2
  %y = "dnn.transpose"(%x) {permutation = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  return %y : tensor<3x2x4xf32>
}

// -----

func.func @transpose_not_a_permutation(%x: tensor<2x3x4xf32>) -> tensor<3x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.transpose' op attribute 'permutation': expected a permutation of 0..2, got [1, 1, 2]
  %y = "dnn.transpose"(%x) {permutation = array<i64: 1, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<3x3x4xf32>
  return %y : tensor<3x3x4xf32>
}

// -----

func.func @transpose_result_shape(%x: tensor<2x3x4xf16>) -> tensor<2x3x4xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.transpose' op result 'y': expected shape 4x2x3, got 2x3x4
  %y = "dnn.transpose"(%x) {permutation = array<i64: 2, 0, 1>} : (tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
  return %y : tensor<2x3x4xf16>
}

// -----

func.func @transpose_changes_element_type(%x: tensor<2x3xi1>) -> tensor<3x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.transpose' op result 'y': expected element type i1, got f32
  %y = "dnn.transpose"(%x) {permutation = array<i64: 1, 0>} : (tensor<2x3xi1>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

func.func @slice_start_length(%x: tensor<8x6xf32>) -> tensor<3x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.slice' op attribute 'start': expected 2 values (rank of 'x'), got 1
  %y = "dnn.slice"(%x) {limit = array<i64: 7, 6>, start = array<i64: 1>, step = array<i64: 2, 3>} : (tensor<8x6xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

func.func @slice_limit_length(%x: tensor<8x6xf32>) -> tensor<3x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.slice' op attribute 'limit': expected 2 values (rank of 'x'), got 3
  %y = "dnn.slice"(%x) {limit = array<i64: 7, 6, 1>, start = array<i64: 1, 0>, step = array<i64: 2, 3>} : (tensor<8x6xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

func.func @slice_missing_step(%x: tensor<8x6xf32>) -> tensor<3x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.slice' op attribute 'step': expected a value, got none
  %y = "dnn.slice"(%x) {limit = array<i64: 7, 6>, start = array<i64: 1, 0>} : (tensor<8x6xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

func.func @slice_zero_step(%x: tensor<8x6xf32>) -> tensor<3x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.slice' op attribute 'step' entry 1: expected >= 1, got 0
  %y = "dnn.slice"(%x) {limit = array<i64: 7, 6>, start = array<i64: 1, 0>, step = array<i64: 2, 0>} : (tensor<8x6xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

func.func @slice_start_out_of_range(%x: tensor<8x6xf32>) -> tensor<3x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.slice' op attribute 'start' entry 0: expected 0..8, got 9
  %y = "dnn.slice"(%x) {limit = array<i64: 7, 6>, start = array<i64: 9, 0>, step = array<i64: 1, 1>} : (tensor<8x6xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

func.func @slice_limit_before_start(%x: tensor<8x6xf32>) -> tensor<3x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.slice' op attribute 'limit' entry 1: expected 2..6, got 1
  %y = "dnn.slice"(%x) {limit = array<i64: 7, 1>, start = array<i64: 1, 2>, step = array<i64: 1, 1>} : (tensor<8x6xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

func.func @slice_limit_out_of_range(%x: tensor<8x6xf32>) -> tensor<3x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.slice' op attribute 'limit' entry 0: expected 1..8, got 9
  %y = "dnn.slice"(%x) {limit = array<i64: 9, 6>, start = array<i64: 1, 0>, step = array<i64: 1, 1>} : (tensor<8x6xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

func.func @slice_result_shape(%x: tensor<8x6xf32>) -> tensor<6x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.slice' op result 'y': expected shape 3x2, got 6x2
  %y = "dnn.slice"(%x) {limit = array<i64: 7, 6>, start = array<i64: 1, 0>, step = array<i64: 2, 3>} : (tensor<8x6xf32>) -> tensor<6x2xf32>
  return %y : tensor<6x2xf32>
}

// -----

func.func @concat_one_input(%a: tensor<2xf32>) -> tensor<2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.concat' op expects exactly 2 operands, but got 1
  %y = "dnn.concat"(%a) {axis = 0 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

func.func @concat_axis_out_of_range(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.concat' op attribute 'axis': expected an axis in [0, 2), got 2
  %y = "dnn.concat"(%a, %b) {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}

// -----

func.func @concat_result_shape(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<2x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.concat' op result 'y': expected shape 2x7, got 2x6
  %y = "dnn.concat"(%a, %b) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}

// -----

func.func @concat_other_dims_differ(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.concat' op operand 'b' dim 0: expected 2 (as 'a'), got 3
  %y = "dnn.concat"(%a, %b) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}

// -----

func.func @concat_rank_differs(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) -> tensor<2x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.concat' op operand 'b': expected rank 2 (rank of 'a'), got rank 3
  %y = "dnn.concat"(%a, %b) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}

// -----

func.func @concat_element_types_differ(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) -> tensor<2x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.concat' op operand 'b': expected element type f32 (as 'a'), got f16
  %y = "dnn.concat"(%a, %b) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}

// -----

func.func @concat_changes_element_type(%a: tensor<2x3xf16>, %b: tensor<2x3xf16>) -> tensor<4x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.concat' op result 'y': expected element type f16, got f32
  %y = "dnn.concat"(%a, %b) {axis = 0 : i64} : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// ============================================================================
// Matmul and convolution.
// ============================================================================

func.func @matmul_rank_1(%a: tensor<8xf32>, %b: tensor<8x5xf32>) -> tensor<5xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.matmul' op operand 'a': expected rank >= 2, got rank 1
  %c = "dnn.matmul"(%a, %b) : (tensor<8xf32>, tensor<8x5xf32>) -> tensor<5xf32>
  return %c : tensor<5xf32>
}

// -----

func.func @matmul_k_mismatch(%a: tensor<4x8xf32>, %b: tensor<7x5xf32>) -> tensor<4x5xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.matmul' op operand 'b' dim 0: expected 8 (K of 'a'), got 7
  %c = "dnn.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<7x5xf32>) -> tensor<4x5xf32>
  return %c : tensor<4x5xf32>
}

// -----

func.func @matmul_batch_mismatch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x5xf32>) -> tensor<3x4x5xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.matmul' op operand 'b' dim 0: expected 2 or 1 (batch dim of 'a'), got 3
  %c = "dnn.matmul"(%a, %b) : (tensor<2x4x8xf32>, tensor<3x8x5xf32>) -> tensor<3x4x5xf32>
  return %c : tensor<3x4x5xf32>
}

// -----

func.func @matmul_unknown_compute_type(%a: tensor<4x8xf16>, %b: tensor<8x5xf16>) -> tensor<4x5xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.matmul' op attribute 'compute_type': expected one of f32, tf32, i32, got f16
  %c = "dnn.matmul"(%a, %b) {compute_type = f16} : (tensor<4x8xf16>, tensor<8x5xf16>) -> tensor<4x5xf16>
  return %c : tensor<4x5xf16>
}

// -----

func.func @matmul_result_shape(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>) -> tensor<5x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.matmul' op result 'c': expected shape 4x5, got 5x4
  %c = "dnn.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<5x4xf32>
  return %c : tensor<5x4xf32>
}

// -----

func.func @conv_fprop_rank_3(%x: tensor<2x4x8xf32>, %w: tensor<6x4x3xf32>) -> tensor<2x6x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op operand 'x': expected rank 4 or 5, got rank 3
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1>, post_padding = array<i64: 0>, pre_padding = array<i64: 0>, stride = array<i64: 1>} : (tensor<2x4x8xf32>, tensor<6x4x3xf32>) -> tensor<2x6x6xf32>
  return %y : tensor<2x6x6xf32>
}

// -----

func.func @conv_fprop_filter_rank(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3x3xf32>) -> tensor<2x6x6x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op operand 'w': expected rank 4, got rank 5
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3x3xf32>) -> tensor<2x6x6x6xf32>
  return %y : tensor<2x6x6x6xf32>
}

// -----

func.func @conv_fprop_missing_stride(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op attribute 'stride': expected a value, got none
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
  return %y : tensor<2x6x6x6xf32>
}

// -----

func.func @conv_fprop_padding_count(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op attribute 'pre_padding': expected 2 values (spatial rank), got 1
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0>, stride = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
  return %y : tensor<2x6x6x6xf32>
}

// -----

func.func @conv_fprop_3d_stride_count(%x: tensor<1x2x4x6x6xf32>, %w: tensor<3x2x2x3x3xf32>) -> tensor<1x3x3x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op attribute 'stride': expected 3 values (spatial rank), got 2
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 1, 1>, post_padding = array<i64: 0, 0, 0>, pre_padding = array<i64: 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x2x4x6x6xf32>, tensor<3x2x2x3x3xf32>) -> tensor<1x3x3x4x4xf32>
  return %y : tensor<1x3x3x4x4xf32>
}

// -----

func.func @conv_fprop_zero_stride(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op attribute 'stride' entry 0: expected >= 1, got 0
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 0, 1>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
  return %y : tensor<2x6x6x6xf32>
}

// -----

func.func @conv_fprop_zero_dilation(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op attribute 'dilation' entry 1: expected >= 1, got 0
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 0>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
  return %y : tensor<2x6x6x6xf32>
}

// -----

func.func @conv_fprop_negative_pre_padding(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op attribute 'pre_padding' entry 1: expected >= 0, got -1
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, -1>, stride = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
  return %y : tensor<2x6x6x6xf32>
}

// -----

func.func @conv_fprop_negative_post_padding(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op attribute 'post_padding' entry 0: expected >= 0, got -2
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: -2, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
  return %y : tensor<2x6x6x6xf32>
}

// -----

func.func @conv_fprop_filter_channels_not_divisor(%x: tensor<2x4x8x8xf32>, %w: tensor<6x3x3x3xf32>) -> tensor<2x6x6x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op operand 'w' dim 1: expected a divisor of 4 (channels of 'x' / groups), got 3
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<6x3x3x3xf32>) -> tensor<2x6x6x6xf32>
  return %y : tensor<2x6x6x6xf32>
}

// -----

func.func @conv_fprop_filter_zero_channels(%x: tensor<2x4x8x8xf32>, %w: tensor<6x0x3x3xf32>) -> tensor<2x6x6x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op operand 'w' dim 1: expected a divisor of 4 (channels of 'x' / groups), got 0
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<6x0x3x3xf32>) -> tensor<2x6x6x6xf32>
  return %y : tensor<2x6x6x6xf32>
}

// -----

func.func @conv_fprop_filters_not_multiple_of_groups(%x: tensor<2x4x8x8xf32>, %w: tensor<5x2x3x3xf32>) -> tensor<2x5x6x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op operand 'w' dim 0: expected a multiple of 2 (groups), got 5
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<5x2x3x3xf32>) -> tensor<2x5x6x6xf32>
  return %y : tensor<2x5x6x6xf32>
}

// -----

func.func @conv_fprop_window_larger_than_input(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x7xf32>) -> tensor<1x1x2x1xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op operand 'w' dim 3: expected at most 6 (dilated window within padded 'x'), got 7
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 0, 1>, pre_padding = array<i64: 0, 1>, stride = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x3x7xf32>) -> tensor<1x1x2x1xf32>
  return %y : tensor<1x1x2x1xf32>
}

// -----

func.func @conv_fprop_dilated_window_larger_than_input(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op operand 'w' dim 2: expected at most 4 (dilated window within padded 'x'), got 7
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 3, 1>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32>
  return %y : tensor<1x1x1x1xf32>
}

// -----

func.func @conv_fprop_unknown_mode(%x: tensor<2x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op attribute 'mode': expected one of cross_correlation, convolution, got correlation
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 1>, mode = "correlation", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x6x6xf32>
  return %y : tensor<2x6x6x6xf32>
}

// -----

func.func @conv_fprop_result_shape(%x: tensor<2x4x8x8xf16>, %w: tensor<6x2x3x3xf16>) -> tensor<2x6x8x8xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_fprop' op result 'y': expected shape 2x6x4x4, got 2x6x8x8
  %y = "dnn.conv_fprop"(%x, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x4x8x8xf16>, tensor<6x2x3x3xf16>) -> tensor<2x6x8x8xf16>
  return %y : tensor<2x6x8x8xf16>
}

// -----

func.func @conv_dgrad_rank_3(%dy: tensor<2x6x4xf32>, %w: tensor<6x4x3xf32>) -> tensor<2x4x6xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_dgrad' op operand 'dy': expected rank 4 or 5, got rank 3
  %dx = "dnn.conv_dgrad"(%dy, %w) {dilation = array<i64: 1>, post_padding = array<i64: 0>, pre_padding = array<i64: 0>, stride = array<i64: 1>} : (tensor<2x6x4xf32>, tensor<6x4x3xf32>) -> tensor<2x4x6xf32>
  return %dx : tensor<2x4x6xf32>
}

// -----

func.func @conv_dgrad_result_rank(%dy: tensor<2x6x6x6xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x4x8x8x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_dgrad' op result 'dx': expected rank 4, got rank 5
  %dx = "dnn.conv_dgrad"(%dy, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x6x6x6xf32>, tensor<6x4x3x3xf32>) -> tensor<2x4x8x8x8xf32>
  return %dx : tensor<2x4x8x8x8xf32>
}

// -----

func.func @conv_dgrad_result_channels(%dy: tensor<2x6x6x6xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<2x3x8x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_dgrad' op operand 'w' dim 1: expected a divisor of 3 (channels of 'dx' / groups), got 2
  %dx = "dnn.conv_dgrad"(%dy, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x6x6x6xf32>, tensor<6x2x3x3xf32>) -> tensor<2x3x8x8xf32>
  return %dx : tensor<2x3x8x8xf32>
}

// -----

func.func @conv_dgrad_window_larger_than_result(%dy: tensor<1x1x1x1xf32>, %w: tensor<1x1x5x5xf32>) -> tensor<1x1x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_dgrad' op operand 'w' dim 2: expected at most 4 (dilated window within padded 'dx'), got 5
  %dx = "dnn.conv_dgrad"(%dy, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x1x1x1xf32>, tensor<1x1x5x5xf32>) -> tensor<1x1x4x4xf32>
  return %dx : tensor<1x1x4x4xf32>
}

// -----

func.func @conv_dgrad_gradient_shape(%dy: tensor<2x6x5x5xf16>, %w: tensor<6x2x3x3xf16>) -> tensor<2x4x8x8xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_dgrad' op operand 'dy' dim 2: expected 4 (conv_fprop output of dx and w), got 5
  %dx = "dnn.conv_dgrad"(%dy, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x6x5x5xf16>, tensor<6x2x3x3xf16>) -> tensor<2x4x8x8xf16>
  return %dx : tensor<2x4x8x8xf16>
}

// -----

func.func @conv_dgrad_gradient_channels(%dy: tensor<2x5x4x4xf16>, %w: tensor<6x2x3x3xf16>) -> tensor<2x4x8x8xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_dgrad' op operand 'dy' dim 1: expected 6 (conv_fprop output of dx and w), got 5
  %dx = "dnn.conv_dgrad"(%dy, %w) {dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x5x4x4xf16>, tensor<6x2x3x3xf16>) -> tensor<2x4x8x8xf16>
  return %dx : tensor<2x4x8x8xf16>
}

// -----

func.func @conv_wgrad_image_rank(%dy: tensor<2x6x4x4xf16>, %x: tensor<2x4x8x8x8xf16>) -> tensor<6x2x3x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_wgrad' op operand 'x': expected rank 4, got rank 5
  %dw = "dnn.conv_wgrad"(%dy, %x) {dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x6x4x4xf16>, tensor<2x4x8x8x8xf16>) -> tensor<6x2x3x3xf32>
  return %dw : tensor<6x2x3x3xf32>
}

// -----

func.func @conv_wgrad_result_rank(%dy: tensor<2x6x4x4xf16>, %x: tensor<2x4x8x8xf16>) -> tensor<6x2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_wgrad' op result 'dw': expected rank 4, got rank 3
  %dw = "dnn.conv_wgrad"(%dy, %x) {dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x6x4x4xf16>, tensor<2x4x8x8xf16>) -> tensor<6x2x3xf32>
  return %dw : tensor<6x2x3xf32>
}

// -----

func.func @conv_wgrad_result_channels(%dy: tensor<2x6x4x4xf16>, %x: tensor<2x4x8x8xf16>) -> tensor<6x3x3x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_wgrad' op result 'dw' dim 1: expected a divisor of 4 (channels of 'x' / groups), got 3
  %dw = "dnn.conv_wgrad"(%dy, %x) {dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x6x4x4xf16>, tensor<2x4x8x8xf16>) -> tensor<6x3x3x3xf32>
  return %dw : tensor<6x3x3x3xf32>
}

// -----

func.func @conv_wgrad_result_filters_not_multiple_of_groups(%dy: tensor<2x5x4x4xf16>, %x: tensor<2x4x8x8xf16>) -> tensor<5x2x3x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_wgrad' op result 'dw' dim 0: expected a multiple of 2 (groups), got 5
  %dw = "dnn.conv_wgrad"(%dy, %x) {dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x5x4x4xf16>, tensor<2x4x8x8xf16>) -> tensor<5x2x3x3xf32>
  return %dw : tensor<5x2x3x3xf32>
}

// -----

func.func @conv_wgrad_result_window_too_large(%dy: tensor<2x6x1x1xf16>, %x: tensor<2x4x8x8xf16>) -> tensor<6x2x11x11xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_wgrad' op result 'dw' dim 2: expected at most 10 (dilated window within padded 'x'), got 11
  %dw = "dnn.conv_wgrad"(%dy, %x) {dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x6x1x1xf16>, tensor<2x4x8x8xf16>) -> tensor<6x2x11x11xf32>
  return %dw : tensor<6x2x11x11xf32>
}

// -----

func.func @conv_wgrad_gradient_shape(%dy: tensor<2x6x4x4xf16>, %x: tensor<2x4x8x8xf16>) -> tensor<6x2x3x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_wgrad' op operand 'dy' dim 2: expected 8 (conv_fprop output of x and dw), got 4
  %dw = "dnn.conv_wgrad"(%dy, %x) {dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x6x4x4xf16>, tensor<2x4x8x8xf16>) -> tensor<6x2x3x3xf32>
  return %dw : tensor<6x2x3x3xf32>
}

// -----

func.func @conv_wgrad_compute_type_as_string(%dy: tensor<2x6x4x4xf16>, %x: tensor<2x4x8x8xf16>) -> tensor<6x2x3x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.conv_wgrad' op attribute 'compute_type': expected a type, got "f32"
  %dw = "dnn.conv_wgrad"(%dy, %x) {compute_type = "f32", dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x6x4x4xf16>, tensor<2x4x8x8xf16>) -> tensor<6x2x3x3xf32>
  return %dw : tensor<6x2x3x3xf32>
}

// -----

// ============================================================================
// Attention.
// ============================================================================

func.func @sdpa_query_rank(%q: tensor<4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>) -> tensor<4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op operand 'q': expected rank 4, got rank 3
  %o = "dnn.sdpa"(%q, %k, %v) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>) -> tensor<4x16x8xf32>
  return %o : tensor<4x16x8xf32>
}

// -----

func.func @sdpa_value_rank(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x32x8xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op operand 'v': expected rank 4, got rank 3
  %o = "dnn.sdpa"(%q, %k, %v) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x32x8xf32>) -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_key_batch(%q: tensor<2x4x16x8xf32>, %k: tensor<3x2x32x8xf32>, %v: tensor<3x2x32x8xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op operand 'k' dim 0: expected 2 (batch of 'q'), got 3
  %o = "dnn.sdpa"(%q, %k, %v) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<3x2x32x8xf32>, tensor<3x2x32x8xf32>) -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_key_heads_not_divisor(%q: tensor<2x4x16x8xf32>, %k: tensor<2x3x32x8xf32>, %v: tensor<2x3x32x8xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op operand 'k' dim 1: expected a divisor of 4 (heads of 'q'), got 3
  %o = "dnn.sdpa"(%q, %k, %v) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x3x32x8xf32>, tensor<2x3x32x8xf32>) -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_key_head_dim(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x16xf32>, %v: tensor<2x2x32x8xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op operand 'k' dim 3: expected 8 (head dim of 'q'), got 16
  %o = "dnn.sdpa"(%q, %k, %v) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x16xf32>, tensor<2x2x32x8xf32>) -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_value_length(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x16x8xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op operand 'v' dim 2: expected 32 (batch, heads and length of 'k'), got 16
  %o = "dnn.sdpa"(%q, %k, %v) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x16x8xf32>) -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_bias_rank(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>, %bias: tensor<16x32xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op operand 'bias': expected rank 4, got rank 2
  %o = "dnn.sdpa"(%q, %k, %v, %bias) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>, tensor<16x32xf32>) -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_bias_no_broadcast(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>, %bias: tensor<1x4x16x16xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op operand 'bias' dim 3: expected 32 or 1 (broadcast to B, H, Sq, Skv), got 16
  %o = "dnn.sdpa"(%q, %k, %v, %bias) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>, tensor<1x4x16x16xf32>) -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_paged_without_padding(%q: tensor<2x4x1x8xf16>, %k: tensor<9x2x16x8xf16>, %v: tensor<9x2x16x8xf16>, %lq: tensor<2x1x1x1xi32>, %lkv: tensor<2x1x1x1xi32>, %kt: tensor<2x1x4x1xi32>, %vt: tensor<2x1x4x1xi32>) -> tensor<2x4x1x8xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op attribute 'padding': expected true with a paged k and v (paged attention needs seq_len_kv), got false
  %o = "dnn.sdpa"(%q, %k, %v, %kt, %vt) {max_seq_len_kv = 60 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<2x4x1x8xf16>, tensor<9x2x16x8xf16>, tensor<9x2x16x8xf16>, tensor<2x1x4x1xi32>, tensor<2x1x4x1xi32>) -> tensor<2x4x1x8xf16>
  return %o : tensor<2x4x1x8xf16>
}

// -----

func.func @sdpa_paged_max_seq_len_kv_past_the_table(%q: tensor<2x4x1x8xf16>, %k: tensor<9x2x16x8xf16>, %v: tensor<9x2x16x8xf16>, %lq: tensor<2x1x1x1xi32>, %lkv: tensor<2x1x1x1xi32>, %kt: tensor<2x1x4x1xi32>, %vt: tensor<2x1x4x1xi32>) -> tensor<2x4x1x8xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op attribute 'max_seq_len_kv': expected 1..64 (T = 4 pages of 16 rows), got 65
  %o = "dnn.sdpa"(%q, %k, %v, %lq, %lkv, %kt, %vt) {max_seq_len_kv = 65 : i64, padding = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<2x4x1x8xf16>, tensor<9x2x16x8xf16>, tensor<9x2x16x8xf16>, tensor<2x1x1x1xi32>, tensor<2x1x1x1xi32>, tensor<2x1x4x1xi32>, tensor<2x1x4x1xi32>) -> tensor<2x4x1x8xf16>
  return %o : tensor<2x4x1x8xf16>
}

// -----

func.func @sdpa_paged_one_table(%q: tensor<2x4x1x8xf16>, %k: tensor<9x2x16x8xf16>, %v: tensor<9x2x16x8xf16>, %lq: tensor<2x1x1x1xi32>, %lkv: tensor<2x1x1x1xi32>, %kt: tensor<2x1x4x1xi32>, %vt: tensor<2x1x4x1xi32>) -> tensor<2x4x1x8xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op operand 'page_table_v': expected an int32 tensor (B, 1, T, 1) with 'page_table_k', got none
  %o = "dnn.sdpa"(%q, %k, %v, %lq, %lkv, %kt) {max_seq_len_kv = 60 : i64, padding = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<2x4x1x8xf16>, tensor<9x2x16x8xf16>, tensor<9x2x16x8xf16>, tensor<2x1x1x1xi32>, tensor<2x1x1x1xi32>, tensor<2x1x4x1xi32>) -> tensor<2x4x1x8xf16>
  return %o : tensor<2x4x1x8xf16>
}

// -----

func.func @sdpa_paged_table_batch(%q: tensor<2x4x1x8xf16>, %k: tensor<9x2x16x8xf16>, %v: tensor<9x2x16x8xf16>, %lq: tensor<2x1x1x1xi32>, %lkv: tensor<2x1x1x1xi32>, %kt: tensor<3x1x4x1xi32>, %vt: tensor<2x1x4x1xi32>) -> tensor<2x4x1x8xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op operand 'page_table_k' dim 0: expected 2 (shape B, 1, T, 1), got 3
  %o = "dnn.sdpa"(%q, %k, %v, %lq, %lkv, %kt, %vt) {max_seq_len_kv = 60 : i64, padding = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<2x4x1x8xf16>, tensor<9x2x16x8xf16>, tensor<9x2x16x8xf16>, tensor<2x1x1x1xi32>, tensor<2x1x1x1xi32>, tensor<3x1x4x1xi32>, tensor<2x1x4x1xi32>) -> tensor<2x4x1x8xf16>
  return %o : tensor<2x4x1x8xf16>
}

// -----

func.func @sdpa_max_seq_len_kv_unpaged(%q: tensor<2x4x1x8xf16>, %k: tensor<2x2x16x8xf16>, %v: tensor<2x2x16x8xf16>) -> tensor<2x4x1x8xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op attribute 'max_seq_len_kv': expected 0 without page tables, got 60
  %o = "dnn.sdpa"(%q, %k, %v) {max_seq_len_kv = 60 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<2x4x1x8xf16>, tensor<2x2x16x8xf16>, tensor<2x2x16x8xf16>) -> tensor<2x4x1x8xf16>
  return %o : tensor<2x4x1x8xf16>
}

// -----

func.func @sdpa_missing_scale(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op attribute 'scale': expected a value, got none
  %o = "dnn.sdpa"(%q, %k, %v) {causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>) -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_causal_as_int(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op attribute 'causal': expected true or false, got 1 : i64
  %o = "dnn.sdpa"(%q, %k, %v) {causal = 1 : i64, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>) -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_output_shape(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>) -> tensor<2x2x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op result 'o': expected shape 2x4x16x8, got 2x2x16x8
  %o = "dnn.sdpa"(%q, %k, %v) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>) -> tensor<2x2x16x8xf32>
  return %o : tensor<2x2x16x8xf32>
}

// -----

func.func @sdpa_stats_missing(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op result 'stats': expected present, got absent
  %o = "dnn.sdpa"(%q, %k, %v) {generate_stats = true, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>) -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_stats_not_requested(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op result 'stats': expected absent, got present
  %r:2 = "dnn.sdpa"(%q, %k, %v) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16x1xf32>)
  return %r#0 : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_stats_not_f32(%q: tensor<2x4x16x8xf16>, %k: tensor<2x2x32x8xf16>, %v: tensor<2x2x32x8xf16>) -> tensor<2x4x16x8xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op result 'stats': expected element type f32, got f16
  %r:2 = "dnn.sdpa"(%q, %k, %v) {generate_stats = true, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf16>, tensor<2x2x32x8xf16>, tensor<2x2x32x8xf16>) -> (tensor<2x4x16x8xf16>, tensor<2x4x16x1xf16>)
  return %r#0 : tensor<2x4x16x8xf16>
}

// -----

func.func @sdpa_stats_shape(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op result 'stats': expected shape 2x4x16x1, got 2x4x16
  %r:2 = "dnn.sdpa"(%q, %k, %v) {generate_stats = true, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x16xf32>)
  return %r#0 : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_backward_output_shape(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>, %o: tensor<2x4x16x16xf32>, %do: tensor<2x4x16x8xf32>, %stats: tensor<2x4x16x1xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa_backward' op operand 'o' dim 3: expected 8 (shape of the forward output), got 16
  %r:3 = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x1xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>)
  return %r#0 : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_backward_output_gradient_shape(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>, %o: tensor<2x4x16x8xf32>, %do: tensor<2x4x32x8xf32>, %stats: tensor<2x4x16x1xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa_backward' op operand 'do' dim 2: expected 16 (shape of 'o'), got 32
  %r:3 = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x32x8xf32>, tensor<2x4x16x1xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>)
  return %r#0 : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_backward_dbias_without_bias(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>, %o: tensor<2x4x16x8xf32>, %do: tensor<2x4x16x8xf32>, %stats: tensor<2x4x16x1xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa_backward' op attribute 'compute_dbias': expected a 'bias' operand with compute_dbias=true (dbias is its gradient), got none
  %r:4 = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats) {compute_dbias = true, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x1xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>, tensor<2x4x16x32xf32>)
  return %r#0 : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_backward_dbias_shape(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>, %o: tensor<2x4x16x8xf32>, %do: tensor<2x4x16x8xf32>, %stats: tensor<2x4x16x1xf32>, %bias: tensor<1x4x16x32xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa_backward' op result 'dbias': expected shape 1x4x16x32, got 2x4x16x32
  %r:4 = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats, %bias) {compute_dbias = true, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x1xf32>, tensor<1x4x16x32xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>, tensor<2x4x16x32xf32>)
  return %r#0 : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_backward_dbias_absent(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>, %o: tensor<2x4x16x8xf32>, %do: tensor<2x4x16x8xf32>, %stats: tensor<2x4x16x1xf32>, %bias: tensor<1x4x16x32xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa_backward' op result 'dbias': expected absent, got present
  %r:4 = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats, %bias) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x1xf32>, tensor<1x4x16x32xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>, tensor<1x4x16x32xf32>)
  return %r#0 : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_backward_stats_rank(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>, %o: tensor<2x4x16x8xf32>, %do: tensor<2x4x16x8xf32>, %stats: tensor<2x4x16xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa_backward' op operand 'stats': expected rank 4, got rank 3
  %r:3 = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>)
  return %r#0 : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_backward_stats_shape(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>, %o: tensor<2x4x16x8xf32>, %do: tensor<2x4x16x8xf32>, %stats: tensor<2x4x16x2xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa_backward' op operand 'stats' dim 3: expected 1 (shape B, H, Sq, 1), got 2
  %r:3 = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x2xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>)
  return %r#0 : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_backward_bias_no_broadcast(%q: tensor<1x2x4x8xf16>, %k: tensor<1x2x6x8xf16>, %v: tensor<1x2x6x8xf16>, %o: tensor<1x2x4x8xf16>, %do: tensor<1x2x4x8xf16>, %stats: tensor<1x2x4x1xf32>, %bias: tensor<1x3x4x6xf16>) -> tensor<1x2x4x8xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa_backward' op operand 'bias' dim 1: expected 2 or 1 (broadcast to B, H, Sq, Skv), got 3
  %r:3 = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats, %bias) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x4x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x8xf16>, tensor<1x2x4x1xf32>, tensor<1x3x4x6xf16>) -> (tensor<1x2x4x8xf16>, tensor<1x2x6x8xf16>, tensor<1x2x6x8xf16>)
  return %r#0 : tensor<1x2x4x8xf16>
}

// -----

func.func @sdpa_backward_key_gradient_shape(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>, %o: tensor<2x4x16x8xf32>, %do: tensor<2x4x16x8xf32>, %stats: tensor<2x4x16x1xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa_backward' op result 'dk': expected shape 2x2x32x8, got 2x4x32x8
  %r:3 = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats) {scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x1xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x4x32x8xf32>, tensor<2x2x32x8xf32>)
  return %r#0 : tensor<2x4x16x8xf32>
}

// -----

func.func @sdpa_backward_missing_scale(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x8xf32>, %o: tensor<2x4x16x8xf32>, %do: tensor<2x4x16x8xf32>, %stats: tensor<2x4x16x1xf32>) -> tensor<2x4x16x8xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa_backward' op attribute 'scale': expected a value, got none
  %r:3 = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x1xf32>) -> (tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x8xf32>)
  return %r#0 : tensor<2x4x16x8xf32>
}

// -----

// ============================================================================
// Normalizations.
// ============================================================================

func.func @layernorm_scalar_input(%x: tensor<f32>) -> tensor<f32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm' op operand 'x': expected rank >= 1, got rank 0
  %y = "dnn.layernorm"(%x) {axis = 0 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<f32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

func.func @layernorm_axis_out_of_range(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm' op attribute 'axis': expected an axis in [0, 3), got 3
  %y = "dnn.layernorm"(%x) {axis = 3 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

func.func @layernorm_scale_shape(%x: tensor<2x3x4xf32>, %scale: tensor<1x3x4xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm' op operand 'scale' dim 1: expected 1 ([1] * axis + x.shape[axis:]), got 3
  %y = "dnn.layernorm"(%x, %scale) {axis = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xf32>, tensor<1x3x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

func.func @layernorm_bias_rank(%x: tensor<2x3x4xf32>, %bias: tensor<4xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm' op operand 'bias': expected rank 3, got rank 1
  %y = "dnn.layernorm"(%x, %bias) {axis = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

func.func @layernorm_training_without_mean(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm' op result 'mean': expected present, got absent
  %r:2 = "dnn.layernorm"(%x) {axis = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 1>, training = true} : (tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>)
  return %r#0 : tensor<2x3x4xf32>
}

// -----

func.func @layernorm_inference_with_stats(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm' op result 'mean': expected absent, got present
  %r:3 = "dnn.layernorm"(%x) {axis = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  return %r#0 : tensor<2x3x4xf32>
}

// -----

func.func @layernorm_mean_not_f32(%x: tensor<2x3x4xf16>) -> tensor<2x3x4xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm' op result 'mean': expected element type f32, got f16
  %r:3 = "dnn.layernorm"(%x) {axis = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 1>, training = true} : (tensor<2x3x4xf16>) -> (tensor<2x3x4xf16>, tensor<2x3x1xf16>, tensor<2x3x1xf32>)
  return %r#0 : tensor<2x3x4xf16>
}

// -----

func.func @layernorm_inv_variance_shape(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm' op result 'inv_variance': expected shape 2x3x1, got 2x3
  %r:3 = "dnn.layernorm"(%x) {axis = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 1>, training = true} : (tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3xf32>)
  return %r#0 : tensor<2x3x4xf32>
}

// -----

func.func @layernorm_epsilon_as_int(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm' op attribute 'epsilon': expected an f64 float, got 0 : i64
  %y = "dnn.layernorm"(%x) {axis = 2 : i64, epsilon = 0 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

func.func @rmsnorm_missing_axis(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.rmsnorm' op attribute 'axis': expected a value, got none
  %y = "dnn.rmsnorm"(%x) {operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

func.func @rmsnorm_bias_shape(%x: tensor<2x3x4xf32>, %bias: tensor<1x1x2xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.rmsnorm' op operand 'bias' dim 2: expected 4 ([1] * axis + x.shape[axis:]), got 2
  %y = "dnn.rmsnorm"(%x, %bias) {axis = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 1, 0>} : (tensor<2x3x4xf32>, tensor<1x1x2xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

func.func @rmsnorm_inference_with_inv_rms(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.rmsnorm' op result 'inv_rms': expected absent, got present
  %r:2 = "dnn.rmsnorm"(%x) {axis = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>)
  return %r#0 : tensor<2x3x4xf32>
}

// -----

func.func @rmsnorm_training_without_inv_rms(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.rmsnorm' op result 'inv_rms': expected present, got absent
  %y = "dnn.rmsnorm"(%x) {axis = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, training = true} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

func.func @layernorm_backward_gradient_shape(%dy: tensor<2x3x5xf32>, %x: tensor<2x3x4xf32>, %mean: tensor<2x3x1xf32>, %inv_variance: tensor<2x3x1xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm_backward' op operand 'dy' dim 2: expected 4 (shape of 'x'), got 5
  %r:2 = "dnn.layernorm_backward"(%dy, %x, %mean, %inv_variance) {axis = 2 : i64, resultSegmentSizes = array<i32: 1, 0, 1>} : (tensor<2x3x5xf32>, tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>) -> (tensor<2x3x4xf32>, tensor<1x1x4xf32>)
  return %r#0 : tensor<2x3x4xf32>
}

// -----

func.func @layernorm_backward_scale_shape(%dy: tensor<2x3x4xf32>, %x: tensor<2x3x4xf32>, %scale: tensor<1x1x3xf32>, %mean: tensor<2x3x1xf32>, %inv_variance: tensor<2x3x1xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm_backward' op operand 'scale' dim 2: expected 4 ([1] * axis + x.shape[axis:]), got 3
  %r:3 = "dnn.layernorm_backward"(%dy, %x, %scale, %mean, %inv_variance) {axis = 2 : i64, resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<1x1x3xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>) -> (tensor<2x3x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>)
  return %r#0 : tensor<2x3x4xf32>
}

// -----

func.func @layernorm_backward_mean_shape(%dy: tensor<2x3x4xf32>, %x: tensor<2x3x4xf32>, %mean: tensor<2x3x4xf32>, %inv_variance: tensor<2x3x1xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm_backward' op operand 'mean' dim 2: expected 1 (x.shape[:axis] + [1, ...]), got 4
  %r:2 = "dnn.layernorm_backward"(%dy, %x, %mean, %inv_variance) {axis = 2 : i64, resultSegmentSizes = array<i32: 1, 0, 1>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> (tensor<2x3x4xf32>, tensor<1x1x4xf32>)
  return %r#0 : tensor<2x3x4xf32>
}

// -----

func.func @layernorm_backward_inv_variance_shape(%dy: tensor<2x3x4xf32>, %x: tensor<2x3x4xf32>, %mean: tensor<2x3x1xf32>, %inv_variance: tensor<2x1x1xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm_backward' op operand 'inv_variance' dim 1: expected 3 (x.shape[:axis] + [1, ...]), got 1
  %r:2 = "dnn.layernorm_backward"(%dy, %x, %mean, %inv_variance) {axis = 2 : i64, resultSegmentSizes = array<i32: 1, 0, 1>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x1x1xf32>) -> (tensor<2x3x4xf32>, tensor<1x1x4xf32>)
  return %r#0 : tensor<2x3x4xf32>
}

// -----

func.func @layernorm_backward_dscale_without_scale(%dy: tensor<2x3x4xf32>, %x: tensor<2x3x4xf32>, %mean: tensor<2x3x1xf32>, %inv_variance: tensor<2x3x1xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm_backward' op result 'dscale': expected absent, got present
  %r:3 = "dnn.layernorm_backward"(%dy, %x, %mean, %inv_variance) {axis = 2 : i64, resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>) -> (tensor<2x3x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>)
  return %r#0 : tensor<2x3x4xf32>
}

// -----

func.func @layernorm_backward_has_bias_without_dbias(%dy: tensor<2x3x4xf32>, %x: tensor<2x3x4xf32>, %mean: tensor<2x3x1xf32>, %inv_variance: tensor<2x3x1xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.layernorm_backward' op result 'dbias': expected present, got absent
  %dx = "dnn.layernorm_backward"(%dy, %x, %mean, %inv_variance) {axis = 2 : i64, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
  return %dx : tensor<2x3x4xf32>
}

// -----

func.func @rmsnorm_backward_inv_rms_shape(%dy: tensor<2x3x4xf32>, %x: tensor<2x3x4xf32>, %inv_rms: tensor<2x3xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.rmsnorm_backward' op operand 'inv_rms': expected rank 3, got rank 2
  %dx = "dnn.rmsnorm_backward"(%dy, %x, %inv_rms) {axis = 2 : i64, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3xf32>) -> tensor<2x3x4xf32>
  return %dx : tensor<2x3x4xf32>
}

// -----

func.func @rmsnorm_backward_dbias_without_has_bias(%dy: tensor<2x3x4xf32>, %x: tensor<2x3x4xf32>, %inv_rms: tensor<2x3x1xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.rmsnorm_backward' op result 'dbias': expected absent, got present
  %r:2 = "dnn.rmsnorm_backward"(%dy, %x, %inv_rms) {axis = 2 : i64, resultSegmentSizes = array<i32: 1, 0, 1>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> (tensor<2x3x4xf32>, tensor<1x1x4xf32>)
  return %r#0 : tensor<2x3x4xf32>
}

// -----

func.func @rmsnorm_backward_scale_without_dscale(%dy: tensor<2x3x4xf32>, %x: tensor<2x3x4xf32>, %scale: tensor<1x1x4xf32>, %inv_rms: tensor<2x3x1xf32>) -> tensor<2x3x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.rmsnorm_backward' op result 'dscale': expected present, got absent
  %dx = "dnn.rmsnorm_backward"(%dy, %x, %scale, %inv_rms) {axis = 2 : i64, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<1x1x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
  return %dx : tensor<2x3x4xf32>
}

// -----

func.func @batchnorm_rank_1(%x: tensor<3xf32>, %scale: tensor<1x3xf32>, %bias: tensor<1x3xf32>) -> tensor<3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.batchnorm' op operand 'x': expected rank 2, 3, 4 or 5, got rank 1
  %r:3 = "dnn.batchnorm"(%x, %scale, %bias) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<3xf32>, tensor<1x3xf32>, tensor<1x3xf32>) -> (tensor<3xf32>, tensor<1x3xf32>, tensor<1x3xf32>)
  return %r#0 : tensor<3xf32>
}

// -----

func.func @batchnorm_one_value_per_channel(%x: tensor<1x3x1x1xf32>, %scale: tensor<1x3x1x1xf32>, %bias: tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.batchnorm' op operand 'x': expected more than 1 value per channel (N * spatial) for batch statistics, got 1
  %r:3 = "dnn.batchnorm"(%x, %scale, %bias) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
  return %r#0 : tensor<1x3x1x1xf32>
}

// -----

func.func @batchnorm_scale_shape(%x: tensor<2x3x4x4xf32>, %scale: tensor<1x4x1x1xf32>, %bias: tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.batchnorm' op operand 'scale' dim 1: expected 3 ([1, C, 1, ...]), got 4
  %r:3 = "dnn.batchnorm"(%x, %scale, %bias) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<2x3x4x4xf32>, tensor<1x4x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
  return %r#0 : tensor<2x3x4x4xf32>
}

// -----

func.func @batchnorm_running_mean_shape(%x: tensor<2x3xf32>, %scale: tensor<1x3xf32>, %bias: tensor<1x3xf32>, %running_mean: tensor<3xf32>, %running_var: tensor<1x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.batchnorm' op operand 'running_mean': expected rank 2, got rank 1
  %r:5 = "dnn.batchnorm"(%x, %scale, %bias, %running_mean, %running_var) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<3xf32>, tensor<1x3xf32>) -> (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>)
  return %r#0 : tensor<2x3xf32>
}

// -----

func.func @batchnorm_running_mean_without_running_var(%x: tensor<2x3xf32>, %scale: tensor<1x3xf32>, %bias: tensor<1x3xf32>, %running_mean: tensor<1x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.batchnorm' op operand 'running_var': expected running_mean and running_var together, got only one
  %r:4 = "dnn.batchnorm"(%x, %scale, %bias, %running_mean) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, resultSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>) -> (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>)
  return %r#0 : tensor<2x3xf32>
}

// -----

func.func @batchnorm_running_stats_without_update(%x: tensor<2x3xf32>, %scale: tensor<1x3xf32>, %bias: tensor<1x3xf32>, %running_mean: tensor<1x3xf32>, %running_var: tensor<1x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.batchnorm' op result 'next_running_mean': expected present, got absent
  %r:3 = "dnn.batchnorm"(%x, %scale, %bias, %running_mean, %running_var) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>) -> (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>)
  return %r#0 : tensor<2x3xf32>
}

// -----

func.func @batchnorm_mean_not_f32(%x: tensor<2x3xbf16>, %scale: tensor<1x3xbf16>, %bias: tensor<1x3xbf16>) -> tensor<2x3xbf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.batchnorm' op result 'mean': expected element type f32, got bf16
  %r:3 = "dnn.batchnorm"(%x, %scale, %bias) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<2x3xbf16>, tensor<1x3xbf16>, tensor<1x3xbf16>) -> (tensor<2x3xbf16>, tensor<1x3xbf16>, tensor<1x3xf32>)
  return %r#0 : tensor<2x3xbf16>
}

// -----

func.func @batchnorm_momentum_as_string(%x: tensor<2x3xf32>, %scale: tensor<1x3xf32>, %bias: tensor<1x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.batchnorm' op attribute 'momentum': expected an f64 float, got "0.1"
  %r:3 = "dnn.batchnorm"(%x, %scale, %bias) {momentum = "0.1", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>) -> (tensor<2x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>)
  return %r#0 : tensor<2x3xf32>
}

// -----

func.func @batchnorm_inference_rank_6(%x: tensor<1x3x1x1x1x1xf32>, %p: tensor<1x3x1x1x1x1xf32>) -> tensor<1x3x1x1x1x1xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.batchnorm_inference' op operand 'x': expected rank 2, 3, 4 or 5, got rank 6
  %y = "dnn.batchnorm_inference"(%x, %p, %p, %p, %p) : (tensor<1x3x1x1x1x1xf32>, tensor<1x3x1x1x1x1xf32>, tensor<1x3x1x1x1x1xf32>, tensor<1x3x1x1x1x1xf32>, tensor<1x3x1x1x1x1xf32>) -> tensor<1x3x1x1x1x1xf32>
  return %y : tensor<1x3x1x1x1x1xf32>
}

// -----

func.func @batchnorm_inference_variance_shape(%x: tensor<2x3x4x4xf32>, %p: tensor<1x3x1x1xf32>, %variance: tensor<1x3x4x4xf32>) -> tensor<2x3x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.batchnorm_inference' op operand 'variance' dim 2: expected 1 ([1, C, 1, ...]), got 4
  %y = "dnn.batchnorm_inference"(%x, %p, %p, %p, %variance) : (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  return %y : tensor<2x3x4x4xf32>
}

// -----

func.func @batchnorm_inference_unknown_attribute(%x: tensor<2x3x4x4xf32>, %p: tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.batchnorm_inference' op attribute 'momentum': unknown attribute; expected one of epsilon
  %y = "dnn.batchnorm_inference"(%x, %p, %p, %p, %p) {momentum = 1.000000e-01 : f64} : (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xf32>
  return %y : tensor<2x3x4x4xf32>
}

// -----

func.func @batchnorm_backward_gradient_shape(%dy: tensor<2x3x4x2xf32>, %x: tensor<2x3x4x4xf32>, %p: tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.batchnorm_backward' op operand 'dy' dim 3: expected 4 (shape of 'x'), got 2
  %r:3 = "dnn.batchnorm_backward"(%dy, %x, %p, %p, %p) : (tensor<2x3x4x2xf32>, tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
  return %r#0 : tensor<2x3x4x4xf32>
}

// -----

func.func @batchnorm_backward_inv_variance_shape(%dy: tensor<2x3x4x4xf32>, %x: tensor<2x3x4x4xf32>, %p: tensor<1x3x1x1xf32>, %inv_variance: tensor<2x3x1x1xf32>) -> tensor<2x3x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.batchnorm_backward' op operand 'inv_variance' dim 0: expected 1 ([1, C, 1, ...]), got 2
  %r:3 = "dnn.batchnorm_backward"(%dy, %x, %p, %p, %inv_variance) : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<2x3x1x1xf32>) -> (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
  return %r#0 : tensor<2x3x4x4xf32>
}

// -----

func.func @batchnorm_backward_dscale_shape(%dy: tensor<2x3x4x4xf32>, %x: tensor<2x3x4x4xf32>, %p: tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.batchnorm_backward' op result 'dscale': expected shape 1x3x1x1, got 3
  %r:3 = "dnn.batchnorm_backward"(%dy, %x, %p, %p, %p) : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<1x3x1x1xf32>)
  return %r#0 : tensor<2x3x4x4xf32>
}

// -----

func.func @groupnorm_groups_not_divisor(%x: tensor<2x6x4x4xf32>) -> tensor<2x6x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.groupnorm' op attribute 'groups': expected a divisor of 6 (channels of 'x'), got 4
  %y = "dnn.groupnorm"(%x) {groups = 4 : i64, operandSegmentSizes = array<i32: 1, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x6x4x4xf32>) -> tensor<2x6x4x4xf32>
  return %y : tensor<2x6x4x4xf32>
}

// -----

func.func @groupnorm_zero_groups(%x: tensor<2x6x4x4xf32>) -> tensor<2x6x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.groupnorm' op attribute 'groups': expected a divisor of 6 (channels of 'x'), got 0
  %y = "dnn.groupnorm"(%x) {groups = 0 : i64, operandSegmentSizes = array<i32: 1, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x6x4x4xf32>) -> tensor<2x6x4x4xf32>
  return %y : tensor<2x6x4x4xf32>
}

// -----

func.func @groupnorm_missing_groups(%x: tensor<2x6x4x4xf32>) -> tensor<2x6x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.groupnorm' op attribute 'groups': expected a value, got none
  %y = "dnn.groupnorm"(%x) {operandSegmentSizes = array<i32: 1, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x6x4x4xf32>) -> tensor<2x6x4x4xf32>
  return %y : tensor<2x6x4x4xf32>
}

// -----

func.func @groupnorm_scale_shape(%x: tensor<2x6x4x4xf32>, %scale: tensor<1x3x1x1xf32>) -> tensor<2x6x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.groupnorm' op operand 'scale' dim 1: expected 6 ([1, C, 1, ...]), got 3
  %y = "dnn.groupnorm"(%x, %scale) {groups = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x6x4x4xf32>, tensor<1x3x1x1xf32>) -> tensor<2x6x4x4xf32>
  return %y : tensor<2x6x4x4xf32>
}

// -----

func.func @groupnorm_mean_shape(%x: tensor<2x6x4x4xf32>) -> tensor<2x6x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.groupnorm' op result 'mean': expected shape 2x3x1x1, got 2x6x1x1
  %r:3 = "dnn.groupnorm"(%x) {groups = 3 : i64, operandSegmentSizes = array<i32: 1, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 1>, training = true} : (tensor<2x6x4x4xf32>) -> (tensor<2x6x4x4xf32>, tensor<2x6x1x1xf32>, tensor<2x3x1x1xf32>)
  return %r#0 : tensor<2x6x4x4xf32>
}

// -----

func.func @groupnorm_backward_mean_shape(%dy: tensor<2x6x4x4xf32>, %x: tensor<2x6x4x4xf32>, %mean: tensor<2x6x1x1xf32>, %inv_variance: tensor<2x3x1x1xf32>) -> tensor<2x6x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.groupnorm_backward' op operand 'mean' dim 1: expected 3 ([N, groups, 1, ...]), got 6
  %r:2 = "dnn.groupnorm_backward"(%dy, %x, %mean, %inv_variance) {groups = 3 : i64, resultSegmentSizes = array<i32: 1, 0, 1>} : (tensor<2x6x4x4xf32>, tensor<2x6x4x4xf32>, tensor<2x6x1x1xf32>, tensor<2x3x1x1xf32>) -> (tensor<2x6x4x4xf32>, tensor<1x6x1x1xf32>)
  return %r#0 : tensor<2x6x4x4xf32>
}

// -----

func.func @groupnorm_backward_scale_shape(%dy: tensor<2x6x4x4xf32>, %x: tensor<2x6x4x4xf32>, %scale: tensor<6xf32>, %stats: tensor<2x3x1x1xf32>) -> tensor<2x6x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.groupnorm_backward' op operand 'scale': expected rank 4, got rank 1
  %r:3 = "dnn.groupnorm_backward"(%dy, %x, %scale, %stats, %stats) {groups = 3 : i64, resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x6x4x4xf32>, tensor<2x6x4x4xf32>, tensor<6xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) -> (tensor<2x6x4x4xf32>, tensor<1x6x1x1xf32>, tensor<1x6x1x1xf32>)
  return %r#0 : tensor<2x6x4x4xf32>
}

// -----

func.func @groupnorm_backward_groups_not_divisor(%dy: tensor<2x6x4x4xf32>, %x: tensor<2x6x4x4xf32>, %stats: tensor<2x5x1x1xf32>) -> tensor<2x6x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.groupnorm_backward' op attribute 'groups': expected a divisor of 6 (channels of 'x'), got 5
  %r:2 = "dnn.groupnorm_backward"(%dy, %x, %stats, %stats) {groups = 5 : i64, resultSegmentSizes = array<i32: 1, 0, 1>} : (tensor<2x6x4x4xf32>, tensor<2x6x4x4xf32>, tensor<2x5x1x1xf32>, tensor<2x5x1x1xf32>) -> (tensor<2x6x4x4xf32>, tensor<1x6x1x1xf32>)
  return %r#0 : tensor<2x6x4x4xf32>
}

// -----

func.func @instancenorm_rank_1(%x: tensor<3xf32>) -> tensor<3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.instancenorm' op operand 'x': expected rank 2, 3, 4 or 5, got rank 1
  %y = "dnn.instancenorm"(%x) {operandSegmentSizes = array<i32: 1, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

func.func @instancenorm_bias_shape(%x: tensor<2x3x4x4xf32>, %bias: tensor<1x3x4x4xf32>) -> tensor<2x3x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.instancenorm' op operand 'bias' dim 2: expected 1 ([1, C, 1, ...]), got 4
  %y = "dnn.instancenorm"(%x, %bias) {operandSegmentSizes = array<i32: 1, 0, 1>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  return %y : tensor<2x3x4x4xf32>
}

// -----

func.func @instancenorm_mean_shape(%x: tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.instancenorm' op result 'mean': expected shape 2x3x1x1, got 1x3x1x1
  %r:3 = "dnn.instancenorm"(%x) {operandSegmentSizes = array<i32: 1, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 1>, training = true} : (tensor<2x3x4x4xf32>) -> (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<2x3x1x1xf32>)
  return %r#0 : tensor<2x3x4x4xf32>
}

// -----

func.func @instancenorm_backward_mean_shape(%dy: tensor<2x3x4x4xf32>, %x: tensor<2x3x4x4xf32>, %mean: tensor<1x3x1x1xf32>, %inv_variance: tensor<2x3x1x1xf32>) -> tensor<2x3x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.instancenorm_backward' op operand 'mean' dim 0: expected 2 ([N, C, 1, ...]), got 1
  %r:2 = "dnn.instancenorm_backward"(%dy, %x, %mean, %inv_variance) {resultSegmentSizes = array<i32: 1, 0, 1>} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<2x3x1x1xf32>) -> (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>)
  return %r#0 : tensor<2x3x4x4xf32>
}

// -----

func.func @instancenorm_backward_scale_shape(%dy: tensor<2x3x4x4xf32>, %x: tensor<2x3x4x4xf32>, %scale: tensor<1x1x1x1xf32>, %stats: tensor<2x3x1x1xf32>) -> tensor<2x3x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.instancenorm_backward' op operand 'scale' dim 1: expected 3 ([1, C, 1, ...]), got 1
  %r:3 = "dnn.instancenorm_backward"(%dy, %x, %scale, %stats, %stats) {resultSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<1x1x1x1xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) -> (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>, tensor<1x3x1x1xf32>)
  return %r#0 : tensor<2x3x4x4xf32>
}

// -----

func.func @instancenorm_backward_has_bias_as_int(%dy: tensor<2x3x4x4xf32>, %x: tensor<2x3x4x4xf32>, %stats: tensor<2x3x1x1xf32>) -> tensor<2x3x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.instancenorm_backward' op attribute 'has_bias': expected true or false, got 0 : i64
  %dx = "dnn.instancenorm_backward"(%dy, %x, %stats, %stats) {has_bias = 0 : i64, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) -> tensor<2x3x4x4xf32>
  return %dx : tensor<2x3x4x4xf32>
}

// -----

// ============================================================================
// Softmax, reductions and pooling.
// ============================================================================

func.func @softmax_axis_out_of_range(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.softmax' op attribute 'axis': expected an axis in [0, 2), got 2
  %y = "dnn.softmax"(%x) {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @log_softmax_negative_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.log_softmax' op attribute 'axis': expected an axis in [0, 2), got -1
  %y = "dnn.log_softmax"(%x) {axis = -1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @softmax_backward_output_shape(%dy: tensor<2x3xf32>, %y: tensor<2x4xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.softmax_backward' op operand 'y' dim 1: expected 3 (shape of 'dy'), got 4
  %dx = "dnn.softmax_backward"(%dy, %y) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x3xf32>
  return %dx : tensor<2x3xf32>
}

// -----

func.func @softmax_backward_axis_out_of_range(%dy: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.softmax_backward' op attribute 'axis': expected an axis in [0, 2), got 5
  %dx = "dnn.softmax_backward"(%dy, %y) {axis = 5 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %dx : tensor<2x3xf32>
}

// -----

func.func @log_softmax_backward_output_rank(%dy: tensor<2x3xf32>, %y: tensor<6xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.log_softmax_backward' op operand 'y': expected rank 2, got rank 1
  %dx = "dnn.log_softmax_backward"(%dy, %y) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<6xf32>) -> tensor<2x3xf32>
  return %dx : tensor<2x3xf32>
}

// -----

func.func @log_softmax_backward_result_shape(%dy: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.log_softmax_backward' op result 'dx': expected shape 2x3, got 2x1
  %dx = "dnn.log_softmax_backward"(%dy, %y) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x1xf32>
  return %dx : tensor<2x1xf32>
}

// -----

func.func @reduction_unknown_mode(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.reduction' op attribute 'mode': expected one of sum, mean, max, min, prod, amax, norm1, norm2, got avg
  %y = "dnn.reduction"(%x) {axes = array<i64: 1>, mode = "avg"} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %y : tensor<2x1xf32>
}

// -----

func.func @reduction_missing_mode(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.reduction' op attribute 'mode': expected a value, got none
  %y = "dnn.reduction"(%x) {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %y : tensor<2x1xf32>
}

// -----

func.func @reduction_axis_out_of_range(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.reduction' op attribute 'axes' entry 1: expected an axis in [0, 2), got 2
  %y = "dnn.reduction"(%x) {axes = array<i64: 0, 2>, mode = "sum"} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  return %y : tensor<1x3xf32>
}

// -----

func.func @reduction_axes_not_increasing(%x: tensor<2x3xf32>) -> tensor<1x1xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.reduction' op attribute 'axes': expected distinct axes in increasing order, got [1, 0]
  %y = "dnn.reduction"(%x) {axes = array<i64: 1, 0>, mode = "max"} : (tensor<2x3xf32>) -> tensor<1x1xf32>
  return %y : tensor<1x1xf32>
}

// -----

func.func @reduction_axes_repeated(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.reduction' op attribute 'axes': expected distinct axes in increasing order, got [1, 1]
  %y = "dnn.reduction"(%x) {axes = array<i64: 1, 1>, mode = "min"} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %y : tensor<2x1xf32>
}

// -----

func.func @reduction_max_over_empty_axis(%x: tensor<2x0xf32>) -> tensor<2x1xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.reduction' op operand 'x' dim 1: expected at least 1 (mode 'max' needs an element to reduce: it has no identity), got 0
  %y = "dnn.reduction"(%x) {axes = array<i64: 1>, mode = "max"} : (tensor<2x0xf32>) -> tensor<2x1xf32>
  return %y : tensor<2x1xf32>
}

// -----

func.func @reduction_amax_over_several_axes_one_empty(%x: tensor<2x3x0xf32>) -> tensor<f32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.reduction' op operand 'x' dim 2: expected at least 1 (mode 'amax' needs an element to reduce: it has no identity), got 0
  %y = "dnn.reduction"(%x) {axes = array<i64: 0, 1, 2>, keepdims = false, mode = "amax"} : (tensor<2x3x0xf32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

func.func @reduction_dropped_dims_in_result(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.reduction' op result 'y': expected shape 2x4, got 2x1x4
  %y = "dnn.reduction"(%x) {axes = array<i64: 1>, keepdims = false, mode = "norm2"} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  return %y : tensor<2x1x4xf32>
}

// -----

func.func @reduction_keepdims_as_int(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.reduction' op attribute 'keepdims': expected true or false, got 1 : i64
  %y = "dnn.reduction"(%x) {axes = array<i64: 1>, keepdims = 1 : i64, mode = "sum"} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %y : tensor<2x1xf32>
}

// -----

func.func @pooling_rank_3(%x: tensor<1x2x5xf32>) -> tensor<1x2x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pooling' op operand 'x': expected rank 4 or 5, got rank 3
  %y = "dnn.pooling"(%x) {mode = "max", post_padding = array<i64: 0>, pre_padding = array<i64: 0>, stride = array<i64: 2>, window = array<i64: 2>} : (tensor<1x2x5xf32>) -> tensor<1x2x2xf32>
  return %y : tensor<1x2x2xf32>
}

// -----

func.func @pooling_unknown_mode(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pooling' op attribute 'mode': expected one of max, avg, got sum
  %y = "dnn.pooling"(%x) {mode = "sum", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 2>, window = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// -----

func.func @pooling_missing_window(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pooling' op attribute 'window': expected a value, got none
  %y = "dnn.pooling"(%x) {mode = "max", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// -----

func.func @pooling_window_count(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pooling' op attribute 'window': expected 2 values (spatial rank), got 1
  %y = "dnn.pooling"(%x) {mode = "max", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 2>, window = array<i64: 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// -----

func.func @pooling_3d_post_padding_count(%x: tensor<1x2x4x4x4xf32>) -> tensor<1x2x2x2x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pooling' op attribute 'post_padding': expected 3 values (spatial rank), got 2
  %y = "dnn.pooling"(%x) {mode = "avg", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0, 0>, stride = array<i64: 2, 2, 2>, window = array<i64: 2, 2, 2>} : (tensor<1x2x4x4x4xf32>) -> tensor<1x2x2x2x2xf32>
  return %y : tensor<1x2x2x2x2xf32>
}

// -----

func.func @pooling_zero_window(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pooling' op attribute 'window' entry 0: expected >= 1, got 0
  %y = "dnn.pooling"(%x) {mode = "max", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 2>, window = array<i64: 0, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// -----

func.func @pooling_zero_stride(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pooling' op attribute 'stride' entry 1: expected >= 1, got 0
  %y = "dnn.pooling"(%x) {mode = "max", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 0>, window = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// -----

func.func @pooling_negative_padding(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pooling' op attribute 'post_padding' entry 0: expected >= 0, got -1
  %y = "dnn.pooling"(%x) {mode = "max", post_padding = array<i64: -1, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 2>, window = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// -----

func.func @pooling_pre_padding_not_smaller_than_window(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pooling' op attribute 'pre_padding' entry 1: expected less than the window (2), got 2
  %y = "dnn.pooling"(%x) {mode = "avg", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 2>, stride = array<i64: 2, 2>, window = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x3xf32>
  return %y : tensor<1x2x2x3xf32>
}

// -----

func.func @pooling_post_padding_not_smaller_than_window(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x3x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pooling' op attribute 'post_padding' entry 0: expected less than the window (2), got 3
  %y = "dnn.pooling"(%x) {mode = "avg", post_padding = array<i64: 3, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 2>, window = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x3x2xf32>
  return %y : tensor<1x2x3x2xf32>
}

// -----

func.func @pooling_window_larger_than_padded_input(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x1x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pooling' op attribute 'window' entry 0: expected at most 4 (padded input), got 5
  %y = "dnn.pooling"(%x) {mode = "max", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 2>, window = array<i64: 5, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x2xf32>
  return %y : tensor<1x2x1x2xf32>
}

// -----

func.func @pooling_result_shape(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x2x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pooling' op result 'y': expected shape 1x2x3x3, got 1x2x2x2
  %y = "dnn.pooling"(%x) {mode = "max", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, window = array<i64: 3, 3>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// -----

func.func @pooling_count_include_pad_as_string(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pooling' op attribute 'count_include_pad': expected true or false, got "yes"
  %y = "dnn.pooling"(%x) {count_include_pad = "yes", mode = "avg", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 2>, window = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// -----

func.func @pooling_backward_gradient_shape(%dy: tensor<1x2x2x2xf32>, %x: tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pooling_backward' op operand 'dy' dim 2: expected 3 (pooling output of 'x'), got 2
  %dx = "dnn.pooling_backward"(%dy, %x) {mode = "max", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, window = array<i64: 3, 3>} : (tensor<1x2x2x2xf32>, tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  return %dx : tensor<1x2x5x5xf32>
}

// -----

func.func @pooling_backward_image_rank(%dy: tensor<1x2x2x2xf32>, %x: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pooling_backward' op operand 'x': expected rank 4 or 5, got rank 3
  %dx = "dnn.pooling_backward"(%dy, %x) {mode = "avg", post_padding = array<i64: 0>, pre_padding = array<i64: 0>, stride = array<i64: 2>, window = array<i64: 2>} : (tensor<1x2x2x2xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %dx : tensor<2x4x4xf32>
}

// -----

func.func @pooling_backward_result_shape(%dy: tensor<1x2x2x2xf32>, %x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.pooling_backward' op result 'dx': expected shape 1x2x4x4, got 1x2x2x2
  %dx = "dnn.pooling_backward"(%dy, %x) {mode = "avg", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 2>, window = array<i64: 2, 2>} : (tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  return %dx : tensor<1x2x2x2xf32>
}

// ============================================================================
// Types and attributes dnn does not accept although MLIR can spell them.
// ============================================================================

// -----

func.func @dynamic_dim(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.relu' op operand 'x': expected a static shape, got tensor<?x3xf32>
  %y = "dnn.relu"(%x) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  return %y : tensor<?x3xf32>
}

// -----

func.func @tensor_encoding(%x: tensor<2x3xf32, "enc">) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.relu' op operand 'x': expected a tensor without encoding, got tensor<2x3xf32, "enc">
  %y = "dnn.relu"(%x) : (tensor<2x3xf32, "enc">) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @i32_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.softmax' op attribute 'axis': expected an i64 integer, got 1 : i32
  %y = "dnn.softmax"(%x) {axis = 1 : i32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @f32_float_attribute(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.elu' op attribute 'alpha': expected an f64 float, got 1.000000e+00 : f32
  %y = "dnn.elu"(%x) {alpha = 1.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @nan_scale(%q: tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op attribute 'scale': expected a finite number, got nan
  %o = "dnn.sdpa"(%q, %q, %q) {causal = false, generate_stats = false, scale = 0x7FF8000000000000 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  return %o : tensor<1x1x2x4xf32>
}

// -----

func.func @stray_segment_sizes(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.relu' op attribute 'operandSegmentSizes': unknown attribute; the op has no attributes
  %y = "dnn.relu"(%x) {operandSegmentSizes = array<i32: 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @misspelled_name_attribute(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.relu' op attribute 'dnn.nmae': unknown attribute; the op has no attributes
  %y = "dnn.relu"(%x) {dnn.nmae = "typo"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @name_not_a_string(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.relu' op attribute 'dnn.name': expected a string, got 3 : i64
  %y = "dnn.relu"(%x) {dnn.name = 3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @sdpa_ragged_without_padding(%q: tensor<2x4x6x8xf16>, %k: tensor<2x2x9x8xf16>, %v: tensor<2x2x9x8xf16>, %lq: tensor<2x1x1x1xi32>, %lkv: tensor<2x1x1x1xi32>, %oq: tensor<3x1x1x1xi32>, %bad: tensor<2x1x1x1xi32>) -> tensor<2x4x6x8xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op operand 'ragged_q': expected padding=True (use_padding_mask: the lengths of the packed sequences) with ragged offsets, got false
  %o = "dnn.sdpa"(%q, %k, %v, %oq) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0>, ragged_strides = array<i64: 32, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<2x4x6x8xf16>, tensor<2x2x9x8xf16>, tensor<2x2x9x8xf16>, tensor<3x1x1x1xi32>) -> tensor<2x4x6x8xf16>
  return %o : tensor<2x4x6x8xf16>
}

// -----

func.func @sdpa_ragged_strides_count(%q: tensor<2x4x6x8xf16>, %k: tensor<2x2x9x8xf16>, %v: tensor<2x2x9x8xf16>, %lq: tensor<2x1x1x1xi32>, %lkv: tensor<2x1x1x1xi32>, %oq: tensor<3x1x1x1xi32>, %bad: tensor<2x1x1x1xi32>) -> tensor<2x4x6x8xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op attribute 'ragged_strides': expected 4 values (one per tensor q, k, v, o), got 1
  %o = "dnn.sdpa"(%q, %k, %v, %lq, %lkv, %oq) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 0>, padding = true, ragged_strides = array<i64: 32>, scale = 1.250000e-01 : f64} : (tensor<2x4x6x8xf16>, tensor<2x2x9x8xf16>, tensor<2x2x9x8xf16>, tensor<2x1x1x1xi32>, tensor<2x1x1x1xi32>, tensor<3x1x1x1xi32>) -> tensor<2x4x6x8xf16>
  return %o : tensor<2x4x6x8xf16>
}

// -----

func.func @sdpa_ragged_stride_of_a_padded_tensor(%q: tensor<2x4x6x8xf16>, %k: tensor<2x2x9x8xf16>, %v: tensor<2x2x9x8xf16>, %lq: tensor<2x1x1x1xi32>, %lkv: tensor<2x1x1x1xi32>, %oq: tensor<3x1x1x1xi32>, %bad: tensor<2x1x1x1xi32>) -> tensor<2x4x6x8xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op attribute 'ragged_strides': entry for 'k': expected 0 (not ragged), got 16
  %o = "dnn.sdpa"(%q, %k, %v, %lq, %lkv, %oq) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 0>, padding = true, ragged_strides = array<i64: 32, 16, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<2x4x6x8xf16>, tensor<2x2x9x8xf16>, tensor<2x2x9x8xf16>, tensor<2x1x1x1xi32>, tensor<2x1x1x1xi32>, tensor<3x1x1x1xi32>) -> tensor<2x4x6x8xf16>
  return %o : tensor<2x4x6x8xf16>
}

// -----

func.func @sdpa_ragged_strides_without_offsets(%q: tensor<2x4x6x8xf16>, %k: tensor<2x2x9x8xf16>, %v: tensor<2x2x9x8xf16>, %lq: tensor<2x1x1x1xi32>, %lkv: tensor<2x1x1x1xi32>, %oq: tensor<3x1x1x1xi32>, %bad: tensor<2x1x1x1xi32>) -> tensor<2x4x6x8xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op attribute 'ragged_strides': expected none or zeros without ragged offsets, got [32, 0, 0, 0]
  %o = "dnn.sdpa"(%q, %k, %v, %lq, %lkv) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0>, padding = true, ragged_strides = array<i64: 32, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<2x4x6x8xf16>, tensor<2x2x9x8xf16>, tensor<2x2x9x8xf16>, tensor<2x1x1x1xi32>, tensor<2x1x1x1xi32>) -> tensor<2x4x6x8xf16>
  return %o : tensor<2x4x6x8xf16>
}

// -----

func.func @sdpa_ragged_offsets_shape(%q: tensor<2x4x6x8xf16>, %k: tensor<2x2x9x8xf16>, %v: tensor<2x2x9x8xf16>, %lq: tensor<2x1x1x1xi32>, %lkv: tensor<2x1x1x1xi32>, %oq: tensor<3x1x1x1xi32>, %bad: tensor<2x1x1x1xi32>) -> tensor<2x4x6x8xf16> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.sdpa' op operand 'ragged_q' dim 0: expected 3 (one offset per batch entry and the end), got 2
  %o = "dnn.sdpa"(%q, %k, %v, %lq, %lkv, %bad) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 0>, padding = true, ragged_strides = array<i64: 32, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<2x4x6x8xf16>, tensor<2x2x9x8xf16>, tensor<2x2x9x8xf16>, tensor<2x1x1x1xi32>, tensor<2x1x1x1xi32>, tensor<2x1x1x1xi32>) -> tensor<2x4x6x8xf16>
  return %o : tensor<2x4x6x8xf16>
}

// -----

// A runtime scalar: an argument marked dnn.by_value is a rank-0 f32 tensor,
// and the epsilon operand of layernorm and rmsnorm a rank-0 tensor.

// CHECK: error: function '@by_value_not_a_scalar' argument #0: dnn.by_value: expected tensor<f32> (a rank-0 f32 runtime scalar), got tensor<2xf32>
func.func @by_value_not_a_scalar(%x: tensor<2xf32> {dnn.by_value}) -> tensor<2xf32> {
  %y = "dnn.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

func.func @by_value_not_f32(%x: tensor<2xf32>, %s: tensor<f16> {dnn.by_value}) -> tensor<2xf32> {
  // CHECK: error: function '@by_value_not_f32' argument #1: dnn.by_value: expected tensor<f32> (a rank-0 f32 runtime scalar), got tensor<f16>
  %y = "dnn.mul"(%x, %s) : (tensor<2xf32>, tensor<f16>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

func.func @rmsnorm_epsilon_not_a_scalar(%x: tensor<2x3xf32>, %eps: tensor<1xf32>) -> tensor<2x3xf32> {
  // CHECK: :[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.rmsnorm' op operand 'epsilon': expected rank 0, got rank 1
  %y = "dnn.rmsnorm"(%x, %eps) {axis = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0, 1>} : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
