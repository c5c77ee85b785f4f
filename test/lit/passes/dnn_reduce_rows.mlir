// dnn-reduce-rows lowers a simt-reduce kernel whose loops all run over the
// same rows to one gpu.launch, a block per row here (64 threads, vectors of
// 4): the max and the sum are per-thread folds, warp shuffles and a
// shared-memory step across the two warps.
//
// Rows of at most 32 elements per thread are held in registers: x is loaded
// once, exp(x - max) is evaluated once per element (the hardware's ex2 of a
// pre-scaled argument) and reused by the sum and the output; the exp written
// into the output buffer, which the last statement overwrites, is never
// stored. The division by the per-row max(s, 1) is one reciprocal and a
// multiply per element. 64 elements fill a quarter of the block's first
// vector sweep: the threads past the end read the last vector and are masked.
// Longer rows loop over their vectors, pass by pass, and recompute.
// A kernel that is not a row program goes to simt-generic, with the reason.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-reduce-rows,canonicalize,cse)' | FileCheck %s

// CHECK-LABEL: func.func private @softmax(
//  CHECK-SAME:     %[[X:.*]]: memref<4x64xf32>, %[[Y:.*]]: memref<4x64xf32>)
//  CHECK-SAME:     strategy = "simt-reduce"
//       CHECK:   gpu.launch blocks(%[[ROW:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %c4, {{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %c64, {{.*}}) workgroup(%[[SMEM:.*]] : memref<4xf32, #gpu.address_space<workgroup>>)
//   CHECK-NOT:     scf.for
//       CHECK:     %[[J0:.*]] = arith.muli %[[T]], %c4 : index
//  CHECK-NEXT:     %[[IN:.*]] = arith.cmpi ult, %[[J0]], %c64 : index
//  CHECK-NEXT:     %[[J:.*]] = arith.minui %[[J0]], %c60 : index
//  CHECK-NEXT:     vector.load %[[X]][%[[ROW]], %[[J]]] {alignment = 16 : i64} : memref<4x64xf32>, vector<4xf32>
//   CHECK-NOT:     vector.load
//       CHECK:     %[[PART:.*]] = arith.select %[[IN]], %{{.*}}, %{{.*}} : f32
//  CHECK-NEXT:     gpu.shuffle  xor %[[PART]], %c16_i32, %c32_i32 : f32
//       CHECK:     gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
//       CHECK:     scf.if
//  CHECK-NEXT:       memref.store %{{.*}}, %[[SMEM]][%{{.*}}] : memref<4xf32, #gpu.address_space<workgroup>>
//       CHECK:     gpu.barrier
//       CHECK:     %[[W0:.*]] = memref.load %[[SMEM]][%c0]
//  CHECK-NEXT:     %[[W1:.*]] = memref.load %[[SMEM]][%c1]
//  CHECK-NEXT:     %[[MAX:.*]] = arith.maximumf %[[W0]], %[[W1]] : f32
//  CHECK-COUNT-4:  llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
//   CHECK-NOT:     llvm.call_intrinsic
//       CHECK:     gpu.shuffle  xor %{{.*}}, %c16_i32, %c32_i32 : f32
//       CHECK:     gpu.barrier
//       CHECK:     memref.load %[[SMEM]][%c2]
//   CHECK-NOT:     llvm.call_intrinsic
//   CHECK-NOT:     vector.load
//       CHECK:     %[[SAFE:.*]] = arith.maximumf
//  CHECK-NEXT:     %[[R:.*]] = arith.divf %{{.*}}, %[[SAFE]] : f32
//  CHECK-COUNT-4:  arith.mulf %{{.*}}, %[[R]] : f32
//   CHECK-NOT:     arith.divf
//       CHECK:     scf.if %[[IN]] {
//  CHECK-NEXT:       vector.store %{{.*}}, %[[Y]][%[[ROW]], %[[J]]] {alignment = 16 : i64}
//   CHECK-NOT:     vector.store
//       CHECK:     gpu.terminator
//   CHECK-NOT:   linalg.generic

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>

func.func private @softmax(%arg0: memref<4x64xf32>, %arg1: memref<4x64xf32>) attributes {dnn.config = {block = [64, 1, 1], strategy = "simt-reduce", vector = 4 : i64}, dnn.kernel} {
  %cst = arith.constant 1.000000e+00 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %cst_1 = arith.constant 0xFF800000 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<4x1xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%alloc : memref<4x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<4x64xf32>) outs(%alloc : memref<4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %alloc : memref<4x64xf32>, memref<4x1xf32>) outs(%arg1 : memref<4x64xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %0 = arith.cmpf oeq, %in_2, %cst_1 : f32
    %1 = arith.select %0, %cst_0, %in_2 : f32
    %2 = arith.subf %in, %1 : f32
    %3 = math.exp %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%alloc : memref<4x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_0 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg1 : memref<4x64xf32>) outs(%alloc : memref<4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg1, %alloc : memref<4x64xf32>, memref<4x1xf32>) outs(%arg1 : memref<4x64xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %0 = arith.maximumf %in_2, %cst : f32
    %1 = arith.divf %in, %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// Two vectors a thread, held: both loaded before the first shuffle, read
// again from registers by the output pass; no loop, no guard (the row is a
// multiple of the sweep).

// CHECK-LABEL: func.func private @rms(
//  CHECK-SAME:     %[[X:.*]]: memref<2x512xf32>, %[[Y:.*]]: memref<2x512xf32>)
//       CHECK:   gpu.launch blocks(%[[ROW:.*]], %{{.*}}, %{{.*}}) in {{.*}} threads(%[[T:.*]], %{{.*}}, %{{.*}}) in
//   CHECK-NOT:     scf.for
//       CHECK:     %[[J0:.*]] = arith.muli %[[T]], %c4 : index
//  CHECK-NEXT:     vector.load %[[X]][%[[ROW]], %[[J0]]]
//       CHECK:     %[[V1:.*]] = arith.addi %[[T]], %c64 : index
//  CHECK-NEXT:     %[[J1:.*]] = arith.muli %[[V1]], %c4 : index
//  CHECK-NEXT:     vector.load %[[X]][%[[ROW]], %[[J1]]]
//   CHECK-NOT:     vector.load
//       CHECK:     gpu.shuffle
//       CHECK:     gpu.barrier
//       CHECK:     math.rsqrt
//   CHECK-NOT:     scf.if
//       CHECK:     vector.store %{{.*}}, %[[Y]][%[[ROW]], %[[J0]]]
//   CHECK-NOT:     vector.load
//       CHECK:     vector.store %{{.*}}, %[[Y]][%[[ROW]], %[[J1]]]
//       CHECK:     gpu.terminator

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>

func.func private @rms(%x: memref<2x512xf32>, %y: memref<2x512xf32>) attributes {dnn.config = {block = [64, 1, 1], strategy = "simt-reduce", vector = 4 : i64}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %n = arith.constant 5.120000e+02 : f32
  %s = memref.alloc() {alignment = 64 : i64} : memref<2x1xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%s : memref<2x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%x : memref<2x512xf32>) outs(%s : memref<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %s : memref<2x512xf32>, memref<2x1xf32>) outs(%y : memref<2x512xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %0 = arith.divf %in_0, %n : f32
    %1 = math.rsqrt %0 : f32
    %2 = arith.mulf %in, %1 : f32
    linalg.yield %2 : f32
  }
  return
}

// -----

// 64 elements a thread: too many to hold. Each pass is a loop over the
// thread's 16 vectors that reads x again; exp is recomputed by the sum's
// pass and the output's.

// CHECK-LABEL: func.func private @softmax_looped(
//  CHECK-SAME:     %[[X:.*]]: memref<2x4096xf32>, %[[Y:.*]]: memref<2x4096xf32>)
//       CHECK:     scf.for %{{.*}} = %c0 to %c16 step %c1 iter_args
//       CHECK:       vector.load %[[X]]
//       CHECK:       arith.maximumf
//       CHECK:       scf.yield
//       CHECK:     gpu.barrier
//       CHECK:     scf.for %{{.*}} = %c0 to %c16 step %c1 iter_args
//       CHECK:       vector.load %[[X]]
//  CHECK-COUNT-4:    llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
//       CHECK:       scf.yield
//       CHECK:     gpu.barrier
//       CHECK:     scf.for %{{.*}} = %c0 to %c16 step %c1 {
//       CHECK:       vector.load %[[X]]
//  CHECK-COUNT-4:    llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
//       CHECK:       vector.store %{{.*}}, %[[Y]]
//       CHECK:     gpu.terminator

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>

func.func private @softmax_looped(%arg0: memref<2x4096xf32>, %arg1: memref<2x4096xf32>) attributes {dnn.config = {block = [64, 1, 1], strategy = "simt-reduce", vector = 4 : i64}, dnn.kernel} {
  %cst = arith.constant 1.000000e+00 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %cst_1 = arith.constant 0xFF800000 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<2x1xf32>
  %e = memref.alloc() {alignment = 64 : i64} : memref<2x4096xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%alloc : memref<2x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<2x4096xf32>) outs(%alloc : memref<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %alloc : memref<2x4096xf32>, memref<2x1xf32>) outs(%e : memref<2x4096xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %0 = arith.subf %in, %in_2 : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%alloc : memref<2x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_0 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%e : memref<2x4096xf32>) outs(%alloc : memref<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%e, %alloc : memref<2x4096xf32>, memref<2x1xf32>) outs(%arg1 : memref<2x4096xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %0 = arith.divf %cst, %in_2 : f32
    %1 = arith.mulf %in, %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// A column sum, read through a transposing map.

// CHECK-LABEL: func.func private @columns(
//  CHECK-SAME:     dnn.config = {block = [64, 1, 1], strategy = "simt-generic"}
//  CHECK-SAME:     dnn.config_reason = "simt-reduce does not apply (an indexing map that is not a broadcast in loop order): simt-generic, one thread per row; heuristics: column sums"
//       CHECK:   linalg.generic
//   CHECK-NOT:   gpu.launch
func.func private @columns(%x: memref<8x4xf32>, %s: memref<1x4xf32>) attributes {dnn.config = {block = [64, 1, 1], strategy = "simt-reduce", vector = 4 : i64}, dnn.config_reason = "column sums", dnn.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (0, d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x4xf32>) outs(%s : memref<1x4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  }
  return
}

// -----

// A row of several dims: groupnorm's (sample, group) rows of 2 channels x 16
// positions, reduced over both, the scale a value per channel
// (memref<1x2x2x1>). Vectors lie inside a channel's positions: x is one
// vector load at (row, channel, position) from the element's place in the
// row, the scale one scalar load per vector at its channel.

// CHECK-LABEL: func.func private @group_rows(
//  CHECK-SAME:     %[[X:.*]]: memref<2x2x2x16xf32>, %[[S:.*]]: memref<1x2x2x1xf32>, %[[Y:.*]]: memref<2x2x2x16xf32>
//       CHECK:   gpu.launch
//       CHECK:     %[[J:.*]] = arith.minui %{{.*}}, %c28 : index
//  CHECK-NEXT:     %[[POS:.*]] = arith.remui %[[J]], %c16 : index
//  CHECK-NEXT:     %[[CH:.*]] = arith.divui %[[J]], %c16 : index
//  CHECK-NEXT:     vector.load %[[X]][%[[N:.*]], %[[G:.*]], %[[CH]], %[[POS]]] {alignment = 16 : i64} : memref<2x2x2x16xf32>, vector<4xf32>
//   CHECK-NOT:     vector.load
//       CHECK:     gpu.shuffle
//       CHECK:     %[[SCALE:.*]] = memref.load %[[S]][%c0, %[[G]], %[[CH]], %c0] : memref<1x2x2x1xf32>
//  CHECK-COUNT-4:  arith.mulf %{{.*}}, %[[SCALE]] : f32
//       CHECK:     vector.store %{{.*}}, %[[Y]][%[[N]], %[[G]], %[[CH]], %[[POS]]] {alignment = 16 : i64}
//   CHECK-NOT:   linalg.generic

#gmap = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#gmap1 = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
#gmap2 = affine_map<(d0, d1, d2, d3) -> (0, d1, d2, 0)>
func.func private @group_rows(%arg0: memref<2x2x2x16xf32>, %arg1: memref<1x2x2x1xf32>, %arg2: memref<2x2x2x16xf32> {bufferize.result}) attributes {dnn.anchor = "reduction", dnn.config = {block = [128, 1, 1], strategy = "simt-reduce", tile = [4], vector = 4 : i64}, dnn.kernel} {
  %cst = arith.constant 9.99999974E-6 : f32
  %cst_0 = arith.constant 1.000000e+00 : f32
  %cst_1 = arith.constant 3.200000e+01 : f32
  %cst_2 = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<2x2x1x1xf32>
  linalg.generic {indexing_maps = [#gmap], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<2x2x1x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  }
  %alloc_3 = memref.alloc() {alignment = 64 : i64} : memref<2x2x1x1xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc : memref<2x2x1x1xf32>) outs(%alloc_3 : memref<2x2x1x1xf32>)
  linalg.generic {indexing_maps = [#gmap, #gmap1], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%arg0 : memref<2x2x2x16xf32>) outs(%alloc_3 : memref<2x2x1x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#gmap, #gmap1, #gmap], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0, %alloc_3 : memref<2x2x2x16xf32>, memref<2x2x1x1xf32>) outs(%arg2 : memref<2x2x2x16xf32>) {
  ^bb0(%in: f32, %in_4: f32, %out: f32):
    %0 = arith.divf %in_4, %cst_1 : f32
    %1 = arith.subf %in, %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#gmap, #gmap1], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%arg2 : memref<2x2x2x16xf32>) outs(%alloc : memref<2x2x1x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#gmap, #gmap1, #gmap2, #gmap], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg2, %alloc, %arg1 : memref<2x2x2x16xf32>, memref<2x2x1x1xf32>, memref<1x2x2x1xf32>) outs(%arg2 : memref<2x2x2x16xf32>) {
  ^bb0(%in: f32, %in_4: f32, %in_5: f32, %out: f32):
    %0 = arith.divf %in_4, %cst_1 : f32
    %1 = arith.addf %0, %cst : f32
    %2 = math.sqrt %1 : f32
    %3 = arith.divf %cst_0, %2 : f32
    %4 = arith.mulf %in, %3 : f32
    %5 = arith.mulf %4, %in_5 : f32
    linalg.yield %5 : f32
  }
  return
}

// -----

// A row of several dims whose last are one element (cudnn-frontend's
// [rows, hidden, 1, 1]): the vectors run along hidden, each access through a
// view of the buffer without its trailing unit dims.

// CHECK-LABEL: func.func private @rms_unit_dims(
//  CHECK-SAME:     %[[X:.*]]: memref<2x512x1x1xf32>, %[[Y:.*]]: memref<2x512x1x1xf32>)
//       CHECK:   gpu.launch
//       CHECK:     %[[J0:.*]] = arith.muli %{{.*}}, %c4 : index
//       CHECK:     %[[XV:.*]] = memref.reinterpret_cast %[[X]] to offset: [0], sizes: [2, 512], strides: [512, 1] : memref<2x512x1x1xf32> to memref<2x512xf32>
//  CHECK-NEXT:     vector.load %[[XV]][%{{.*}}, %[[J0]]] {alignment = 16 : i64} : memref<2x512xf32>, vector<4xf32>
//       CHECK:     gpu.shuffle
//       CHECK:     math.rsqrt
//       CHECK:     %[[YV:.*]] = memref.reinterpret_cast %[[Y]] to offset: [0], sizes: [2, 512], strides: [512, 1] : memref<2x512x1x1xf32> to memref<2x512xf32>
//  CHECK-NEXT:     vector.store %{{.*}}, %[[YV]][%{{.*}}, %[[J0]]] {alignment = 16 : i64} : memref<2x512xf32>, vector<4xf32>
//       CHECK:     gpu.terminator
//   CHECK-NOT:   linalg.generic

#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, 0)>

func.func private @rms_unit_dims(%x: memref<2x512x1x1xf32>, %y: memref<2x512x1x1xf32>) attributes {dnn.config = {block = [64, 1, 1], strategy = "simt-reduce", vector = 4 : i64}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %n = arith.constant 5.120000e+02 : f32
  %s = memref.alloc() {alignment = 64 : i64} : memref<2x1x1x1xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%s : memref<2x1x1x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction", "reduction", "reduction"]} ins(%x : memref<2x512x1x1xf32>) outs(%s : memref<2x1x1x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %s : memref<2x512x1x1xf32>, memref<2x1x1x1xf32>) outs(%y : memref<2x512x1x1xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %0 = arith.divf %in_0, %n : f32
    %1 = math.rsqrt %0 : f32
    %2 = arith.mulf %in, %1 : f32
    linalg.yield %2 : f32
  }
  return
}
