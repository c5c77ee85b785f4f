// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-sink-reshapes,dnn-verify)' | FileCheck %s
// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-sink-reshapes,dnn-verify,dnn-fuse)' | FileCheck %s --check-prefix=FUSE

// A linear layer as ATen traces it: the GEMM over [B * S, K] rows, the bias in
// its epilogue, the view to [B, S, N], then the gelu. The gelu moves above
// the view; the bias [N] is read as it is. After dnn-fuse: one matmul kernel
// and the view in the graph function.
// CHECK-LABEL: func.func @matmul_view_gelu(
//  CHECK-SAME: %[[A:[^:]*]]: tensor<16x32xbf16>, %[[W:[^:]*]]: tensor<32x48xbf16>, %[[B:[^:]*]]: tensor<48xbf16>
//  CHECK-NEXT: %[[M:.*]] = "dnn.matmul"(%[[A]], %[[W]])
//  CHECK-NEXT: %[[S:.*]] = "dnn.add"(%[[M]], %[[B]]) : (tensor<16x48xf32>, tensor<48xbf16>) -> tensor<16x48xbf16>
//  CHECK-NEXT: %[[G:.*]] = "dnn.gelu"(%[[S]]) {approximate = "tanh", dnn.name = "act"} : (tensor<16x48xbf16>) -> tensor<16x48xbf16>
//  CHECK-NEXT: %[[V:.*]] = "dnn.reshape"(%[[G]]) : (tensor<16x48xbf16>) -> tensor<2x8x48xbf16>
//  CHECK-NEXT: return %[[V]]
// FUSE-LABEL: func.func private @matmul_view_gelu_k0_matmul(
//  FUSE-SAME: -> tensor<16x48xbf16> attributes {dnn.anchor = "matmul", dnn.kernel}
//  FUSE-NEXT: "dnn.matmul"
//  FUSE-NEXT: "dnn.add"
//  FUSE-NEXT: "dnn.gelu"
//  FUSE-NEXT: return
//   FUSE-NOT: dnn.kernel
// FUSE-LABEL: func.func @matmul_view_gelu(
//  FUSE-NEXT: %[[K:.*]] = call @matmul_view_gelu_k0_matmul(%arg0, %arg1, %arg2)
//  FUSE-NEXT: %[[V:.*]] = "dnn.reshape"(%[[K]]) : (tensor<16x48xbf16>) -> tensor<2x8x48xbf16>
//  FUSE-NEXT: return %[[V]]
func.func @matmul_view_gelu(%a: tensor<16x32xbf16>, %w: tensor<32x48xbf16>, %b: tensor<48xbf16>) -> tensor<2x8x48xbf16> {
  %0 = "dnn.matmul"(%a, %w) {compute_type = f32} : (tensor<16x32xbf16>, tensor<32x48xbf16>) -> tensor<16x48xf32>
  %1 = "dnn.add"(%0, %b) : (tensor<16x48xf32>, tensor<48xbf16>) -> tensor<16x48xbf16>
  %2 = "dnn.reshape"(%1) : (tensor<16x48xbf16>) -> tensor<2x8x48xbf16>
  %3 = "dnn.gelu"(%2) {approximate = "tanh", dnn.name = "act"} : (tensor<2x8x48xbf16>) -> tensor<2x8x48xbf16>
  return %3 : tensor<2x8x48xbf16>
}

// -----

// The residual add after the view: the residual [2, 8, 48] is read as
// [16, 48] (a reshape of it: a view), a bias [1, 1, 48] as [1, 48] (as it
// is, its three dims would broadcast the add's result back to rank 3), and
// the reshape moves past both adds; its inverse (the next layer's A) goes.
// CHECK-LABEL: func.func @matmul_view_residual(
//  CHECK-SAME: %[[A:[^:]*]]: tensor<16x32xbf16>, %[[W:[^:]*]]: tensor<32x48xbf16>, %[[R:[^:]*]]: tensor<2x8x48xbf16>, %[[B:[^:]*]]: tensor<1x1x48xbf16>, %[[W2:[^:]*]]: tensor<48x8xbf16>
//  CHECK-NEXT: %[[M:.*]] = "dnn.matmul"(%[[A]], %[[W]])
//  CHECK-NEXT: %[[RV:.*]] = "dnn.reshape"(%[[R]]) : (tensor<2x8x48xbf16>) -> tensor<16x48xbf16>
//  CHECK-NEXT: %[[S:.*]] = "dnn.add"(%[[RV]], %[[M]]) : (tensor<16x48xbf16>, tensor<16x48xf32>) -> tensor<16x48xbf16>
//  CHECK-NEXT: %[[BV:.*]] = "dnn.reshape"(%[[B]]) : (tensor<1x1x48xbf16>) -> tensor<1x48xbf16>
//  CHECK-NEXT: %[[T:.*]] = "dnn.add"(%[[S]], %[[BV]]) : (tensor<16x48xbf16>, tensor<1x48xbf16>) -> tensor<16x48xbf16>
//  CHECK-NEXT: %[[V:.*]] = "dnn.reshape"(%[[T]]) : (tensor<16x48xbf16>) -> tensor<2x8x48xbf16>
//  CHECK-NEXT: %[[N:.*]] = "dnn.matmul"(%[[T]], %[[W2]])
//  CHECK-NEXT: return %[[V]], %[[N]]
// FUSE-LABEL: func.func private @matmul_view_residual_k0_matmul(
//  FUSE-SAME: %{{[^:]*}}: tensor<16x32xbf16>, %{{[^:]*}}: tensor<32x48xbf16>, %{{[^:]*}}: tensor<16x48xbf16>, %{{[^:]*}}: tensor<1x48xbf16>) -> tensor<16x48xbf16>
// FUSE-LABEL: func.func @matmul_view_residual(
//  FUSE-NEXT: %[[RV:.*]] = "dnn.reshape"(%arg2)
//  FUSE-NEXT: %[[BV:.*]] = "dnn.reshape"(%arg3)
//  FUSE-NEXT: %[[K:.*]] = call @matmul_view_residual_k0_matmul(%arg0, %arg1, %[[RV]], %[[BV]])
//  FUSE-NEXT: %[[V:.*]] = "dnn.reshape"(%[[K]])
//  FUSE-NEXT: %[[N:.*]] = call @matmul_view_residual_k1_matmul(%[[K]], %arg4)
//  FUSE-NEXT: return %[[V]], %[[N]]
func.func @matmul_view_residual(%a: tensor<16x32xbf16>, %w: tensor<32x48xbf16>, %r: tensor<2x8x48xbf16>, %b: tensor<1x1x48xbf16>, %w2: tensor<48x8xbf16>) -> (tensor<2x8x48xbf16>, tensor<16x8xf32>) {
  %0 = "dnn.matmul"(%a, %w) {compute_type = f32} : (tensor<16x32xbf16>, tensor<32x48xbf16>) -> tensor<16x48xf32>
  %1 = "dnn.reshape"(%0) : (tensor<16x48xf32>) -> tensor<2x8x48xf32>
  %2 = "dnn.add"(%r, %1) : (tensor<2x8x48xbf16>, tensor<2x8x48xf32>) -> tensor<2x8x48xbf16>
  %3 = "dnn.add"(%2, %b) : (tensor<2x8x48xbf16>, tensor<1x1x48xbf16>) -> tensor<2x8x48xbf16>
  %4 = "dnn.reshape"(%3) : (tensor<2x8x48xbf16>) -> tensor<16x48xbf16>
  %5 = "dnn.matmul"(%4, %w2) {compute_type = f32} : (tensor<16x48xbf16>, tensor<48x8xbf16>) -> tensor<16x8xf32>
  return %3, %5 : tensor<2x8x48xbf16>, tensor<16x8xf32>
}

// -----

// A reshape that splits the GEMM's N (48 = 3 x 16) under a bias that varies
// along the 16 alone: the epilogue cannot index it across the reshape, so
// nothing moves, and the matmul's kernel says why. Kernels: two.
// CHECK-LABEL: func.func @matmul_regroup_n(
//  CHECK-NEXT: "dnn.matmul"
//  CHECK-NEXT: "dnn.reshape"
//  CHECK-NEXT: "dnn.add"
// FUSE-LABEL: func.func private @matmul_regroup_n_k0_matmul(
//  FUSE-SAME: dnn.fusion_note = "the add after the reshape of its output [16, 48] to [16, 3, 16] left to a kernel of its own (the epilogue cannot read its operand across the reshape: operand [16] is [1, 16] along the dims [3, 16] that the reshape makes of [48]: it varies along part of them only)"
// FUSE-LABEL: func.func private @matmul_regroup_n_k1_pointwise(
// FUSE-LABEL: func.func @matmul_regroup_n(
//  FUSE-NEXT: call @matmul_regroup_n_k0_matmul
//  FUSE-NEXT: "dnn.reshape"
//  FUSE-NEXT: call @matmul_regroup_n_k1_pointwise
func.func @matmul_regroup_n(%a: tensor<16x32xbf16>, %w: tensor<32x48xbf16>, %b: tensor<16xbf16>) -> tensor<16x3x16xbf16> {
  %0 = "dnn.matmul"(%a, %w) {compute_type = f32} : (tensor<16x32xbf16>, tensor<32x48xbf16>) -> tensor<16x48xf32>
  %1 = "dnn.reshape"(%0) : (tensor<16x48xf32>) -> tensor<16x3x16xf32>
  %2 = "dnn.add"(%1, %b) : (tensor<16x3x16xf32>, tensor<16xbf16>) -> tensor<16x3x16xbf16>
  return %2 : tensor<16x3x16xbf16>
}

// -----

// Likewise an operand per batch ([2, 1, 48]) against the rows 2 x 8 that the
// GEMM's 16 rows are: it varies along part of them.
// CHECK-LABEL: func.func @matmul_per_batch(
//  CHECK-NEXT: "dnn.matmul"
//  CHECK-NEXT: "dnn.reshape"
//  CHECK-NEXT: "dnn.mul"
// FUSE-LABEL: func.func private @matmul_per_batch_k0_matmul(
//  FUSE-SAME: dnn.fusion_note = "the mul after the reshape of its output [16, 48] to [2, 8, 48] left to a kernel of its own (the epilogue cannot read its operand across the reshape: operand [2, 1, 48] is [2, 1] along the dims [2, 8] that the reshape makes of [16]: it varies along part of them only)"
func.func @matmul_per_batch(%a: tensor<16x32xf32>, %w: tensor<32x48xf32>, %s: tensor<2x1x48xf32>) -> tensor<2x8x48xf32> {
  %0 = "dnn.matmul"(%a, %w) {compute_type = f32} : (tensor<16x32xf32>, tensor<32x48xf32>) -> tensor<16x48xf32>
  %1 = "dnn.reshape"(%0) : (tensor<16x48xf32>) -> tensor<2x8x48xf32>
  %2 = "dnn.mul"(%1, %s) : (tensor<2x8x48xf32>, tensor<2x1x48xf32>) -> tensor<2x8x48xf32>
  return %2 : tensor<2x8x48xf32>
}

// -----

// A unary op needs no indexing: it moves below a reshape that splits N too.
// CHECK-LABEL: func.func @matmul_split_n_relu(
//  CHECK-NEXT: %[[M:.*]] = "dnn.matmul"
//  CHECK-NEXT: %[[Y:.*]] = "dnn.relu"(%[[M]]) : (tensor<16x48xf32>) -> tensor<16x48xf32>
//  CHECK-NEXT: %[[V:.*]] = "dnn.reshape"(%[[Y]]) : (tensor<16x48xf32>) -> tensor<16x3x16xf32>
//  CHECK-NEXT: return %[[V]]
func.func @matmul_split_n_relu(%a: tensor<16x32xf32>, %w: tensor<32x48xf32>) -> tensor<16x3x16xf32> {
  %0 = "dnn.matmul"(%a, %w) {compute_type = f32} : (tensor<16x32xf32>, tensor<32x48xf32>) -> tensor<16x48xf32>
  %1 = "dnn.reshape"(%0) : (tensor<16x48xf32>) -> tensor<16x3x16xf32>
  %2 = "dnn.relu"(%1) : (tensor<16x3x16xf32>) -> tensor<16x3x16xf32>
  return %2 : tensor<16x3x16xf32>
}

// -----

// A convolution's output flattened ([N, K, H, W] -> [N, K, H * W]) under a
// residual [N, K, H * W] and a bias [1, K, 1]: read as [N, K, H, W] and
// [1, K, 1, 1]. One kernel.
// CHECK-LABEL: func.func @conv_flatten_residual(
//  CHECK-NEXT: %[[C:.*]] = "dnn.conv_fprop"
//  CHECK-NEXT: %[[R:.*]] = "dnn.reshape"(%arg2) : (tensor<2x4x9xf32>) -> tensor<2x4x3x3xf32>
//  CHECK-NEXT: %[[S:.*]] = "dnn.add"(%[[C]], %[[R]]) : (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
//  CHECK-NEXT: %[[B:.*]] = "dnn.reshape"(%arg3) : (tensor<1x4x1xf32>) -> tensor<1x4x1x1xf32>
//  CHECK-NEXT: %[[T:.*]] = "dnn.add"(%[[S]], %[[B]]) : (tensor<2x4x3x3xf32>, tensor<1x4x1x1xf32>) -> tensor<2x4x3x3xf32>
//  CHECK-NEXT: %[[V:.*]] = "dnn.reshape"(%[[T]]) : (tensor<2x4x3x3xf32>) -> tensor<2x4x9xf32>
// FUSE-LABEL: func.func private @conv_flatten_residual_k0_conv_fprop(
//  FUSE-NEXT: "dnn.conv_fprop"
//  FUSE-NEXT: "dnn.add"
//  FUSE-NEXT: "dnn.add"
//  FUSE-NEXT: return
//   FUSE-NOT: dnn.kernel
// FUSE-LABEL: func.func @conv_flatten_residual(
func.func @conv_flatten_residual(%x: tensor<2x3x6x6xf32>, %w: tensor<4x3x2x2xf32>, %r: tensor<2x4x9xf32>, %b: tensor<1x4x1xf32>) -> tensor<2x4x9xf32> {
  %0 = "dnn.conv_fprop"(%x, %w) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x3x6x6xf32>, tensor<4x3x2x2xf32>) -> tensor<2x4x3x3xf32>
  %1 = "dnn.reshape"(%0) : (tensor<2x4x3x3xf32>) -> tensor<2x4x9xf32>
  %2 = "dnn.add"(%1, %r) : (tensor<2x4x9xf32>, tensor<2x4x9xf32>) -> tensor<2x4x9xf32>
  %3 = "dnn.add"(%2, %b) : (tensor<2x4x9xf32>, tensor<1x4x1xf32>) -> tensor<2x4x9xf32>
  return %3 : tensor<2x4x9xf32>
}

// -----

// A position table [1, K, H * W] (a ViT's patch embedding) maps across the
// view, as [1, K, H, W]: it varies along the pixels and not the batch, which
// the implicit GEMM's rows span together, and its epilogue reads it through
// a split view (tensorcore/conv_views.py). The add moves above the view and
// joins the convolution's kernel: one kernel, no note.
// CHECK-LABEL: func.func @conv_flatten_position(
//  CHECK-SAME: %[[X:[^:]*]]: tensor<2x3x6x6xf32>, %[[W:[^:]*]]: tensor<4x3x2x2xf32>, %[[P:[^:]*]]: tensor<1x4x9xf32>
//  CHECK-NEXT: %[[C:.*]] = "dnn.conv_fprop"
//  CHECK-NEXT: %[[Q:.*]] = "dnn.reshape"(%[[P]]) : (tensor<1x4x9xf32>) -> tensor<1x4x3x3xf32>
//  CHECK-NEXT: %[[S:.*]] = "dnn.add"(%[[C]], %[[Q]]) : (tensor<2x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<2x4x3x3xf32>
//  CHECK-NEXT: "dnn.reshape"(%[[S]]) : (tensor<2x4x3x3xf32>) -> tensor<2x4x9xf32>
// FUSE-LABEL: func.func private @conv_flatten_position_k0_conv_fprop(
//   FUSE-NOT: dnn.fusion_note
//  FUSE-SAME: {dnn.anchor = "conv_fprop", dnn.kernel}
//   FUSE-NOT: dnn.kernel
// FUSE-LABEL: func.func @conv_flatten_position(
func.func @conv_flatten_position(%x: tensor<2x3x6x6xf32>, %w: tensor<4x3x2x2xf32>, %p: tensor<1x4x9xf32>) -> tensor<2x4x9xf32> {
  %0 = "dnn.conv_fprop"(%x, %w) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x3x6x6xf32>, tensor<4x3x2x2xf32>) -> tensor<2x4x3x3xf32>
  %1 = "dnn.reshape"(%0) : (tensor<2x4x3x3xf32>) -> tensor<2x4x9xf32>
  %2 = "dnn.add"(%1, %p) : (tensor<2x4x9xf32>, tensor<1x4x9xf32>) -> tensor<2x4x9xf32>
  return %2 : tensor<2x4x9xf32>
}

// -----

// Not moved: a reshape of a graph input (no epilogue to join), a reshape
// whose result another op reads too, and one whose operand has another user.
// CHECK-LABEL: func.func @not_moved(
//  CHECK-NEXT: %[[V:.*]] = "dnn.reshape"(%arg0)
//  CHECK-NEXT: "dnn.relu"(%[[V]])
//  CHECK-NEXT: %[[M:.*]] = "dnn.matmul"
//  CHECK-NEXT: %[[W:.*]] = "dnn.reshape"(%[[M]])
//  CHECK-NEXT: "dnn.relu"(%[[W]])
//  CHECK-NEXT: "dnn.exp"(%[[W]])
//  CHECK-NEXT: %[[N:.*]] = "dnn.matmul"
//  CHECK-NEXT: %[[U:.*]] = "dnn.reshape"(%[[N]])
//  CHECK-NEXT: "dnn.relu"(%[[U]])
//  CHECK-NEXT: "dnn.exp"(%[[N]])
func.func @not_moved(%x: tensor<16x48xf32>, %a: tensor<16x32xf32>, %w: tensor<32x48xf32>) -> (tensor<2x8x48xf32>, tensor<2x8x48xf32>, tensor<2x8x48xf32>, tensor<2x8x48xf32>, tensor<16x48xf32>) {
  %0 = "dnn.reshape"(%x) : (tensor<16x48xf32>) -> tensor<2x8x48xf32>
  %1 = "dnn.relu"(%0) : (tensor<2x8x48xf32>) -> tensor<2x8x48xf32>
  %2 = "dnn.matmul"(%a, %w) {compute_type = f32} : (tensor<16x32xf32>, tensor<32x48xf32>) -> tensor<16x48xf32>
  %3 = "dnn.reshape"(%2) : (tensor<16x48xf32>) -> tensor<2x8x48xf32>
  %4 = "dnn.relu"(%3) : (tensor<2x8x48xf32>) -> tensor<2x8x48xf32>
  %5 = "dnn.exp"(%3) : (tensor<2x8x48xf32>) -> tensor<2x8x48xf32>
  %6 = "dnn.matmul"(%a, %w) {compute_type = f32} : (tensor<16x32xf32>, tensor<32x48xf32>) -> tensor<16x48xf32>
  %7 = "dnn.reshape"(%6) : (tensor<16x48xf32>) -> tensor<2x8x48xf32>
  %8 = "dnn.relu"(%7) : (tensor<2x8x48xf32>) -> tensor<2x8x48xf32>
  %9 = "dnn.exp"(%6) : (tensor<16x48xf32>) -> tensor<16x48xf32>
  return %1, %4, %5, %8, %9 : tensor<2x8x48xf32>, tensor<2x8x48xf32>, tensor<2x8x48xf32>, tensor<2x8x48xf32>, tensor<16x48xf32>
}

// -----

// The view of the pre-activation is returned too (a training step saves it
// for the backward pass): it stays for the return, the gelu reads the GEMM's
// rows, and dnn-fuse makes one kernel that stores both.
// CHECK-LABEL: func.func @saved_pre_activation(
//  CHECK-NEXT: %[[M:.*]] = "dnn.matmul"
//  CHECK-NEXT: %[[S:.*]] = "dnn.add"(%[[M]], %arg2)
//  CHECK-NEXT: %[[V:.*]] = "dnn.reshape"(%[[S]]) : (tensor<16x48xf32>) -> tensor<2x8x48xf32>
//  CHECK-NEXT: %[[G:.*]] = "dnn.gelu"(%[[S]]) {approximate = "none"} : (tensor<16x48xf32>) -> tensor<16x48xf32>
//  CHECK-NEXT: %[[W:.*]] = "dnn.reshape"(%[[G]]) : (tensor<16x48xf32>) -> tensor<2x8x48xf32>
//  CHECK-NEXT: return %[[V]], %[[W]]
// FUSE-LABEL: func.func private @saved_pre_activation_k0_matmul(
//  FUSE-SAME: -> (tensor<16x48xf32>, tensor<16x48xf32>)
//  FUSE-NEXT: "dnn.matmul"
//  FUSE-NEXT: "dnn.add"
//  FUSE-NEXT: "dnn.gelu"
//  FUSE-NEXT: return
//   FUSE-NOT: dnn.kernel
// FUSE-LABEL: func.func @saved_pre_activation(
//  FUSE-NEXT: %[[K:.*]]:2 = call @saved_pre_activation_k0_matmul(%arg0, %arg1, %arg2)
func.func @saved_pre_activation(%a: tensor<16x32xf32>, %w: tensor<32x48xf32>, %b: tensor<48xf32>) -> (tensor<2x8x48xf32>, tensor<2x8x48xf32>) {
  %0 = "dnn.matmul"(%a, %w) {compute_type = f32} : (tensor<16x32xf32>, tensor<32x48xf32>) -> tensor<16x48xf32>
  %1 = "dnn.add"(%0, %b) : (tensor<16x48xf32>, tensor<48xf32>) -> tensor<16x48xf32>
  %2 = "dnn.reshape"(%1) : (tensor<16x48xf32>) -> tensor<2x8x48xf32>
  %3 = "dnn.gelu"(%2) {approximate = "none"} : (tensor<2x8x48xf32>) -> tensor<2x8x48xf32>
  return %2, %3 : tensor<2x8x48xf32>, tensor<2x8x48xf32>
}
