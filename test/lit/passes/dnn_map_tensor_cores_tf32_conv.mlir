// tf32 convolution gradients on tc-sm90 (dnn-map-tensor-cores with
// sm90/tf32_conv.py): f32 operands that the linalg form rounds to tf32 (the
// pad generic rounds x or dy, the contraction's body the other operand).
// wgmma reads tf32 from shared memory only K-major, so a data gradient's
// filter (read C-contiguous) is copied K-major by a launch of its own
// first, and a filter gradient runs as dw^T = im2col(x)^T dy: x by im2col
// into registers (its A, wgmma's A from registers by inline asm), dy
// copied K-major first (its B). On tc-sm80 (mma.sync, its fragments in
// registers) nothing is copied.
//
// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-map-tensor-cores,canonicalize,cse)' | FileCheck %s

#dg_map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#dg_map1 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#dg_map2 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 - d6 + 2, d4 - d7 + 2)>
#dg_map3 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d2, d6, d7)>
#dg_map4 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>

// A stride-1 3x3 data gradient, padding 1, 16 channels each way: the
// filter [K, taps, C] copied into a [C, taps, K] buffer (the tiled
// transposing copy: 9 blocks, one a tap), whose descriptor's box is one tap
// of 64 rows of C by 32 of K; then the GEMM, wgmma's B K-major (col).
// CHECK-LABEL: func.func private @conv_dgrad_tf32(
//  CHECK-SAME:     %[[DY:[^:]*]]: memref<1x16x6x6xf32, strided<[576, 1, 96, 16]>>, %[[W:[^:]*]]: memref<16x16x3x3xf32, strided<[144, 1, 48, 16]>>
//  CHECK-SAME:     implicit GEMM (dgrad): dy read by TMA in im2col mode, 9 filter taps x 16 channels, the filter copied K-major first (wgmma reads tf32 from shared memory only K-major)
//       CHECK:   %[[COPY:.*]] = memref.alloc() : memref<16x9x16xf32>
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c9, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}}) workgroup(
//       CHECK:   %[[CV:.*]] = memref.reinterpret_cast %[[COPY]] to offset: [0], sizes: [16, 9, 16], strides: [144, 16, 1]
//       CHECK:   nvgpu.tma.create.descriptor {{.*}} box[%c64, %c32] {dnn.im2col = {element_strides = array<i64: 1, 1, 1, 1>, lower = array<i64: -1, -1>, upper = array<i64: -1, -1>}}
//       CHECK:   %[[UC:.*]] = memref.cast %[[CV]]
//       CHECK:   nvgpu.tma.create.descriptor %[[UC]] box[%c64, %c1, %c32] : memref<*xf32> -> <tensor = memref<64x1x32xf32, 3>
//       CHECK:   gpu.launch
// CHECK-COUNT-4:         nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 8>, D[<f32>, <one>, <wrapped>], A[<tf32>, <one>, <row>], B[<tf32>, <one>, <col>]
//   CHECK-NOT:   linalg.
func.func private @conv_dgrad_tf32(%arg0: memref<1x16x6x6xf32, strided<[576, 1, 96, 16]>>, %arg1: memref<16x16x3x3xf32, strided<[144, 1, 48, 16]>>, %arg2: memref<1x16x6x6xf32, strided<[576, 1, 96, 16]>> {bufferize.result}) attributes {dnn.anchor = "conv_dgrad", dnn.config = {block = [256, 1, 1], split = 2 : i64, stages = 8 : i64, strategy = "tc-sm90", tile = [64, 64, 32]}, dnn.config_reason = "conv_dgrad: 36x16x144 (M x N x K) f32, f32 operands multiplied as tf32 (the default for f32 convolutions, as cuDNN's; compute_data_type='float' multiplies them exactly); 64x64 tiles, 1 of them for 132 SMs, K split 2 ways (2 blocks) (too few tiles at any width: the narrowest); 8 stages of 16 KiB fill shared memory", dnn.conv = {dilation = array<i64: 1, 1>, direction = "dgrad", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
  %c2139095040_i32 = arith.constant 2139095040 : i32
  %c-8192_i32 = arith.constant -8192 : i32
  %c4095_i32 = arith.constant 4095 : i32
  %c1_i32 = arith.constant 1 : i32
  %c13_i32 = arith.constant 13 : i32
  %cst = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x16x8x8xf32>
  linalg.generic {indexing_maps = [#dg_map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<1x16x8x8xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<1x16x6x6xf32>
  linalg.generic {indexing_maps = [#dg_map, #dg_map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : memref<1x16x6x6xf32, strided<[576, 1, 96, 16]>>) outs(%alloc_0 : memref<1x16x6x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.bitcast %in : f32 to i32
    %1 = arith.shrui %0, %c13_i32 : i32
    %2 = arith.andi %1, %c1_i32 : i32
    %3 = arith.addi %0, %c4095_i32 : i32
    %4 = arith.addi %3, %2 : i32
    %5 = arith.andi %4, %c-8192_i32 : i32
    %6 = arith.andi %0, %c2139095040_i32 : i32
    %7 = arith.cmpi ne, %6, %c2139095040_i32 : i32
    %8 = arith.select %7, %5, %0 : i32
    %9 = arith.bitcast %8 : i32 to f32
    linalg.yield %9 : f32
  }
  %subview = memref.subview %alloc[0, 0, 1, 1] [1, 16, 6, 6] [1, 1, 1, 1] : memref<1x16x8x8xf32> to memref<1x16x6x6xf32, strided<[1024, 64, 8, 1], offset: 9>>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_0 : memref<1x16x6x6xf32>) outs(%subview : memref<1x16x6x6xf32, strided<[1024, 64, 8, 1], offset: 9>>)
  %expand_shape = memref.expand_shape %alloc [[0], [1, 2], [3], [4]] output_shape [1, 1, 16, 8, 8] : memref<1x16x8x8xf32> into memref<1x1x16x8x8xf32>
  %expand_shape_1 = memref.expand_shape %arg1 [[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3] : memref<16x16x3x3xf32, strided<[144, 1, 48, 16]>> into memref<1x16x16x3x3xf32, strided<[2304, 144, 1, 48, 16]>>
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<1x1x16x6x6xf32>
  linalg.generic {indexing_maps = [#dg_map1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_2 : memref<1x1x16x6x6xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  linalg.generic {indexing_maps = [#dg_map2, #dg_map3, #dg_map4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%expand_shape, %expand_shape_1 : memref<1x1x16x8x8xf32>, memref<1x16x16x3x3xf32, strided<[2304, 144, 1, 48, 16]>>) outs(%alloc_2 : memref<1x1x16x6x6xf32>) {
  ^bb0(%in: f32, %in_3: f32, %out: f32):
    %0 = arith.bitcast %in_3 : f32 to i32
    %1 = arith.shrui %0, %c13_i32 : i32
    %2 = arith.andi %1, %c1_i32 : i32
    %3 = arith.addi %0, %c4095_i32 : i32
    %4 = arith.addi %3, %2 : i32
    %5 = arith.andi %4, %c-8192_i32 : i32
    %6 = arith.andi %0, %c2139095040_i32 : i32
    %7 = arith.cmpi ne, %6, %c2139095040_i32 : i32
    %8 = arith.select %7, %5, %0 : i32
    %9 = arith.bitcast %8 : i32 to f32
    %10 = arith.mulf %in, %9 : f32
    %11 = arith.addf %out, %10 : f32
    linalg.yield %11 : f32
  }
  %collapse_shape = memref.collapse_shape %alloc_2 [[0], [1, 2], [3], [4]] : memref<1x1x16x6x6xf32> into memref<1x16x6x6xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<1x16x6x6xf32>) outs(%arg2 : memref<1x16x6x6xf32, strided<[576, 1, 96, 16]>>)
  return
}

// -----

// The same data gradient configured tc-sm80 (sm_80, or by an override on
// sm_90a): mma.sync reads its fragments from registers, so nothing is
// copied: dy gathered K-major by 16-byte cp.async (4 channels a chunk) and
// read by ldmatrix (b16 pairs: one tf32 element each), the filter read
// C-contiguous as it lies, its fragments by 32-bit shared loads; 2 K slices
// of 8 a step, 2 x 4 mma.sync m16n8k8 tf32 each for a warp's 32 x 32.
// CHECK-LABEL: func.func private @conv_dgrad_tf32_sm80(
//  CHECK-SAME:     implicit GEMM (dgrad): dy gathered by cp.async, 9 filter taps x 16 channels"
//   CHECK-NOT:   memref.alloc
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c128, {{.*}}) dynamic_shared_memory_size
//       CHECK:     nvvm.cp.async.shared.global {{.*}}, 16, cache =  cg
//       CHECK:     nvvm.ldmatrix {{.*}}eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>
//       CHECK:     llvm.load {{.*}} : !llvm.ptr<3> -> i32
//       CHECK:     scf.for
// CHECK-COUNT-16:       nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>, shape = #nvvm.shape<m = 16, n = 8, k = 8>}
//   CHECK-NOT:   nvvm.mma.sync
//   CHECK-NOT:   linalg.

#dg_map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#dg_map1 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#dg_map2 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 - d6 + 2, d4 - d7 + 2)>
#dg_map3 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d2, d6, d7)>
#dg_map4 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>

func.func private @conv_dgrad_tf32_sm80(%arg0: memref<1x16x6x6xf32, strided<[576, 1, 96, 16]>>, %arg1: memref<16x16x3x3xf32, strided<[144, 1, 48, 16]>>, %arg2: memref<1x16x6x6xf32, strided<[576, 1, 96, 16]>> {bufferize.result}) attributes {dnn.anchor = "conv_dgrad", dnn.config = {block = [128, 1, 1], stages = 3 : i64, strategy = "tc-sm80", tile = [64, 64, 16]}, dnn.config_reason = "conv_dgrad: 36x16x144 (M x N x K) f32, f32 operands multiplied as tf32 (the default for f32 convolutions, as cuDNN's; compute_data_type='float' multiplies them exactly); 64x64 tiles, 1 of them for 132 SMs, K split 2 ways (2 blocks) (too few tiles at any width: the narrowest); 8 stages of 16 KiB fill shared memory", dnn.conv = {dilation = array<i64: 1, 1>, direction = "dgrad", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
  %c2139095040_i32 = arith.constant 2139095040 : i32
  %c-8192_i32 = arith.constant -8192 : i32
  %c4095_i32 = arith.constant 4095 : i32
  %c1_i32 = arith.constant 1 : i32
  %c13_i32 = arith.constant 13 : i32
  %cst = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x16x8x8xf32>
  linalg.generic {indexing_maps = [#dg_map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<1x16x8x8xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<1x16x6x6xf32>
  linalg.generic {indexing_maps = [#dg_map, #dg_map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : memref<1x16x6x6xf32, strided<[576, 1, 96, 16]>>) outs(%alloc_0 : memref<1x16x6x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.bitcast %in : f32 to i32
    %1 = arith.shrui %0, %c13_i32 : i32
    %2 = arith.andi %1, %c1_i32 : i32
    %3 = arith.addi %0, %c4095_i32 : i32
    %4 = arith.addi %3, %2 : i32
    %5 = arith.andi %4, %c-8192_i32 : i32
    %6 = arith.andi %0, %c2139095040_i32 : i32
    %7 = arith.cmpi ne, %6, %c2139095040_i32 : i32
    %8 = arith.select %7, %5, %0 : i32
    %9 = arith.bitcast %8 : i32 to f32
    linalg.yield %9 : f32
  }
  %subview = memref.subview %alloc[0, 0, 1, 1] [1, 16, 6, 6] [1, 1, 1, 1] : memref<1x16x8x8xf32> to memref<1x16x6x6xf32, strided<[1024, 64, 8, 1], offset: 9>>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_0 : memref<1x16x6x6xf32>) outs(%subview : memref<1x16x6x6xf32, strided<[1024, 64, 8, 1], offset: 9>>)
  %expand_shape = memref.expand_shape %alloc [[0], [1, 2], [3], [4]] output_shape [1, 1, 16, 8, 8] : memref<1x16x8x8xf32> into memref<1x1x16x8x8xf32>
  %expand_shape_1 = memref.expand_shape %arg1 [[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3] : memref<16x16x3x3xf32, strided<[144, 1, 48, 16]>> into memref<1x16x16x3x3xf32, strided<[2304, 144, 1, 48, 16]>>
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<1x1x16x6x6xf32>
  linalg.generic {indexing_maps = [#dg_map1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_2 : memref<1x1x16x6x6xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  linalg.generic {indexing_maps = [#dg_map2, #dg_map3, #dg_map4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%expand_shape, %expand_shape_1 : memref<1x1x16x8x8xf32>, memref<1x16x16x3x3xf32, strided<[2304, 144, 1, 48, 16]>>) outs(%alloc_2 : memref<1x1x16x6x6xf32>) {
  ^bb0(%in: f32, %in_3: f32, %out: f32):
    %0 = arith.bitcast %in_3 : f32 to i32
    %1 = arith.shrui %0, %c13_i32 : i32
    %2 = arith.andi %1, %c1_i32 : i32
    %3 = arith.addi %0, %c4095_i32 : i32
    %4 = arith.addi %3, %2 : i32
    %5 = arith.andi %4, %c-8192_i32 : i32
    %6 = arith.andi %0, %c2139095040_i32 : i32
    %7 = arith.cmpi ne, %6, %c2139095040_i32 : i32
    %8 = arith.select %7, %5, %0 : i32
    %9 = arith.bitcast %8 : i32 to f32
    %10 = arith.mulf %in, %9 : f32
    %11 = arith.addf %out, %10 : f32
    linalg.yield %11 : f32
  }
  %collapse_shape = memref.collapse_shape %alloc_2 [[0], [1, 2], [3], [4]] : memref<1x1x16x6x6xf32> into memref<1x16x6x6xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<1x16x6x6xf32>) outs(%arg2 : memref<1x16x6x6xf32, strided<[576, 1, 96, 16]>>)
  return
}

// -----

#wg_map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#wg_map1 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#wg_map2 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d2, d3 + d6, d4 + d7)>
#wg_map3 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d1, d6, d7)>
#wg_map4 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>

// A 3x3 filter gradient, padding 1, x of 64 channels, dy of 16: dy
// [N·P·Q, K] copied into [K, N·P·Q] (one block), x's im2col box 32 pixels
// by 32 channels (boxes of 128 bytes of the transposed product's M), dy's
// copy read in boxes of 64 rows of K by 32 pixels; the GEMM's wgmmas take
// A from registers.
// CHECK-LABEL: func.func private @conv_wgrad_tf32(
//  CHECK-SAME:     computes dw^T = im2col(x)^T dy in 64x64 tiles: x is its A, read into registers, dy copied K-major first (wgmma reads tf32 from shared memory only K-major)
//       CHECK:   %[[COPY:.*]] = memref.alloc() : memref<16x16xf32>
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}}) workgroup(
//       CHECK:   %[[CV:.*]] = memref.reinterpret_cast %[[COPY]] to offset: [0], sizes: [16, 16], strides: [16, 1]
//       CHECK:   nvgpu.tma.create.descriptor {{.*}} box[%c32, %c32] {dnn.im2col = {element_strides = array<i64: 1, 1, 1, 1>, lower = array<i64: -1, -1>, upper = array<i64: -1, -1>}}
//       CHECK:   %[[UC:.*]] = memref.cast %[[CV]]
//       CHECK:   nvgpu.tma.create.descriptor %[[UC]] box[%c64, %c32] : memref<*xf32> -> <tensor = memref<64x32xf32, 3>
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c9,
//       CHECK:   llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32
//   CHECK-NOT:   nvvm.wgmma.mma_async
//   CHECK-NOT:   linalg.
func.func private @conv_wgrad_tf32(%arg0: memref<1x16x4x4xf32, strided<[256, 1, 64, 16]>>, %arg1: memref<1x64x4x4xf32, strided<[1024, 1, 256, 64]>>, %arg2: memref<16x64x3x3xf32, strided<[576, 1, 192, 64]>> {bufferize.result}) attributes {dnn.anchor = "conv_wgrad", dnn.config = {block = [256, 1, 1], stages = 8 : i64, strategy = "tc-sm90", tile = [64, 64, 32]}, dnn.config_reason = "conv_wgrad: 16x576x16 (M x N x K) f32, f32 operands multiplied as tf32 (the default for f32 convolutions, as cuDNN's; compute_data_type='float' multiplies them exactly); 64x64 tiles, 9 of them for 132 SMs (too few tiles at any width: the narrowest); 8 stages of 16 KiB fill shared memory; run as dw^T = im2col(x)^T dy in 64x64 tiles (x through registers, dy copied K-major: wgmma reads tf32 from shared memory only K-major)", dnn.conv = {dilation = array<i64: 1, 1>, direction = "wgrad", flip = false, groups = 1 : i64, operands = array<i64: 1, 0>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
  %c2139095040_i32 = arith.constant 2139095040 : i32
  %c-8192_i32 = arith.constant -8192 : i32
  %c4095_i32 = arith.constant 4095 : i32
  %c1_i32 = arith.constant 1 : i32
  %c13_i32 = arith.constant 13 : i32
  %cst = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x64x6x6xf32>
  linalg.generic {indexing_maps = [#wg_map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<1x64x6x6xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<1x64x4x4xf32>
  linalg.generic {indexing_maps = [#wg_map, #wg_map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg1 : memref<1x64x4x4xf32, strided<[1024, 1, 256, 64]>>) outs(%alloc_0 : memref<1x64x4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.bitcast %in : f32 to i32
    %1 = arith.shrui %0, %c13_i32 : i32
    %2 = arith.andi %1, %c1_i32 : i32
    %3 = arith.addi %0, %c4095_i32 : i32
    %4 = arith.addi %3, %2 : i32
    %5 = arith.andi %4, %c-8192_i32 : i32
    %6 = arith.andi %0, %c2139095040_i32 : i32
    %7 = arith.cmpi ne, %6, %c2139095040_i32 : i32
    %8 = arith.select %7, %5, %0 : i32
    %9 = arith.bitcast %8 : i32 to f32
    linalg.yield %9 : f32
  }
  %subview = memref.subview %alloc[0, 0, 1, 1] [1, 64, 4, 4] [1, 1, 1, 1] : memref<1x64x6x6xf32> to memref<1x64x4x4xf32, strided<[2304, 36, 6, 1], offset: 7>>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_0 : memref<1x64x4x4xf32>) outs(%subview : memref<1x64x4x4xf32, strided<[2304, 36, 6, 1], offset: 7>>)
  %expand_shape = memref.expand_shape %alloc [[0], [1, 2], [3], [4]] output_shape [1, 1, 64, 6, 6] : memref<1x64x6x6xf32> into memref<1x1x64x6x6xf32>
  %expand_shape_1 = memref.expand_shape %arg0 [[0], [1, 2], [3], [4]] output_shape [1, 1, 16, 4, 4] : memref<1x16x4x4xf32, strided<[256, 1, 64, 16]>> into memref<1x1x16x4x4xf32, strided<[256, 16, 1, 64, 16]>>
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<1x16x64x3x3xf32>
  linalg.generic {indexing_maps = [#wg_map1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_2 : memref<1x16x64x3x3xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  linalg.generic {indexing_maps = [#wg_map2, #wg_map3, #wg_map4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%expand_shape, %expand_shape_1 : memref<1x1x64x6x6xf32>, memref<1x1x16x4x4xf32, strided<[256, 16, 1, 64, 16]>>) outs(%alloc_2 : memref<1x16x64x3x3xf32>) {
  ^bb0(%in: f32, %in_3: f32, %out: f32):
    %0 = arith.bitcast %in_3 : f32 to i32
    %1 = arith.shrui %0, %c13_i32 : i32
    %2 = arith.andi %1, %c1_i32 : i32
    %3 = arith.addi %0, %c4095_i32 : i32
    %4 = arith.addi %3, %2 : i32
    %5 = arith.andi %4, %c-8192_i32 : i32
    %6 = arith.andi %0, %c2139095040_i32 : i32
    %7 = arith.cmpi ne, %6, %c2139095040_i32 : i32
    %8 = arith.select %7, %5, %0 : i32
    %9 = arith.bitcast %8 : i32 to f32
    %10 = arith.mulf %in, %9 : f32
    %11 = arith.addf %out, %10 : f32
    linalg.yield %11 : f32
  }
  %collapse_shape = memref.collapse_shape %alloc_2 [[0, 1], [2], [3], [4]] : memref<1x16x64x3x3xf32> into memref<16x64x3x3xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<16x64x3x3xf32>) outs(%arg2 : memref<16x64x3x3xf32, strided<[576, 1, 192, 64]>>)
  return
}
