// dnn-transpose-views: a transpose kernel whose result only a tc-sm90
// kernel reads becomes a reinterpret_cast of its source with permuted
// strides; the reader's argument takes the strided type and the transpose
// kernel goes. A transpose another kind of kernel reads stays a copy.
// Outputs too: the transpose of an attention's o, which only that kernel
// writes, becomes a view of the destination that the kernel writes.

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

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#t4 = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>

// The output view: an attention's o [B, H, S, D] transposed to [B, S, H, D]
// for the next matmul. The attention kernel writes the transpose's
// destination through the permuted strides; the transpose kernel goes.

// CHECK-NOT:   func.func private @o_transpose
// CHECK-LABEL: func.func private @o_attention(
//  CHECK-SAME:     %{{[^:]*}}: memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>> {bufferize.result})
// CHECK-LABEL: func.func @o_view(
//  CHECK-NEXT:   %[[T:.*]] = memref.alloc() : memref<1x8x2x16xbf16>
//  CHECK-NEXT:   %[[O:.*]] = memref.reinterpret_cast %[[T]] to offset: [0], sizes: [1, 2, 8, 16], strides: [256, 16, 32, 1] : memref<1x8x2x16xbf16> to memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>
//  CHECK-NEXT:   call @o_attention(%{{.*}}, %{{.*}}, %{{.*}}, %[[O]])
//  CHECK-NEXT:   %[[C:.*]] = memref.collapse_shape %[[T]]
//  CHECK-NEXT:   call @o_matmul(%[[C]])
func.func private @o_attention(%q: memref<1x2x8x16xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>, %o: memref<1x2x8x16xbf16> {bufferize.result}) attributes {dnn.anchor = "sdpa", dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa", operands = array<i64: 0, 1, 2, -1>, results = array<i64: 0, -1>, returned = 1 : i64, scale = 2.500000e-01 : f64, window = 0 : i64}, dnn.config = {block = [384, 1, 1], stages = 3 : i64, strategy = "tc-sm90", tile = [128, 128]}, dnn.kernel} {
  linalg.copy ins(%q : memref<1x2x8x16xbf16>) outs(%o : memref<1x2x8x16xbf16>)
  return
}
func.func private @o_transpose(%a: memref<1x2x8x16xbf16>, %b: memref<1x8x2x16xbf16> {bufferize.result}) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise"}, dnn.config_reason = "copy by transpose", dnn.kernel} {
  linalg.generic {indexing_maps = [#t4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a : memref<1x2x8x16xbf16>) outs(%b : memref<1x8x2x16xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  }
  return
}
func.func private @o_matmul(%a: memref<8x32xbf16>) attributes {dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 64]}, dnn.kernel} {
  return
}
func.func @o_view(%q: memref<1x2x8x16xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>) attributes {dnn.graph} {
  %o = memref.alloc() : memref<1x2x8x16xbf16>
  call @o_attention(%q, %k, %v, %o) : (memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>) -> ()
  %t = memref.alloc() : memref<1x8x2x16xbf16>
  call @o_transpose(%o, %t) : (memref<1x2x8x16xbf16>, memref<1x8x2x16xbf16>) -> ()
  %c = memref.collapse_shape %t [[0, 1], [2, 3]] : memref<1x8x2x16xbf16> into memref<8x32xbf16>
  call @o_matmul(%c) : (memref<8x32xbf16>) -> ()
  return
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#t4 = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>

// An o that another kernel also reads keeps its buffer and the transpose.

// CHECK-LABEL: func.func @o_shared(
//  CHECK-NEXT:   %[[O:.*]] = memref.alloc() : memref<1x2x8x16xbf16>
//  CHECK-NEXT:   call @shared_attention(%{{.*}}, %{{.*}}, %{{.*}}, %[[O]])
//  CHECK-NEXT:   %[[T:.*]] = memref.alloc() : memref<1x8x2x16xbf16>
//  CHECK-NEXT:   call @shared_transpose(%[[O]], %[[T]])
//  CHECK-NEXT:   call @shared_reader(%[[O]])
func.func private @shared_attention(%q: memref<1x2x8x16xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>, %o: memref<1x2x8x16xbf16> {bufferize.result}) attributes {dnn.anchor = "sdpa", dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa", operands = array<i64: 0, 1, 2, -1>, results = array<i64: 0, -1>, returned = 1 : i64, scale = 2.500000e-01 : f64, window = 0 : i64}, dnn.config = {block = [384, 1, 1], stages = 3 : i64, strategy = "tc-sm90", tile = [128, 128]}, dnn.kernel} {
  linalg.copy ins(%q : memref<1x2x8x16xbf16>) outs(%o : memref<1x2x8x16xbf16>)
  return
}
func.func private @shared_transpose(%a: memref<1x2x8x16xbf16>, %b: memref<1x8x2x16xbf16> {bufferize.result}) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise"}, dnn.kernel} {
  linalg.generic {indexing_maps = [#t4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a : memref<1x2x8x16xbf16>) outs(%b : memref<1x8x2x16xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  }
  return
}
func.func private @shared_reader(%a: memref<1x2x8x16xbf16>) attributes {dnn.config = {block = [256, 1, 1], strategy = "simt-generic"}, dnn.kernel} {
  return
}
func.func @o_shared(%q: memref<1x2x8x16xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>) attributes {dnn.graph} {
  %o = memref.alloc() : memref<1x2x8x16xbf16>
  call @shared_attention(%q, %k, %v, %o) : (memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>) -> ()
  %t = memref.alloc() : memref<1x8x2x16xbf16>
  call @shared_transpose(%o, %t) : (memref<1x2x8x16xbf16>, memref<1x8x2x16xbf16>) -> ()
  call @shared_reader(%o) : (memref<1x2x8x16xbf16>) -> ()
  return
}
