// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-fuse)' | FileCheck %s
// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-fuse{epilogue=false prologue=false matmul_prologue=false conv_prologue=false conv_bias_grad=false})' | FileCheck %s --check-prefix=NOFUSE

// Each test's graph function ends up holding only calls; a graph body of one
// call and a return shows that exactly one kernel was made.

// conv + bias + relu: one conv_fprop kernel; the bias is a kernel argument and
// the ops keep their attributes (dnn.name included).
// CHECK-LABEL: func.func private @conv_bias_relu_k0_conv_fprop(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x3x7x7xf32>, %[[W:[^:]*]]: tensor<5x3x3x3xf32>, %[[B:[^:]*]]: tensor<1x5x1x1xf32>) -> tensor<2x5x7x7xf32>
// CHECK-SAME: attributes {dnn.anchor = "conv_fprop", dnn.kernel}
// CHECK-NEXT: %[[C:.*]] = "dnn.conv_fprop"(%[[X]], %[[W]]) {compute_type = f32, dilation = array<i64: 1, 1>
// CHECK-NEXT: %[[S:.*]] = "dnn.add"(%[[C]], %[[B]])
// CHECK-NEXT: %[[Y:.*]] = "dnn.relu"(%[[S]]) {dnn.name = "act"}
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @conv_bias_relu(
// CHECK-SAME: attributes {dnn.graph}
// CHECK-NEXT: %[[R:.*]] = call @conv_bias_relu_k0_conv_fprop(%arg0, %arg1, %arg2)
// CHECK-NEXT: return %[[R]]
// NOFUSE-LABEL: func.func private @conv_bias_relu_k0_conv_fprop(
// NOFUSE: func.func private @conv_bias_relu_k1_pointwise(
// NOFUSE-LABEL: func.func @conv_bias_relu(
// NOFUSE-NEXT: %[[C:.*]] = call @conv_bias_relu_k0_conv_fprop(%arg0, %arg1)
// NOFUSE-NEXT: %[[Y:.*]] = call @conv_bias_relu_k1_pointwise(%[[C]], %arg2)
// NOFUSE-NEXT: return %[[Y]]
func.func @conv_bias_relu(%x: tensor<2x3x7x7xf32>, %w: tensor<5x3x3x3xf32>, %b: tensor<1x5x1x1xf32>) -> tensor<2x5x7x7xf32> attributes {dnn.graph} {
  %0 = "dnn.conv_fprop"(%x, %w) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x3x7x7xf32>, tensor<5x3x3x3xf32>) -> tensor<2x5x7x7xf32>
  %1 = "dnn.add"(%0, %b) : (tensor<2x5x7x7xf32>, tensor<1x5x1x1xf32>) -> tensor<2x5x7x7xf32>
  %2 = "dnn.relu"(%1) {dnn.name = "act"} : (tensor<2x5x7x7xf32>) -> tensor<2x5x7x7xf32>
  return %2 : tensor<2x5x7x7xf32>
}

// -----

// matmul + bias + gelu: one matmul kernel.
// CHECK-LABEL: func.func private @matmul_bias_gelu_k0_matmul(
// CHECK-SAME: attributes {dnn.anchor = "matmul", dnn.kernel}
// CHECK-NEXT: %[[M:.*]] = "dnn.matmul"
// CHECK-NEXT: %[[S:.*]] = "dnn.add"(%[[M]],
// CHECK-NEXT: %[[Y:.*]] = "dnn.gelu"(%[[S]]) {approximate = "tanh"}
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @matmul_bias_gelu(
// CHECK-NEXT: %[[R:.*]] = call @matmul_bias_gelu_k0_matmul(%arg0, %arg1, %arg2)
// CHECK-NEXT: return %[[R]]
func.func @matmul_bias_gelu(%a: tensor<3x5x13xf32>, %w: tensor<13x7xf32>, %b: tensor<7xf32>) -> tensor<3x5x7xf32> {
  %0 = "dnn.matmul"(%a, %w) {compute_type = f32} : (tensor<3x5x13xf32>, tensor<13x7xf32>) -> tensor<3x5x7xf32>
  %1 = "dnn.add"(%0, %b) : (tensor<3x5x7xf32>, tensor<7xf32>) -> tensor<3x5x7xf32>
  %2 = "dnn.gelu"(%1) {approximate = "tanh"} : (tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  return %2 : tensor<3x5x7xf32>
}

// -----

// A block-scaled fp8 matmul takes the pointwise epilogue as a matmul does:
// its bias and cast join the kernel, the scales are operands of the anchor.
// CHECK-LABEL: func.func private @block_scaled_bias_k0_matmul_block_scaled(
// CHECK-SAME: attributes {dnn.anchor = "matmul_block_scaled", dnn.kernel}
// CHECK-NEXT: %[[M:.*]] = "dnn.matmul_block_scaled"(%arg0, %arg1, %arg2, %arg3)
// CHECK-NEXT: %[[S:.*]] = "dnn.add"(%[[M]], %arg4)
// CHECK-NEXT: %[[Y:.*]] = "dnn.cast"(%[[S]])
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @block_scaled_bias(
// CHECK-NEXT: %[[R:.*]] = call @block_scaled_bias_k0_matmul_block_scaled(%arg0, %arg1, %arg2, %arg3, %arg4)
// CHECK-NEXT: return %[[R]]
func.func @block_scaled_bias(%a: tensor<5x200xf8E4M3FN>, %w: tensor<200x7xf8E4M3FN>, %sa: tensor<5x2xf32>, %sw: tensor<2x1xf32>, %b: tensor<1x7xf32>) -> tensor<5x7xbf16> {
  %0 = "dnn.matmul_block_scaled"(%a, %w, %sa, %sw) : (tensor<5x200xf8E4M3FN>, tensor<200x7xf8E4M3FN>, tensor<5x2xf32>, tensor<2x1xf32>) -> tensor<5x7xf32>
  %1 = "dnn.add"(%0, %b) : (tensor<5x7xf32>, tensor<1x7xf32>) -> tensor<5x7xf32>
  %2 = "dnn.cast"(%1) : (tensor<5x7xf32>) -> tensor<5x7xbf16>
  return %2 : tensor<5x7xbf16>
}

// -----

// matmul + bias + residual add + relu (+ the output cast): one kernel with the
// bias and the residual as extra arguments.
// CHECK-LABEL: func.func private @matmul_bias_residual_relu_k0_matmul(
// CHECK-SAME: %[[A:[^:]*]]: tensor<5x13xf32>, %[[W:[^:]*]]: tensor<13x7xf32>, %[[B:[^:]*]]: tensor<1x7xf32>, %[[RES:[^:]*]]: tensor<5x7xf32>) -> tensor<5x7xbf16>
// CHECK-NEXT: %[[M:.*]] = "dnn.matmul"(%[[A]], %[[W]])
// CHECK-NEXT: %[[S:.*]] = "dnn.add"(%[[M]], %[[B]])
// CHECK-NEXT: %[[T:.*]] = "dnn.add"(%[[RES]], %[[S]])
// CHECK-NEXT: %[[U:.*]] = "dnn.relu"(%[[T]])
// CHECK-NEXT: %[[Y:.*]] = "dnn.cast"(%[[U]])
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @matmul_bias_residual_relu(
// CHECK-NEXT: %[[R:.*]] = call @matmul_bias_residual_relu_k0_matmul(%arg0, %arg1, %arg2, %arg3)
// CHECK-NEXT: return %[[R]]
func.func @matmul_bias_residual_relu(%a: tensor<5x13xf32>, %w: tensor<13x7xf32>, %b: tensor<1x7xf32>, %r: tensor<5x7xf32>) -> tensor<5x7xbf16> {
  %0 = "dnn.matmul"(%a, %w) {compute_type = f32} : (tensor<5x13xf32>, tensor<13x7xf32>) -> tensor<5x7xf32>
  %1 = "dnn.add"(%0, %b) : (tensor<5x7xf32>, tensor<1x7xf32>) -> tensor<5x7xf32>
  %2 = "dnn.add"(%r, %1) : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %3 = "dnn.relu"(%2) : (tensor<5x7xf32>) -> tensor<5x7xf32>
  %4 = "dnn.cast"(%3) : (tensor<5x7xf32>) -> tensor<5x7xbf16>
  return %4 : tensor<5x7xbf16>
}

// -----

// residual add + layernorm: one layernorm kernel; the sum is also a graph
// output, so the kernel returns it too.
// CHECK-LABEL: func.func private @residual_layernorm_k0_layernorm(
// CHECK-SAME: -> (tensor<5x13xf32>, tensor<5x13xf32>) attributes {dnn.anchor = "layernorm", dnn.kernel}
// CHECK-NEXT: %[[H:.*]] = "dnn.add"
// CHECK-NEXT: %[[Y:.*]] = "dnn.layernorm"(%[[H]],
// CHECK-NEXT: return %[[H]], %[[Y]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @residual_layernorm(
// CHECK-NEXT: %[[R:.*]]:2 = call @residual_layernorm_k0_layernorm(%arg0, %arg1, %arg2, %arg3)
// CHECK-NEXT: return %[[R]]#1, %[[R]]#0
// NOFUSE-LABEL: func.func private @residual_layernorm_k0_pointwise(
// NOFUSE: func.func private @residual_layernorm_k1_layernorm(
func.func @residual_layernorm(%x: tensor<5x13xf32>, %r: tensor<5x13xf32>, %scale: tensor<1x13xf32>, %bias: tensor<1x13xf32>) -> (tensor<5x13xf32>, tensor<5x13xf32>) {
  %0 = "dnn.add"(%x, %r) : (tensor<5x13xf32>, tensor<5x13xf32>) -> tensor<5x13xf32>
  %1 = "dnn.layernorm"(%0, %scale, %bias) {axis = 1 : i64, epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0>, resultSegmentSizes = array<i32: 1, 0, 0>, training = false} : (tensor<5x13xf32>, tensor<1x13xf32>, tensor<1x13xf32>) -> tensor<5x13xf32>
  return %1, %0 : tensor<5x13xf32>, tensor<5x13xf32>
}

// -----

// residual add + rmsnorm: one rmsnorm kernel.
// CHECK-LABEL: func.func private @residual_rmsnorm_k0_rmsnorm(
// CHECK-NEXT: "dnn.add"
// CHECK-NEXT: "dnn.rmsnorm"
// CHECK-NEXT: return
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @residual_rmsnorm(
// CHECK-NEXT: %[[R:.*]] = call @residual_rmsnorm_k0_rmsnorm(%arg0, %arg1)
// CHECK-NEXT: return %[[R]]
func.func @residual_rmsnorm(%x: tensor<5x13xf32>, %r: tensor<5x13xf32>) -> tensor<5x13xf32> {
  %0 = "dnn.add"(%x, %r) : (tensor<5x13xf32>, tensor<5x13xf32>) -> tensor<5x13xf32>
  %1 = "dnn.rmsnorm"(%0) {axis = 1 : i64, epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, training = false} : (tensor<5x13xf32>) -> tensor<5x13xf32>
  return %1 : tensor<5x13xf32>
}

// -----

// residual add + rmsnorm + the output's cast: bf16 inputs summed in f32, the
// normalized row cast to f16, all in one rmsnorm kernel (the scale is a
// kernel argument).
// CHECK-LABEL: func.func private @residual_rmsnorm_cast_k0_rmsnorm(
// CHECK-SAME: %[[X:[^:]*]]: tensor<5x13xbf16>, %[[R:[^:]*]]: tensor<5x13xbf16>, %[[S:[^:]*]]: tensor<1x13xf32>) -> tensor<5x13xf16>
// CHECK-SAME: attributes {dnn.anchor = "rmsnorm", dnn.kernel}
// CHECK-NEXT: %[[H:.*]] = "dnn.add"(%[[X]], %[[R]]) : (tensor<5x13xbf16>, tensor<5x13xbf16>) -> tensor<5x13xf32>
// CHECK-NEXT: %[[N:.*]] = "dnn.rmsnorm"(%[[H]], %[[S]])
// CHECK-NEXT: %[[Y:.*]] = "dnn.cast"(%[[N]]) : (tensor<5x13xf32>) -> tensor<5x13xf16>
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @residual_rmsnorm_cast(
// CHECK-NEXT: %[[K:.*]] = call @residual_rmsnorm_cast_k0_rmsnorm(%arg0, %arg1, %arg2)
// CHECK-NEXT: return %[[K]]
// NOFUSE-LABEL: func.func private @residual_rmsnorm_cast_k0_pointwise(
// NOFUSE: func.func private @residual_rmsnorm_cast_k1_rmsnorm(
// NOFUSE: func.func private @residual_rmsnorm_cast_k2_pointwise(
func.func @residual_rmsnorm_cast(%x: tensor<5x13xbf16>, %r: tensor<5x13xbf16>, %scale: tensor<1x13xf32>) -> tensor<5x13xf16> {
  %0 = "dnn.add"(%x, %r) : (tensor<5x13xbf16>, tensor<5x13xbf16>) -> tensor<5x13xf32>
  %1 = "dnn.rmsnorm"(%0, %scale) {axis = 1 : i64, epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 0, 0>, training = false} : (tensor<5x13xf32>, tensor<1x13xf32>) -> tensor<5x13xf32>
  %2 = "dnn.cast"(%1) : (tensor<5x13xf32>) -> tensor<5x13xf16>
  return %2 : tensor<5x13xf16>
}

// -----

// The add has another dnn user: it is no prologue, and the two chains hanging
// off it form one pointwise kernel.
// CHECK-LABEL: func.func private @shared_residual_k0_pointwise(
// CHECK-SAME: -> (tensor<5x13xf32>, tensor<5x13xf32>)
// CHECK: func.func private @shared_residual_k1_layernorm(
// CHECK-NEXT: "dnn.layernorm"
// CHECK-NEXT: return
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @shared_residual(
// CHECK-NEXT: %[[P:.*]]:2 = call @shared_residual_k0_pointwise(%arg0, %arg1)
// CHECK-NEXT: %[[Y:.*]] = call @shared_residual_k1_layernorm(%[[P]]#0)
// CHECK-NEXT: return %[[Y]], %[[P]]#1
func.func @shared_residual(%x: tensor<5x13xf32>, %r: tensor<5x13xf32>) -> (tensor<5x13xf32>, tensor<5x13xf32>) {
  %0 = "dnn.add"(%x, %r) : (tensor<5x13xf32>, tensor<5x13xf32>) -> tensor<5x13xf32>
  %1 = "dnn.layernorm"(%0) {axis = 1 : i64, epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>, training = false} : (tensor<5x13xf32>) -> tensor<5x13xf32>
  %2 = "dnn.exp"(%0) : (tensor<5x13xf32>) -> tensor<5x13xf32>
  return %1, %2 : tensor<5x13xf32>, tensor<5x13xf32>
}

// -----

// softmax + pointwise: one softmax kernel.
// CHECK-LABEL: func.func private @softmax_mul_k0_softmax(
// CHECK-SAME: attributes {dnn.anchor = "softmax", dnn.kernel}
// CHECK-NEXT: %[[P:.*]] = "dnn.softmax"
// CHECK-NEXT: %[[M:.*]] = "dnn.mul"(%[[P]],
// CHECK-NEXT: %[[Y:.*]] = "dnn.neg"(%[[M]])
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @softmax_mul(
// CHECK-NEXT: %[[R:.*]] = call @softmax_mul_k0_softmax(%arg0, %arg1)
// CHECK-NEXT: return %[[R]]
func.func @softmax_mul(%x: tensor<5x13xf32>, %m: tensor<5x1xf32>) -> tensor<5x13xf32> {
  %0 = "dnn.softmax"(%x) {axis = 1 : i64} : (tensor<5x13xf32>) -> tensor<5x13xf32>
  %1 = "dnn.mul"(%0, %m) : (tensor<5x13xf32>, tensor<5x1xf32>) -> tensor<5x13xf32>
  %2 = "dnn.neg"(%1) : (tensor<5x13xf32>) -> tensor<5x13xf32>
  return %2 : tensor<5x13xf32>
}

// -----

// pooling + pointwise: one pooling kernel (the window program's epilogue).
// CHECK-LABEL: func.func private @pool_relu_k0_pooling(
// CHECK-SAME: attributes {dnn.anchor = "pooling", dnn.kernel}
// CHECK-NEXT: %[[P:.*]] = "dnn.pooling"
// CHECK-NEXT: %[[Y:.*]] = "dnn.relu"(%[[P]])
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @pool_relu(
// CHECK-NEXT: %[[R:.*]] = call @pool_relu_k0_pooling(%arg0)
// CHECK-NEXT: return %[[R]]
func.func @pool_relu(%x: tensor<2x3x7x5xf32>) -> tensor<2x3x4x6xf32> {
  %0 = "dnn.pooling"(%x) {count_include_pad = false, mode = "max", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 1>, window = array<i64: 3, 2>} : (tensor<2x3x7x5xf32>) -> tensor<2x3x4x6xf32>
  %1 = "dnn.relu"(%0) : (tensor<2x3x4x6xf32>) -> tensor<2x3x4x6xf32>
  return %1 : tensor<2x3x4x6xf32>
}

// -----

// A plain pointwise chain (with a branch and a join) is one kernel; the constant
// is cloned into it, not passed.
// CHECK-LABEL: func.func private @pointwise_chain_k0_pointwise(
// CHECK-SAME: %[[X:[^:]*]]: tensor<3x5x7xf32>, %[[S:[^:]*]]: tensor<5x1xf32>) -> tensor<3x5x7xf32>
// CHECK-SAME: attributes {dnn.anchor = "pointwise", dnn.kernel}
// CHECK: %[[C:.*]] = "dnn.constant"() {value = 5.000000e-01 : f64}
// CHECK: "dnn.cmp_gt"({{.*}}, %[[C]])
// CHECK: "dnn.select"
// CHECK-NEXT: return
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @pointwise_chain(
// CHECK-NEXT: %[[R:.*]] = call @pointwise_chain_k0_pointwise(%arg0, %arg1)
// CHECK-NEXT: return %[[R]]
func.func @pointwise_chain(%x: tensor<3x5x7xf32>, %s: tensor<5x1xf32>) -> tensor<3x5x7xf32> {
  %0 = "dnn.mul"(%x, %s) : (tensor<3x5x7xf32>, tensor<5x1xf32>) -> tensor<3x5x7xf32>
  %1 = "dnn.tanh"(%0) : (tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  %c = "dnn.constant"() {value = 5.000000e-01 : f64} : () -> tensor<f32>
  %2 = "dnn.cmp_gt"(%1, %c) : (tensor<3x5x7xf32>, tensor<f32>) -> tensor<3x5x7xi1>
  %3 = "dnn.neg"(%0) : (tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  %4 = "dnn.select"(%2, %1, %3) : (tensor<3x5x7xi1>, tensor<3x5x7xf32>, tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  return %4 : tensor<3x5x7xf32>
}

// -----

// A bias + activation + elementwise chain with no matmul or conv before it:
// x + bias (a [1, N] row), gelu, the per-column scale and the residual add
// are one pointwise kernel; bias, scale and residual are kernel arguments.
// CHECK-LABEL: func.func private @bias_gelu_scale_residual_k0_pointwise(
// CHECK-SAME: %[[X:[^:]*]]: tensor<3x5x7xf32>, %[[B:[^:]*]]: tensor<1x7xf32>, %[[S:[^:]*]]: tensor<1x7xf32>, %[[R:[^:]*]]: tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
// CHECK-SAME: attributes {dnn.anchor = "pointwise", dnn.kernel}
// CHECK-NEXT: %[[XB:.*]] = "dnn.add"(%[[X]], %[[B]])
// CHECK-NEXT: %[[G:.*]] = "dnn.gelu"(%[[XB]]) {approximate = "tanh"}
// CHECK-NEXT: %[[M:.*]] = "dnn.mul"(%[[G]], %[[S]])
// CHECK-NEXT: %[[Y:.*]] = "dnn.add"(%[[M]], %[[R]])
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @bias_gelu_scale_residual(
// CHECK-NEXT: %[[K:.*]] = call @bias_gelu_scale_residual_k0_pointwise(%arg0, %arg1, %arg2, %arg3)
// CHECK-NEXT: return %[[K]]
func.func @bias_gelu_scale_residual(%x: tensor<3x5x7xf32>, %b: tensor<1x7xf32>, %s: tensor<1x7xf32>, %r: tensor<3x5x7xf32>) -> tensor<3x5x7xf32> {
  %0 = "dnn.add"(%x, %b) : (tensor<3x5x7xf32>, tensor<1x7xf32>) -> tensor<3x5x7xf32>
  %1 = "dnn.gelu"(%0) {approximate = "tanh"} : (tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  %2 = "dnn.mul"(%1, %s) : (tensor<3x5x7xf32>, tensor<1x7xf32>) -> tensor<3x5x7xf32>
  %3 = "dnn.add"(%2, %r) : (tensor<3x5x7xf32>, tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  return %3 : tensor<3x5x7xf32>
}

// -----

// The same with leaky_relu after the bias, a scale by a constant (cloned into
// the kernel), the residual add and an elu: one pointwise kernel.
// CHECK-LABEL: func.func private @bias_leaky_relu_elu_k0_pointwise(
// CHECK-SAME: %[[X:[^:]*]]: tensor<5x7xf32>, %[[B:[^:]*]]: tensor<1x7xf32>, %[[R:[^:]*]]: tensor<5x7xf32>) -> tensor<5x7xf32>
// CHECK-SAME: attributes {dnn.anchor = "pointwise", dnn.kernel}
// CHECK-NEXT: %[[XB:.*]] = "dnn.add"(%[[X]], %[[B]])
// CHECK-NEXT: %[[L:.*]] = "dnn.leaky_relu"(%[[XB]]) {negative_slope = 1.000000e-01 : f64}
// CHECK-NEXT: %[[C:.*]] = "dnn.constant"() {value = 5.000000e-01 : f64}
// CHECK-NEXT: %[[M:.*]] = "dnn.mul"(%[[L]], %[[C]])
// CHECK-NEXT: %[[A:.*]] = "dnn.add"(%[[M]], %[[R]])
// CHECK-NEXT: %[[Y:.*]] = "dnn.elu"(%[[A]]) {alpha = 1.000000e+00 : f64}
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @bias_leaky_relu_elu(
// CHECK-NEXT: %[[K:.*]] = call @bias_leaky_relu_elu_k0_pointwise(%arg0, %arg1, %arg2)
// CHECK-NEXT: return %[[K]]
func.func @bias_leaky_relu_elu(%x: tensor<5x7xf32>, %b: tensor<1x7xf32>, %r: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %c = "dnn.constant"() {value = 5.000000e-01 : f64} : () -> tensor<f32>
  %0 = "dnn.add"(%x, %b) : (tensor<5x7xf32>, tensor<1x7xf32>) -> tensor<5x7xf32>
  %1 = "dnn.leaky_relu"(%0) {negative_slope = 1.000000e-01 : f64} : (tensor<5x7xf32>) -> tensor<5x7xf32>
  %2 = "dnn.mul"(%1, %c) : (tensor<5x7xf32>, tensor<f32>) -> tensor<5x7xf32>
  %3 = "dnn.add"(%2, %r) : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  %4 = "dnn.elu"(%3) {alpha = 1.000000e+00 : f64} : (tensor<5x7xf32>) -> tensor<5x7xf32>
  return %4 : tensor<5x7xf32>
}

// -----

// The matmul result has two users: no epilogue; relu and exp join one pointwise
// kernel that reads the matmul's result.
// CHECK-LABEL: func.func private @shared_anchor_result_k0_matmul(
// CHECK-NEXT: "dnn.matmul"
// CHECK-NEXT: return
// CHECK: func.func private @shared_anchor_result_k1_pointwise(
// CHECK-SAME: dnn.kernel}
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @shared_anchor_result(
// CHECK-NEXT: %[[M:.*]] = call @shared_anchor_result_k0_matmul(%arg0, %arg1)
// CHECK-NEXT: %[[Y:.*]] = call @shared_anchor_result_k1_pointwise(%[[M]])
// CHECK-NEXT: return %[[Y]]
func.func @shared_anchor_result(%a: tensor<5x13xf32>, %w: tensor<13x7xf32>) -> tensor<5x7xf32> {
  %0 = "dnn.matmul"(%a, %w) {compute_type = f32} : (tensor<5x13xf32>, tensor<13x7xf32>) -> tensor<5x7xf32>
  %1 = "dnn.relu"(%0) : (tensor<5x7xf32>) -> tensor<5x7xf32>
  %2 = "dnn.exp"(%0) : (tensor<5x7xf32>) -> tensor<5x7xf32>
  %3 = "dnn.add"(%1, %2) : (tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<5x7xf32>
  return %3 : tensor<5x7xf32>
}

// -----

// A returned pre-activation: matmul + bias is returned and feeds gelu. One
// matmul kernel returns both, the epilogue's second output.
// CHECK-LABEL: func.func private @pre_activation_k0_matmul(
// CHECK-SAME: -> (tensor<5x7xf32>, tensor<5x7xf32>)
// CHECK-NEXT: %[[M:.*]] = "dnn.matmul"
// CHECK-NEXT: %[[P:.*]] = "dnn.add"(%[[M]],
// CHECK-NEXT: %[[Y:.*]] = "dnn.gelu"(%[[P]])
// CHECK-NEXT: return %[[P]], %[[Y]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @pre_activation(
// CHECK-NEXT: %[[R:.*]]:2 = call @pre_activation_k0_matmul(%arg0, %arg1, %arg2)
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1
func.func @pre_activation(%a: tensor<5x13xf32>, %w: tensor<13x7xf32>, %b: tensor<1x7xf32>) -> (tensor<5x7xf32>, tensor<5x7xf32>) {
  %0 = "dnn.matmul"(%a, %w) {compute_type = f32} : (tensor<5x13xf32>, tensor<13x7xf32>) -> tensor<5x7xf32>
  %1 = "dnn.add"(%0, %b) : (tensor<5x7xf32>, tensor<1x7xf32>) -> tensor<5x7xf32>
  %2 = "dnn.gelu"(%1) {approximate = "none"} : (tensor<5x7xf32>) -> tensor<5x7xf32>
  return %1, %2 : tensor<5x7xf32>, tensor<5x7xf32>
}

// -----

// A returned convolution result that feeds a bias add and a relu (a data
// gradient's dx, which the graph also returns): one conv_dgrad kernel
// returns both, the implicit GEMM's epilogue storing dx beside the chain's
// end (as a matmul's does). A filter gradient's likewise.
// CHECK-LABEL: func.func private @conv_second_output_k0_conv_dgrad(
// CHECK-SAME: -> (tensor<2x16x5x7xbf16>, tensor<2x16x5x7xbf16>)
// CHECK-NEXT: %[[D:.*]] = "dnn.conv_dgrad"
// CHECK-NEXT: %[[S:.*]] = "dnn.add"(%[[D]],
// CHECK-NEXT: %[[Y:.*]] = "dnn.relu"(%[[S]])
// CHECK-NEXT: return %[[D]], %[[Y]]
// CHECK-LABEL: func.func private @conv_second_output_k1_conv_wgrad(
// CHECK-SAME: -> (tensor<24x16x3x3xbf16>, tensor<24x16x3x3xbf16>)
// CHECK-NEXT: %[[W:.*]] = "dnn.conv_wgrad"
// CHECK-NEXT: %[[M:.*]] = "dnn.mul"(%[[W]],
// CHECK-NEXT: return %[[W]], %[[M]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @conv_second_output(
// CHECK-NEXT: %[[R:.*]]:2 = call @conv_second_output_k0_conv_dgrad(%arg0, %arg1, %arg2)
// CHECK-NEXT: %[[T:.*]]:2 = call @conv_second_output_k1_conv_wgrad(%arg0, %arg3, %arg4)
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1, %[[T]]#0, %[[T]]#1
// NOFUSE-LABEL: func.func @conv_second_output(
// NOFUSE-NEXT: call @conv_second_output_k0_conv_dgrad
// NOFUSE-NEXT: call @conv_second_output_k1_pointwise
// NOFUSE-NEXT: call @conv_second_output_k2_conv_wgrad
// NOFUSE-NEXT: call @conv_second_output_k3_pointwise
func.func @conv_second_output(%dy: tensor<2x24x5x7xbf16>, %w: tensor<24x16x3x3xbf16>, %b: tensor<1x16x1x1xbf16>, %x: tensor<2x16x5x7xbf16>, %s: tensor<1x16x1x1xbf16>) -> (tensor<2x16x5x7xbf16>, tensor<2x16x5x7xbf16>, tensor<24x16x3x3xbf16>, tensor<24x16x3x3xbf16>) attributes {dnn.graph} {
  %0 = "dnn.conv_dgrad"(%dy, %w) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x24x5x7xbf16>, tensor<24x16x3x3xbf16>) -> tensor<2x16x5x7xbf16>
  %1 = "dnn.add"(%0, %b) : (tensor<2x16x5x7xbf16>, tensor<1x16x1x1xbf16>) -> tensor<2x16x5x7xbf16>
  %2 = "dnn.relu"(%1) : (tensor<2x16x5x7xbf16>) -> tensor<2x16x5x7xbf16>
  %3 = "dnn.conv_wgrad"(%dy, %x) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x24x5x7xbf16>, tensor<2x16x5x7xbf16>) -> tensor<24x16x3x3xbf16>
  %4 = "dnn.mul"(%3, %s) : (tensor<24x16x3x3xbf16>, tensor<1x16x1x1xbf16>) -> tensor<24x16x3x3xbf16>
  return %0, %2, %3, %4 : tensor<2x16x5x7xbf16>, tensor<2x16x5x7xbf16>, tensor<24x16x3x3xbf16>, tensor<24x16x3x3xbf16>
}

// -----

// An fp8 GEMM's amax (over every axis) of its descaled output, which is then
// scaled and cast to fp8: the amax joins the matmul kernel beside the chain,
// and the chain goes on past it (mul, cast). One kernel, two results.
// CHECK-LABEL: func.func private @fp8_amax_k0_matmul(
// CHECK-SAME: -> (tensor<1x1xf32>, tensor<5x16xf8E4M3FN>)
// CHECK-NEXT: %[[M:.*]] = "dnn.matmul"
// CHECK-NEXT: %[[Y:.*]] = "dnn.mul"(%[[M]], %arg2)
// CHECK-NEXT: %[[A:.*]] = "dnn.reduction"(%[[Y]]) {axes = array<i64: 0, 1>, keepdims = true, mode = "amax"}
// CHECK-NEXT: %[[S:.*]] = "dnn.mul"(%[[Y]], %arg3)
// CHECK-NEXT: %[[Q:.*]] = "dnn.cast"(%[[S]])
// CHECK-NEXT: return %[[A]], %[[Q]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @fp8_amax(
// CHECK-NEXT: %[[R:.*]]:2 = call @fp8_amax_k0_matmul(%arg0, %arg1, %arg2, %arg3)
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1
func.func @fp8_amax(%a: tensor<5x32xf8E4M3FN>, %b: tensor<32x16xf8E4M3FN>, %s: tensor<f32>, %q: tensor<f32>) -> (tensor<1x1xf32>, tensor<5x16xf8E4M3FN>) {
  %0 = "dnn.matmul"(%a, %b) {compute_type = f32} : (tensor<5x32xf8E4M3FN>, tensor<32x16xf8E4M3FN>) -> tensor<5x16xf32>
  %1 = "dnn.mul"(%0, %s) : (tensor<5x16xf32>, tensor<f32>) -> tensor<5x16xf32>
  %2 = "dnn.reduction"(%1) {axes = array<i64: 0, 1>, keepdims = true, mode = "amax"} : (tensor<5x16xf32>) -> tensor<1x1xf32>
  %3 = "dnn.mul"(%1, %q) : (tensor<5x16xf32>, tensor<f32>) -> tensor<5x16xf32>
  %4 = "dnn.cast"(%3) : (tensor<5x16xf32>) -> tensor<5x16xf8E4M3FN>
  return %2, %4 : tensor<1x1xf32>, tensor<5x16xf8E4M3FN>
}

// -----

// An amax over some axes only (a row's): not joined.
// CHECK-LABEL: func.func private @amax_rows_k0_matmul(
// CHECK-NEXT: "dnn.matmul"
// CHECK-NEXT: return
// CHECK: func.func private @amax_rows_k1_reduction(
// CHECK-LABEL: func.func @amax_rows(
func.func @amax_rows(%a: tensor<5x32xf8E4M3FN>, %b: tensor<32x16xf8E4M3FN>) -> tensor<5x1xf32> {
  %0 = "dnn.matmul"(%a, %b) {compute_type = f32} : (tensor<5x32xf8E4M3FN>, tensor<32x16xf8E4M3FN>) -> tensor<5x16xf32>
  %1 = "dnn.reduction"(%0) {axes = array<i64: 1>, keepdims = true, mode = "amax"} : (tensor<5x16xf32>) -> tensor<5x1xf32>
  return %1 : tensor<5x1xf32>
}

// -----

// The amax of a bf16 GEMM's result (which tc-sm80 may run, whose epilogue
// takes none) stays a kernel of its own; the cast still joins the GEMM,
// which returns the product for the amax too.
// CHECK-LABEL: func.func private @amax_bf16_k0_matmul(
// CHECK-SAME: -> (tensor<5x16xf32>, tensor<5x16xbf16>)
// CHECK-NEXT: %[[M:.*]] = "dnn.matmul"
// CHECK-NEXT: %[[C:.*]] = "dnn.cast"(%[[M]])
// CHECK-NEXT: return %[[M]], %[[C]]
// CHECK: func.func private @amax_bf16_k1_reduction(
// CHECK-LABEL: func.func @amax_bf16(
func.func @amax_bf16(%a: tensor<5x32xbf16>, %b: tensor<32x16xbf16>) -> (tensor<1x1xf32>, tensor<5x16xbf16>) {
  %0 = "dnn.matmul"(%a, %b) {compute_type = f32} : (tensor<5x32xbf16>, tensor<32x16xbf16>) -> tensor<5x16xf32>
  %1 = "dnn.reduction"(%0) {axes = array<i64: 0, 1>, keepdims = true, mode = "amax"} : (tensor<5x16xf32>) -> tensor<1x1xf32>
  %2 = "dnn.cast"(%0) : (tensor<5x16xf32>) -> tensor<5x16xbf16>
  return %1, %2 : tensor<1x1xf32>, tensor<5x16xbf16>
}

// -----

// residual add + layernorm + the fp8 output's scale and cast: one kernel,
// which also returns the sum; the scale is a kernel argument.
// CHECK-LABEL: func.func private @residual_layernorm_fp8_k0_layernorm(
// CHECK-SAME: -> (tensor<5x13xf32>, tensor<5x13xf8E4M3FN>) attributes {dnn.anchor = "layernorm", dnn.kernel}
// CHECK-NEXT: %[[H:.*]] = "dnn.add"(%arg0, %arg1)
// CHECK-NEXT: %[[Y:.*]] = "dnn.layernorm"(%[[H]],
// CHECK-NEXT: %[[S:.*]] = "dnn.mul"(%[[Y]], %arg4)
// CHECK-NEXT: %[[Q:.*]] = "dnn.cast"(%[[S]])
// CHECK-NEXT: return %[[H]], %[[Q]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @residual_layernorm_fp8(
// CHECK-NEXT: call @residual_layernorm_fp8_k0_layernorm(%arg0, %arg1, %arg2, %arg3, %arg4)
// NOFUSE-LABEL: func.func private @residual_layernorm_fp8_k0_pointwise(
// NOFUSE: func.func private @residual_layernorm_fp8_k1_layernorm(
// NOFUSE: func.func private @residual_layernorm_fp8_k2_pointwise(
func.func @residual_layernorm_fp8(%x: tensor<5x13xf32>, %r: tensor<5x13xf32>, %scale: tensor<1x13xf32>, %bias: tensor<1x13xf32>, %q: tensor<f32>) -> (tensor<5x13xf8E4M3FN>, tensor<5x13xf32>) {
  %0 = "dnn.add"(%x, %r) : (tensor<5x13xf32>, tensor<5x13xf32>) -> tensor<5x13xf32>
  %1 = "dnn.layernorm"(%0, %scale, %bias) {axis = 1 : i64, epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0>, resultSegmentSizes = array<i32: 1, 0, 0>, training = false} : (tensor<5x13xf32>, tensor<1x13xf32>, tensor<1x13xf32>) -> tensor<5x13xf32>
  %2 = "dnn.mul"(%1, %q) : (tensor<5x13xf32>, tensor<f32>) -> tensor<5x13xf32>
  %3 = "dnn.cast"(%2) : (tensor<5x13xf32>) -> tensor<5x13xf8E4M3FN>
  return %3, %0 : tensor<5x13xf8E4M3FN>, tensor<5x13xf32>
}

// -----

// A norm takes a pointwise epilogue (the output's scale, cast or shift); so
// does a transpose, of ops that read no other tensor (the scale by a
// constant); a constant used by two kernels is cloned into both.
// CHECK-LABEL: func.func private @norm_epilogue_k0_tensor(
// CHECK-SAME: attributes {dnn.anchor = "tensor", dnn.kernel}
// CHECK-NEXT: %[[T:.*]] = "dnn.transpose"
// CHECK-NEXT: %[[C:.*]] = "dnn.constant"
// CHECK-NEXT: %[[M:.*]] = "dnn.mul"(%[[T]], %[[C]])
// CHECK-NEXT: return %[[M]]
// CHECK: func.func private @norm_epilogue_k1_layernorm(
// CHECK-NEXT: %[[Y:.*]] = "dnn.layernorm"
// CHECK-NEXT: %[[C:.*]] = "dnn.constant"
// CHECK-NEXT: %[[S:.*]] = "dnn.add"(%[[Y]], %[[C]])
// CHECK-NEXT: return %[[S]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @norm_epilogue(
// CHECK-NEXT: %[[T:.*]] = call @norm_epilogue_k0_tensor(%arg0)
// CHECK-NEXT: %[[N:.*]] = call @norm_epilogue_k1_layernorm(%[[T]])
// CHECK-NEXT: return %[[N]]
func.func @norm_epilogue(%x: tensor<13x5xf32>) -> tensor<5x13xf32> {
  %c = "dnn.constant"() {value = 2.000000e+00 : f64} : () -> tensor<f32>
  %0 = "dnn.transpose"(%x) {permutation = array<i64: 1, 0>} : (tensor<13x5xf32>) -> tensor<5x13xf32>
  %1 = "dnn.mul"(%0, %c) : (tensor<5x13xf32>, tensor<f32>) -> tensor<5x13xf32>
  %2 = "dnn.layernorm"(%1) {axis = 1 : i64, epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>, training = false} : (tensor<5x13xf32>) -> tensor<5x13xf32>
  %3 = "dnn.add"(%2, %c) : (tensor<5x13xf32>, tensor<f32>) -> tensor<5x13xf32>
  return %3 : tensor<5x13xf32>
}

// -----

// A transpose's epilogue stops at an op that reads another tensor (the add
// of %r: a pointwise kernel of its own, with the relu after it), and at a
// value with two users; the cast before that joins.
// CHECK-LABEL: func.func private @transpose_epilogue_k0_tensor(
// CHECK-NEXT: %[[T:.*]] = "dnn.transpose"
// CHECK-NEXT: %[[C:.*]] = "dnn.cast"(%[[T]])
// CHECK-NEXT: return %[[C]]
// CHECK: func.func private @transpose_epilogue_k1_pointwise(
// CHECK-NEXT: "dnn.add"
// CHECK-NEXT: "dnn.relu"
// CHECK: func.func private @transpose_epilogue_k2_tensor(
// CHECK-NEXT: %[[U:.*]] = "dnn.transpose"
// CHECK-NEXT: return %[[U]]
// CHECK: func.func private @transpose_epilogue_k3_pointwise(
// CHECK-NEXT: "dnn.exp"
// CHECK: func.func private @transpose_epilogue_k4_pointwise(
// CHECK-NEXT: "dnn.neg"
// NOFUSE-LABEL: func.func private @transpose_epilogue_k0_tensor(
// NOFUSE-NEXT: "dnn.transpose"
// NOFUSE-NEXT: return
func.func @transpose_epilogue(%x: tensor<13x5xf32>, %r: tensor<5x13xbf16>) -> (tensor<5x13xbf16>, tensor<5x13xf32>, tensor<5x13xf32>) {
  %0 = "dnn.transpose"(%x) {permutation = array<i64: 1, 0>} : (tensor<13x5xf32>) -> tensor<5x13xf32>
  %1 = "dnn.cast"(%0) : (tensor<5x13xf32>) -> tensor<5x13xbf16>
  %2 = "dnn.add"(%1, %r) : (tensor<5x13xbf16>, tensor<5x13xbf16>) -> tensor<5x13xbf16>
  %3 = "dnn.relu"(%2) : (tensor<5x13xbf16>) -> tensor<5x13xbf16>
  %4 = "dnn.transpose"(%x) {permutation = array<i64: 1, 0>} : (tensor<13x5xf32>) -> tensor<5x13xf32>
  %5 = "dnn.exp"(%4) : (tensor<5x13xf32>) -> tensor<5x13xf32>
  %6 = "dnn.neg"(%4) : (tensor<5x13xf32>) -> tensor<5x13xf32>
  return %3, %5, %6 : tensor<5x13xbf16>, tensor<5x13xf32>, tensor<5x13xf32>
}

// -----

// %a and %b form a pointwise chain; %d reads %b and the matmul, which reads %a.
// Joining %d to the chain would make the two kernels call each other, so %d
// gets a kernel of its own (the matmul has two users: no epilogue).
// CHECK-LABEL: func.func private @join_would_cycle_k0_pointwise(
// CHECK-SAME: -> (tensor<5x5xf32>, tensor<5x5xf32>)
// CHECK: func.func private @join_would_cycle_k1_matmul(
// CHECK: func.func private @join_would_cycle_k2_pointwise(
// CHECK-SAME: dnn.kernel}
// CHECK: func.func private @join_would_cycle_k3_pointwise(
// CHECK-SAME: dnn.kernel}
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @join_would_cycle(
// CHECK-NEXT: %[[AB:.*]]:2 = call @join_would_cycle_k0_pointwise(%arg0)
// CHECK-NEXT: %[[C:.*]] = call @join_would_cycle_k1_matmul(%[[AB]]#0, %arg0)
// CHECK-NEXT: %[[D:.*]] = call @join_would_cycle_k2_pointwise(%[[AB]]#1, %[[C]])
// CHECK-NEXT: %[[E:.*]] = call @join_would_cycle_k3_pointwise(%[[C]])
// CHECK-NEXT: return %[[E]], %[[D]]
func.func @join_would_cycle(%x: tensor<5x5xf32>) -> (tensor<5x5xf32>, tensor<5x5xf32>) {
  %a = "dnn.exp"(%x) : (tensor<5x5xf32>) -> tensor<5x5xf32>
  %b = "dnn.relu"(%a) : (tensor<5x5xf32>) -> tensor<5x5xf32>
  %c = "dnn.matmul"(%a, %x) {compute_type = f32} : (tensor<5x5xf32>, tensor<5x5xf32>) -> tensor<5x5xf32>
  %d = "dnn.add"(%b, %c) : (tensor<5x5xf32>, tensor<5x5xf32>) -> tensor<5x5xf32>
  %e = "dnn.neg"(%c) : (tensor<5x5xf32>) -> tensor<5x5xf32>
  return %e, %d : tensor<5x5xf32>, tensor<5x5xf32>
}

// -----

// An epilogue operand computed by a later-starting kernel: the calls follow the
// dependencies, not the order of the first ops.
// CHECK-LABEL: func.func private @epilogue_reads_later_kernel_k0_pointwise(
// CHECK: func.func private @epilogue_reads_later_kernel_k1_matmul(
// CHECK-NEXT: "dnn.matmul"
// CHECK-NEXT: "dnn.mul"
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @epilogue_reads_later_kernel(
// CHECK-NEXT: %[[E:.*]] = call @epilogue_reads_later_kernel_k0_pointwise(%arg1)
// CHECK-NEXT: %[[Y:.*]] = call @epilogue_reads_later_kernel_k1_matmul(%arg0, %[[E]])
// CHECK-NEXT: return %[[Y]]
func.func @epilogue_reads_later_kernel(%x: tensor<5x5xf32>, %s: tensor<5x5xf32>) -> tensor<5x5xf32> {
  %0 = "dnn.matmul"(%x, %x) {compute_type = f32} : (tensor<5x5xf32>, tensor<5x5xf32>) -> tensor<5x5xf32>
  %1 = "dnn.exp"(%s) : (tensor<5x5xf32>) -> tensor<5x5xf32>
  %2 = "dnn.mul"(%0, %1) : (tensor<5x5xf32>, tensor<5x5xf32>) -> tensor<5x5xf32>
  return %2 : tensor<5x5xf32>
}

// -----

// A training norm's statistics used by a later kernel are kernel results; a
// result nobody uses is not returned.
// CHECK-LABEL: func.func private @norm_statistics_k0_layernorm(
// CHECK-SAME: -> (tensor<5x13xf32>, tensor<5x1xf32>, tensor<5x1xf32>)
// CHECK: func.func private @norm_statistics_k1_layernorm_backward(
// CHECK-SAME: -> tensor<5x13xf32> attributes {dnn.anchor = "layernorm_backward", dnn.kernel}
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @norm_statistics(
// CHECK-NEXT: %[[F:.*]]:3 = call @norm_statistics_k0_layernorm(%arg0)
// CHECK-NEXT: %[[B:.*]] = call @norm_statistics_k1_layernorm_backward(%arg1, %arg0, %[[F]]#1, %[[F]]#2)
// CHECK-NEXT: return %[[F]]#0, %[[B]]
func.func @norm_statistics(%x: tensor<5x13xf32>, %dy: tensor<5x13xf32>) -> (tensor<5x13xf32>, tensor<5x13xf32>) {
  %y, %mean, %inv = "dnn.layernorm"(%x) {axis = 1 : i64, epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 1>, training = true} : (tensor<5x13xf32>) -> (tensor<5x13xf32>, tensor<5x1xf32>, tensor<5x1xf32>)
  %dx, %dbias = "dnn.layernorm_backward"(%dy, %x, %mean, %inv) {axis = 1 : i64, has_bias = true, resultSegmentSizes = array<i32: 1, 0, 1>} : (tensor<5x13xf32>, tensor<5x13xf32>, tensor<5x1xf32>, tensor<5x1xf32>) -> (tensor<5x13xf32>, tensor<1x13xf32>)
  return %y, %dx : tensor<5x13xf32>, tensor<5x13xf32>
}

// -----

// A decomposed layernorm backward is one kernel. dx is a row program: both
// sums along the rows and the pointwise ops around them. dscale and dbias
// sum the same rows along the columns: their column kernel joins dx's, which
// computes xhat = (x - mean) * inv once for both and reads dy and x once.
// CHECK-LABEL: func.func private @layernorm_backward_k0_reduction(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x16xf32>, %[[MEAN:[^:]*]]: tensor<4x1xf32>, %[[INV:[^:]*]]: tensor<4x1xf32>, %[[DY:[^:]*]]: tensor<4x16xf32>, %[[SCALE:[^:]*]]: tensor<1x16xf32>) -> (tensor<4x16xf32>, tensor<1x16xf32>, tensor<1x16xf32>)
// CHECK-SAME: attributes {dnn.anchor = "reduction", dnn.kernel}
// CHECK: %[[C:.*]] = "dnn.sub"(%[[X]], %[[MEAN]])
// CHECK-NEXT: %[[XHAT:.*]] = "dnn.mul"(%[[C]], %[[INV]])
// CHECK: %[[G:.*]] = "dnn.mul"(%[[DY]], %[[SCALE]])
// CHECK: "dnn.reduction"({{.*}}) {axes = array<i64: 1>, keepdims = true, mode = "mean"}
// CHECK: "dnn.reduction"(%[[G]]) {axes = array<i64: 1>, keepdims = true, mode = "mean"}
// CHECK: %[[DX:.*]] = "dnn.mul"(%[[INV]],
// CHECK-NEXT: %[[P:.*]] = "dnn.mul"(%[[DY]], %[[XHAT]])
// CHECK-NEXT: %[[DSCALE:.*]] = "dnn.reduction"(%[[P]]) {axes = array<i64: 0>, keepdims = true, mode = "sum"}
// CHECK-NEXT: %[[DBIAS:.*]] = "dnn.reduction"(%[[DY]]) {axes = array<i64: 0>, keepdims = true, mode = "sum"}
// CHECK-NEXT: return %[[DX]], %[[DSCALE]], %[[DBIAS]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @layernorm_backward(
// CHECK-NEXT: %[[K:.*]]:3 = call @layernorm_backward_k0_reduction(%arg1, %arg3, %arg4, %arg0, %arg2)
// CHECK-NEXT: return %[[K]]#0, %[[K]]#1, %[[K]]#2
func.func @layernorm_backward(%dy: tensor<4x16xf32>, %x: tensor<4x16xf32>, %scale: tensor<1x16xf32>, %mean: tensor<4x1xf32>, %inv: tensor<4x1xf32>) -> (tensor<4x16xf32>, tensor<1x16xf32>, tensor<1x16xf32>) {
  %0 = "dnn.sub"(%x, %mean) : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %1 = "dnn.mul"(%0, %inv) : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %2 = "dnn.mul"(%dy, %scale) : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  %3 = "dnn.mul"(%2, %1) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %4 = "dnn.reduction"(%3) {axes = array<i64: 1>, keepdims = true, mode = "mean"} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %5 = "dnn.mul"(%1, %4) : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %6 = "dnn.sub"(%2, %5) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %7 = "dnn.reduction"(%2) {axes = array<i64: 1>, keepdims = true, mode = "mean"} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %8 = "dnn.sub"(%6, %7) : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %9 = "dnn.mul"(%inv, %8) : (tensor<4x1xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %10 = "dnn.mul"(%dy, %1) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %11 = "dnn.reduction"(%10) {axes = array<i64: 0>, keepdims = true, mode = "sum"} : (tensor<4x16xf32>) -> tensor<1x16xf32>
  %12 = "dnn.reduction"(%dy) {axes = array<i64: 0>, keepdims = true, mode = "sum"} : (tensor<4x16xf32>) -> tensor<1x16xf32>
  return %9, %11, %12 : tensor<4x16xf32>, tensor<1x16xf32>, tensor<1x16xf32>
}

// -----

// Group statistics: the reshape of x to one row per (sample, group) stays in
// the graph function (a view, no copy); the mean and the variance over the
// rows are one row program.
// CHECK-LABEL: func.func private @group_statistics_k0_reduction(
// CHECK-SAME: %[[ROWS:[^:]*]]: tensor<2x3x1x10xf32>) -> (tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>)
// CHECK-NEXT: %[[MEAN:.*]] = "dnn.reduction"(%[[ROWS]]) {axes = array<i64: 3>, keepdims = true, mode = "mean"}
// CHECK-NEXT: %[[C:.*]] = "dnn.sub"(%[[ROWS]], %[[MEAN]])
// CHECK-NEXT: %[[SQ:.*]] = "dnn.square"(%[[C]])
// CHECK-NEXT: %[[VAR:.*]] = "dnn.reduction"(%[[SQ]]) {axes = array<i64: 3>, keepdims = true, mode = "mean"}
// CHECK-NEXT: return %[[MEAN]], %[[VAR]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @group_statistics(
// CHECK-NEXT: %[[ROWS:.*]] = "dnn.reshape"(%arg0) : (tensor<2x6x5x1xf32>) -> tensor<2x3x1x10xf32>
// CHECK-NEXT: %[[S:.*]]:2 = call @group_statistics_k0_reduction(%[[ROWS]])
// CHECK-NEXT: return %[[S]]#0, %[[S]]#1
func.func @group_statistics(%x: tensor<2x6x5x1xf32>) -> (tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) {
  %0 = "dnn.reshape"(%x) : (tensor<2x6x5x1xf32>) -> tensor<2x3x1x10xf32>
  %1 = "dnn.reduction"(%0) {axes = array<i64: 3>, keepdims = true, mode = "mean"} : (tensor<2x3x1x10xf32>) -> tensor<2x3x1x1xf32>
  %2 = "dnn.sub"(%0, %1) : (tensor<2x3x1x10xf32>, tensor<2x3x1x1xf32>) -> tensor<2x3x1x10xf32>
  %3 = "dnn.square"(%2) : (tensor<2x3x1x10xf32>) -> tensor<2x3x1x10xf32>
  %4 = "dnn.reduction"(%3) {axes = array<i64: 3>, keepdims = true, mode = "mean"} : (tensor<2x3x1x10xf32>) -> tensor<2x3x1x1xf32>
  return %1, %4 : tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>
}

// -----

// A reshape that is a graph result needs a buffer of its own: a kernel.
// CHECK-LABEL: func.func private @reshape_result_k0_tensor(
// CHECK-NEXT: "dnn.reshape"
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @reshape_result(
// CHECK-NEXT: %[[R:.*]] = call @reshape_result_k0_tensor(%arg0)
// CHECK-NEXT: return %[[R]]
func.func @reshape_result(%x: tensor<2x6xf32>) -> tensor<3x4xf32> {
  %0 = "dnn.reshape"(%x) : (tensor<2x6xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Two row reductions over the same rows that read the same tensor (dy): one
// kernel, which reads dy once.
// CHECK-LABEL: func.func private @sibling_rows_k0_reduction(
// CHECK-SAME: -> (tensor<3x8x1xf32>, tensor<3x8x1xf32>)
// CHECK-NEXT: "dnn.mul"
// CHECK-NEXT: "dnn.reduction"
// CHECK-NEXT: "dnn.reduction"
// CHECK-NEXT: return
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @sibling_rows(
// CHECK-NEXT: %[[S:.*]]:2 = call @sibling_rows_k0_reduction(%arg0, %arg1)
// CHECK-NEXT: return %[[S]]#0, %[[S]]#1
func.func @sibling_rows(%dy: tensor<3x8x6xf32>, %x: tensor<3x8x6xf32>) -> (tensor<3x8x1xf32>, tensor<3x8x1xf32>) {
  %0 = "dnn.mul"(%dy, %x) : (tensor<3x8x6xf32>, tensor<3x8x6xf32>) -> tensor<3x8x6xf32>
  %1 = "dnn.reduction"(%0) {axes = array<i64: 2>, keepdims = true, mode = "sum"} : (tensor<3x8x6xf32>) -> tensor<3x8x1xf32>
  %2 = "dnn.reduction"(%dy) {axes = array<i64: 2>, keepdims = true, mode = "sum"} : (tensor<3x8x6xf32>) -> tensor<3x8x1xf32>
  return %1, %2 : tensor<3x8x1xf32>, tensor<3x8x1xf32>
}

// -----

// A column reduction recomputes its pointwise operand (exp) even when another
// kernel returns it, and takes the cast of its result; the exp kernel's
// result goes only to the graph's caller.
// CHECK-LABEL: func.func private @column_recompute_k0_pointwise(
// CHECK-SAME: -> tensor<5x8xf32>
// CHECK-NEXT: "dnn.exp"
// CHECK-NEXT: return
// CHECK-LABEL: func.func private @column_recompute_k1_reduction(
// CHECK-SAME: %[[X:[^:]*]]: tensor<5x8xf32>) -> tensor<1x8xbf16>
// CHECK-NEXT: %[[E:.*]] = "dnn.exp"(%[[X]])
// CHECK-NEXT: %[[S:.*]] = "dnn.reduction"(%[[E]]) {axes = array<i64: 0>, keepdims = true, mode = "sum"}
// CHECK-NEXT: %[[Y:.*]] = "dnn.cast"(%[[S]])
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @column_recompute(
// CHECK-NEXT: %[[E:.*]] = call @column_recompute_k0_pointwise(%arg0)
// CHECK-NEXT: %[[S:.*]] = call @column_recompute_k1_reduction(%arg0)
// CHECK-NEXT: return %[[E]], %[[S]]
func.func @column_recompute(%x: tensor<5x8xf32>) -> (tensor<5x8xf32>, tensor<1x8xbf16>) {
  %0 = "dnn.exp"(%x) : (tensor<5x8xf32>) -> tensor<5x8xf32>
  %1 = "dnn.reduction"(%0) {axes = array<i64: 0>, keepdims = true, mode = "sum"} : (tensor<5x8xf32>) -> tensor<1x8xf32>
  %2 = "dnn.cast"(%1) : (tensor<1x8xf32>) -> tensor<1x8xbf16>
  return %0, %2 : tensor<5x8xf32>, tensor<1x8xbf16>
}

// -----

// Operand prologues: relu of A (N = 64, reused little) joins the matmul's
// kernel with the cast of B before it; an f32 B cast feeding a matmul of M =
// 512 rows stays a kernel of its own (each tile of B would be converted once
// per 128 rows of the result: more than the pass it saves).
// CHECK-LABEL: func.func private @operand_prologue_k0_matmul(
//  CHECK-SAME: %arg0: tensor<32x128xbf16>, %arg1: tensor<128x64xf32>
//  CHECK-NEXT: "dnn.relu"(%arg0)
//  CHECK-NEXT: "dnn.cast"(%arg1)
//  CHECK-NEXT: "dnn.matmul"
//  CHECK-NEXT: return
// CHECK-LABEL: func.func private @operand_prologue_k1_pointwise(
//  CHECK-NEXT: "dnn.cast"
//  CHECK-NEXT: return
// CHECK-LABEL: func.func private @operand_prologue_k2_matmul(
//  CHECK-NEXT: "dnn.matmul"
//  CHECK-NEXT: return
// NOFUSE-LABEL: func.func @operand_prologue(
// NOFUSE-NEXT: call @operand_prologue_k0_pointwise
func.func @operand_prologue(%a: tensor<32x128xbf16>, %w: tensor<128x64xf32>, %x: tensor<512x128xbf16>, %v: tensor<128x64xf32>) -> (tensor<32x64xbf16>, tensor<512x64xbf16>) {
  %0 = "dnn.relu"(%a) : (tensor<32x128xbf16>) -> tensor<32x128xbf16>
  %1 = "dnn.cast"(%w) : (tensor<128x64xf32>) -> tensor<128x64xbf16>
  %2 = "dnn.matmul"(%0, %1) {compute_type = f32} : (tensor<32x128xbf16>, tensor<128x64xbf16>) -> tensor<32x64xbf16>
  %3 = "dnn.cast"(%v) : (tensor<128x64xf32>) -> tensor<128x64xbf16>
  %4 = "dnn.matmul"(%x, %3) {compute_type = f32} : (tensor<512x128xbf16>, tensor<128x64xbf16>) -> tensor<512x64xbf16>
  return %2, %4 : tensor<32x64xbf16>, tensor<512x64xbf16>
}

// -----

// A row reduction over several trailing dims: groupnorm's decomposition,
// one (sample, group) per row of 2 channels x 25 positions, its scale and
// bias (1x3x2x1) varying along the row by channel. Both reductions, the
// statistics and the affine ops are one row kernel; the reshape of y back
// to NCHW is left to the graph.
// CHECK-LABEL: func.func private @groupnorm_rows_k0_reduction(
// CHECK-SAME: %{{.*}}: tensor<2x3x2x25xf32>, %[[S:.*]]: tensor<1x3x2x1xf32>, %[[B:.*]]: tensor<1x3x2x1xf32>)
// CHECK: "dnn.reduction"({{.*}}) {axes = array<i64: 2, 3>, keepdims = true, mode = "mean"}
// CHECK: "dnn.reduction"({{.*}}) {axes = array<i64: 2, 3>, keepdims = true, mode = "mean"}
// CHECK: "dnn.rsqrt"
// CHECK: "dnn.mul"(%{{.*}}, %[[S]])
// CHECK-NEXT: %[[Y:.*]] = "dnn.add"(%{{.*}}, %[[B]])
// CHECK-NEXT: return %[[Y]]
// CHECK-LABEL: func.func @groupnorm_rows(
// CHECK: call @groupnorm_rows_k0_reduction(
// CHECK-NOT: call @groupnorm_rows_k{{[1-9]}}_reduction
func.func @groupnorm_rows(%arg0: tensor<2x6x5x5xf32>, %arg1: tensor<1x6x1x1xf32>, %arg2: tensor<1x6x1x1xf32>) -> tensor<2x6x5x5xf32> {
  %0 = "dnn.reshape"(%arg0) : (tensor<2x6x5x5xf32>) -> tensor<2x3x2x25xf32>
  %1 = "dnn.reduction"(%0) {axes = array<i64: 2, 3>, keepdims = true, mode = "mean"} : (tensor<2x3x2x25xf32>) -> tensor<2x3x1x1xf32>
  %2 = "dnn.sub"(%0, %1) : (tensor<2x3x2x25xf32>, tensor<2x3x1x1xf32>) -> tensor<2x3x2x25xf32>
  %3 = "dnn.square"(%2) : (tensor<2x3x2x25xf32>) -> tensor<2x3x2x25xf32>
  %4 = "dnn.reduction"(%3) {axes = array<i64: 2, 3>, keepdims = true, mode = "mean"} : (tensor<2x3x2x25xf32>) -> tensor<2x3x1x1xf32>
  %5 = "dnn.constant"() {value = 1.000000e-05 : f64} : () -> tensor<f32>
  %6 = "dnn.add"(%4, %5) : (tensor<2x3x1x1xf32>, tensor<f32>) -> tensor<2x3x1x1xf32>
  %7 = "dnn.rsqrt"(%6) : (tensor<2x3x1x1xf32>) -> tensor<2x3x1x1xf32>
  %8 = "dnn.reshape"(%arg1) : (tensor<1x6x1x1xf32>) -> tensor<1x3x2x1xf32>
  %9 = "dnn.reshape"(%arg2) : (tensor<1x6x1x1xf32>) -> tensor<1x3x2x1xf32>
  %10 = "dnn.mul"(%2, %7) : (tensor<2x3x2x25xf32>, tensor<2x3x1x1xf32>) -> tensor<2x3x2x25xf32>
  %11 = "dnn.mul"(%10, %8) : (tensor<2x3x2x25xf32>, tensor<1x3x2x1xf32>) -> tensor<2x3x2x25xf32>
  %12 = "dnn.add"(%11, %9) : (tensor<2x3x2x25xf32>, tensor<1x3x2x1xf32>) -> tensor<2x3x2x25xf32>
  %13 = "dnn.reshape"(%12) : (tensor<2x3x2x25xf32>) -> tensor<2x6x5x5xf32>
  return %13 : tensor<2x6x5x5xf32>
}

// -----

// A chain of concats along one axis (Graph.concat of three tensors): the
// second joins the first's kernel, whose result it alone uses. A concat
// along another axis, or of a result used elsewhere too, is a kernel of its
// own.
// CHECK-LABEL: func.func private @concat_chain_k0_concat(
// CHECK-SAME: %[[A:[^:]*]]: tensor<4x8xf32>, %[[B:[^:]*]]: tensor<4x16xf32>, %[[C:[^:]*]]: tensor<4x8xf32>) -> tensor<4x32xf32>
// CHECK-NEXT: %[[AB:.*]] = "dnn.concat"(%[[A]], %[[B]]) {axis = 1 : i64}
// CHECK-NEXT: %[[ABC:.*]] = "dnn.concat"(%[[AB]], %[[C]]) {axis = 1 : i64}
// CHECK-NEXT: return %[[ABC]]
// CHECK-LABEL: func.func private @concat_chain_k1_concat(
// CHECK-NEXT: "dnn.concat"({{.*}}) {axis = 0 : i64}
// CHECK-NEXT: return
// CHECK-LABEL: func.func @concat_chain(
// CHECK-NEXT: %[[Y:.*]] = call @concat_chain_k0_concat(%arg0, %arg1, %arg2)
// CHECK-NEXT: %[[Z:.*]] = call @concat_chain_k1_concat(%[[Y]])
// CHECK-NEXT: return %[[Y]], %[[Z]]
func.func @concat_chain(%a: tensor<4x8xf32>, %b: tensor<4x16xf32>, %c: tensor<4x8xf32>) -> (tensor<4x32xf32>, tensor<8x32xf32>) attributes {dnn.graph} {
  %0 = "dnn.concat"(%a, %b) {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<4x24xf32>
  %1 = "dnn.concat"(%0, %c) {axis = 1 : i64} : (tensor<4x24xf32>, tensor<4x8xf32>) -> tensor<4x32xf32>
  %2 = "dnn.concat"(%1, %1) {axis = 0 : i64} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<8x32xf32>
  return %1, %2 : tensor<4x32xf32>, tensor<8x32xf32>
}

// -----

// The patterns a convolution network fuses (each one kernel, as the
// tensor-core implicit GEMM runs them: its epilogue): conv + batchnorm
// inference (a per-channel scale and shift) + relu; conv + bias + residual
// + relu; a data gradient with the activation's gradient.
// CHECK-LABEL: func.func private @conv_bn_relu_k0_conv_fprop(
// CHECK-SAME: attributes {dnn.anchor = "conv_fprop", dnn.kernel}
// CHECK-NEXT: "dnn.conv_fprop"
// CHECK-NEXT: "dnn.mul"
// CHECK-NEXT: "dnn.add"
// CHECK-NEXT: "dnn.relu"
// CHECK-NEXT: return
// CHECK-LABEL: func.func @conv_bn_relu(
// CHECK-NEXT: call @conv_bn_relu_k0_conv_fprop(%arg0, %arg1, %arg2, %arg3)
// CHECK-NEXT: return
func.func @conv_bn_relu(%x: tensor<2x3x7x7xf32>, %w: tensor<5x3x3x3xf32>, %s: tensor<1x5x1x1xf32>, %t: tensor<1x5x1x1xf32>) -> tensor<2x5x7x7xf32> attributes {dnn.graph} {
  %0 = "dnn.conv_fprop"(%x, %w) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x3x7x7xf32>, tensor<5x3x3x3xf32>) -> tensor<2x5x7x7xf32>
  %1 = "dnn.mul"(%0, %s) : (tensor<2x5x7x7xf32>, tensor<1x5x1x1xf32>) -> tensor<2x5x7x7xf32>
  %2 = "dnn.add"(%1, %t) : (tensor<2x5x7x7xf32>, tensor<1x5x1x1xf32>) -> tensor<2x5x7x7xf32>
  %3 = "dnn.relu"(%2) : (tensor<2x5x7x7xf32>) -> tensor<2x5x7x7xf32>
  return %3 : tensor<2x5x7x7xf32>
}

// -----

// CHECK-LABEL: func.func private @conv_bias_residual_relu_k0_conv_fprop(
// CHECK-SAME: attributes {dnn.anchor = "conv_fprop", dnn.kernel}
// CHECK-NEXT: "dnn.conv_fprop"
// CHECK-NEXT: "dnn.add"
// CHECK-NEXT: "dnn.add"
// CHECK-NEXT: "dnn.relu"
// CHECK-NEXT: return
// CHECK-LABEL: func.func @conv_bias_residual_relu(
// CHECK-NEXT: call @conv_bias_residual_relu_k0_conv_fprop(%arg0, %arg1, %arg2, %arg3)
// CHECK-NEXT: return
func.func @conv_bias_residual_relu(%x: tensor<2x3x7x7xf32>, %w: tensor<5x3x3x3xf32>, %b: tensor<1x5x1x1xf32>, %r: tensor<2x5x7x7xf32>) -> tensor<2x5x7x7xf32> attributes {dnn.graph} {
  %0 = "dnn.conv_fprop"(%x, %w) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x3x7x7xf32>, tensor<5x3x3x3xf32>) -> tensor<2x5x7x7xf32>
  %1 = "dnn.add"(%0, %b) : (tensor<2x5x7x7xf32>, tensor<1x5x1x1xf32>) -> tensor<2x5x7x7xf32>
  %2 = "dnn.add"(%1, %r) : (tensor<2x5x7x7xf32>, tensor<2x5x7x7xf32>) -> tensor<2x5x7x7xf32>
  %3 = "dnn.relu"(%2) : (tensor<2x5x7x7xf32>) -> tensor<2x5x7x7xf32>
  return %3 : tensor<2x5x7x7xf32>
}

// -----

// CHECK-LABEL: func.func private @dgrad_relu_backward_k0_conv_dgrad(
// CHECK-SAME: attributes {dnn.anchor = "conv_dgrad", dnn.kernel}
// CHECK-NEXT: "dnn.conv_dgrad"
// CHECK-NEXT: "dnn.relu_backward"
// CHECK-NEXT: return
// CHECK-LABEL: func.func @dgrad_relu_backward(
// CHECK-NEXT: call @dgrad_relu_backward_k0_conv_dgrad(%arg0, %arg1, %arg2)
// CHECK-NEXT: return
func.func @dgrad_relu_backward(%dy: tensor<2x5x7x7xf32>, %w: tensor<5x3x3x3xf32>, %x: tensor<2x3x7x7xf32>) -> tensor<2x3x7x7xf32> attributes {dnn.graph} {
  %0 = "dnn.conv_dgrad"(%dy, %w) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x5x7x7xf32>, tensor<5x3x3x3xf32>) -> tensor<2x3x7x7xf32>
  %1 = "dnn.relu_backward"(%0, %x) : (tensor<2x3x7x7xf32>, tensor<2x3x7x7xf32>) -> tensor<2x3x7x7xf32>
  return %1 : tensor<2x3x7x7xf32>
}

// -----

// Convolution prologue: cuDNN's BN-ReLU-conv. relu(x * scale + shift), scale
// and shift per channel of x (C = 64, bf16), joins the forward convolution's
// kernel: one dnn.kernel, the activation never stored. Off: two kernels.
// CHECK-LABEL: func.func private @bn_relu_conv_k0_conv_fprop(
//  CHECK-SAME: %[[X:.*]]: tensor<2x64x9x11xbf16>, %[[S:.*]]: tensor<1x64x1x1xf32>, %[[B:.*]]: tensor<1x64x1x1xf32>, %[[W:.*]]: tensor<32x64x3x3xbf16>
//  CHECK-NEXT: %[[M:.*]] = "dnn.mul"(%[[X]], %[[S]])
//  CHECK-NEXT: %[[A:.*]] = "dnn.add"(%[[M]], %[[B]])
//  CHECK-NEXT: %[[R:.*]] = "dnn.relu"(%[[A]])
//  CHECK-NEXT: %[[Y:.*]] = "dnn.conv_fprop"(%[[R]], %[[W]])
//  CHECK-NEXT: return %[[Y]]
// CHECK-LABEL: func.func @bn_relu_conv(
//  CHECK-NEXT: call @bn_relu_conv_k0_conv_fprop(%arg0, %arg2, %arg3, %arg1)
//  CHECK-NEXT: return
// NOFUSE-LABEL: func.func @bn_relu_conv(
//  NOFUSE-NEXT: call @bn_relu_conv_k0_pointwise
//  NOFUSE-NEXT: call @bn_relu_conv_k1_conv_fprop
func.func @bn_relu_conv(%x: tensor<2x64x9x11xbf16>, %w: tensor<32x64x3x3xbf16>, %s: tensor<1x64x1x1xf32>, %b: tensor<1x64x1x1xf32>) -> tensor<2x32x9x11xbf16> {
  %0 = "dnn.mul"(%x, %s) : (tensor<2x64x9x11xbf16>, tensor<1x64x1x1xf32>) -> tensor<2x64x9x11xbf16>
  %1 = "dnn.add"(%0, %b) : (tensor<2x64x9x11xbf16>, tensor<1x64x1x1xf32>) -> tensor<2x64x9x11xbf16>
  %2 = "dnn.relu"(%1) : (tensor<2x64x9x11xbf16>) -> tensor<2x64x9x11xbf16>
  %3 = "dnn.conv_fprop"(%2, %w) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x64x9x11xbf16>, tensor<32x64x3x3xbf16>) -> tensor<2x32x9x11xbf16>
  return %3 : tensor<2x32x9x11xbf16>
}

// -----

// The plain scale + shift (no relu), 3-D and strided, and a relu alone
// (of another input, scaled by [64, 1, 1, 1]: per channel, aligned on the
// right): each one kernel with its convolution (the first with its
// epilogue too).
// CHECK-LABEL: func.func private @scale_shift_conv_k0_conv_fprop(
//  CHECK-NEXT: "dnn.mul"
//  CHECK-NEXT: "dnn.add"
//  CHECK-NEXT: "dnn.conv_fprop"
//  CHECK-NEXT: "dnn.relu"
//  CHECK-NEXT: return
// CHECK-LABEL: func.func private @scale_shift_conv_k1_conv_fprop(
//  CHECK-NEXT: "dnn.relu"
//  CHECK-NEXT: "dnn.mul"
//  CHECK-NEXT: "dnn.conv_fprop"
//  CHECK-NEXT: return
// CHECK-LABEL: func.func @scale_shift_conv(
//  CHECK-NEXT: call @scale_shift_conv_k0_conv_fprop
//  CHECK-NEXT: call @scale_shift_conv_k1_conv_fprop
//  CHECK-NEXT: return
func.func @scale_shift_conv(%x: tensor<1x64x4x6x6xf16>, %w: tensor<64x64x3x3x3xf16>, %s: tensor<1x64x1x1x1xf32>, %b: tensor<1x64x1x1x1xf32>, %u: tensor<1x64x2x3x3xf16>, %v: tensor<64x64x1x1x1xf16>, %t: tensor<64x1x1x1xf32>) -> (tensor<1x64x2x3x3xf16>, tensor<1x64x2x3x3xf16>) {
  %0 = "dnn.mul"(%x, %s) : (tensor<1x64x4x6x6xf16>, tensor<1x64x1x1x1xf32>) -> tensor<1x64x4x6x6xf16>
  %1 = "dnn.add"(%0, %b) : (tensor<1x64x4x6x6xf16>, tensor<1x64x1x1x1xf32>) -> tensor<1x64x4x6x6xf16>
  %2 = "dnn.conv_fprop"(%1, %w) {compute_type = f32, dilation = array<i64: 1, 1, 1>, mode = "cross_correlation", post_padding = array<i64: 1, 0, 1>, pre_padding = array<i64: 1, 1, 0>, stride = array<i64: 2, 2, 2>} : (tensor<1x64x4x6x6xf16>, tensor<64x64x3x3x3xf16>) -> tensor<1x64x2x3x3xf16>
  %3 = "dnn.relu"(%2) : (tensor<1x64x2x3x3xf16>) -> tensor<1x64x2x3x3xf16>
  %4 = "dnn.relu"(%u) : (tensor<1x64x2x3x3xf16>) -> tensor<1x64x2x3x3xf16>
  %5 = "dnn.mul"(%4, %t) : (tensor<1x64x2x3x3xf16>, tensor<64x1x1x1xf32>) -> tensor<1x64x2x3x3xf16>
  %6 = "dnn.conv_fprop"(%5, %v) {compute_type = f32, dilation = array<i64: 1, 1, 1>, mode = "cross_correlation", post_padding = array<i64: 0, 0, 0>, pre_padding = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>} : (tensor<1x64x2x3x3xf16>, tensor<64x64x1x1x1xf16>) -> tensor<1x64x2x3x3xf16>
  return %3, %6 : tensor<1x64x2x3x3xf16>, tensor<1x64x2x3x3xf16>
}

// -----

// A pre-activation with another user (the batchnorm's output also feeds a
// residual add): x * scale + shift stays a kernel of its own, which stores
// it once; only the relu after it joins the convolution (nothing is
// computed twice). The convolution's result is returned and feeds the
// residual add: the add joins its epilogue, which stores both.
// CHECK-LABEL: func.func private @shared_preactivation_k0_pointwise(
//  CHECK-NEXT: "dnn.mul"
//  CHECK-NEXT: "dnn.add"
//  CHECK-NEXT: return
// CHECK-LABEL: func.func private @shared_preactivation_k1_conv_fprop(
//  CHECK-NEXT: "dnn.relu"
//  CHECK-NEXT: %[[C:.*]] = "dnn.conv_fprop"
//  CHECK-NEXT: %[[Z:.*]] = "dnn.add"(%arg0, %[[C]])
//  CHECK-NEXT: return %[[C]], %[[Z]]
func.func @shared_preactivation(%x: tensor<2x64x8x8xbf16>, %w: tensor<64x64x1x1xbf16>, %s: tensor<1x64x1x1xf32>, %b: tensor<1x64x1x1xf32>) -> (tensor<2x64x8x8xbf16>, tensor<2x64x8x8xbf16>) {
  %0 = "dnn.mul"(%x, %s) : (tensor<2x64x8x8xbf16>, tensor<1x64x1x1xf32>) -> tensor<2x64x8x8xbf16>
  %1 = "dnn.add"(%0, %b) : (tensor<2x64x8x8xbf16>, tensor<1x64x1x1xf32>) -> tensor<2x64x8x8xbf16>
  %2 = "dnn.relu"(%1) : (tensor<2x64x8x8xbf16>) -> tensor<2x64x8x8xbf16>
  %3 = "dnn.conv_fprop"(%2, %w) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x64x8x8xbf16>, tensor<64x64x1x1xbf16>) -> tensor<2x64x8x8xbf16>
  %4 = "dnn.add"(%1, %3) : (tensor<2x64x8x8xbf16>, tensor<2x64x8x8xbf16>) -> tensor<2x64x8x8xbf16>
  return %3, %4 : tensor<2x64x8x8xbf16>, tensor<2x64x8x8xbf16>
}

// -----

// What tc-sm90 cannot run with a prologue keeps two kernels: C = 3 (x's
// pixels are not 16 bytes), an f32 x (cast to bf16 in the chain), a
// scale that varies along a spatial dim, and a depthwise convolution.
// The scale along a spatial dim ([1, 64, 8, 1]) is no per-channel operand:
// the convolution's kernel says so.
// CHECK-LABEL: func.func private @not_fused_k5_conv_fprop(
//  CHECK-SAME: dnn.fusion_note = "x's mul left to a kernel of its own (the convolution's prologue reads per-channel operands [1, C, 1, ...] and scalars beside x, got [1, 64, 8, 1])"
// CHECK-LABEL: func.func @not_fused(
//  CHECK-NEXT: call @not_fused_k0_pointwise
//  CHECK-NEXT: call @not_fused_k1_conv_fprop
//  CHECK-NEXT: call @not_fused_k2_pointwise
//  CHECK-NEXT: call @not_fused_k3_conv_fprop
//  CHECK-NEXT: call @not_fused_k4_pointwise
//  CHECK-NEXT: call @not_fused_k5_conv_fprop
//  CHECK-NEXT: call @not_fused_k6_pointwise
//  CHECK-NEXT: call @not_fused_k7_conv_fprop
func.func @not_fused(%x: tensor<1x3x8x8xbf16>, %w: tensor<8x3x3x3xbf16>, %s: tensor<1x3x1x1xf32>, %f: tensor<1x64x8x8xf32>, %v: tensor<8x64x1x1xbf16>, %g: tensor<1x64x8x8xbf16>, %h: tensor<1x64x8x1xf32>, %d: tensor<64x1x3x3xbf16>) -> (tensor<1x8x6x6xbf16>, tensor<1x8x8x8xbf16>, tensor<1x8x8x8xbf16>, tensor<1x64x8x8xbf16>) {
  %0 = "dnn.mul"(%x, %s) : (tensor<1x3x8x8xbf16>, tensor<1x3x1x1xf32>) -> tensor<1x3x8x8xbf16>
  %1 = "dnn.conv_fprop"(%0, %w) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x3x8x8xbf16>, tensor<8x3x3x3xbf16>) -> tensor<1x8x6x6xbf16>
  %2 = "dnn.relu"(%f) : (tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xf32>
  %3 = "dnn.cast"(%2) : (tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xbf16>
  %4 = "dnn.conv_fprop"(%3, %v) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x64x8x8xbf16>, tensor<8x64x1x1xbf16>) -> tensor<1x8x8x8xbf16>
  %5 = "dnn.mul"(%g, %h) : (tensor<1x64x8x8xbf16>, tensor<1x64x8x1xf32>) -> tensor<1x64x8x8xbf16>
  %6 = "dnn.conv_fprop"(%5, %v) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x64x8x8xbf16>, tensor<8x64x1x1xbf16>) -> tensor<1x8x8x8xbf16>
  %7 = "dnn.relu"(%g) : (tensor<1x64x8x8xbf16>) -> tensor<1x64x8x8xbf16>
  %8 = "dnn.conv_fprop"(%7, %d) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x64x8x8xbf16>, tensor<64x1x3x3xbf16>) -> tensor<1x64x8x8xbf16>
  return %1, %4, %6, %8 : tensor<1x8x6x6xbf16>, tensor<1x8x8x8xbf16>, tensor<1x8x8x8xbf16>, tensor<1x64x8x8xbf16>
}

// -----

// A matmul epilogue (gelu_backward) that is a graph output and that a column
// reduction sums (a linear layer's backward: dX's chain and the bias
// gradient): the reduction reads the epilogue's result, which the GEMM
// stores anyway, rather than recomputing it from the GEMM's raw output,
// which the GEMM would then have to store as well.
// CHECK-LABEL: func.func private @recomputed_epilogue_k0_matmul(
//  CHECK-SAME: -> tensor<4x32xf32>
//       CHECK: %[[MM:.*]] = "dnn.matmul"
//       CHECK: %[[DX:.*]] = "dnn.gelu_backward"(%[[MM]],
//       CHECK: return %[[DX]]
// CHECK-LABEL: func.func private @recomputed_epilogue_k1_reduction(
//   CHECK-NOT: "dnn.gelu_backward"
//       CHECK: "dnn.reduction"
// CHECK-LABEL: func.func @recomputed_epilogue(
//       CHECK: %[[K0:.*]] = call @recomputed_epilogue_k0_matmul
//       CHECK: %[[K1:.*]] = call @recomputed_epilogue_k1_reduction(%[[K0]])
//       CHECK: return %[[K1]], %[[K0]]
func.func @recomputed_epilogue(%w: tensor<8x32xf32>, %dy: tensor<4x8xf32>, %x: tensor<4x32xf32>) -> (tensor<1x32xf32>, tensor<4x32xf32>) {
  %0 = "dnn.matmul"(%dy, %w) {compute_type = f32} : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
  %1 = "dnn.gelu_backward"(%0, %x) {approximate = "none"} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %2 = "dnn.reduction"(%1) {axes = array<i64: 0>, keepdims = true, mode = "sum"} : (tensor<4x32xf32>) -> tensor<1x32xf32>
  return %2, %1 : tensor<1x32xf32>, tensor<4x32xf32>
}

// -----

// A runtime scalar (an argument marked dnn.by_value) stays an argument: each
// kernel that reads it takes it as a tensor<f32> argument of its own (a
// matmul epilogue's and a softmax epilogue's), where a dnn.constant would be
// cloned in.
// CHECK-LABEL: func.func private @runtime_scalar_k0_matmul(
// CHECK-SAME: %[[A:[^:]*]]: tensor<8x16xf32>, %[[B:[^:]*]]: tensor<16x32xf32>, %[[S:[^:]*]]: tensor<f32>) -> tensor<8x32xf32>
// CHECK-NEXT: %[[C:.*]] = "dnn.matmul"(%[[A]], %[[B]])
// CHECK-NEXT: %[[Y:.*]] = "dnn.mul"(%[[C]], %[[S]])
// CHECK-NEXT: return %[[Y]]
// CHECK-LABEL: func.func private @runtime_scalar_k1_softmax(
// CHECK-SAME: %[[X:[^:]*]]: tensor<8x32xf32>, %[[S:[^:]*]]: tensor<f32>) -> tensor<8x32xf32>
// CHECK-NEXT: %[[M:.*]] = "dnn.softmax"(%[[X]])
// CHECK-NEXT: %[[Z:.*]] = "dnn.add"(%[[M]], %[[S]])
// CHECK-NEXT: return %[[Z]]
// CHECK-LABEL: func.func @runtime_scalar(
// CHECK-SAME: %{{.*}}: tensor<f32> {dnn.by_value, dnn.name = "s"}
// CHECK-NEXT: %[[Y:.*]] = call @runtime_scalar_k0_matmul(%arg0, %arg1, %arg2)
// CHECK-NEXT: %[[Z:.*]] = call @runtime_scalar_k1_softmax(%[[Y]], %arg2)
// CHECK-NEXT: return %[[Z]]
func.func @runtime_scalar(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %s: tensor<f32> {dnn.by_value, dnn.name = "s"}) -> tensor<8x32xf32> attributes {dnn.graph} {
  %c = "dnn.matmul"(%a, %b) {compute_type = f32} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %y = "dnn.mul"(%c, %s) : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %m = "dnn.softmax"(%y) {axis = 1 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %z = "dnn.add"(%m, %s) : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  return %z : tensor<8x32xf32>
}

// -----

// A filter gradient and its bias gradient (the sum of dy over every dim but
// K): one conv_wgrad kernel returning dw and db; tc-sm90 sums dy's tiles
// as its GEMM reads them. Off: the sum is a reduction kernel of its own,
// and the filter gradient's kernel says why.
// CHECK-LABEL: func.func private @wgrad_bias_k0_conv_wgrad(
// CHECK-SAME: %[[DY:[^:]*]]: tensor<2x64x8x8xbf16>, %[[X:[^:]*]]: tensor<2x32x8x8xbf16>) -> (tensor<64x32x3x3xbf16>, tensor<1x64x1x1xbf16>)
// CHECK-SAME: attributes {dnn.anchor = "conv_wgrad", dnn.kernel}
// CHECK-NEXT: %[[DW:.*]] = "dnn.conv_wgrad"(%[[DY]], %[[X]])
// CHECK-NEXT: %[[DB:.*]] = "dnn.reduction"(%[[DY]]) {axes = array<i64: 0, 2, 3>, keepdims = true, mode = "sum"}
// CHECK-NEXT: return %[[DW]], %[[DB]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @wgrad_bias(
// CHECK-NEXT: %[[R:.*]]:2 = call @wgrad_bias_k0_conv_wgrad(%arg1, %arg0)
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1
// NOFUSE-LABEL: func.func private @wgrad_bias_k0_conv_wgrad(
// NOFUSE-SAME: dnn.fusion_note = "the bias gradient (sum of dy) left to kernels of its own (tc-sm80 computes none beside a filter gradient)"
// NOFUSE: func.func private @wgrad_bias_k1_reduction(
// NOFUSE-LABEL: func.func @wgrad_bias(
// NOFUSE-NEXT: call @wgrad_bias_k0_conv_wgrad(%arg1, %arg0)
// NOFUSE-NEXT: call @wgrad_bias_k1_reduction(%arg1)
func.func @wgrad_bias(%x: tensor<2x32x8x8xbf16>, %dy: tensor<2x64x8x8xbf16>) -> (tensor<64x32x3x3xbf16>, tensor<1x64x1x1xbf16>) attributes {dnn.graph} {
  %0 = "dnn.conv_wgrad"(%dy, %x) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x64x8x8xbf16>, tensor<2x32x8x8xbf16>) -> tensor<64x32x3x3xbf16>
  %1 = "dnn.reduction"(%dy) {axes = array<i64: 0, 2, 3>, keepdims = true, mode = "sum"} : (tensor<2x64x8x8xbf16>) -> tensor<1x64x1x1xbf16>
  return %0, %1 : tensor<64x32x3x3xbf16>, tensor<1x64x1x1xbf16>
}

// -----

// The bias gradient before the filter gradient in the graph, without its
// kept dims: the filter gradient's kernel takes it all the same.
// CHECK-LABEL: func.func private @bias_then_wgrad_k0_conv_wgrad(
// CHECK-SAME: -> (tensor<64xbf16>, tensor<64x32x1x1xbf16>)
// CHECK-NEXT: %[[DB:.*]] = "dnn.reduction"
// CHECK-NEXT: %[[DW:.*]] = "dnn.conv_wgrad"
// CHECK-NEXT: return %[[DB]], %[[DW]]
// CHECK-NOT: dnn.kernel
// CHECK-LABEL: func.func @bias_then_wgrad(
// CHECK-NEXT: %[[R:.*]]:2 = call @bias_then_wgrad_k0_conv_wgrad(%arg1, %arg0)
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1
func.func @bias_then_wgrad(%x: tensor<2x32x8x8xbf16>, %dy: tensor<2x64x8x8xbf16>) -> (tensor<64xbf16>, tensor<64x32x1x1xbf16>) attributes {dnn.graph} {
  %0 = "dnn.reduction"(%dy) {axes = array<i64: 0, 2, 3>, keepdims = false, mode = "sum"} : (tensor<2x64x8x8xbf16>) -> tensor<64xbf16>
  %1 = "dnn.conv_wgrad"(%dy, %x) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x64x8x8xbf16>, tensor<2x32x8x8xbf16>) -> tensor<64x32x1x1xbf16>
  return %0, %1 : tensor<64xbf16>, tensor<64x32x1x1xbf16>
}

// -----

// K = 12 (dy's pixels not whole 16-byte pieces: tc-sm80 runs the filter
// gradient): two kernels, the filter gradient's saying why.
// CHECK-LABEL: func.func private @wgrad_bias_k12_k0_conv_wgrad(
// CHECK-SAME: dnn.fusion_note = "the bias gradient (sum of dy) left to kernels of its own (tc-sm90 sums none beside this one: K = 12, C = 32: tc-sm90 reads dy and x by TMA in 16-byte pixels (both multiples of 8))"
// CHECK: func.func private @wgrad_bias_k12_k1_reduction(
func.func @wgrad_bias_k12(%x: tensor<2x32x8x8xbf16>, %dy: tensor<2x12x8x8xbf16>) -> (tensor<12x32x3x3xbf16>, tensor<1x12x1x1xbf16>) attributes {dnn.graph} {
  %0 = "dnn.conv_wgrad"(%dy, %x) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x12x8x8xbf16>, tensor<2x32x8x8xbf16>) -> tensor<12x32x3x3xbf16>
  %1 = "dnn.reduction"(%dy) {axes = array<i64: 0, 2, 3>, keepdims = true, mode = "sum"} : (tensor<2x12x8x8xbf16>) -> tensor<1x12x1x1xbf16>
  return %0, %1 : tensor<12x32x3x3xbf16>, tensor<1x12x1x1xbf16>
}

// -----

// A reduction that is no bias gradient, placed before a filter gradient:
// each stays a kernel of its own (the wgrad's search for its bias gradient
// passes over it).
// CHECK-LABEL: func.func @reduction_before_wgrad(
//  CHECK-NEXT: call @reduction_before_wgrad_k0_reduction
//  CHECK-NEXT: call @reduction_before_wgrad_k1_conv_wgrad
func.func @reduction_before_wgrad(%a: tensor<4x32xf32>, %x: tensor<2x8x6x6xf32>, %dy: tensor<2x4x4x4xf32>) -> (tensor<1x32xf32>, tensor<4x8x3x3xf32>) {
  %0 = "dnn.reduction"(%a) {axes = array<i64: 0>, keepdims = true, mode = "sum"} : (tensor<4x32xf32>) -> tensor<1x32xf32>
  %1 = "dnn.conv_wgrad"(%dy, %x) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<2x4x4x4xf32>, tensor<2x8x6x6xf32>) -> tensor<4x8x3x3xf32>
  return %0, %1 : tensor<1x32xf32>, tensor<4x8x3x3xf32>
}
