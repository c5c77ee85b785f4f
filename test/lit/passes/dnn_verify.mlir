// dnn-verify checks every dnn op against its definition and changes nothing.
// dnnc-opt applies the same rules to every input as it parses it, so an
// invalid op stops the run before any pass; the pipeline reports the op's
// error and prints no IR for that chunk. Every rule, one chunk each, is in
// test/lit/dialect/invalid.mlir.

// RUN: not dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-verify)' 2>%t.stderr | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERROR --implicit-check-not=error: --input-file=%t.stderr
// RUN: not dnnc-opt %s --pass-pipeline='builtin.module(dnn-verify{strict=true})' 2>&1 | FileCheck %s --check-prefix=OPTION

// OPTION: dnnc-opt: error: pass 'dnn-verify' has no option 'strict'; options: none

// A whole graph: its ops, attributes, argument and result attributes and
// element types come out exactly as they went in.

// CHECK-LABEL: func.func @graph_is_unchanged(
//  CHECK-SAME:     %[[X:.*]]: tensor<8x64xbf16> {dnn.name = "x"}, %[[W:.*]]: tensor<64x32xbf16> {dnn.name = "w"}, %[[B:.*]]: tensor<32xbf16> {dnn.name = "b"}) -> (tensor<8x32xbf16> {dnn.name = "y"}) attributes {dnn.graph} {
//  CHECK-NEXT:   %[[H:.*]] = "dnn.matmul"(%[[X]], %[[W]]) {dnn.name = "fc"} : (tensor<8x64xbf16>, tensor<64x32xbf16>) -> tensor<8x32xf32>
//  CHECK-NEXT:   %[[A:.*]] = "dnn.add"(%[[H]], %[[B]]) : (tensor<8x32xf32>, tensor<32xbf16>) -> tensor<8x32xf32>
//  CHECK-NEXT:   %[[R:.*]] = "dnn.relu"(%[[A]]) : (tensor<8x32xf32>) -> tensor<8x32xf32>
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.softmax"(%[[R]]) {axis = 1 : i64} : (tensor<8x32xf32>) -> tensor<8x32xbf16>
//  CHECK-NEXT:   return %[[Y]] : tensor<8x32xbf16>
//  CHECK-NEXT: }
func.func @graph_is_unchanged(%x: tensor<8x64xbf16> {dnn.name = "x"}, %w: tensor<64x32xbf16> {dnn.name = "w"}, %b: tensor<32xbf16> {dnn.name = "b"}) -> (tensor<8x32xbf16> {dnn.name = "y"}) attributes {dnn.graph} {
  %h = "dnn.matmul"(%x, %w) {dnn.name = "fc"} : (tensor<8x64xbf16>, tensor<64x32xbf16>) -> tensor<8x32xf32>
  %a = "dnn.add"(%h, %b) : (tensor<8x32xf32>, tensor<32xbf16>) -> tensor<8x32xf32>
  %r = "dnn.relu"(%a) : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = "dnn.softmax"(%r) {axis = 1 : i64} : (tensor<8x32xf32>) -> tensor<8x32xbf16>
  return %y : tensor<8x32xbf16>
}

// -----

// Ops of other dialects are left alone, and dnn ops in nested modules are
// verified too.

// CHECK-LABEL: module @nested_module
//  CHECK-NEXT:   func.func @mixed_dialects(%[[X:.*]]: tensor<4xf32>) -> tensor<4xf32> {
//  CHECK-NEXT:     %[[C:.*]] = arith.constant dense<2.000000e+00> : tensor<4xf32>
//  CHECK-NEXT:     %[[Y:.*]] = "dnn.mul"(%[[X]], %[[C]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
//  CHECK-NEXT:     return %[[Y]] : tensor<4xf32>
module @nested_module {
  func.func @mixed_dialects(%x: tensor<4xf32>) -> tensor<4xf32> {
    %c = arith.constant dense<2.0> : tensor<4xf32>
    %y = "dnn.mul"(%x, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

// CHECK-NOT: @matmul_k_mismatch
func.func @matmul_k_mismatch(%a: tensor<4x8xf32>, %b: tensor<7x5xf32>) -> tensor<4x5xf32> {
  // ERROR: dnn_verify.mlir:[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.matmul' op operand 'b' dim 0: expected 8 (K of 'a'), got 7
  %c = "dnn.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<7x5xf32>) -> tensor<4x5xf32>
  return %c : tensor<4x5xf32>
}

// -----

// The first bad op stops verification: only the add is reported.

// CHECK-NOT: @first_error_wins
func.func @first_error_wins(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // ERROR: dnn_verify.mlir:[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.add' op result 'y': expected shape 2x3, got 3x2
  %a = "dnn.add"(%x, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<3x2xf32>
  %b = "dnn.relu"(%a) : (tensor<3x2xf32>) -> tensor<2x2xf32>
  return %x : tensor<2x3xf32>
}

// -----

// CHECK-NOT: @nested_bad_op
module @nested_bad_op {
  func.func @exp_result_shape(%x: tensor<4xf32>) -> tensor<5xf32> {
    // ERROR: dnn_verify.mlir:[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.exp' op result 'y': expected shape 4, got 5
    %y = "dnn.exp"(%x) : (tensor<4xf32>) -> tensor<5xf32>
    return %y : tensor<5xf32>
  }
}

// -----

// CHECK-NOT: @missing_attribute
func.func @missing_attribute(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // ERROR: dnn_verify.mlir:[[@LINE+1]]:{{[0-9]+}}: error: 'dnn.softmax' op attribute 'axis': expected a value, got none
  %y = "dnn.softmax"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
