// dnn-depthwise-conv lowers a simt-depthwise kernel, a depthwise convolution
// (groups == C, its dnn.conv attribute) with its pointwise epilogue, to one
// gpu.launch: the block first copies its channels' filters into shared
// memory as [tap, channel] (144 taps over 128 threads: a load and store each,
// and a second for 16 of them), then each thread owns 8 channels of 4 outputs along W of
// a channels-last x, loads the 3 x 6 x pixels of their windows as 16-byte
// vectors (through an identity-layout view of x in memory order), reads each
// tap's 8 weights as one 16-byte vector from shared memory, and stores the
// bias + relu epilogue's results as 16-byte vectors. A kernel whose x is not
// channels-last is handed to simt-generic, its reason saying why. Then a
// depthwise data gradient, a filter gradient (two launches) and a grouped
// convolution of a few channels a group (below).

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-depthwise-conv,canonicalize,cse)' | FileCheck %s

// CHECK-LABEL: func.func private @depthwise_bias_relu_nhwc
// CHECK-NOT:     linalg.generic
// CHECK:         gpu.launch
// CHECK-SAME:      workgroup(%[[SMEM:.*]] : memref<144xbf16, #gpu.address_space<workgroup>>)
// CHECK:           memref.load %{{.*}} : memref<16x1x3x3xbf16>
// CHECK:           memref.store %{{.*}}, %[[SMEM]]
// CHECK:           scf.if
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

// -----

// A depthwise data gradient at stride 2 (3x3, pre 1): the forward's launch
// and filter staging; a thread's tile of 4 dx outputs along W is two stride
// phases, so its windows read 3 dy columns a filter row, not 6 (9 loads for
// the 3 rows, each zeroed by a select where the row's division by the
// stride is not exact or the pixel is off dy), and stores 4 vectors.

// CHECK-LABEL: func.func private @depthwise_dgrad_stride2_nhwc
// CHECK-NOT:     linalg.generic
// CHECK:         gpu.launch
// CHECK-SAME:      workgroup(%[[SMEM:.*]] : memref<144xbf16, #gpu.address_space<workgroup>>)
// CHECK:           gpu.barrier
// CHECK:           memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [2, 5, 5, 16]
// CHECK:           arith.remui %{{.*}}, %c2
// CHECK-COUNT-9:   vector.load %{{.*}} : memref<2x5x5x16xbf16>, vector<8xbf16>
// CHECK-NOT:       vector.load %{{.*}} : memref<2x5x5x16xbf16>
// CHECK:           vector.store %{{.*}} : memref<2x9x9x16xbf16>, vector<8xbf16>
// CHECK-COUNT-3:   vector.store %{{.*}} : memref<2x9x9x16xbf16>, vector<8xbf16>
// CHECK-NOT:     linalg.generic
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#map2 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + -d6 + 2, d4 + -d7 + 2)>
#map3 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d2, d6, d7)>
#map4 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
module {
  func.func private @depthwise_dgrad_stride2_nhwc(%arg0: memref<2x16x5x5xbf16, strided<[400, 1, 80, 16]>>, %arg1: memref<16x1x3x3xbf16>, %arg2: memref<2x16x9x9xbf16, strided<[1296, 1, 144, 16]>> {bufferize.result}) attributes {dnn.anchor = "conv_dgrad", dnn.config = {block = [128, 1, 1], strategy = "simt-depthwise", tile = [1, 4], vector = 8 : i64}, dnn.config_reason = "heuristics", dnn.conv = {dilation = array<i64: 1, 1>, direction = "dgrad", flip = false, groups = 16 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 2, 2>}, dnn.kernel} {
    %cst = arith.constant 0.000000e+00 : f32
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<2x16x11x11xf32>
    linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<2x16x11x11xf32>) {
    ^bb0(%out: f32):
      linalg.yield %cst : f32
    }
    %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<2x16x5x5xf32>
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : memref<2x16x5x5xbf16, strided<[400, 1, 80, 16]>>) outs(%alloc_0 : memref<2x16x5x5xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      linalg.yield %0 : f32
    }
    %subview = memref.subview %alloc[0, 0, 1, 1] [2, 16, 5, 5] [1, 1, 2, 2] : memref<2x16x11x11xf32> to memref<2x16x5x5xf32, strided<[1936, 121, 22, 2], offset: 12>>
    linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_0 : memref<2x16x5x5xf32>) outs(%subview : memref<2x16x5x5xf32, strided<[1936, 121, 22, 2], offset: 12>>)
    %expand_shape = memref.expand_shape %alloc [[0], [1, 2], [3], [4]] output_shape [2, 16, 1, 11, 11] : memref<2x16x11x11xf32> into memref<2x16x1x11x11xf32>
    %expand_shape_1 = memref.expand_shape %arg1 [[0, 1], [2], [3], [4]] output_shape [16, 1, 1, 3, 3] : memref<16x1x3x3xbf16> into memref<16x1x1x3x3xbf16>
    %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<2x16x1x9x9xf32>
    linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_2 : memref<2x16x1x9x9xf32>) {
    ^bb0(%out: f32):
      linalg.yield %cst : f32
    }
    linalg.generic {indexing_maps = [#map2, #map3, #map4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%expand_shape, %expand_shape_1 : memref<2x16x1x11x11xf32>, memref<16x1x1x3x3xbf16>) outs(%alloc_2 : memref<2x16x1x9x9xf32>) {
    ^bb0(%in: f32, %in_4: bf16, %out: f32):
      %0 = arith.extf %in_4 : bf16 to f32
      %1 = arith.mulf %in, %0 : f32
      %2 = arith.addf %out, %1 : f32
      linalg.yield %2 : f32
    }
    %alloc_3 = memref.alloc() {alignment = 64 : i64} : memref<2x16x1x9x9xbf16>
    linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_2 : memref<2x16x1x9x9xf32>) outs(%alloc_3 : memref<2x16x1x9x9xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %0 = arith.truncf %in : f32 to bf16
      linalg.yield %0 : bf16
    }
    %collapse_shape = memref.collapse_shape %alloc_3 [[0], [1, 2], [3], [4]] : memref<2x16x1x9x9xbf16> into memref<2x16x9x9xbf16>
    linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<2x16x9x9xbf16>) outs(%arg2 : memref<2x16x9x9xbf16, strided<[1296, 1, 144, 16]>>)
    return
  }
}

// -----

// A depthwise filter gradient: two launches and a workspace of the partial
// sums [split, taps, C]. The first: a thread owns 4 channels and one filter
// row (3 taps x 4 channels of f32 accumulators: a depthwise thread holds at
// most 32, so that many warps fit an SM), the block's 30 threads 3 rows x
// 10 lanes; each thread walks its work items (runs of 8 output pixels along
// W), loading the run's 8 dy pixels and its row's 10 x pixels; then the
// block sums its lanes in shared memory a tap at a time and writes its
// partials. The second: a warp per tap and channel vector, lane l summing
// partials l, l + 32, ... (here 2: one shuffle adds lanes 0 and 1), lane 0
// storing dw per channel (its channels are not contiguous).

// CHECK-LABEL: func.func private @depthwise_wgrad_nhwc
// CHECK-NOT:     linalg.generic
// CHECK:         %[[WS:.*]] = memref.alloc() : memref<2x9x16xf32>
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}} = %c4, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c30, {{.*}} = %c1, {{.*}} = %c1)
// CHECK-SAME:      workgroup(%[[SMEM:.*]] : memref<120xf32, #gpu.address_space<workgroup>>)
// CHECK:           scf.for {{.*}} iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>)
// CHECK-COUNT-8:     vector.load %{{.*}} : memref<2x9x9x16xbf16>, vector<4xbf16>
// CHECK-COUNT-10:    vector.load %{{.*}} : memref<2x9x9x16xbf16>, vector<4xbf16>
// CHECK-NOT:         vector.load %{{.*}} : memref<2x9x9x16xbf16>
// CHECK:           vector.store %{{.*}}, %[[SMEM]]
// CHECK:           gpu.barrier
// CHECK:           scf.for
// CHECK:             vector.load %[[SMEM]]
// CHECK:           vector.store %{{.*}}, %[[WS]][%{{.*}}, %{{.*}}, %{{.*}}] : memref<2x9x16xf32>, vector<4xf32>
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %c5, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256,
// CHECK:           scf.for %{{.*}} = %{{.*}} to %c2 step %c32
// CHECK:             vector.load %[[WS]]
// CHECK-COUNT-4:   gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK-NOT:       gpu.shuffle
// CHECK-COUNT-4:   memref.store %{{.*}} : memref<16x1x3x3xbf16>
// CHECK-NOT:     linalg.generic
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#map2 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d2, d3 + d6, d4 + d7)>
#map3 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d1, d6, d7)>
#map4 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
module {
  func.func private @depthwise_wgrad_nhwc(%arg0: memref<2x16x9x9xbf16, strided<[1296, 1, 144, 16]>>, %arg1: memref<2x16x9x9xbf16, strided<[1296, 1, 144, 16]>>, %arg2: memref<16x1x3x3xbf16> {bufferize.result}) attributes {dnn.anchor = "conv_wgrad", dnn.config = {block = [32, 1, 1], split = 2 : i64, strategy = "simt-depthwise", tile = [1, 8], vector = 4 : i64}, dnn.config_reason = "heuristics", dnn.conv = {dilation = array<i64: 1, 1>, direction = "wgrad", flip = false, groups = 16 : i64, operands = array<i64: 1, 0>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
    %cst = arith.constant 0.000000e+00 : f32
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<2x16x11x11xf32>
    linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<2x16x11x11xf32>) {
    ^bb0(%out: f32):
      linalg.yield %cst : f32
    }
    %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<2x16x9x9xf32>
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg1 : memref<2x16x9x9xbf16, strided<[1296, 1, 144, 16]>>) outs(%alloc_0 : memref<2x16x9x9xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      linalg.yield %0 : f32
    }
    %subview = memref.subview %alloc[0, 0, 1, 1] [2, 16, 9, 9] [1, 1, 1, 1] : memref<2x16x11x11xf32> to memref<2x16x9x9xf32, strided<[1936, 121, 11, 1], offset: 12>>
    linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_0 : memref<2x16x9x9xf32>) outs(%subview : memref<2x16x9x9xf32, strided<[1936, 121, 11, 1], offset: 12>>)
    %expand_shape = memref.expand_shape %alloc [[0], [1, 2], [3], [4]] output_shape [2, 16, 1, 11, 11] : memref<2x16x11x11xf32> into memref<2x16x1x11x11xf32>
    %expand_shape_1 = memref.expand_shape %arg0 [[0], [1, 2], [3], [4]] output_shape [2, 16, 1, 9, 9] : memref<2x16x9x9xbf16, strided<[1296, 1, 144, 16]>> into memref<2x16x1x9x9xbf16, strided<[1296, 1, 1, 144, 16]>>
    %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<16x1x1x3x3xf32>
    linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_2 : memref<16x1x1x3x3xf32>) {
    ^bb0(%out: f32):
      linalg.yield %cst : f32
    }
    linalg.generic {indexing_maps = [#map2, #map3, #map4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%expand_shape, %expand_shape_1 : memref<2x16x1x11x11xf32>, memref<2x16x1x9x9xbf16, strided<[1296, 1, 1, 144, 16]>>) outs(%alloc_2 : memref<16x1x1x3x3xf32>) {
    ^bb0(%in: f32, %in_4: bf16, %out: f32):
      %0 = arith.extf %in_4 : bf16 to f32
      %1 = arith.mulf %in, %0 : f32
      %2 = arith.addf %out, %1 : f32
      linalg.yield %2 : f32
    }
    %alloc_3 = memref.alloc() {alignment = 64 : i64} : memref<16x1x1x3x3xbf16>
    linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_2 : memref<16x1x1x3x3xf32>) outs(%alloc_3 : memref<16x1x1x3x3xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %0 = arith.truncf %in : f32 to bf16
      linalg.yield %0 : bf16
    }
    %collapse_shape = memref.collapse_shape %alloc_3 [[0, 1], [2], [3], [4]] : memref<16x1x1x3x3xbf16> into memref<16x1x3x3xbf16>
    linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<16x1x3x3xbf16>) outs(%arg2 : memref<16x1x3x3xbf16>)
    return
  }
}

// -----

// A grouped convolution of 4 channels a group (4 groups, K = C = 16): a
// thread's 8 output channels are two groups, which read the 8 input
// channels of one 16-byte x vector; the block stages the filters as
// [tap, c, channel] (9 x 4 x 16), reading a tap's 4 filters of a channel as
// one vector (they are contiguous in the channels-last filter); for input channel c of the group, lanes
// 0-3 take span element c and lanes 4-7 element 4 + c (vector.from_elements
// of converted scalars), times the [tap, c] weights' vector.

// CHECK-LABEL: func.func private @grouped_4_a_group_nhwc
// CHECK-NOT:     linalg.generic
// CHECK:         gpu.launch
// CHECK-SAME:      workgroup(%[[SMEM:.*]] : memref<576xbf16, #gpu.address_space<workgroup>>)
// CHECK:           %[[W:.*]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [16, 3, 3, 4], strides: [36, 12, 4, 1] : memref<16x4x3x3xbf16, strided<[36, 1, 12, 4]>> to memref<16x3x3x4xbf16>
// CHECK:           vector.load %[[W]]{{.*}} : memref<16x3x3x4xbf16>, vector<4xbf16>
// CHECK-COUNT-4:   memref.store %{{.*}}, %[[SMEM]]
// CHECK:           scf.if
// CHECK:           gpu.barrier
// CHECK-COUNT-12:  vector.load %[[SMEM]]
// CHECK:           %[[X:.*]] = vector.load %{{.*}} : memref<2x6x6x16xbf16>, vector<8xbf16>
// CHECK:           %[[XF:.*]] = arith.extf %{{.*}} : vector<8xbf16> to vector<8xf32>
// CHECK:           %[[C0:.*]] = vector.extract %[[XF]][0]
// CHECK:           %[[C4:.*]] = vector.extract %[[XF]][4]
// CHECK:           vector.from_elements %[[C0]], %[[C0]], %[[C0]], %[[C0]], %[[C4]], %[[C4]], %[[C4]], %[[C4]] : vector<8xf32>
// CHECK:           arith.mulf {{.*}} fastmath<contract> : vector<8xf32>
// CHECK:           vector.store %{{.*}} : memref<2x6x6x16xbf16>, vector<8xbf16>
// CHECK-NOT:     linalg.generic
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#map2 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
#map3 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
#map4 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
module {
  func.func private @grouped_4_a_group_nhwc(%arg0: memref<2x16x6x6xbf16, strided<[576, 1, 96, 16]>>, %arg1: memref<16x4x3x3xbf16, strided<[36, 1, 12, 4]>>, %arg2: memref<2x16x6x6xbf16, strided<[576, 1, 96, 16]>> {bufferize.result}) attributes {dnn.anchor = "conv_fprop", dnn.config = {block = [128, 1, 1], strategy = "simt-depthwise", tile = [1, 4], vector = 8 : i64}, dnn.config_reason = "heuristics", dnn.conv = {dilation = array<i64: 1, 1>, direction = "fprop", flip = false, groups = 4 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
    %cst = arith.constant 0.000000e+00 : f32
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<2x16x8x8xf32>
    linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<2x16x8x8xf32>) {
    ^bb0(%out: f32):
      linalg.yield %cst : f32
    }
    %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<2x16x6x6xf32>
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : memref<2x16x6x6xbf16, strided<[576, 1, 96, 16]>>) outs(%alloc_0 : memref<2x16x6x6xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      linalg.yield %0 : f32
    }
    %subview = memref.subview %alloc[0, 0, 1, 1] [2, 16, 6, 6] [1, 1, 1, 1] : memref<2x16x8x8xf32> to memref<2x16x6x6xf32, strided<[1024, 64, 8, 1], offset: 9>>
    linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_0 : memref<2x16x6x6xf32>) outs(%subview : memref<2x16x6x6xf32, strided<[1024, 64, 8, 1], offset: 9>>)
    %expand_shape = memref.expand_shape %alloc [[0], [1, 2], [3], [4]] output_shape [2, 4, 4, 8, 8] : memref<2x16x8x8xf32> into memref<2x4x4x8x8xf32>
    %expand_shape_1 = memref.expand_shape %arg1 [[0, 1], [2], [3], [4]] output_shape [4, 4, 4, 3, 3] : memref<16x4x3x3xbf16, strided<[36, 1, 12, 4]>> into memref<4x4x4x3x3xbf16, strided<[144, 36, 1, 12, 4]>>
    %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<2x4x4x6x6xf32>
    linalg.generic {indexing_maps = [#map1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_2 : memref<2x4x4x6x6xf32>) {
    ^bb0(%out: f32):
      linalg.yield %cst : f32
    }
    linalg.generic {indexing_maps = [#map2, #map3, #map4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%expand_shape, %expand_shape_1 : memref<2x4x4x8x8xf32>, memref<4x4x4x3x3xbf16, strided<[144, 36, 1, 12, 4]>>) outs(%alloc_2 : memref<2x4x4x6x6xf32>) {
    ^bb0(%in: f32, %in_4: bf16, %out: f32):
      %0 = arith.extf %in_4 : bf16 to f32
      %1 = arith.mulf %in, %0 : f32
      %2 = arith.addf %out, %1 : f32
      linalg.yield %2 : f32
    }
    %alloc_3 = memref.alloc() {alignment = 64 : i64} : memref<2x4x4x6x6xbf16>
    linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_2 : memref<2x4x4x6x6xf32>) outs(%alloc_3 : memref<2x4x4x6x6xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %0 = arith.truncf %in : f32 to bf16
      linalg.yield %0 : bf16
    }
    %collapse_shape = memref.collapse_shape %alloc_3 [[0], [1, 2], [3], [4]] : memref<2x4x4x6x6xbf16> into memref<2x16x6x6xbf16>
    linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<2x16x6x6xbf16>) outs(%arg2 : memref<2x16x6x6xbf16, strided<[576, 1, 96, 16]>>)
    return
  }
}
