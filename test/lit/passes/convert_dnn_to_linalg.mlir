// convert-dnn-to-linalg replaces every dnn op with linalg.generic (and tensor,
// arith, math) on tensors, and marks the graph function for the C interface.
// A kernel function holding a convolution records its geometry (dnn.conv);
// one whose whole work is an sdpa or an sdpa_backward records what the
// attention kernels read (dnn.attention).
// Values are checked at run time by test/python/test_cpu_ops.py; this file
// pins the shape of the IR.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(convert-dnn-to-linalg)' | FileCheck %s

// Broadcasting: b's dim lines up with y's last dim. Floats are widened to f32
// in the body and the result rounded once. Argument attributes stay.

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[LAST:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @add_broadcast(
//  CHECK-SAME:     %[[A:.*]]: tensor<3x5xbf16> {dnn.name = "a"}, %[[B:.*]]: tensor<5xbf16> {dnn.name = "b"}) -> (tensor<3x5xbf16> {dnn.name = "y"})
//  CHECK-SAME:     attributes {dnn.graph, llvm.emit_c_interface}
//       CHECK:   %[[E:.*]] = tensor.empty() : tensor<3x5xbf16>
//       CHECK:   %[[Y:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[LAST]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%[[A]], %[[B]] : tensor<3x5xbf16>, tensor<5xbf16>) outs(%[[E]] : tensor<3x5xbf16>)
//       CHECK:     arith.extf %{{.*}} : bf16 to f32
//       CHECK:     arith.extf %{{.*}} : bf16 to f32
//       CHECK:     %[[S:.*]] = arith.addf
//       CHECK:     %[[T:.*]] = arith.truncf %[[S]] : f32 to bf16
//       CHECK:     linalg.yield %[[T]] : bf16
//       CHECK:   return %[[Y]]
//   CHECK-NOT: dnn.
func.func @add_broadcast(%a: tensor<3x5xbf16> {dnn.name = "a"}, %b: tensor<5xbf16> {dnn.name = "b"}) -> (tensor<3x5xbf16> {dnn.name = "y"}) attributes {dnn.graph} {
  %y = "dnn.add"(%a, %b) : (tensor<3x5xbf16>, tensor<5xbf16>) -> tensor<3x5xbf16>
  return %y : tensor<3x5xbf16>
}

// -----

// Booleans are stored as i8 once lowered (i1 memrefs do not lower to LLVM):
// kernel signatures and the calls into them are retyped. A size-1 dim that
// broadcasts reads index 0; != is the unordered predicate (true on NaN).

// CHECK-DAG: #[[ZERO:.*]] = affine_map<(d0) -> (0)>
// CHECK-LABEL: func.func private @k0(
//  CHECK-SAME:     %{{.*}}: tensor<4xf32>, %{{.*}}: tensor<1xf32>) -> tensor<4xi8> attributes {dnn.kernel} {
//       CHECK:   linalg.generic {indexing_maps = [#{{.*}}, #[[ZERO]], #{{.*}}]
//       CHECK:     %[[C:.*]] = arith.cmpf une
//       CHECK:     %[[C8:.*]] = arith.extui %[[C]] : i1 to i8
//       CHECK:     linalg.yield %[[C8]] : i8
// CHECK-LABEL: func.func @calls(
//  CHECK-SAME:     -> tensor<4xi8> attributes {dnn.graph, llvm.emit_c_interface}
//       CHECK:   %[[R:.*]] = call @k0(%{{.*}}, %{{.*}}) : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xi8>
//       CHECK:   return %[[R]] : tensor<4xi8>
func.func private @k0(%a: tensor<4xf32>, %b: tensor<1xf32>) -> tensor<4xi1> attributes {dnn.kernel} {
  %y = "dnn.cmp_ne"(%a, %b) : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xi1>
  return %y : tensor<4xi1>
}
func.func @calls(%a: tensor<4xf32>, %b: tensor<1xf32>) -> tensor<4xi1> attributes {dnn.graph} {
  %y = call @k0(%a, %b) : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xi1>
  return %y : tensor<4xi1>
}

// -----

// Matmul: batch dims broadcast (b has none), f32 accumulator filled with 0,
// k is the reduction loop, and the sum is rounded to f16 at the end.

// CHECK-DAG: #[[MAP_A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[MAP_B:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-DAG: #[[MAP_C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @matmul(
//       CHECK:   %[[Z:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x3x5xf32>)
//       CHECK:     arith.constant 0.000000e+00 : f32
//       CHECK:   %[[ACC:.*]] = linalg.generic {indexing_maps = [#[[MAP_A]], #[[MAP_B]], #[[MAP_C]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<4x5xf32>) outs(%[[Z]] : tensor<2x3x5xf32>)
//       CHECK:     arith.mulf
//       CHECK:     arith.addf
//       CHECK:   linalg.generic {{.*}} ins(%[[ACC]] : tensor<2x3x5xf32>) outs(%{{.*}} : tensor<2x3x5xf16>)
//       CHECK:     arith.truncf %{{.*}} : f32 to f16
func.func @matmul(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf16> attributes {dnn.graph} {
  %c = "dnn.matmul"(%a, %b) {compute_type = f32} : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf16>
  return %c : tensor<2x3x5xf16>
}

// -----

// Block-scaled fp8 matmul: the scales' maps divide k (and n) by the 128-wide
// block; each product is scaled by its blocks' scales and accumulated in f32.

// CHECK-DAG: #[[BS_A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[BS_B:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[BS_SA:.*]] = affine_map<(d0, d1, d2) -> (d0, d2 floordiv 128)>
// CHECK-DAG: #[[BS_SB:.*]] = affine_map<(d0, d1, d2) -> (d2 floordiv 128, d1 floordiv 128)>
// CHECK-DAG: #[[BS_C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @matmul_block_scaled(
//       CHECK:   %[[ACC:.*]] = linalg.generic {indexing_maps = [#[[BS_A]], #[[BS_B]], #[[BS_SA]], #[[BS_SB]], #[[BS_C]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x200xf8E4M3FN>, tensor<200x130xf8E5M2>, tensor<4x2xf32>, tensor<2x2xf32>) outs(%{{.*}} : tensor<4x130xf32>)
//  CHECK-NEXT:   ^bb0(%[[X:.*]]: f8E4M3FN, %[[Y:.*]]: f8E5M2, %[[S:.*]]: f32, %[[T:.*]]: f32, %[[OUT:.*]]: f32):
//  CHECK-NEXT:     %[[XF:.*]] = arith.extf %[[X]] : f8E4M3FN to f32
//  CHECK-NEXT:     %[[YF:.*]] = arith.extf %[[Y]] : f8E5M2 to f32
//  CHECK-NEXT:     %[[P:.*]] = arith.mulf %[[XF]], %[[YF]] : f32
//  CHECK-NEXT:     %[[ST:.*]] = arith.mulf %[[S]], %[[T]] : f32
//  CHECK-NEXT:     %[[Q:.*]] = arith.mulf %[[P]], %[[ST]] : f32
//  CHECK-NEXT:     %[[SUM:.*]] = arith.addf %[[OUT]], %[[Q]] : f32
//  CHECK-NEXT:     linalg.yield %[[SUM]] : f32
//       CHECK:   linalg.generic {{.*}} ins(%[[ACC]] : tensor<4x130xf32>) outs(%{{.*}} : tensor<4x130xbf16>)
func.func @matmul_block_scaled(%a: tensor<4x200xf8E4M3FN>, %b: tensor<200x130xf8E5M2>, %sa: tensor<4x2xf32>, %sb: tensor<2x2xf32>) -> tensor<4x130xbf16> attributes {dnn.graph} {
  %c = "dnn.matmul_block_scaled"(%a, %b, %sa, %sb) : (tensor<4x200xf8E4M3FN>, tensor<200x130xf8E5M2>, tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x130xbf16>
  return %c : tensor<4x130xbf16>
}

// -----

// A cast to fp8 is an arith.truncf like any other; dnn-expand-fp8 lowers it
// for the target later (LLVM has no f8 types).

// CHECK-LABEL: func.func @to_fp8(
//       CHECK:   linalg.generic
//  CHECK-NEXT:   ^bb0(%[[IN:.*]]: f32, %{{.*}}: f8E4M3FN):
//  CHECK-NEXT:     %[[F8:.*]] = arith.truncf %[[IN]] : f32 to f8E4M3FN
//  CHECK-NEXT:     linalg.yield %[[F8]] : f8E4M3FN
func.func @to_fp8(%x: tensor<3xf32>) -> tensor<3xf8E4M3FN> attributes {dnn.graph} {
  %y = "dnn.cast"(%x) : (tensor<3xf32>) -> tensor<3xf8E4M3FN>
  return %y : tensor<3xf8E4M3FN>
}

// -----

// Reduction without keepdims: the reduced dim is dropped from the result map.

// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @sum(
//       CHECK:   linalg.generic {indexing_maps = [#{{.*}}, #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<3x5xf32>) outs(%{{.*}} : tensor<3xf32>)
//       CHECK:     arith.addf
func.func @sum(%x: tensor<3x5xf32>) -> tensor<3xf32> attributes {dnn.graph} {
  %y = "dnn.reduction"(%x) {mode = "sum", axes = array<i64: 1>, keepdims = false} : (tensor<3x5xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

// Pooling reads x in place: one reduction over (n, c, o_h, o_w | t_h, t_w)
// marked dnn.window, x read at o * s + t - pre (clamped; a tap on padding
// is dropped); no padded copy of x. avg then divides per output.

// CHECK-LABEL: func.func @avg_pool(
//  CHECK-SAME:     %[[X:.*]]: tensor<1x2x5x5xbf16>
//   CHECK-NOT:   tensor.insert_slice
//       CHECK:   linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}} : tensor<3x3xf32>) outs(%{{.*}} : tensor<1x2x3x3xf32>) attrs =  {dnn.window = {count_include_pad = false, mode = "avg", pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, window = array<i64: 3, 3>}}
//       CHECK:     %[[V:.*]] = tensor.extract %[[X]][
//       CHECK:     arith.extf %[[V]] : bf16 to f32
//       CHECK:     arith.select
//       CHECK:     arith.addf
//       CHECK:   linalg.generic
//       CHECK:     arith.divf
//       CHECK:     arith.truncf
func.func @avg_pool(%x: tensor<1x2x5x5xbf16>) -> tensor<1x2x3x3xbf16> attributes {dnn.graph} {
  %y = "dnn.pooling"(%x) {count_include_pad = false, mode = "avg", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, window = array<i64: 3, 3>} : (tensor<1x2x5x5xbf16>) -> tensor<1x2x3x3xbf16>
  return %y : tensor<1x2x3x3xbf16>
}

// -----

// Pooling backward gathers dx in place: one reduction over (n, c, h, w |
// t_h, t_w) marked dnn.window with backward = true; input row h is tap t of
// window (h + pre - t) / s when s divides it; dy is read there (first), then
// max recomputes that window's first maximum from x, 4 taps unrolled, and
// keeps dy where it is tap t. No padded or spread copies.

// CHECK-LABEL: func.func @max_pool_backward(
//  CHECK-SAME:     %[[DY:[^:]*]]: tensor<1x2x2x2xf32>, %[[X:[^:]*]]: tensor<1x2x4x4xf32>
//   CHECK-NOT:   tensor.insert_slice
//       CHECK:   linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}} : tensor<2x2xf32>) outs(%{{.*}} : tensor<1x2x4x4xf32>) attrs =  {dnn.window = {backward = true, count_include_pad = false, mode = "max", pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 2>, window = array<i64: 2, 2>}}
//       CHECK:     arith.divsi
//       CHECK:     arith.remsi
//       CHECK:     %[[G:.*]] = tensor.extract %[[DY]][
// CHECK-COUNT-4:   tensor.extract %[[X]][
//       CHECK:     %[[HIT:.*]] = arith.cmpi eq
//       CHECK:     %[[KEEP:.*]] = arith.andi %{{.*}}, %[[HIT]] : i1
//       CHECK:     arith.select %[[KEEP]], %[[G]]
//       CHECK:     arith.addf
//   CHECK-NOT:   tensor.insert_slice
func.func @max_pool_backward(%dy: tensor<1x2x2x2xf32>, %x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> attributes {dnn.graph} {
  %dx = "dnn.pooling_backward"(%dy, %x) {count_include_pad = false, mode = "max", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 2>, window = array<i64: 2, 2>} : (tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %dx : tensor<1x2x4x4xf32>
}

// -----

// A chain of concats in one kernel (dnn-fuse joins it): the second copies
// the first's inputs straight into its slabs (b at column 8, c at 24); the
// first's own copies are left unused (canonicalization drops them), so
// nothing goes through the 4 x 24 intermediate.

// CHECK-LABEL: func.func private @concat_chain(
//  CHECK-SAME:     %[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<4x16xf32>, %[[C:.*]]: tensor<4x8xf32>) -> tensor<4x32xf32>
//       CHECK:   %[[Y:.*]] = bufferization.alloc_tensor() : tensor<4x32xf32>
//  CHECK-NEXT:   %[[P0:.*]] = tensor.extract_slice %[[Y]][0, 0] [4, 8] [1, 1]
//  CHECK-NEXT:   %[[Y0:.*]] = linalg.copy {{.*}} ins(%[[A]] : tensor<4x8xf32>) outs(%[[P0]] : tensor<4x8xf32>)
//  CHECK-NEXT:   %[[Y1:.*]] = tensor.insert_slice %[[Y0]] into %[[Y]][0, 0] [4, 8] [1, 1]
//  CHECK-NEXT:   %[[P1:.*]] = tensor.extract_slice %[[Y1]][0, 8] [4, 16] [1, 1]
//  CHECK-NEXT:   %[[Y2:.*]] = linalg.copy {{.*}} ins(%[[B]] : tensor<4x16xf32>) outs(%[[P1]] : tensor<4x16xf32>)
//  CHECK-NEXT:   %[[Y3:.*]] = tensor.insert_slice %[[Y2]] into %[[Y1]][0, 8] [4, 16] [1, 1]
//  CHECK-NEXT:   %[[P2:.*]] = tensor.extract_slice %[[Y3]][0, 24] [4, 8] [1, 1]
//  CHECK-NEXT:   %[[Y4:.*]] = linalg.copy {{.*}} ins(%[[C]] : tensor<4x8xf32>) outs(%[[P2]] : tensor<4x8xf32>)
//  CHECK-NEXT:   %[[Y5:.*]] = tensor.insert_slice %[[Y4]] into %[[Y3]][0, 24] [4, 8] [1, 1]
//  CHECK-NEXT:   return %[[Y5]] : tensor<4x32xf32>
func.func private @concat_chain(%a: tensor<4x8xf32>, %b: tensor<4x16xf32>, %c: tensor<4x8xf32>) -> tensor<4x32xf32> attributes {dnn.kernel} {
  %0 = "dnn.concat"(%a, %b) {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<4x24xf32>
  %1 = "dnn.concat"(%0, %c) {axis = 1 : i64} : (tensor<4x24xf32>, tensor<4x8xf32>) -> tensor<4x32xf32>
  return %1 : tensor<4x32xf32>
}

// -----

// A convolution in a kernel function: the function records its geometry as
// dnn.conv, which the implicit-GEMM kernels read once the linalg form has
// folded it into indexing maps. flip is the convolution mode (the taps
// reversed); groups is C over the filter's C; operands lists the kernel
// arguments holding the data operand and the filter (x, w).

// CHECK-LABEL: func.func private @conv_fprop_geometry(
//  CHECK-SAME:     attributes {dnn.conv = {dilation = array<i64: 2, 1>, direction = "fprop", flip = true, groups = 2 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 2>, pre = array<i64: 1, 0>, stride = array<i64: 2, 2>}, dnn.kernel}
//       CHECK:   linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
//   CHECK-NOT:   dnn.conv_fprop
func.func private @conv_fprop_geometry(%x: tensor<1x4x5x5xbf16>, %w: tensor<4x2x3x3xbf16>) -> tensor<1x4x2x3xbf16> attributes {dnn.kernel} {
  %y = "dnn.conv_fprop"(%x, %w) {compute_type = f32, dilation = array<i64: 2, 1>, mode = "convolution", post_padding = array<i64: 1, 2>, pre_padding = array<i64: 1, 0>, stride = array<i64: 2, 2>} : (tensor<1x4x5x5xbf16>, tensor<4x2x3x3xbf16>) -> tensor<1x4x2x3xbf16>
  return %y : tensor<1x4x2x3xbf16>
}

// -----

// A filter gradient's op takes (dy, x), but operands always lists x first,
// then dy: here x is argument 1 and dy argument 0.

// CHECK-LABEL: func.func private @conv_wgrad_operands(
//  CHECK-SAME:     %{{.*}}: tensor<1x16x6x6xbf16>, %{{.*}}: tensor<1x16x6x6xbf16>) -> tensor<16x16x3x3xbf16>
//  CHECK-SAME:     dnn.conv = {{.*}}direction = "wgrad"{{.*}}operands = array<i64: 1, 0>
func.func private @conv_wgrad_operands(%dy: tensor<1x16x6x6xbf16>, %x: tensor<1x16x6x6xbf16>) -> tensor<16x16x3x3xbf16> attributes {dnn.kernel} {
  %dw = "dnn.conv_wgrad"(%dy, %x) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x16x6x6xbf16>, tensor<1x16x6x6xbf16>) -> tensor<16x16x3x3xbf16>
  return %dw : tensor<16x16x3x3xbf16>
}

// -----

// A forward convolution's x that pointwise ops of the kernel compute from
// one argument of its shape (a prologue dnn-fuse joined: relu(x * s + b),
// s and b per channel) names that argument, with prologue = true; an x
// computed from two (x + r) is no argument: its index is -1.

// CHECK-LABEL: func.func private @conv_operand_prologue(
//  CHECK-SAME:     dnn.conv = {{.*}}operands = array<i64: 0, 3>{{.*}}prologue = true
func.func private @conv_operand_prologue(%x: tensor<1x8x4x4xbf16>, %s: tensor<1x8x1x1xf32>, %b: tensor<1x8x1x1xf32>, %w: tensor<8x8x1x1xbf16>) -> tensor<1x8x4x4xbf16> attributes {dnn.kernel} {
  %m = "dnn.mul"(%x, %s) : (tensor<1x8x4x4xbf16>, tensor<1x8x1x1xf32>) -> tensor<1x8x4x4xbf16>
  %a = "dnn.add"(%m, %b) : (tensor<1x8x4x4xbf16>, tensor<1x8x1x1xf32>) -> tensor<1x8x4x4xbf16>
  %r = "dnn.relu"(%a) : (tensor<1x8x4x4xbf16>) -> tensor<1x8x4x4xbf16>
  %y = "dnn.conv_fprop"(%r, %w) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x8x4x4xbf16>, tensor<8x8x1x1xbf16>) -> tensor<1x8x4x4xbf16>
  return %y : tensor<1x8x4x4xbf16>
}

// CHECK-LABEL: func.func private @conv_operand_computed(
//  CHECK-SAME:     dnn.conv = {{.*}}operands = array<i64: -1, 2>
//  CHECK-NOT:      prologue
//  CHECK-SAME:     dnn.kernel
func.func private @conv_operand_computed(%x: tensor<1x8x4x4xbf16>, %r: tensor<1x8x4x4xbf16>, %w: tensor<8x8x1x1xbf16>) -> tensor<1x8x4x4xbf16> attributes {dnn.kernel} {
  %a = "dnn.add"(%x, %r) : (tensor<1x8x4x4xbf16>, tensor<1x8x4x4xbf16>) -> tensor<1x8x4x4xbf16>
  %y = "dnn.conv_fprop"(%a, %w) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x8x4x4xbf16>, tensor<8x8x1x1xbf16>) -> tensor<1x8x4x4xbf16>
  return %y : tensor<1x8x4x4xbf16>
}

// -----

// Only kernel functions get it: a convolution in the graph function itself
// does not.

// CHECK-LABEL: func.func @conv_in_graph(
//  CHECK-SAME:     attributes {dnn.graph, llvm.emit_c_interface} {
func.func @conv_in_graph(%x: tensor<1x8x4x4xbf16>, %w: tensor<8x8x1x1xbf16>) -> tensor<1x8x4x4xbf16> attributes {dnn.graph} {
  %y = "dnn.conv_fprop"(%x, %w) {compute_type = f32, dilation = array<i64: 1, 1>, mode = "cross_correlation", post_padding = array<i64: 0, 0>, pre_padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x8x4x4xbf16>, tensor<8x8x1x1xbf16>) -> tensor<1x8x4x4xbf16>
  return %y : tensor<1x8x4x4xbf16>
}

// -----

// A kernel function whose whole work is one sdpa records it before the
// expansion (dnn.attention): the op, its scale and mask, which block
// argument each of q, k, v and bias is (-1: none), which returned value
// each of o and stats is, and how many values the function returns (after
// bufferization the out-parameters are the last arguments).

// CHECK-LABEL: func.func private @sdpa_causal_stats(
//  CHECK-SAME:     dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa", operands = array<i64: 0, 1, 2, -1, -1, -1, -1, -1, -1, -1, -1, -1>, padding = false, results = array<i64: 0, 1>, returned = 2 : i64, scale = 1.250000e-01 : f64, window = 0 : i64}
//   CHECK-NOT:   dnn.sdpa
func.func private @sdpa_causal_stats(%q: tensor<1x4x7x64xbf16>, %k: tensor<1x2x9x64xbf16>, %v: tensor<1x2x9x32xbf16>) -> (tensor<1x4x7x32xbf16>, tensor<1x4x7x1xf32>) attributes {dnn.anchor = "sdpa", dnn.kernel} {
  %o, %stats = "dnn.sdpa"(%q, %k, %v) {causal = true, generate_stats = true, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x4x7x64xbf16>, tensor<1x2x9x64xbf16>, tensor<1x2x9x32xbf16>) -> (tensor<1x4x7x32xbf16>, tensor<1x4x7x1xf32>)
  return %o, %stats : tensor<1x4x7x32xbf16>, tensor<1x4x7x1xf32>
}

// -----

// The indices follow the arguments and the returned values wherever they
// are: here the bias is argument 0, q argument 2, and stats is returned
// before o.

// CHECK-LABEL: func.func private @sdpa_bias_reordered(
//  CHECK-SAME:     dnn.attention = {causal = false, diagonal = "top_left", op = "sdpa", operands = array<i64: 2, 3, 1, 0, -1, -1, -1, -1, -1, -1, -1, -1>, padding = false, results = array<i64: 1, 0>, returned = 2 : i64, scale = 5.000000e-01 : f64, window = 0 : i64}
func.func private @sdpa_bias_reordered(%bias: tensor<1x1x7x9xf16>, %v: tensor<2x2x9x16xf16>, %q: tensor<2x2x7x16xf16>, %k: tensor<2x2x9x16xf16>) -> (tensor<2x2x7x1xf32>, tensor<2x2x7x16xf16>) attributes {dnn.anchor = "sdpa", dnn.kernel} {
  %o, %stats = "dnn.sdpa"(%q, %k, %v, %bias) {causal = false, generate_stats = true, scale = 5.000000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x2x7x16xf16>, tensor<2x2x9x16xf16>, tensor<2x2x9x16xf16>, tensor<1x1x7x9xf16>) -> (tensor<2x2x7x16xf16>, tensor<2x2x7x1xf32>)
  return %stats, %o : tensor<2x2x7x1xf32>, tensor<2x2x7x16xf16>
}

// -----

// q computed in the kernel (a relu dnn-fuse joined before the sdpa) is no
// argument: its index is -1; without statistics, stats is -1 too.

// CHECK-LABEL: func.func private @sdpa_q_computed(
//  CHECK-SAME:     dnn.attention = {causal = false, diagonal = "top_left", op = "sdpa", operands = array<i64: -1, 1, 2, -1, -1, -1, -1, -1, -1, -1, -1, -1>, padding = false, results = array<i64: 0, -1>, returned = 1 : i64, scale = 1.250000e-01 : f64, window = 0 : i64}
func.func private @sdpa_q_computed(%x: tensor<1x2x7x64xbf16>, %k: tensor<1x2x9x64xbf16>, %v: tensor<1x2x9x64xbf16>) -> tensor<1x2x7x64xbf16> attributes {dnn.anchor = "sdpa", dnn.kernel} {
  %q = "dnn.relu"(%x) : (tensor<1x2x7x64xbf16>) -> tensor<1x2x7x64xbf16>
  %o = "dnn.sdpa"(%q, %k, %v) {causal = false, generate_stats = false, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x7x64xbf16>, tensor<1x2x9x64xbf16>, tensor<1x2x9x64xbf16>) -> tensor<1x2x7x64xbf16>
  return %o : tensor<1x2x7x64xbf16>
}

// -----

// The masks are recorded as the op has them: a causal mask aligned to the
// bottom-right corner (row i sees columns up to i + Skv - Sq) and a sliding
// window of 4 columns.

// CHECK-LABEL: func.func private @sdpa_bottom_right_window(
//  CHECK-SAME:     dnn.attention = {causal = true, diagonal = "bottom_right", op = "sdpa", operands = array<i64: 0, 1, 2, -1, -1, -1, -1, -1, -1, -1, -1, -1>, padding = false, results = array<i64: 0, -1>, returned = 1 : i64, scale = 1.250000e-01 : f64, window = 4 : i64}
func.func private @sdpa_bottom_right_window(%q: tensor<1x2x7x64xbf16>, %k: tensor<1x2x9x64xbf16>, %v: tensor<1x2x9x64xbf16>) -> tensor<1x2x7x64xbf16> attributes {dnn.anchor = "sdpa", dnn.kernel} {
  %o = "dnn.sdpa"(%q, %k, %v) {causal = true, diagonal = "bottom_right", generate_stats = false, scale = 1.250000e-01 : f64, window = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x7x64xbf16>, tensor<1x2x9x64xbf16>, tensor<1x2x9x64xbf16>) -> tensor<1x2x7x64xbf16>
  return %o : tensor<1x2x7x64xbf16>
}

// -----

// An sdpa_backward records the same, op = "sdpa_backward": which argument
// each of q, k, v, o, do, stats and bias is, which returned value each of
// dq, dk and dv is.

// CHECK-LABEL: func.func private @sdpa_backward_causal_bias(
//  CHECK-SAME:     dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa_backward", operands = array<i64: 0, 1, 2, 3, 4, 5, 6, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1>, padding = false, results = array<i64: 0, 1, 2, -1>, returned = 3 : i64, scale = 1.250000e-01 : f64, window = 0 : i64}
//   CHECK-NOT:   dnn.sdpa_backward
func.func private @sdpa_backward_causal_bias(%q: tensor<1x4x7x64xbf16>, %k: tensor<1x2x9x64xbf16>, %v: tensor<1x2x9x32xbf16>, %o: tensor<1x4x7x32xbf16>, %do: tensor<1x4x7x32xbf16>, %stats: tensor<1x4x7x1xf32>, %bias: tensor<1x1x7x9xbf16>) -> (tensor<1x4x7x64xbf16>, tensor<1x2x9x64xbf16>, tensor<1x2x9x32xbf16>) attributes {dnn.anchor = "sdpa_backward", dnn.kernel} {
  %dq, %dk, %dv = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats, %bias) {causal = true, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x4x7x64xbf16>, tensor<1x2x9x64xbf16>, tensor<1x2x9x32xbf16>, tensor<1x4x7x32xbf16>, tensor<1x4x7x32xbf16>, tensor<1x4x7x1xf32>, tensor<1x1x7x9xbf16>) -> (tensor<1x4x7x64xbf16>, tensor<1x2x9x64xbf16>, tensor<1x2x9x32xbf16>)
  return %dq, %dk, %dv : tensor<1x4x7x64xbf16>, tensor<1x2x9x64xbf16>, tensor<1x2x9x32xbf16>
}

// -----

// With compute_dbias, dbias is the fourth of the results (returned first here).

// CHECK-LABEL: func.func private @sdpa_backward_dbias(
//  CHECK-SAME:     dnn.attention = {causal = false, diagonal = "top_left", op = "sdpa_backward", operands = array<i64: 0, 1, 2, 3, 4, 5, 6, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1>, padding = false, results = array<i64: 1, 2, 3, 0>, returned = 4 : i64, scale = 1.250000e-01 : f64, window = 0 : i64}
//   CHECK-NOT:   dnn.sdpa_backward
func.func private @sdpa_backward_dbias(%q: tensor<1x4x7x64xbf16>, %k: tensor<1x2x9x64xbf16>, %v: tensor<1x2x9x32xbf16>, %o: tensor<1x4x7x32xbf16>, %do: tensor<1x4x7x32xbf16>, %stats: tensor<1x4x7x1xf32>, %bias: tensor<1x4x7x9xbf16>) -> (tensor<1x4x7x9xbf16>, tensor<1x4x7x64xbf16>, tensor<1x2x9x64xbf16>, tensor<1x2x9x32xbf16>) attributes {dnn.anchor = "sdpa_backward", dnn.kernel} {
  %dq, %dk, %dv, %dbias = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats, %bias) {compute_dbias = true, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x4x7x64xbf16>, tensor<1x2x9x64xbf16>, tensor<1x2x9x32xbf16>, tensor<1x4x7x32xbf16>, tensor<1x4x7x32xbf16>, tensor<1x4x7x1xf32>, tensor<1x4x7x9xbf16>) -> (tensor<1x4x7x64xbf16>, tensor<1x2x9x64xbf16>, tensor<1x2x9x32xbf16>, tensor<1x4x7x9xbf16>)
  return %dbias, %dq, %dk, %dv : tensor<1x4x7x9xbf16>, tensor<1x4x7x64xbf16>, tensor<1x2x9x64xbf16>, tensor<1x2x9x32xbf16>
}

// -----

// The backward's indices follow the arguments and returned values too:
// stats is argument 0, no bias (-1), dk returned first.

// CHECK-LABEL: func.func private @sdpa_backward_reordered(
//  CHECK-SAME:     dnn.attention = {causal = false, diagonal = "top_left", op = "sdpa_backward", operands = array<i64: 1, 2, 3, 4, 5, 0, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1>, padding = false, results = array<i64: 1, 0, 2, -1>, returned = 3 : i64, scale = 5.000000e-01 : f64, window = 0 : i64}
func.func private @sdpa_backward_reordered(%stats: tensor<2x2x7x1xf32>, %q: tensor<2x2x7x16xf16>, %k: tensor<2x2x9x16xf16>, %v: tensor<2x2x9x16xf16>, %o: tensor<2x2x7x16xf16>, %do: tensor<2x2x7x16xf16>) -> (tensor<2x2x9x16xf16>, tensor<2x2x7x16xf16>, tensor<2x2x9x16xf16>) attributes {dnn.anchor = "sdpa_backward", dnn.kernel} {
  %dq, %dk, %dv = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats) {causal = false, scale = 5.000000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x2x7x16xf16>, tensor<2x2x9x16xf16>, tensor<2x2x9x16xf16>, tensor<2x2x7x16xf16>, tensor<2x2x7x16xf16>, tensor<2x2x7x1xf32>) -> (tensor<2x2x7x16xf16>, tensor<2x2x9x16xf16>, tensor<2x2x9x16xf16>)
  return %dk, %dq, %dv : tensor<2x2x9x16xf16>, tensor<2x2x7x16xf16>, tensor<2x2x9x16xf16>
}

// -----

// The backward's masks too: a top-left window of 3 columns.

// CHECK-LABEL: func.func private @sdpa_backward_window(
//  CHECK-SAME:     dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa_backward", operands = array<i64: 0, 1, 2, 3, 4, 5, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1>, padding = false, results = array<i64: 0, 1, 2, -1>, returned = 3 : i64, scale = 2.500000e-01 : f64, window = 3 : i64}
func.func private @sdpa_backward_window(%q: tensor<1x2x7x16xf16>, %k: tensor<1x2x9x16xf16>, %v: tensor<1x2x9x16xf16>, %o: tensor<1x2x7x16xf16>, %do: tensor<1x2x7x16xf16>, %stats: tensor<1x2x7x1xf32>) -> (tensor<1x2x7x16xf16>, tensor<1x2x9x16xf16>, tensor<1x2x9x16xf16>) attributes {dnn.anchor = "sdpa_backward", dnn.kernel} {
  %dq, %dk, %dv = "dnn.sdpa_backward"(%q, %k, %v, %o, %do, %stats) {causal = true, diagonal = "top_left", scale = 2.500000e-01 : f64, window = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x7x16xf16>, tensor<1x2x9x16xf16>, tensor<1x2x9x16xf16>, tensor<1x2x7x16xf16>, tensor<1x2x7x16xf16>, tensor<1x2x7x1xf32>) -> (tensor<1x2x7x16xf16>, tensor<1x2x9x16xf16>, tensor<1x2x9x16xf16>)
  return %dq, %dk, %dv : tensor<1x2x7x16xf16>, tensor<1x2x9x16xf16>, tensor<1x2x9x16xf16>
}

// -----

// An sdpa whose o another op of the kernel reads is not the kernel's whole
// work: no dnn.attention.

// CHECK-LABEL: func.func private @sdpa_o_used_in_kernel(
//   CHECK-NOT:   dnn.attention
//       CHECK:   linalg.generic
func.func private @sdpa_o_used_in_kernel(%q: tensor<1x2x7x64xbf16>, %k: tensor<1x2x9x64xbf16>, %v: tensor<1x2x9x64xbf16>) -> tensor<1x2x7x64xbf16> attributes {dnn.anchor = "sdpa", dnn.kernel} {
  %o = "dnn.sdpa"(%q, %k, %v) {causal = false, generate_stats = false, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x7x64xbf16>, tensor<1x2x9x64xbf16>, tensor<1x2x9x64xbf16>) -> tensor<1x2x7x64xbf16>
  %y = "dnn.relu"(%o) : (tensor<1x2x7x64xbf16>) -> tensor<1x2x7x64xbf16>
  return %y : tensor<1x2x7x64xbf16>
}

// -----

// Only kernel functions get it: an sdpa in the graph function itself does
// not.

// CHECK-LABEL: func.func @sdpa_in_graph(
//  CHECK-SAME:     attributes {dnn.graph, llvm.emit_c_interface} {
func.func @sdpa_in_graph(%q: tensor<1x2x7x64xbf16>, %k: tensor<1x2x9x64xbf16>, %v: tensor<1x2x9x64xbf16>) -> tensor<1x2x7x64xbf16> attributes {dnn.graph} {
  %o = "dnn.sdpa"(%q, %k, %v) {causal = false, generate_stats = false, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x7x64xbf16>, tensor<1x2x9x64xbf16>, tensor<1x2x9x64xbf16>) -> tensor<1x2x7x64xbf16>
  return %o : tensor<1x2x7x64xbf16>
}

// -----

// int8 / uint8 (si8 / ui8) matmul with i32 compute: the operands are
// sign- or zero-extended and the products summed in i32; a cast to int8
// saturates in integers. No si8 / ui8 is left: they are stored as i8, as
// booleans are, once lowered (and the casts to signless i8 are gone).

// CHECK-LABEL: func.func @matmul_int8(
//  CHECK-SAME:     %[[A:.*]]: tensor<4x8xi8> {dnn.name = "a"}, %[[B:.*]]: tensor<8x5xi8> {dnn.name = "b"}) -> (tensor<4x5xi32> {dnn.name = "c"}, tensor<4x5xi8> {dnn.name = "q"})
//       CHECK:   %[[ZERO:.*]] = linalg.generic
//       CHECK:     arith.constant 0 : i32
//       CHECK:   %[[C:.*]] = linalg.generic {{.*}} ins(%[[A]], %[[B]] : tensor<4x8xi8>, tensor<8x5xi8>) outs(%[[ZERO]] : tensor<4x5xi32>)
//  CHECK-NEXT:   ^bb0(%[[X:.*]]: i8, %[[Y:.*]]: i8, %[[ACC:.*]]: i32):
//  CHECK-NEXT:     %[[XW:.*]] = arith.extsi %[[X]] : i8 to i32
//  CHECK-NEXT:     %[[YW:.*]] = arith.extui %[[Y]] : i8 to i32
//  CHECK-NEXT:     %[[P:.*]] = arith.muli %[[XW]], %[[YW]] : i32
//  CHECK-NEXT:     %[[S:.*]] = arith.addi %[[ACC]], %[[P]] : i32
//  CHECK-NEXT:     linalg.yield %[[S]] : i32
//       CHECK:   %[[Q:.*]] = linalg.generic {{.*}} ins(%[[C]] : tensor<4x5xi32>) outs(%{{.*}} : tensor<4x5xi8>)
//       CHECK:     arith.maxsi
//       CHECK:     arith.minsi
//       CHECK:     %[[T:.*]] = arith.trunci %{{.*}} : i32 to i8
//       CHECK:     linalg.yield %[[T]] : i8
//       CHECK:   return %[[C]], %[[Q]] : tensor<4x5xi32>, tensor<4x5xi8>
//   CHECK-NOT: si8
//   CHECK-NOT: ui8
//   CHECK-NOT: unrealized_conversion_cast
func.func @matmul_int8(%a: tensor<4x8xsi8> {dnn.name = "a"}, %b: tensor<8x5xui8> {dnn.name = "b"}) -> (tensor<4x5xi32> {dnn.name = "c"}, tensor<4x5xsi8> {dnn.name = "q"}) attributes {dnn.graph} {
  %c = "dnn.matmul"(%a, %b) {compute_type = i32} : (tensor<4x8xsi8>, tensor<8x5xui8>) -> tensor<4x5xi32>
  %q = "dnn.cast"(%c) : (tensor<4x5xi32>) -> tensor<4x5xsi8>
  return %c, %q : tensor<4x5xi32>, tensor<4x5xsi8>
}
