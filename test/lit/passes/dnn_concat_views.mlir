// dnn-concat-views: a concat whose inputs a tensor-core attention kernel
// writes (dq, dk and dv joined into the qkv projection's gradient) becomes
// views of the concat's result that the kernel writes in place; the concat
// kernel goes. Rows TMA cannot step, or an input another kernel writes,
// keep the copy.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-concat-views)' | FileCheck %s

// dq, dk and dv laid out [B, S, H, D] (dnn-transpose-views' views), each
// 32 columns of the [1, 8, 96] result: the kernel writes them at element
// offsets 0, 32 and 64 of its rows of 96, and the concat is gone.

// CHECK-LABEL: func.func private @joined_attention(
//  CHECK-SAME:     %{{[^:]*}}: memref<1x2x8x16xbf16, strided<[768, 16, 96, 1]>> {bufferize.result}, %{{[^:]*}}: memref<1x2x8x16xbf16, strided<[768, 16, 96, 1], offset: 32>> {bufferize.result}, %{{[^:]*}}: memref<1x2x8x16xbf16, strided<[768, 16, 96, 1], offset: 64>> {bufferize.result})
//   CHECK-NOT:   func.func private @joined_concat
// CHECK-LABEL: func.func @joined(
//       CHECK:   %[[CAT:.*]] = memref.alloc() : memref<1x8x96xbf16>
//  CHECK-NEXT:   %[[DQ:.*]] = memref.reinterpret_cast %[[CAT]] to offset: [0], sizes: [1, 2, 8, 16], strides: [768, 16, 96, 1]
//  CHECK-NEXT:   %[[DK:.*]] = memref.reinterpret_cast %[[CAT]] to offset: [32], sizes: [1, 2, 8, 16], strides: [768, 16, 96, 1]
//  CHECK-NEXT:   %[[DV:.*]] = memref.reinterpret_cast %[[CAT]] to offset: [64], sizes: [1, 2, 8, 16], strides: [768, 16, 96, 1]
//  CHECK-NEXT:   call @joined_attention({{.*}}, %[[DQ]], %[[DK]], %[[DV]])
//  CHECK-NEXT:   %[[FLAT:.*]] = memref.collapse_shape %[[CAT]]
//  CHECK-NEXT:   call @joined_read(%[[FLAT]],
//  CHECK-NEXT:   return
func.func private @joined_attention(%q: memref<1x2x8x16xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>, %o: memref<1x2x8x16xbf16>, %do: memref<1x2x8x16xbf16>, %stats: memref<1x2x8x1xf32>, %dq: memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>> {bufferize.result}, %dk: memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>> {bufferize.result}, %dv: memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>> {bufferize.result}) attributes {dnn.anchor = "sdpa_backward", dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa_backward", operands = array<i64: 0, 1, 2, 3, 4, 5, -1>, results = array<i64: 0, 1, 2, -1>, returned = 3 : i64, scale = 2.500000e-01 : f64, window = 0 : i64}, dnn.config = {block = [384, 1, 1], strategy = "tc-sm90"}, dnn.kernel} {
  linalg.copy ins(%q : memref<1x2x8x16xbf16>) outs(%dq : memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>)
  linalg.copy ins(%k : memref<1x2x8x16xbf16>) outs(%dk : memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>)
  linalg.copy ins(%v : memref<1x2x8x16xbf16>) outs(%dv : memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>)
  return
}
func.func private @joined_concat(%a: memref<1x8x32xbf16>, %b: memref<1x8x32xbf16>, %c: memref<1x8x32xbf16>, %out: memref<1x8x96xbf16> {bufferize.result}) attributes {dnn.anchor = "concat", dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.config_reason = "copy by a concat of 3 inputs", dnn.kernel} {
  %s0 = memref.subview %out[0, 0, 0] [1, 8, 32] [1, 1, 1] : memref<1x8x96xbf16> to memref<1x8x32xbf16, strided<[768, 96, 1]>>
  linalg.copy ins(%a : memref<1x8x32xbf16>) outs(%s0 : memref<1x8x32xbf16, strided<[768, 96, 1]>>)
  %s1 = memref.subview %out[0, 0, 32] [1, 8, 32] [1, 1, 1] : memref<1x8x96xbf16> to memref<1x8x32xbf16, strided<[768, 96, 1], offset: 32>>
  linalg.copy ins(%b : memref<1x8x32xbf16>) outs(%s1 : memref<1x8x32xbf16, strided<[768, 96, 1], offset: 32>>)
  %s2 = memref.subview %out[0, 0, 64] [1, 8, 32] [1, 1, 1] : memref<1x8x96xbf16> to memref<1x8x32xbf16, strided<[768, 96, 1], offset: 64>>
  linalg.copy ins(%c : memref<1x8x32xbf16>) outs(%s2 : memref<1x8x32xbf16, strided<[768, 96, 1], offset: 64>>)
  return
}
func.func private @joined_read(%x: memref<8x96xbf16>, %y: memref<8x96xbf16> {bufferize.result}) attributes {dnn.anchor = "pointwise", dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.kernel} {
  linalg.copy ins(%x : memref<8x96xbf16>) outs(%y : memref<8x96xbf16>)
  return
}
func.func @joined(%q: memref<1x2x8x16xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>, %o: memref<1x2x8x16xbf16>, %do: memref<1x2x8x16xbf16>, %stats: memref<1x2x8x1xf32>, %out: memref<8x96xbf16> {bufferize.result}) attributes {dnn.graph} {
  %dq = memref.alloc() : memref<1x8x2x16xbf16>
  %dqv = memref.reinterpret_cast %dq to offset: [0], sizes: [1, 2, 8, 16], strides: [256, 16, 32, 1] : memref<1x8x2x16xbf16> to memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>
  %dk = memref.alloc() : memref<1x8x2x16xbf16>
  %dkv = memref.reinterpret_cast %dk to offset: [0], sizes: [1, 2, 8, 16], strides: [256, 16, 32, 1] : memref<1x8x2x16xbf16> to memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>
  %dv = memref.alloc() : memref<1x8x2x16xbf16>
  %dvv = memref.reinterpret_cast %dv to offset: [0], sizes: [1, 2, 8, 16], strides: [256, 16, 32, 1] : memref<1x8x2x16xbf16> to memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>
  call @joined_attention(%q, %k, %v, %o, %do, %stats, %dqv, %dkv, %dvv) : (memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x1xf32>, memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>, memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>, memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>) -> ()
  %a = memref.collapse_shape %dq [[0], [1], [2, 3]] : memref<1x8x2x16xbf16> into memref<1x8x32xbf16>
  %b = memref.collapse_shape %dk [[0], [1], [2, 3]] : memref<1x8x2x16xbf16> into memref<1x8x32xbf16>
  %c = memref.collapse_shape %dv [[0], [1], [2, 3]] : memref<1x8x2x16xbf16> into memref<1x8x32xbf16>
  %cat = memref.alloc() : memref<1x8x96xbf16>
  call @joined_concat(%a, %b, %c, %cat) : (memref<1x8x32xbf16>, memref<1x8x32xbf16>, memref<1x8x32xbf16>, memref<1x8x96xbf16>) -> ()
  %flat = memref.collapse_shape %cat [[0, 1], [2]] : memref<1x8x96xbf16> into memref<8x96xbf16>
  call @joined_read(%flat, %out) : (memref<8x96xbf16>, memref<8x96xbf16>) -> ()
  return
}
// -----

// A head dim of 4 makes rows of 12 elements, 24 bytes: TMA cannot step
// them, so the concat stays, and its plan reason says why.

// CHECK-LABEL: func.func private @unaligned_concat(
//  CHECK-SAME:   dnn.config_reason = "copy by a concat of 3 inputs; kept as a copy, not a view: unaligned_attention writes dq through TMA: dq's dim 2 has stride 24 bytes: expected a multiple of 16"
// CHECK-LABEL: func.func @unaligned(
//       CHECK:   call @unaligned_attention(
//       CHECK:   call @unaligned_concat(
func.func private @unaligned_attention(%q: memref<1x1x8x4xbf16>, %k: memref<1x1x8x4xbf16>, %v: memref<1x1x8x4xbf16>, %o: memref<1x1x8x4xbf16>, %do: memref<1x1x8x4xbf16>, %stats: memref<1x1x8x1xf32>, %dq: memref<1x1x8x4xbf16, strided<[32, 4, 4, 1]>> {bufferize.result}, %dk: memref<1x1x8x4xbf16, strided<[32, 4, 4, 1]>> {bufferize.result}, %dv: memref<1x1x8x4xbf16, strided<[32, 4, 4, 1]>> {bufferize.result}) attributes {dnn.anchor = "sdpa_backward", dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa_backward", operands = array<i64: 0, 1, 2, 3, 4, 5, -1>, results = array<i64: 0, 1, 2, -1>, returned = 3 : i64, scale = 2.500000e-01 : f64, window = 0 : i64}, dnn.config = {block = [384, 1, 1], strategy = "tc-sm90"}, dnn.kernel} {
  linalg.copy ins(%q : memref<1x1x8x4xbf16>) outs(%dq : memref<1x1x8x4xbf16, strided<[32, 4, 4, 1]>>)
  linalg.copy ins(%k : memref<1x1x8x4xbf16>) outs(%dk : memref<1x1x8x4xbf16, strided<[32, 4, 4, 1]>>)
  linalg.copy ins(%v : memref<1x1x8x4xbf16>) outs(%dv : memref<1x1x8x4xbf16, strided<[32, 4, 4, 1]>>)
  return
}
func.func private @unaligned_concat(%a: memref<1x8x4xbf16>, %b: memref<1x8x4xbf16>, %c: memref<1x8x4xbf16>, %out: memref<1x8x12xbf16> {bufferize.result}) attributes {dnn.anchor = "concat", dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.config_reason = "copy by a concat of 3 inputs", dnn.kernel} {
  %s0 = memref.subview %out[0, 0, 0] [1, 8, 4] [1, 1, 1] : memref<1x8x12xbf16> to memref<1x8x4xbf16, strided<[96, 12, 1]>>
  linalg.copy ins(%a : memref<1x8x4xbf16>) outs(%s0 : memref<1x8x4xbf16, strided<[96, 12, 1]>>)
  %s1 = memref.subview %out[0, 0, 4] [1, 8, 4] [1, 1, 1] : memref<1x8x12xbf16> to memref<1x8x4xbf16, strided<[96, 12, 1], offset: 4>>
  linalg.copy ins(%b : memref<1x8x4xbf16>) outs(%s1 : memref<1x8x4xbf16, strided<[96, 12, 1], offset: 4>>)
  %s2 = memref.subview %out[0, 0, 8] [1, 8, 4] [1, 1, 1] : memref<1x8x12xbf16> to memref<1x8x4xbf16, strided<[96, 12, 1], offset: 8>>
  linalg.copy ins(%c : memref<1x8x4xbf16>) outs(%s2 : memref<1x8x4xbf16, strided<[96, 12, 1], offset: 8>>)
  return
}
func.func private @unaligned_read(%x: memref<8x12xbf16>, %y: memref<8x12xbf16> {bufferize.result}) attributes {dnn.anchor = "pointwise", dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.kernel} {
  linalg.copy ins(%x : memref<8x12xbf16>) outs(%y : memref<8x12xbf16>)
  return
}
func.func @unaligned(%q: memref<1x1x8x4xbf16>, %k: memref<1x1x8x4xbf16>, %v: memref<1x1x8x4xbf16>, %o: memref<1x1x8x4xbf16>, %do: memref<1x1x8x4xbf16>, %stats: memref<1x1x8x1xf32>, %out: memref<8x12xbf16> {bufferize.result}) attributes {dnn.graph} {
  %dq = memref.alloc() : memref<1x8x1x4xbf16>
  %dqv = memref.reinterpret_cast %dq to offset: [0], sizes: [1, 1, 8, 4], strides: [32, 4, 4, 1] : memref<1x8x1x4xbf16> to memref<1x1x8x4xbf16, strided<[32, 4, 4, 1]>>
  %dk = memref.alloc() : memref<1x8x1x4xbf16>
  %dkv = memref.reinterpret_cast %dk to offset: [0], sizes: [1, 1, 8, 4], strides: [32, 4, 4, 1] : memref<1x8x1x4xbf16> to memref<1x1x8x4xbf16, strided<[32, 4, 4, 1]>>
  %dv = memref.alloc() : memref<1x8x1x4xbf16>
  %dvv = memref.reinterpret_cast %dv to offset: [0], sizes: [1, 1, 8, 4], strides: [32, 4, 4, 1] : memref<1x8x1x4xbf16> to memref<1x1x8x4xbf16, strided<[32, 4, 4, 1]>>
  call @unaligned_attention(%q, %k, %v, %o, %do, %stats, %dqv, %dkv, %dvv) : (memref<1x1x8x4xbf16>, memref<1x1x8x4xbf16>, memref<1x1x8x4xbf16>, memref<1x1x8x4xbf16>, memref<1x1x8x4xbf16>, memref<1x1x8x1xf32>, memref<1x1x8x4xbf16, strided<[32, 4, 4, 1]>>, memref<1x1x8x4xbf16, strided<[32, 4, 4, 1]>>, memref<1x1x8x4xbf16, strided<[32, 4, 4, 1]>>) -> ()
  %a = memref.collapse_shape %dq [[0], [1], [2, 3]] : memref<1x8x1x4xbf16> into memref<1x8x4xbf16>
  %b = memref.collapse_shape %dk [[0], [1], [2, 3]] : memref<1x8x1x4xbf16> into memref<1x8x4xbf16>
  %c = memref.collapse_shape %dv [[0], [1], [2, 3]] : memref<1x8x1x4xbf16> into memref<1x8x4xbf16>
  %cat = memref.alloc() : memref<1x8x12xbf16>
  call @unaligned_concat(%a, %b, %c, %cat) : (memref<1x8x4xbf16>, memref<1x8x4xbf16>, memref<1x8x4xbf16>, memref<1x8x12xbf16>) -> ()
  %flat = memref.collapse_shape %cat [[0, 1], [2]] : memref<1x8x12xbf16> into memref<8x12xbf16>
  call @unaligned_read(%flat, %out) : (memref<8x12xbf16>, memref<8x12xbf16>) -> ()
  return
}
// -----

// dv is written by a pointwise kernel, not by the attention kernel: the
// concat stays, untouched.

// CHECK-LABEL: func.func @not_attention(
//       CHECK:   call @not_attention_attention(
//       CHECK:   call @not_attention_scale(
//       CHECK:   call @not_attention_concat(
func.func private @not_attention_attention(%q: memref<1x2x8x16xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>, %o: memref<1x2x8x16xbf16>, %do: memref<1x2x8x16xbf16>, %stats: memref<1x2x8x1xf32>, %dq: memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>> {bufferize.result}, %dk: memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>> {bufferize.result}, %dv: memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>> {bufferize.result}) attributes {dnn.anchor = "sdpa_backward", dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa_backward", operands = array<i64: 0, 1, 2, 3, 4, 5, -1>, results = array<i64: 0, 1, 2, -1>, returned = 3 : i64, scale = 2.500000e-01 : f64, window = 0 : i64}, dnn.config = {block = [384, 1, 1], strategy = "tc-sm90"}, dnn.kernel} {
  linalg.copy ins(%q : memref<1x2x8x16xbf16>) outs(%dq : memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>)
  linalg.copy ins(%k : memref<1x2x8x16xbf16>) outs(%dk : memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>)
  linalg.copy ins(%v : memref<1x2x8x16xbf16>) outs(%dv : memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>)
  return
}
func.func private @not_attention_scale(%x: memref<1x2x8x16xbf16>, %y: memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>> {bufferize.result}) attributes {dnn.anchor = "pointwise", dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.kernel} {
  linalg.copy ins(%x : memref<1x2x8x16xbf16>) outs(%y : memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>)
  return
}
func.func private @not_attention_concat(%a: memref<1x8x32xbf16>, %b: memref<1x8x32xbf16>, %c: memref<1x8x32xbf16>, %out: memref<1x8x96xbf16> {bufferize.result}) attributes {dnn.anchor = "concat", dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.config_reason = "copy by a concat of 3 inputs", dnn.kernel} {
  %s0 = memref.subview %out[0, 0, 0] [1, 8, 32] [1, 1, 1] : memref<1x8x96xbf16> to memref<1x8x32xbf16, strided<[768, 96, 1]>>
  linalg.copy ins(%a : memref<1x8x32xbf16>) outs(%s0 : memref<1x8x32xbf16, strided<[768, 96, 1]>>)
  %s1 = memref.subview %out[0, 0, 32] [1, 8, 32] [1, 1, 1] : memref<1x8x96xbf16> to memref<1x8x32xbf16, strided<[768, 96, 1], offset: 32>>
  linalg.copy ins(%b : memref<1x8x32xbf16>) outs(%s1 : memref<1x8x32xbf16, strided<[768, 96, 1], offset: 32>>)
  %s2 = memref.subview %out[0, 0, 64] [1, 8, 32] [1, 1, 1] : memref<1x8x96xbf16> to memref<1x8x32xbf16, strided<[768, 96, 1], offset: 64>>
  linalg.copy ins(%c : memref<1x8x32xbf16>) outs(%s2 : memref<1x8x32xbf16, strided<[768, 96, 1], offset: 64>>)
  return
}
func.func private @not_attention_read(%x: memref<8x96xbf16>, %y: memref<8x96xbf16> {bufferize.result}) attributes {dnn.anchor = "pointwise", dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.kernel} {
  linalg.copy ins(%x : memref<8x96xbf16>) outs(%y : memref<8x96xbf16>)
  return
}
func.func @not_attention(%q: memref<1x2x8x16xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>, %o: memref<1x2x8x16xbf16>, %do: memref<1x2x8x16xbf16>, %stats: memref<1x2x8x1xf32>, %out: memref<8x96xbf16> {bufferize.result}) attributes {dnn.graph} {
  %dq = memref.alloc() : memref<1x8x2x16xbf16>
  %dqv = memref.reinterpret_cast %dq to offset: [0], sizes: [1, 2, 8, 16], strides: [256, 16, 32, 1] : memref<1x8x2x16xbf16> to memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>
  %dk = memref.alloc() : memref<1x8x2x16xbf16>
  %dkv = memref.reinterpret_cast %dk to offset: [0], sizes: [1, 2, 8, 16], strides: [256, 16, 32, 1] : memref<1x8x2x16xbf16> to memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>
  %dv = memref.alloc() : memref<1x8x2x16xbf16>
  %dvv = memref.reinterpret_cast %dv to offset: [0], sizes: [1, 2, 8, 16], strides: [256, 16, 32, 1] : memref<1x8x2x16xbf16> to memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>
  %unused = memref.alloc() : memref<1x8x2x16xbf16>
  %unusedv = memref.reinterpret_cast %unused to offset: [0], sizes: [1, 2, 8, 16], strides: [256, 16, 32, 1] : memref<1x8x2x16xbf16> to memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>
  call @not_attention_attention(%q, %k, %v, %o, %do, %stats, %dqv, %dkv, %unusedv) : (memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x1xf32>, memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>, memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>, memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>) -> ()
  call @not_attention_scale(%v, %dvv) : (memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>) -> ()
  %a = memref.collapse_shape %dq [[0], [1], [2, 3]] : memref<1x8x2x16xbf16> into memref<1x8x32xbf16>
  %b = memref.collapse_shape %dk [[0], [1], [2, 3]] : memref<1x8x2x16xbf16> into memref<1x8x32xbf16>
  %c = memref.collapse_shape %dv [[0], [1], [2, 3]] : memref<1x8x2x16xbf16> into memref<1x8x32xbf16>
  %cat = memref.alloc() : memref<1x8x96xbf16>
  call @not_attention_concat(%a, %b, %c, %cat) : (memref<1x8x32xbf16>, memref<1x8x32xbf16>, memref<1x8x32xbf16>, memref<1x8x96xbf16>) -> ()
  %flat = memref.collapse_shape %cat [[0, 1], [2]] : memref<1x8x96xbf16> into memref<8x96xbf16>
  call @not_attention_read(%flat, %out) : (memref<8x96xbf16>, memref<8x96xbf16>) -> ()
  return
}
