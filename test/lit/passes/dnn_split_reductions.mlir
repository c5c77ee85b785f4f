// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-split-reductions)' | FileCheck %s
// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-split-reductions{conv_bias_grad=false})' | FileCheck %s --check-prefix=OFF

// A channels-first batchnorm's statistics: a row reduction of each (n, c)
// plane to f32 partials (keeping its dims, as row programs do), viewed as
// [N, C], then a reduction over n in the result's type, reshaped back to
// the kept dims.

// CHECK-LABEL: func.func @nchw_statistics(
// CHECK-SAME: %[[X:.*]]: tensor<4x6x5x7xbf16>)
// CHECK: %[[R:.*]] = "dnn.reduction"(%[[X]]) {axes = array<i64: 2, 3>, keepdims = true, mode = "sum"} : (tensor<4x6x5x7xbf16>) -> tensor<4x6x1x1xf32>
// CHECK: %[[P:.*]] = "dnn.reshape"(%[[R]]) : (tensor<4x6x1x1xf32>) -> tensor<4x6xf32>
// CHECK: %[[S:.*]] = "dnn.reduction"(%[[P]]) {axes = array<i64: 0>, keepdims = true, mode = "sum"} : (tensor<4x6xf32>) -> tensor<1x6xbf16>
// CHECK: %[[Y:.*]] = "dnn.reshape"(%[[S]]) : (tensor<1x6xbf16>) -> tensor<1x6x1x1xbf16>
// CHECK: return %[[Y]]
func.func @nchw_statistics(%x: tensor<4x6x5x7xbf16>) -> tensor<1x6x1x1xbf16> {
  %0 = "dnn.reduction"(%x) {axes = array<i64: 0, 2, 3>, keepdims = true, mode = "sum"} : (tensor<4x6x5x7xbf16>) -> tensor<1x6x1x1xbf16>
  return %0 : tensor<1x6x1x1xbf16>
}

// -----

// Without keepdims no reshape after; each mode folds its own partials (here max).

// CHECK-LABEL: func.func @no_keepdims(
// CHECK-SAME: %[[X:.*]]: tensor<3x4x8xf32>)
// CHECK: %[[R:.*]] = "dnn.reduction"(%[[X]]) {axes = array<i64: 2>, keepdims = true, mode = "max"} : (tensor<3x4x8xf32>) -> tensor<3x4x1xf32>
// CHECK: %[[P:.*]] = "dnn.reshape"(%[[R]]) : (tensor<3x4x1xf32>) -> tensor<3x4xf32>
// CHECK: %[[S:.*]] = "dnn.reduction"(%[[P]]) {axes = array<i64: 0>, keepdims = false, mode = "max"} : (tensor<3x4xf32>) -> tensor<4xf32>
// CHECK-NOT: dnn.reshape
// CHECK: return %[[S]]
func.func @no_keepdims(%x: tensor<3x4x8xf32>) -> tensor<4xf32> {
  %0 = "dnn.reduction"(%x) {axes = array<i64: 0, 2>, keepdims = false, mode = "max"} : (tensor<3x4x8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// One run of axes (middle, leading or trailing) is left as it is.

// CHECK-LABEL: func.func @one_run(
// CHECK: "dnn.reduction"(%{{.*}}) {axes = array<i64: 1>, keepdims = true, mode = "mean"}
// CHECK: "dnn.reduction"(%{{.*}}) {axes = array<i64: 1, 2>, keepdims = true, mode = "norm2"}
// CHECK-NOT: dnn.reduction
func.func @one_run(%x: tensor<3x4x8xf32>) -> (tensor<3x1x8xf32>, tensor<3x1x1xf32>) {
  %0 = "dnn.reduction"(%x) {axes = array<i64: 1>, keepdims = true, mode = "mean"} : (tensor<3x4x8xf32>) -> tensor<3x1x8xf32>
  %1 = "dnn.reduction"(%x) {axes = array<i64: 1, 2>, keepdims = true, mode = "norm2"} : (tensor<3x4x8xf32>) -> tensor<3x1x1xf32>
  return %0, %1 : tensor<3x1x8xf32>, tensor<3x1x1xf32>
}

// -----

// Separated runs that keep the innermost axis, and unit dims between a kept
// axis and the reduced ones (one run in effect), are left as they are.

// CHECK-LABEL: func.func @left_alone(
// CHECK: "dnn.reduction"(%{{.*}}) {axes = array<i64: 0, 2>, keepdims = true, mode = "sum"}
// CHECK: "dnn.reduction"(%{{.*}}) {axes = array<i64: 0, 2, 3>, keepdims = true, mode = "sum"}
// CHECK-NOT: dnn.reduction
func.func @left_alone(%x: tensor<3x4x8x2xf32>, %u: tensor<1x4x8x2xf32>) -> (tensor<1x4x1x2xf32>, tensor<1x4x1x1xf32>) {
  %0 = "dnn.reduction"(%x) {axes = array<i64: 0, 2>, keepdims = true, mode = "sum"} : (tensor<3x4x8x2xf32>) -> tensor<1x4x1x2xf32>
  %1 = "dnn.reduction"(%u) {axes = array<i64: 0, 2, 3>, keepdims = true, mode = "sum"} : (tensor<1x4x8x2xf32>) -> tensor<1x4x1x1xf32>
  return %0, %1 : tensor<1x4x1x2xf32>, tensor<1x4x1x1xf32>
}

// -----

// A convolution's bias gradient (the sum of dy over every dim but K) beside
// the filter gradient reading the same dy is left whole: dnn-fuse joins it
// to that kernel. With the option off (sm_80), it is split as any other.
// A sum of another tensor of that shape is split.

// CHECK-LABEL: func.func @bias_gradient(
// CHECK: "dnn.conv_wgrad"
// CHECK-NEXT: "dnn.reduction"(%arg1) {axes = array<i64: 0, 2, 3>, keepdims = true, mode = "sum"} : (tensor<2x64x8x8xbf16>) -> tensor<1x64x1x1xbf16>
// CHECK-NEXT: "dnn.reduction"(%arg2) {axes = array<i64: 2, 3>, keepdims = true, mode = "sum"}
// OFF-LABEL: func.func @bias_gradient(
// OFF: "dnn.reduction"(%arg1) {axes = array<i64: 2, 3>, keepdims = true, mode = "sum"}
func.func @bias_gradient(%x: tensor<2x32x8x8xbf16>, %dy: tensor<2x64x8x8xbf16>, %other: tensor<2x64x8x8xbf16>) -> (tensor<64x32x3x3xbf16>, tensor<1x64x1x1xbf16>, tensor<1x64x1x1xbf16>) {
  %0 = "dnn.conv_wgrad"(%dy, %x) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x64x8x8xbf16>, tensor<2x32x8x8xbf16>) -> tensor<64x32x3x3xbf16>
  %1 = "dnn.reduction"(%dy) {axes = array<i64: 0, 2, 3>, keepdims = true, mode = "sum"} : (tensor<2x64x8x8xbf16>) -> tensor<1x64x1x1xbf16>
  %2 = "dnn.reduction"(%other) {axes = array<i64: 0, 2, 3>, keepdims = true, mode = "sum"} : (tensor<2x64x8x8xbf16>) -> tensor<1x64x1x1xbf16>
  return %0, %1, %2 : tensor<64x32x3x3xbf16>, tensor<1x64x1x1xbf16>, tensor<1x64x1x1xbf16>
}
