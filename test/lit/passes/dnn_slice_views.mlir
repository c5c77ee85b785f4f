// dnn-slice-views: a slice copy whose destination only attention kernels
// read (directly, through reshape views, or through a transpose copy that
// dnn-transpose-views folds) becomes a reinterpret_cast of the sliced buffer
// at the slice's offset and strides; the slice kernel goes. A slice whose
// view an attention kernel cannot read (a start that is not 16-byte
// aligned) stays a copy and its reason says why; so does one another kind
// of kernel reads, without a word, and one whose buffer a later kernel
// writes.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-slice-views)' | FileCheck %s
// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-slice-views,dnn-transpose-views)' | FileCheck %s --check-prefix=BOTH

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#t4 = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>

// q, k and v split from one [S, 3 x H x D] projection, viewed [B, S, H, D]
// and transposed to [B, H, S, D]: the slices become views at element
// offsets 0, 32 and 64 (16-byte aligned); the transposes now read them.

// CHECK-NOT:   func.func private @split_q
// CHECK-LABEL: func.func private @split_t0(
//  CHECK-SAME:     memref<1x8x2x16xbf16, strided<[768, 96, 16, 1]>>
// CHECK-LABEL: func.func private @split_t1(
//  CHECK-SAME:     memref<1x8x2x16xbf16, strided<[768, 96, 16, 1], offset: 32>>
// CHECK-LABEL: func.func @split(
//  CHECK-SAME:     %[[QKV:[^:]*]]: memref<8x96xbf16>
//  CHECK-NEXT:   %[[Q:.*]] = memref.reinterpret_cast %[[QKV]] to offset: [0], sizes: [8, 32], strides: [96, 1] : memref<8x96xbf16> to memref<8x32xbf16, strided<[96, 1]>>
//  CHECK-NEXT:   %[[QE:.*]] = memref.expand_shape %[[Q]] {{\[\[}}0, 1], [2, 3]] output_shape [1, 8, 2, 16] : memref<8x32xbf16, strided<[96, 1]>> into memref<1x8x2x16xbf16, strided<[768, 96, 16, 1]>>
//  CHECK-NEXT:   %[[QT:.*]] = memref.alloc() : memref<1x2x8x16xbf16>
//  CHECK-NEXT:   call @split_t0(%[[QE]], %[[QT]])
//  CHECK-NEXT:   %[[K:.*]] = memref.reinterpret_cast %[[QKV]] to offset: [32], sizes: [8, 32], strides: [96, 1] : memref<8x96xbf16> to memref<8x32xbf16, strided<[96, 1], offset: 32>>
//   CHECK-NOT:   call @split_k
//       CHECK:   memref.reinterpret_cast %[[QKV]] to offset: [64], sizes: [8, 32], strides: [96, 1]
//   CHECK-NOT:   call @split_v
//       CHECK:   call @split_attention(

// And with dnn-transpose-views after it: the attention kernel reads the
// projection where it lies, and only it is called.

// BOTH-LABEL: func.func private @split_attention(
//  BOTH-SAME:     %{{[^:]*}}: memref<1x2x8x16xbf16, strided<[768, 16, 96, 1]>>, %{{[^:]*}}: memref<1x2x8x16xbf16, strided<[768, 16, 96, 1], offset: 32>>, %{{[^:]*}}: memref<1x2x8x16xbf16, strided<[768, 16, 96, 1], offset: 64>>
// BOTH-LABEL: func.func @split(
//   BOTH-NOT:   call @split_{{[qkvt]}}
//       BOTH:   %[[V:.*]] = memref.reinterpret_cast %{{.*}} to offset: [64], sizes: [1, 2, 8, 16], strides: [768, 16, 96, 1]
//  BOTH-NEXT:   %[[O:.*]] = memref.alloc() : memref<1x2x8x16xbf16>
//  BOTH-NEXT:   call @split_attention(%{{.*}}, %{{.*}}, %[[V]], %[[O]])
//  BOTH-NEXT:   return
func.func private @split_q(%a: memref<8x96xbf16>, %b: memref<8x32xbf16> {bufferize.result}) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.config_reason = "copy by slice", dnn.kernel} {
  %s = memref.subview %a[0, 0] [8, 32] [1, 1] : memref<8x96xbf16> to memref<8x32xbf16, strided<[96, 1]>>
  linalg.copy ins(%s : memref<8x32xbf16, strided<[96, 1]>>) outs(%b : memref<8x32xbf16>)
  return
}
func.func private @split_k(%a: memref<8x96xbf16>, %b: memref<8x32xbf16> {bufferize.result}) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.config_reason = "copy by slice", dnn.kernel} {
  %s = memref.subview %a[0, 32] [8, 32] [1, 1] : memref<8x96xbf16> to memref<8x32xbf16, strided<[96, 1], offset: 32>>
  linalg.copy ins(%s : memref<8x32xbf16, strided<[96, 1], offset: 32>>) outs(%b : memref<8x32xbf16>)
  return
}
func.func private @split_v(%a: memref<8x96xbf16>, %b: memref<8x32xbf16> {bufferize.result}) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.config_reason = "copy by slice", dnn.kernel} {
  %s = memref.subview %a[0, 64] [8, 32] [1, 1] : memref<8x96xbf16> to memref<8x32xbf16, strided<[96, 1], offset: 64>>
  linalg.copy ins(%s : memref<8x32xbf16, strided<[96, 1], offset: 64>>) outs(%b : memref<8x32xbf16>)
  return
}
func.func private @split_t0(%a: memref<1x8x2x16xbf16>, %b: memref<1x2x8x16xbf16> {bufferize.result}) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise"}, dnn.kernel} {
  linalg.generic {indexing_maps = [#t4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a : memref<1x8x2x16xbf16>) outs(%b : memref<1x2x8x16xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  }
  return
}
func.func private @split_t1(%a: memref<1x8x2x16xbf16>, %b: memref<1x2x8x16xbf16> {bufferize.result}) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise"}, dnn.kernel} {
  linalg.generic {indexing_maps = [#t4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a : memref<1x8x2x16xbf16>) outs(%b : memref<1x2x8x16xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  }
  return
}
func.func private @split_t2(%a: memref<1x8x2x16xbf16>, %b: memref<1x2x8x16xbf16> {bufferize.result}) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise"}, dnn.kernel} {
  linalg.generic {indexing_maps = [#t4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a : memref<1x8x2x16xbf16>) outs(%b : memref<1x2x8x16xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  }
  return
}
func.func private @split_attention(%q: memref<1x2x8x16xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>, %o: memref<1x2x8x16xbf16> {bufferize.result}) attributes {dnn.anchor = "sdpa", dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa", operands = array<i64: 0, 1, 2, -1>, results = array<i64: 0, -1>, returned = 1 : i64, scale = 2.500000e-01 : f64, window = 0 : i64}, dnn.config = {block = [384, 1, 1], stages = 3 : i64, strategy = "tc-sm90", tile = [128, 128]}, dnn.kernel} {
  linalg.generic {indexing_maps = [#id4, #id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%q, %k, %v : memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>) outs(%o : memref<1x2x8x16xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %c: bf16, %out: bf16):
    %s = arith.addf %a, %b : bf16
    %t = arith.addf %s, %c : bf16
    linalg.yield %t : bf16
  }
  return
}
func.func @split(%qkv: memref<8x96xbf16>) attributes {dnn.graph} {
  %q = memref.alloc() : memref<8x32xbf16>
  call @split_q(%qkv, %q) : (memref<8x96xbf16>, memref<8x32xbf16>) -> ()
  %qe = memref.expand_shape %q [[0, 1], [2, 3]] output_shape [1, 8, 2, 16] : memref<8x32xbf16> into memref<1x8x2x16xbf16>
  %qt = memref.alloc() : memref<1x2x8x16xbf16>
  call @split_t0(%qe, %qt) : (memref<1x8x2x16xbf16>, memref<1x2x8x16xbf16>) -> ()
  %k = memref.alloc() : memref<8x32xbf16>
  call @split_k(%qkv, %k) : (memref<8x96xbf16>, memref<8x32xbf16>) -> ()
  %ke = memref.expand_shape %k [[0, 1], [2, 3]] output_shape [1, 8, 2, 16] : memref<8x32xbf16> into memref<1x8x2x16xbf16>
  %kt = memref.alloc() : memref<1x2x8x16xbf16>
  call @split_t1(%ke, %kt) : (memref<1x8x2x16xbf16>, memref<1x2x8x16xbf16>) -> ()
  %v = memref.alloc() : memref<8x32xbf16>
  call @split_v(%qkv, %v) : (memref<8x96xbf16>, memref<8x32xbf16>) -> ()
  %ve = memref.expand_shape %v [[0, 1], [2, 3]] output_shape [1, 8, 2, 16] : memref<8x32xbf16> into memref<1x8x2x16xbf16>
  %vt = memref.alloc() : memref<1x2x8x16xbf16>
  call @split_t2(%ve, %vt) : (memref<1x8x2x16xbf16>, memref<1x2x8x16xbf16>) -> ()
  %o = memref.alloc() : memref<1x2x8x16xbf16>
  call @split_attention(%qt, %kt, %vt, %o) : (memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>) -> ()
  return
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// A slice along the last dim of a [B, H, S, 3 x D] buffer that the attention
// kernel reads directly: q is a view with the parent's strides, at offset 16
// (32 bytes).

// CHECK-LABEL: func.func private @direct_attention(
//  CHECK-SAME:     %{{[^:]*}}: memref<1x2x8x16xbf16, strided<[768, 384, 48, 1], offset: 16>>, %{{[^:]*}}: memref<1x2x8x16xbf16>
// CHECK-LABEL: func.func @direct(
//  CHECK-SAME:     %[[P:[^:]*]]: memref<1x2x8x48xbf16>
//  CHECK-NEXT:   %[[Q:.*]] = memref.reinterpret_cast %[[P]] to offset: [16], sizes: [1, 2, 8, 16], strides: [768, 384, 48, 1]
//  CHECK-NEXT:   %[[O:.*]] = memref.alloc()
//  CHECK-NEXT:   call @direct_attention(%[[Q]], %{{.*}}, %{{.*}}, %[[O]])
//  CHECK-NEXT:   return
func.func private @direct_slice(%a: memref<1x2x8x48xbf16>, %b: memref<1x2x8x16xbf16> {bufferize.result}) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise"}, dnn.config_reason = "copy by slice", dnn.kernel} {
  %s = memref.subview %a[0, 0, 0, 16] [1, 2, 8, 16] [1, 1, 1, 1] : memref<1x2x8x48xbf16> to memref<1x2x8x16xbf16, strided<[768, 384, 48, 1], offset: 16>>
  linalg.copy ins(%s : memref<1x2x8x16xbf16, strided<[768, 384, 48, 1], offset: 16>>) outs(%b : memref<1x2x8x16xbf16>)
  return
}
func.func private @direct_attention(%q: memref<1x2x8x16xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>, %o: memref<1x2x8x16xbf16> {bufferize.result}) attributes {dnn.anchor = "sdpa", dnn.attention = {causal = false, diagonal = "top_left", op = "sdpa", operands = array<i64: 0, 1, 2, -1>, results = array<i64: 0, -1>, returned = 1 : i64, scale = 2.500000e-01 : f64, window = 0 : i64}, dnn.config = {block = [384, 1, 1], stages = 3 : i64, strategy = "tc-sm90", tile = [128, 128]}, dnn.kernel} {
  linalg.generic {indexing_maps = [#id4, #id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%q, %k, %v : memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>) outs(%o : memref<1x2x8x16xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %c: bf16, %out: bf16):
    %s = arith.addf %a, %b : bf16
    %t = arith.addf %s, %c : bf16
    linalg.yield %t : bf16
  }
  return
}
func.func @direct(%p: memref<1x2x8x48xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>) attributes {dnn.graph} {
  %q = memref.alloc() : memref<1x2x8x16xbf16>
  call @direct_slice(%p, %q) : (memref<1x2x8x48xbf16>, memref<1x2x8x16xbf16>) -> ()
  %o = memref.alloc() : memref<1x2x8x16xbf16>
  call @direct_attention(%q, %k, %v, %o) : (memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>) -> ()
  return
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// A slice that starts 4 elements (8 bytes) in: TMA cannot start a box
// there, so the copy stays and its reason names the operand.

// CHECK-LABEL: func.func private @unaligned_slice(
//  CHECK-SAME:     dnn.config_reason = "copy by slice; kept as a copy, not a view: unaligned_attention reads q through TMA: q starts 8 bytes into its buffer: expected 16-byte alignment"
// CHECK-LABEL: func.func private @unaligned_attention(
//  CHECK-SAME:     %{{[^:]*}}: memref<1x2x8x16xbf16>,
// CHECK-LABEL: func.func @unaligned(
//  CHECK-NEXT:   %[[Q:.*]] = memref.alloc() : memref<1x2x8x16xbf16>
//  CHECK-NEXT:   call @unaligned_slice(%{{.*}}, %[[Q]])
func.func private @unaligned_slice(%a: memref<1x2x8x48xbf16>, %b: memref<1x2x8x16xbf16> {bufferize.result}) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise"}, dnn.config_reason = "copy by slice", dnn.kernel} {
  %s = memref.subview %a[0, 0, 0, 4] [1, 2, 8, 16] [1, 1, 1, 1] : memref<1x2x8x48xbf16> to memref<1x2x8x16xbf16, strided<[768, 384, 48, 1], offset: 4>>
  linalg.copy ins(%s : memref<1x2x8x16xbf16, strided<[768, 384, 48, 1], offset: 4>>) outs(%b : memref<1x2x8x16xbf16>)
  return
}
func.func private @unaligned_attention(%q: memref<1x2x8x16xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>, %o: memref<1x2x8x16xbf16> {bufferize.result}) attributes {dnn.anchor = "sdpa", dnn.attention = {causal = false, diagonal = "top_left", op = "sdpa", operands = array<i64: 0, 1, 2, -1>, results = array<i64: 0, -1>, returned = 1 : i64, scale = 2.500000e-01 : f64, window = 0 : i64}, dnn.config = {block = [384, 1, 1], stages = 3 : i64, strategy = "tc-sm90", tile = [128, 128]}, dnn.kernel} {
  linalg.generic {indexing_maps = [#id4, #id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%q, %k, %v : memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>) outs(%o : memref<1x2x8x16xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %c: bf16, %out: bf16):
    %s = arith.addf %a, %b : bf16
    %t = arith.addf %s, %c : bf16
    linalg.yield %t : bf16
  }
  return
}
func.func @unaligned(%p: memref<1x2x8x48xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>) attributes {dnn.graph} {
  %q = memref.alloc() : memref<1x2x8x16xbf16>
  call @unaligned_slice(%p, %q) : (memref<1x2x8x48xbf16>, memref<1x2x8x16xbf16>) -> ()
  %o = memref.alloc() : memref<1x2x8x16xbf16>
  call @unaligned_attention(%q, %k, %v, %o) : (memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>) -> ()
  return
}

// -----

// A slice another kind of kernel reads stays a copy, its reason unchanged.

// CHECK-LABEL: func.func private @to_simt_slice(
//  CHECK-SAME:     dnn.config_reason = "copy by slice", dnn.kernel
// CHECK-LABEL: func.func @to_simt(
//  CHECK-NEXT:   %[[S:.*]] = memref.alloc() : memref<8x32xf32>
//  CHECK-NEXT:   call @to_simt_slice(%{{.*}}, %[[S]])
//  CHECK-NEXT:   call @to_simt_reader(%[[S]])
func.func private @to_simt_slice(%a: memref<8x96xf32>, %b: memref<8x32xf32> {bufferize.result}) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise"}, dnn.config_reason = "copy by slice", dnn.kernel} {
  %s = memref.subview %a[0, 32] [8, 32] [1, 1] : memref<8x96xf32> to memref<8x32xf32, strided<[96, 1], offset: 32>>
  linalg.copy ins(%s : memref<8x32xf32, strided<[96, 1], offset: 32>>) outs(%b : memref<8x32xf32>)
  return
}
func.func private @to_simt_reader(%t: memref<8x32xf32>) attributes {dnn.config = {block = [256, 1, 1], strategy = "simt-generic"}, dnn.kernel} {
  return
}
func.func @to_simt(%a: memref<8x96xf32>) attributes {dnn.graph} {
  %s = memref.alloc() : memref<8x32xf32>
  call @to_simt_slice(%a, %s) : (memref<8x96xf32>, memref<8x32xf32>) -> ()
  call @to_simt_reader(%s) : (memref<8x32xf32>) -> ()
  return
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// A kernel after the slice writes the sliced buffer: a view would see the
// new values, so the copy stays.

// CHECK-LABEL: func.func @overwritten(
//  CHECK-NEXT:   %[[Q:.*]] = memref.alloc() : memref<1x2x8x16xbf16>
//  CHECK-NEXT:   call @overwritten_slice(%{{.*}}, %[[Q]])
func.func private @overwritten_slice(%a: memref<1x2x8x48xbf16>, %b: memref<1x2x8x16xbf16> {bufferize.result}) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise"}, dnn.config_reason = "copy by slice", dnn.kernel} {
  %s = memref.subview %a[0, 0, 0, 16] [1, 2, 8, 16] [1, 1, 1, 1] : memref<1x2x8x48xbf16> to memref<1x2x8x16xbf16, strided<[768, 384, 48, 1], offset: 16>>
  linalg.copy ins(%s : memref<1x2x8x16xbf16, strided<[768, 384, 48, 1], offset: 16>>) outs(%b : memref<1x2x8x16xbf16>)
  return
}
func.func private @overwritten_writer(%a: memref<1x2x8x48xbf16>) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-generic"}, dnn.kernel} {
  %c = arith.constant 0.0 : bf16
  linalg.fill ins(%c : bf16) outs(%a : memref<1x2x8x48xbf16>)
  return
}
func.func private @overwritten_attention(%q: memref<1x2x8x16xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>, %o: memref<1x2x8x16xbf16> {bufferize.result}) attributes {dnn.anchor = "sdpa", dnn.attention = {causal = false, diagonal = "top_left", op = "sdpa", operands = array<i64: 0, 1, 2, -1>, results = array<i64: 0, -1>, returned = 1 : i64, scale = 2.500000e-01 : f64, window = 0 : i64}, dnn.config = {block = [384, 1, 1], stages = 3 : i64, strategy = "tc-sm90", tile = [128, 128]}, dnn.kernel} {
  linalg.generic {indexing_maps = [#id4, #id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%q, %k, %v : memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>) outs(%o : memref<1x2x8x16xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %c: bf16, %out: bf16):
    %s = arith.addf %a, %b : bf16
    %t = arith.addf %s, %c : bf16
    linalg.yield %t : bf16
  }
  return
}
func.func @overwritten(%p: memref<1x2x8x48xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>) attributes {dnn.graph} {
  %q = memref.alloc() : memref<1x2x8x16xbf16>
  call @overwritten_slice(%p, %q) : (memref<1x2x8x48xbf16>, memref<1x2x8x16xbf16>) -> ()
  call @overwritten_writer(%p) : (memref<1x2x8x48xbf16>) -> ()
  %o = memref.alloc() : memref<1x2x8x16xbf16>
  call @overwritten_attention(%q, %k, %v, %o) : (memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>) -> ()
  return
}
