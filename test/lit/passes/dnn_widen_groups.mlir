// dnn-widen-groups runs a convolution of 8, 16 or 32 channels a group as one
// of 64 channels a group whose filter is block-diagonal. A forward (and a
// data gradient) reads the widened filter, built from w by one pointwise
// chain on reshapes of its channels-last view: the small group j of each
// row against the block j' of each column (gen_index of two reshapes of
// the same view), the weight where they match and 0 elsewhere. A filter
// gradient computes the wide groups' dw' and keeps each row's diagonal
// block (a select, then a sum over the blocks). Groups of 4 stay.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-widen-groups)' | FileCheck %s

// 8 small groups of 16 channels: 2 wide ones of 64 (4 blocks of 16).
// CHECK-LABEL: func.func @fprop(
//       CHECK:   %[[T:.*]] = "dnn.transpose"(%arg1) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<128x16x3x3xbf16>) -> tensor<128x3x3x16xbf16>
//       CHECK:   %[[ROWS:.*]] = "dnn.reshape"(%[[T]]) : (tensor<128x3x3x16xbf16>) -> tensor<2x4x16x3x3x1x16xbf16>
//       CHECK:   %[[COLS:.*]] = "dnn.reshape"(%[[T]]) : (tensor<128x3x3x16xbf16>) -> tensor<2x1x16x3x3x4x16xbf16>
//       CHECK:   %[[J:.*]] = "dnn.gen_index"(%[[ROWS]]) {axis = 1 : i64}
//       CHECK:   %[[JP:.*]] = "dnn.gen_index"(%[[COLS]]) {axis = 5 : i64}
//       CHECK:   %[[EQ:.*]] = "dnn.cmp_eq"(%[[J]], %[[JP]]) {{.*}} -> tensor<2x4x16x3x3x4x16xi1>
//       CHECK:   %[[W:.*]] = "dnn.select"(%[[EQ]], %[[ROWS]], %{{.*}}) {{.*}} -> tensor<2x4x16x3x3x4x16xbf16>
//       CHECK:   %[[FLAT:.*]] = "dnn.reshape"(%[[W]]) {{.*}} -> tensor<128x3x3x64xbf16>
//       CHECK:   %[[WIDE:.*]] = "dnn.transpose"(%[[FLAT]]) {permutation = array<i64: 0, 3, 1, 2>} {{.*}} -> tensor<128x64x3x3xbf16>
//       CHECK:   "dnn.conv_fprop"(%arg0, %[[WIDE]]) {{.*}} : (tensor<2x128x6x6xbf16>, tensor<128x64x3x3xbf16>) -> tensor<2x128x6x6xbf16>
func.func @fprop(%x: tensor<2x128x6x6xbf16>, %w: tensor<128x16x3x3xbf16>) -> tensor<2x128x6x6xbf16> {
  %0 = "dnn.conv_fprop"(%x, %w) {compute_type = f32, dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x128x6x6xbf16>, tensor<128x16x3x3xbf16>) -> tensor<2x128x6x6xbf16>
  return %0 : tensor<2x128x6x6xbf16>
}

// -----

// CHECK-LABEL: func.func @wgrad(
//       CHECK:   %[[DW:.*]] = "dnn.conv_wgrad"(%arg0, %arg1) {{.*}} -> tensor<128x64x3x3xbf16>
//       CHECK:   %[[T:.*]] = "dnn.transpose"(%[[DW]]) {permutation = array<i64: 0, 2, 3, 1>}
//       CHECK:   %[[B:.*]] = "dnn.reshape"(%[[T]]) {{.*}} -> tensor<2x4x16x3x3x4x16xbf16>
//       CHECK:   %[[J:.*]] = "dnn.gen_index"(%[[B]]) {axis = 1 : i64}
//       CHECK:   %[[JP:.*]] = "dnn.gen_index"(%[[B]]) {axis = 5 : i64}
//       CHECK:   %[[EQ:.*]] = "dnn.cmp_eq"(%[[J]], %[[JP]])
//       CHECK:   %[[KEPT:.*]] = "dnn.select"(%[[EQ]], %[[B]], %{{.*}})
//       CHECK:   %[[SUM:.*]] = "dnn.reduction"(%[[KEPT]]) {axes = array<i64: 5>, keepdims = false, mode = "sum"} {{.*}} -> tensor<2x4x16x3x3x16xbf16>
//       CHECK:   %[[R:.*]] = "dnn.reshape"(%[[SUM]]) {{.*}} -> tensor<128x3x3x16xbf16>
//       CHECK:   %[[OUT:.*]] = "dnn.transpose"(%[[R]]) {permutation = array<i64: 0, 3, 1, 2>} {{.*}} -> tensor<128x16x3x3xbf16>
//       CHECK:   return %[[OUT]]
func.func @wgrad(%dy: tensor<2x128x6x6xbf16>, %x: tensor<2x128x6x6xbf16>) -> tensor<128x16x3x3xbf16> {
  %0 = "dnn.conv_wgrad"(%dy, %x) {compute_type = f32, dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x128x6x6xbf16>, tensor<2x128x6x6xbf16>) -> tensor<128x16x3x3xbf16>
  return %0 : tensor<128x16x3x3xbf16>
}

// -----

// 4 channels a group: 16 times the multiply-adds, left to simt-depthwise.
// CHECK-LABEL: func.func @four_a_group(
//  CHECK-NEXT:   "dnn.conv_fprop"(%arg0, %arg1)
//  CHECK-SAME:     (tensor<2x64x6x6xbf16>, tensor<64x4x3x3xbf16>)
func.func @four_a_group(%x: tensor<2x64x6x6xbf16>, %w: tensor<64x4x3x3xbf16>) -> tensor<2x64x6x6xbf16> {
  %0 = "dnn.conv_fprop"(%x, %w) {compute_type = f32, dilation = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x64x6x6xbf16>, tensor<64x4x3x3xbf16>) -> tensor<2x64x6x6xbf16>
  return %0 : tensor<2x64x6x6xbf16>
}
