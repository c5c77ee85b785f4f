// dnn-depthwise-conv lowers a simt-depthwise kernel, a depthwise convolution
// (groups == C, its dnn.conv attribute) with its pointwise epilogue, to one
// gpu.launch: the block first copies its channels' filters into shared memory
// as [tap, channel], then each thread owns 8 channels of 4 outputs along W of
// a channels-last x, loads the 3 x 6 x pixels of their windows as 16-byte
// vectors (through an identity-layout view of x in memory order), reads each
// tap's 8 weights as one 16-byte vector from shared memory, and stores the
// bias + relu epilogue's results as 16-byte vectors. A kernel whose x is not
// channels-last is handed to simt-generic, its reason saying why.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-depthwise-conv,canonicalize,cse)' | FileCheck %s

// CHECK-LABEL: func.func private @depthwise_bias_relu_nhwc
// CHECK-NOT:     linalg.generic
// CHECK:         gpu.launch
// CHECK-SAME:      workgroup(%[[SMEM:.*]] : memref<144xbf16, #gpu.address_space<workgroup>>)
// CHECK:           scf.for
// CHECK:             memref.load %{{.*}} : memref<16x1x3x3xbf16>
// CHECK:             memref.store %{{.*}}, %[[SMEM]]
// CHECK:           gpu.barrier
// CHECK:           memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [2, 8, 8, 16]
// CHECK-COUNT-18:  vector.load %{{.*}} : memref<2x8x8x16xbf16>, vector<8xbf16>
// CHECK:           vector.load %[[SMEM]]{{.*}} : memref<144xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK:           arith.mulf {{.*}} fastmath<contract> : vector<8xf32>
// CHECK:           arith.maximumf
// CHECK:           vector.store %{{.*}} : memref<2x8x8x16xbf16>, vector<8xbf16>
// CHECK-NOT:     linalg.generic
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#map2 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
#map3 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
#map4 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
#map5 = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
module {
  func.func private @depthwise_bias_relu_nhwc(%arg0: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>, %arg1: memref<16x1x3x3xbf16>, %arg2: memref<1x16x1x1xbf16>, %arg3: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>> {bufferize.result}) attributes {dnn.anchor = "conv_fprop", dnn.config = {block = [128, 1, 1], strategy = "simt-depthwise", tile = [1, 4], vector = 8 : i64}, dnn.config_reason = "heuristics", dnn.conv = {dilation = array<i64: 1, 1>, direction = "fprop", flip = false, groups = 16 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
    %cst = arith.constant 0.000000e+00 : f32
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<2x16x10x10xf32>
    linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<2x16x10x10xf32>) {
    ^bb0(%out: f32):
      linalg.yield %cst : f32
    }
    %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<2x16x8x8xf32>
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>) outs(%alloc_0 : memref<2x16x8x8xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      linalg.yield %0 : f32
    }
    %subview = memref.subview %alloc[0, 0, 1, 1] [2, 16, 8, 8] [1, 1, 1, 1] : memref<2x16x10x10xf32> to memref<2x16x8x8xf32, strided<[1600, 100, 10, 1], offset: 11>>
    linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_0 : memref<2x16x8x8xf32>) outs(%subview : memref<2x16x8x8xf32, strided<[1600, 100, 10, 1], offset: 11>>)
    %expand_shape = memref.expand_shape %alloc [[0], [1, 2], [3], [4]] output_shape [2, 16, 1, 10, 10] : memref<2x16x10x10xf32> into memref<2x16x1x10x10xf32>
    %expand_shape_1 = memref.expand_shape %arg1 [[0, 1], [2], [3], [4]] output_shape [16, 1, 1, 3, 3] : memref<16x1x3x3xbf16> into memref<16x1x1x3x3xbf16>
    %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<2x16x1x8x8xf32>
    linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_2 : memref<2x16x1x8x8xf32>) {
    ^bb0(%out: f32):
      linalg.yield %cst : f32
    }
    linalg.generic {indexing_maps = [#map2, #map3, #map4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%expand_shape, %expand_shape_1 : memref<2x16x1x10x10xf32>, memref<16x1x1x3x3xbf16>) outs(%alloc_2 : memref<2x16x1x8x8xf32>) {
    ^bb0(%in: f32, %in_3: bf16, %out: f32):
      %0 = arith.extf %in_3 : bf16 to f32
      %1 = arith.mulf %in, %0 : f32
      %2 = arith.addf %out, %1 : f32
      linalg.yield %2 : f32
    }
    %collapse_shape = memref.collapse_shape %alloc_2 [[0], [1, 2], [3], [4]] : memref<2x16x1x8x8xf32> into memref<2x16x8x8xf32>
    linalg.generic {indexing_maps = [#map, #map5, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%collapse_shape, %arg2 : memref<2x16x8x8xf32>, memref<1x16x1x1xbf16>) outs(%arg3 : memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>) {
    ^bb0(%in: f32, %in_3: bf16, %out: bf16):
      %0 = arith.extf %in_3 : bf16 to f32
      %1 = arith.addf %in, %0 : f32
      %2 = arith.maximumf %1, %cst : f32
      %3 = arith.truncf %2 : f32 to bf16
      linalg.yield %3 : bf16
    }
    return
  }
}

// -----

// CHECK-LABEL: func.func private @depthwise_nchw_falls_back
// CHECK-SAME:    dnn.config = {block = [256, 1, 1], strategy = "simt-generic"}
// CHECK-SAME:    dnn.config_reason = "simt-depthwise does not apply (x's channels are not contiguous): simt-generic, one thread per output; heuristics: heuristics"
// CHECK:         linalg.generic
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#map2 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
#map3 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
#map4 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
#map5 = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
module {
  func.func private @depthwise_nchw_falls_back(%arg0: memref<2x16x8x8xbf16>, %arg1: memref<16x1x3x3xbf16>, %arg2: memref<1x16x1x1xbf16>, %arg3: memref<2x16x8x8xbf16> {bufferize.result}) attributes {dnn.anchor = "conv_fprop", dnn.config = {block = [128, 1, 1], strategy = "simt-depthwise", tile = [1, 4], vector = 8 : i64}, dnn.config_reason = "heuristics", dnn.conv = {dilation = array<i64: 1, 1>, direction = "fprop", flip = false, groups = 16 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
    %cst = arith.constant 0.000000e+00 : f32
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<2x16x10x10xf32>
    linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<2x16x10x10xf32>) {
    ^bb0(%out: f32):
      linalg.yield %cst : f32
    }
    %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<2x16x8x8xf32>
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : memref<2x16x8x8xbf16>) outs(%alloc_0 : memref<2x16x8x8xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      linalg.yield %0 : f32
    }
    %subview = memref.subview %alloc[0, 0, 1, 1] [2, 16, 8, 8] [1, 1, 1, 1] : memref<2x16x10x10xf32> to memref<2x16x8x8xf32, strided<[1600, 100, 10, 1], offset: 11>>
    linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_0 : memref<2x16x8x8xf32>) outs(%subview : memref<2x16x8x8xf32, strided<[1600, 100, 10, 1], offset: 11>>)
    %expand_shape = memref.expand_shape %alloc [[0], [1, 2], [3], [4]] output_shape [2, 16, 1, 10, 10] : memref<2x16x10x10xf32> into memref<2x16x1x10x10xf32>
    %expand_shape_1 = memref.expand_shape %arg1 [[0, 1], [2], [3], [4]] output_shape [16, 1, 1, 3, 3] : memref<16x1x3x3xbf16> into memref<16x1x1x3x3xbf16>
    %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<2x16x1x8x8xf32>
    linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_2 : memref<2x16x1x8x8xf32>) {
    ^bb0(%out: f32):
      linalg.yield %cst : f32
    }
    linalg.generic {indexing_maps = [#map2, #map3, #map4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%expand_shape, %expand_shape_1 : memref<2x16x1x10x10xf32>, memref<16x1x1x3x3xbf16>) outs(%alloc_2 : memref<2x16x1x8x8xf32>) {
    ^bb0(%in: f32, %in_3: bf16, %out: f32):
      %0 = arith.extf %in_3 : bf16 to f32
      %1 = arith.mulf %in, %0 : f32
      %2 = arith.addf %out, %1 : f32
      linalg.yield %2 : f32
    }
    %collapse_shape = memref.collapse_shape %alloc_2 [[0], [1, 2], [3], [4]] : memref<2x16x1x8x8xf32> into memref<2x16x8x8xf32>
    linalg.generic {indexing_maps = [#map, #map5, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%collapse_shape, %arg2 : memref<2x16x8x8xf32>, memref<1x16x1x1xbf16>) outs(%arg3 : memref<2x16x8x8xbf16>) {
    ^bb0(%in: f32, %in_3: bf16, %out: bf16):
      %0 = arith.extf %in_3 : bf16 to f32
      %1 = arith.addf %in, %0 : f32
      %2 = arith.maximumf %1, %cst : f32
      %3 = arith.truncf %2 : f32 to bf16
      linalg.yield %3 : bf16
    }
    return
  }
}
