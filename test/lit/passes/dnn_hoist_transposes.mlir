// dnn-hoist-transposes: a transpose of a pointwise op's result moves onto
// the op's operands where each then moves no data (a graph input in whose
// memory order it reads, another transpose it composes with or cancels, a
// scalar or a per-channel tensor); elsewhere it stays.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-hoist-transposes)' | FileCheck %s

// A batchnorm backward's dy in x's memory order: relu_backward of two
// channels-last inputs. The transposes land on g and y (views on the GPU),
// and the op runs in NHWC order; the per-channel scale is viewed as
// [1, 1, 1, 3].
// CHECK-LABEL: func.func @relu_grad(
//  CHECK-SAME:     %[[G:[^:]*]]: tensor<2x3x4x5xbf16> {dnn.strides = array<i64: 60, 1, 15, 3>}
//  CHECK-SAME:     %[[Y:[^:]*]]: tensor<2x3x4x5xbf16> {dnn.strides = array<i64: 60, 1, 15, 3>}
//  CHECK-SAME:     %[[S:[^:]*]]: tensor<1x3x1x1xbf16>
//   CHECK-DAG:   %[[GT:.*]] = "dnn.transpose"(%[[G]]) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xbf16>) -> tensor<2x4x5x3xbf16>
//   CHECK-DAG:   %[[YT:.*]] = "dnn.transpose"(%[[Y]]) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xbf16>) -> tensor<2x4x5x3xbf16>
//       CHECK:   %[[D:.*]] = "dnn.relu_backward"(%[[GT]], %[[YT]]) : (tensor<2x4x5x3xbf16>, tensor<2x4x5x3xbf16>) -> tensor<2x4x5x3xbf16>
//       CHECK:   %[[SV:.*]] = "dnn.reshape"(%[[S]]) : (tensor<1x3x1x1xbf16>) -> tensor<1x1x1x3xbf16>
//       CHECK:   %[[M:.*]] = "dnn.mul"(%[[D]], %[[SV]]) : (tensor<2x4x5x3xbf16>, tensor<1x1x1x3xbf16>) -> tensor<2x4x5x3xbf16>
//       CHECK:   return %[[M]]
func.func @relu_grad(%g: tensor<2x3x4x5xbf16> {dnn.strides = array<i64: 60, 1, 15, 3>}, %y: tensor<2x3x4x5xbf16> {dnn.strides = array<i64: 60, 1, 15, 3>}, %s: tensor<1x3x1x1xbf16>) -> tensor<2x4x5x3xbf16> attributes {dnn.graph} {
  %d = "dnn.relu_backward"(%g, %y) : (tensor<2x3x4x5xbf16>, tensor<2x3x4x5xbf16>) -> tensor<2x3x4x5xbf16>
  %m = "dnn.mul"(%d, %s) : (tensor<2x3x4x5xbf16>, tensor<1x3x1x1xbf16>) -> tensor<2x3x4x5xbf16>
  %t = "dnn.transpose"(%m) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xbf16>) -> tensor<2x4x5x3xbf16>
  return %t : tensor<2x4x5x3xbf16>
}

// -----

// A transpose back and forth cancels: the op reads a's operand itself.
// CHECK-LABEL: func.func @cancels(
//  CHECK-SAME:     %[[A:[^:]*]]: tensor<2x4x5x3xf32>
//   CHECK-NOT:   dnn.transpose
//       CHECK:   %[[E:.*]] = "dnn.exp"(%[[A]]) : (tensor<2x4x5x3xf32>) -> tensor<2x4x5x3xf32>
//       CHECK:   return %[[E]]
func.func @cancels(%a: tensor<2x4x5x3xf32>) -> tensor<2x4x5x3xf32> attributes {dnn.graph} {
  %b = "dnn.transpose"(%a) {permutation = array<i64: 0, 3, 1, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x3x4x5xf32>
  %e = "dnn.exp"(%b) : (tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
  %t = "dnn.transpose"(%e) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32>
  return %t : tensor<2x4x5x3xf32>
}

// -----

// Stays: x is row-major (its transpose would be a copy of its own), and
// the op's result is returned as well.
// CHECK-LABEL: func.func @stays(
//       CHECK:   %[[E:.*]] = "dnn.exp"(%arg0)
//       CHECK:   "dnn.transpose"(%[[E]])
//       CHECK:   %[[F:.*]] = "dnn.exp"(%arg1)
//       CHECK:   "dnn.transpose"(%[[F]])
func.func @stays(%x: tensor<2x3x4x5xf32>, %z: tensor<2x3x4x5xf32> {dnn.strides = array<i64: 60, 1, 15, 3>}) -> (tensor<2x4x5x3xf32>, tensor<2x4x5x3xf32>, tensor<2x3x4x5xf32>) attributes {dnn.graph} {
  %e = "dnn.exp"(%x) : (tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
  %t = "dnn.transpose"(%e) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32>
  %f = "dnn.exp"(%z) : (tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
  %u = "dnn.transpose"(%f) {permutation = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32>
  return %t, %u, %f : tensor<2x4x5x3xf32>, tensor<2x4x5x3xf32>, tensor<2x3x4x5xf32>
}

// -----

// Sinking: a batchnorm's y over (N*H*W, C) taken back to NCHW (reshape,
// then transpose) and a relu after it, with a residual add of another such
// restore: the add and the relu move above the restores and run on the
// (N*H*W, C) values, where they join the kernel that makes y; one restore
// follows them. The residual's restore stays for its other reader.
// CHECK-LABEL: func.func @sinks(
//  CHECK-SAME:     %[[Y:[^:]*]]: tensor<40x3xf32>, %[[R:[^:]*]]: tensor<40x3xf32>
//       CHECK:   %[[Y1:.*]] = "dnn.relu"(%[[Y]])
//       CHECK:   %[[R1:.*]] = "dnn.relu"(%[[R]])
//       CHECK:   %[[RV:.*]] = "dnn.reshape"(%[[R1]])
//       CHECK:   %[[RT:.*]] = "dnn.transpose"(%[[RV]])
//       CHECK:   %[[A:.*]] = "dnn.add"(%[[Y1]], %[[R1]]) : (tensor<40x3xf32>, tensor<40x3xf32>) -> tensor<40x3xf32>
//       CHECK:   %[[M:.*]] = "dnn.relu"(%[[A]]) : (tensor<40x3xf32>) -> tensor<40x3xf32>
//       CHECK:   %[[V:.*]] = "dnn.reshape"(%[[M]]) : (tensor<40x3xf32>) -> tensor<2x4x5x3xf32>
//       CHECK:   %[[T:.*]] = "dnn.transpose"(%[[V]]) {permutation = array<i64: 0, 3, 1, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x3x4x5xf32>
//   CHECK-NOT:   dnn.transpose
//       CHECK:   return %[[T]], %[[RT]] :
func.func @sinks(%y: tensor<40x3xf32>, %r: tensor<40x3xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) attributes {dnn.graph} {
  %y1 = "dnn.relu"(%y) : (tensor<40x3xf32>) -> tensor<40x3xf32>
  %r1 = "dnn.relu"(%r) : (tensor<40x3xf32>) -> tensor<40x3xf32>
  %a = "dnn.reshape"(%y1) : (tensor<40x3xf32>) -> tensor<2x4x5x3xf32>
  %b = "dnn.transpose"(%a) {permutation = array<i64: 0, 3, 1, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x3x4x5xf32>
  %c = "dnn.reshape"(%r1) : (tensor<40x3xf32>) -> tensor<2x4x5x3xf32>
  %d = "dnn.transpose"(%c) {permutation = array<i64: 0, 3, 1, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x3x4x5xf32>
  %s = "dnn.add"(%b, %d) : (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
  %t = "dnn.relu"(%s) : (tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>
  return %t, %d : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>
}
