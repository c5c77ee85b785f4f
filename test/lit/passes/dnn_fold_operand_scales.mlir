// dnn-fold-operand-scales moves a scale of a matmul operand along the dims
// the product keeps (A's rows, B's columns, or a scalar) to the product.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-fold-operand-scales)' | FileCheck %s

// A per-row scale of A (either side of the mul), a division of B's columns:
// both move, the matmul reads the unscaled operands.
// CHECK-LABEL: func.func @rows_and_columns(
//  CHECK-SAME:     %[[A:.*]]: tensor<2x64x128xbf16>, %[[B:.*]]: tensor<128x32xbf16>, %[[S:.*]]: tensor<2x64x1xf32>, %[[C:.*]]: tensor<32xf32>)
//  CHECK-NEXT:   %[[P:.*]] = "dnn.matmul"(%[[A]], %[[B]]) {compute_type = f32}
//  CHECK-NEXT:   %[[Q:.*]] = "dnn.div"(%[[P]], %[[C]]) : (tensor<2x64x32xbf16>, tensor<32xf32>) -> tensor<2x64x32xbf16>
//  CHECK-NEXT:   %[[R:.*]] = "dnn.mul"(%[[Q]], %[[S]]) : (tensor<2x64x32xbf16>, tensor<2x64x1xf32>) -> tensor<2x64x32xbf16>
//  CHECK-NEXT:   return %[[R]]
func.func @rows_and_columns(%a: tensor<2x64x128xbf16>, %b: tensor<128x32xbf16>, %s: tensor<2x64x1xf32>, %c: tensor<32xf32>) -> tensor<2x64x32xbf16> {
  %0 = "dnn.mul"(%s, %a) : (tensor<2x64x1xf32>, tensor<2x64x128xbf16>) -> tensor<2x64x128xbf16>
  %1 = "dnn.div"(%b, %c) : (tensor<128x32xbf16>, tensor<32xf32>) -> tensor<128x32xbf16>
  %2 = "dnn.matmul"(%0, %1) {compute_type = f32} : (tensor<2x64x128xbf16>, tensor<128x32xbf16>) -> tensor<2x64x32xbf16>
  return %2 : tensor<2x64x32xbf16>
}

// -----

// A scalar scale of q (attention's 1/sqrt(d)) moves too.
// CHECK-LABEL: func.func @scalar(
//  CHECK-NEXT:   %[[P:.*]] = "dnn.matmul"(%arg0, %arg1)
//  CHECK-NEXT:   "dnn.mul"(%[[P]], %arg2)
func.func @scalar(%q: tensor<4x16x64xf16>, %k: tensor<4x64x16xf16>, %s: tensor<f32>) -> tensor<4x16x16xf16> {
  %0 = "dnn.mul"(%q, %s) : (tensor<4x16x64xf16>, tensor<f32>) -> tensor<4x16x64xf16>
  %1 = "dnn.matmul"(%0, %k) {compute_type = f32} : (tensor<4x16x64xf16>, tensor<4x64x16xf16>) -> tensor<4x16x16xf16>
  return %1 : tensor<4x16x16xf16>
}

// -----

// A graph's scale computes in f32 and casts back to the operand's type: the
// cast goes with the multiply.
// CHECK-LABEL: func.func @cast_back(
//  CHECK-NEXT:   %[[P:.*]] = "dnn.matmul"(%arg0, %arg1) {compute_type = f32} : (tensor<8x16xbf16>, tensor<16x4xbf16>) -> tensor<8x4xbf16>
//  CHECK-NEXT:   %[[R:.*]] = "dnn.mul"(%[[P]], %arg2) : (tensor<8x4xbf16>, tensor<8x1xf32>) -> tensor<8x4xbf16>
//  CHECK-NEXT:   return %[[R]]
func.func @cast_back(%a: tensor<8x16xbf16>, %b: tensor<16x4xbf16>, %s: tensor<8x1xf32>) -> tensor<8x4xbf16> {
  %0 = "dnn.mul"(%a, %s) : (tensor<8x16xbf16>, tensor<8x1xf32>) -> tensor<8x16xf32>
  %1 = "dnn.cast"(%0) : (tensor<8x16xf32>) -> tensor<8x16xbf16>
  %2 = "dnn.matmul"(%1, %b) {compute_type = f32} : (tensor<8x16xbf16>, tensor<16x4xbf16>) -> tensor<8x4xbf16>
  return %2 : tensor<8x4xbf16>
}

// -----

// bf16 operands scaled to f32 (a graph's x * s left in f32): when the
// matmul's operands then share one type, the f32 matmul becomes a bf16 one
// with both scales after it; with an f32 operand left (@mixed) it stays.
// CHECK-LABEL: func.func @widening(
//  CHECK-NEXT:   %[[P:.*]] = "dnn.matmul"(%arg0, %arg1) {compute_type = f32} : (tensor<8x16xbf16>, tensor<16x4xbf16>) -> tensor<8x4xf32>
//  CHECK-NEXT:   %[[S:.*]] = "dnn.mul"(%[[P]], %arg2) : (tensor<8x4xf32>, tensor<8x1xf32>) -> tensor<8x4xf32>
//  CHECK-NEXT:   %[[C:.*]] = "dnn.div"(%[[S]], %arg3) : (tensor<8x4xf32>, tensor<1x4xf32>) -> tensor<8x4xf32>
//  CHECK-NEXT:   %[[Q:.*]] = "dnn.matmul"(%arg0, %arg1) {compute_type = f32} : (tensor<8x16xbf16>, tensor<16x4xbf16>) -> tensor<8x4xf32>
//  CHECK-NEXT:   %[[T:.*]] = "dnn.mul"(%[[Q]], %arg2) : (tensor<8x4xf32>, tensor<8x1xf32>) -> tensor<8x4xf32>
//  CHECK-NEXT:   %[[M:.*]] = "dnn.mul"(%arg0, %arg2) : (tensor<8x16xbf16>, tensor<8x1xf32>) -> tensor<8x16xf32>
//  CHECK-NEXT:   "dnn.matmul"(%[[M]], %arg4)
func.func @widening(%a: tensor<8x16xbf16>, %b: tensor<16x4xbf16>, %s: tensor<8x1xf32>, %c: tensor<1x4xf32>, %f: tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %0 = "dnn.mul"(%a, %s) : (tensor<8x16xbf16>, tensor<8x1xf32>) -> tensor<8x16xf32>
  %1 = "dnn.div"(%b, %c) : (tensor<16x4xbf16>, tensor<1x4xf32>) -> tensor<16x4xf32>
  %2 = "dnn.matmul"(%0, %1) {compute_type = f32} : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %3 = "dnn.mul"(%a, %s) : (tensor<8x16xbf16>, tensor<8x1xf32>) -> tensor<8x16xf32>
  %4 = "dnn.matmul"(%3, %b) {compute_type = f32} : (tensor<8x16xf32>, tensor<16x4xbf16>) -> tensor<8x4xf32>
  %5 = "dnn.mul"(%a, %s) : (tensor<8x16xbf16>, tensor<8x1xf32>) -> tensor<8x16xf32>
  %6 = "dnn.matmul"(%5, %f) {compute_type = f32} : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %2, %4, %6 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// What stays: a scale along K (A's columns, B's rows), a divisor scaled by
// the operand (s / A), a scaled operand that is also returned, and a
// multiply that also casts (f32 * s -> bf16, in the op or by a cast after
// it: a cast prologue).
// CHECK-LABEL: func.func @kept(
//  CHECK-NEXT:   %[[K:.*]] = "dnn.mul"(%arg0, %arg2)
//  CHECK-NEXT:   %[[KB:.*]] = "dnn.mul"(%arg1, %arg3)
//  CHECK-NEXT:   "dnn.matmul"(%[[K]], %[[KB]])
//  CHECK-NEXT:   %[[D:.*]] = "dnn.div"(%arg4, %arg0)
//  CHECK-NEXT:   "dnn.matmul"(%[[D]], %arg1)
//  CHECK-NEXT:   %[[R:.*]] = "dnn.mul"(%arg0, %arg4)
//  CHECK-NEXT:   "dnn.matmul"(%[[R]], %arg1)
//  CHECK-NEXT:   %[[C:.*]] = "dnn.mul"(%arg5, %arg4)
//  CHECK-NEXT:   "dnn.matmul"(%[[C]], %arg1)
//  CHECK-NEXT:   %[[W:.*]] = "dnn.mul"(%arg5, %arg4) : (tensor<8x16xf32>, tensor<8x1xbf16>) -> tensor<8x16xf32>
//  CHECK-NEXT:   %[[WC:.*]] = "dnn.cast"(%[[W]])
//  CHECK-NEXT:   "dnn.matmul"(%[[WC]], %arg1)
func.func @kept(%a: tensor<8x16xbf16>, %b: tensor<16x4xbf16>, %k: tensor<1x16xf32>, %kb: tensor<16x1xf32>, %s: tensor<8x1xbf16>, %f: tensor<8x16xf32>) -> (tensor<8x4xbf16>, tensor<8x4xbf16>, tensor<8x4xbf16>, tensor<8x16xbf16>, tensor<8x4xbf16>, tensor<8x4xbf16>) {
  %0 = "dnn.mul"(%a, %k) : (tensor<8x16xbf16>, tensor<1x16xf32>) -> tensor<8x16xbf16>
  %1 = "dnn.mul"(%b, %kb) : (tensor<16x4xbf16>, tensor<16x1xf32>) -> tensor<16x4xbf16>
  %2 = "dnn.matmul"(%0, %1) {compute_type = f32} : (tensor<8x16xbf16>, tensor<16x4xbf16>) -> tensor<8x4xbf16>
  %3 = "dnn.div"(%s, %a) : (tensor<8x1xbf16>, tensor<8x16xbf16>) -> tensor<8x16xbf16>
  %4 = "dnn.matmul"(%3, %b) {compute_type = f32} : (tensor<8x16xbf16>, tensor<16x4xbf16>) -> tensor<8x4xbf16>
  %5 = "dnn.mul"(%a, %s) : (tensor<8x16xbf16>, tensor<8x1xbf16>) -> tensor<8x16xbf16>
  %6 = "dnn.matmul"(%5, %b) {compute_type = f32} : (tensor<8x16xbf16>, tensor<16x4xbf16>) -> tensor<8x4xbf16>
  %7 = "dnn.mul"(%f, %s) : (tensor<8x16xf32>, tensor<8x1xbf16>) -> tensor<8x16xbf16>
  %8 = "dnn.matmul"(%7, %b) {compute_type = f32} : (tensor<8x16xbf16>, tensor<16x4xbf16>) -> tensor<8x4xbf16>
  %9 = "dnn.mul"(%f, %s) : (tensor<8x16xf32>, tensor<8x1xbf16>) -> tensor<8x16xf32>
  %10 = "dnn.cast"(%9) : (tensor<8x16xf32>) -> tensor<8x16xbf16>
  %11 = "dnn.matmul"(%10, %b) {compute_type = f32} : (tensor<8x16xbf16>, tensor<16x4xbf16>) -> tensor<8x4xbf16>
  return %2, %4, %6, %5, %8, %11 : tensor<8x4xbf16>, tensor<8x4xbf16>, tensor<8x4xbf16>, tensor<8x16xbf16>, tensor<8x4xbf16>, tensor<8x4xbf16>
}

// -----

// fp8 operands dequantized by per-tensor f32 scales, (a * s_a) @ (b * s_b)
// with e4m3 x e5m2 too: both scales move after an fp8 matmul (its products
// are exact in f32). An fp8 operand beside a bf16 one stays an f32 matmul.
// CHECK-LABEL: func.func @fp8_descales(
//  CHECK-NEXT:   %[[P:.*]] = "dnn.matmul"(%arg0, %arg1) {compute_type = f32} : (tensor<8x32xf8E4M3FN>, tensor<32x16xf8E5M2>) -> tensor<8x16xf32>
//  CHECK-NEXT:   %[[S:.*]] = "dnn.mul"(%[[P]], %arg2) : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
//  CHECK-NEXT:   %[[T:.*]] = "dnn.mul"(%[[S]], %arg3) : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
//  CHECK-NEXT:   %[[M:.*]] = "dnn.mul"(%arg0, %arg2) : (tensor<8x32xf8E4M3FN>, tensor<f32>) -> tensor<8x32xf32>
//  CHECK-NEXT:   "dnn.matmul"(%[[M]], %arg4)
func.func @fp8_descales(%a: tensor<8x32xf8E4M3FN>, %b: tensor<32x16xf8E5M2>, %sa: tensor<f32>, %sb: tensor<f32>, %h: tensor<32x16xbf16>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %0 = "dnn.mul"(%a, %sa) : (tensor<8x32xf8E4M3FN>, tensor<f32>) -> tensor<8x32xf32>
  %1 = "dnn.mul"(%b, %sb) : (tensor<32x16xf8E5M2>, tensor<f32>) -> tensor<32x16xf32>
  %2 = "dnn.matmul"(%0, %1) {compute_type = f32} : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %3 = "dnn.mul"(%a, %sa) : (tensor<8x32xf8E4M3FN>, tensor<f32>) -> tensor<8x32xf32>
  %4 = "dnn.matmul"(%3, %h) {compute_type = f32} : (tensor<8x32xf32>, tensor<32x16xbf16>) -> tensor<8x16xf32>
  return %2, %4 : tensor<8x16xf32>, tensor<8x16xf32>
}
