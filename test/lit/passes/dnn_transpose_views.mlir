// dnn-transpose-views: a transpose kernel whose result only a tc-sm90
// kernel reads becomes a reinterpret_cast of its source with permuted
// strides; the reader's argument takes the strided type and the transpose
// kernel goes. A transpose another kind of kernel reads stays a copy.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-transpose-views)' | FileCheck %s

#t = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-NOT:   func.func private @linear_k0_tensor
// CHECK-LABEL: func.func private @linear_k1_matmul(
//  CHECK-SAME:     %{{.*}}: memref<8x16xbf16>, %{{.*}}: memref<16x32xbf16, strided<[1, 16]>>, %{{.*}}: memref<16x32xbf16>)
// CHECK-LABEL: func.func @linear(
//  CHECK-SAME:     %[[X:.*]]: memref<8x16xbf16>, %[[W:.*]]: memref<32x16xbf16>, %[[Y:.*]]: memref<16x32xbf16>
//  CHECK-NEXT:   %[[V:.*]] = memref.reinterpret_cast %[[W]] to offset: [0], sizes: [16, 32], strides: [1, 16] : memref<32x16xbf16> to memref<16x32xbf16, strided<[1, 16]>>
//  CHECK-NEXT:   call @linear_k1_matmul(%[[X]], %[[V]], %[[Y]])
//  CHECK-NEXT:   return
func.func private @linear_k0_tensor(%w: memref<32x16xbf16>, %t: memref<16x32xbf16>) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-generic"}, dnn.kernel} {
  linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%w : memref<32x16xbf16>) outs(%t : memref<16x32xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  }
  return
}
func.func private @linear_k1_matmul(%x: memref<8x16xbf16>, %b: memref<16x32xbf16>, %y: memref<16x32xbf16>) attributes {dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 64]}, dnn.kernel} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%b : memref<16x32xbf16>) outs(%y : memref<16x32xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  }
  return
}
func.func @linear(%x: memref<8x16xbf16>, %w: memref<32x16xbf16>, %y: memref<16x32xbf16> {bufferize.result}) attributes {dnn.graph} {
  %t = memref.alloc() : memref<16x32xbf16>
  call @linear_k0_tensor(%w, %t) : (memref<32x16xbf16>, memref<16x32xbf16>) -> ()
  call @linear_k1_matmul(%x, %t, %y) : (memref<8x16xbf16>, memref<16x32xbf16>, memref<16x32xbf16>) -> ()
  return
}

// -----

#t = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @read_by_simt(
//  CHECK-NEXT:   %[[T:.*]] = memref.alloc() : memref<16x32xf32>
//  CHECK-NEXT:   call @transpose(%{{.*}}, %[[T]])
//  CHECK-NEXT:   call @simt(%[[T]])
func.func private @transpose(%w: memref<32x16xf32>, %t: memref<16x32xf32>) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-generic"}, dnn.kernel} {
  linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%w : memref<32x16xf32>) outs(%t : memref<16x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}
func.func private @simt(%t: memref<16x32xf32>) attributes {dnn.config = {block = [256, 1, 1], strategy = "simt-generic"}, dnn.kernel} {
  return
}
func.func @read_by_simt(%w: memref<32x16xf32>) attributes {dnn.graph} {
  %t = memref.alloc() : memref<16x32xf32>
  call @transpose(%w, %t) : (memref<32x16xf32>, memref<16x32xf32>) -> ()
  call @simt(%t) : (memref<16x32xf32>) -> ()
  return
}
