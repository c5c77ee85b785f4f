// dnn-map-simt-gemm lowers a simt-gemm kernel (an f32 matmul multiplied
// exactly in f32) that reads as one GEMM plus an elementwise epilogue to one
// gpu.launch: each K step of A and B read from global memory (16-byte loads
// where the operand's contiguous dim allows, else scalar loads; clamped and
// selected to 0 outside the operand), stored into one of two
// shared stages with K outside, then float4 reads of the stage feeding a
// thread's micro-tile of FFMAs (llvm.fma.f32); the epilogue runs on the
// accumulators and stores 4 columns at once where N is a multiple of 4.
// With a K split, the blocks write f32 partials into a buffer of their own,
// and a second launch sums them in split order and runs the epilogue.
// A tile the kernel does not take goes to simt-generic with the reason.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-map-simt-gemm,canonicalize,cse)' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>

// 40 x 24 in 32 x 32 tiles: 2 blocks of 64 threads, 4 x 4 accumulators a
// thread; two stages of 8 x (32 + 4) floats of A and of B (4608 bytes).
// CHECK-LABEL: func.func private @f32_bias_relu(
//  CHECK-SAME:     %[[A:.*]]: memref<40x20xf32>, %[[B:.*]]: memref<20x24xf32>, %[[BIAS:.*]]: memref<1x24xf32>, %[[Y:.*]]: memref<40x24xf32> {bufferize.result})
//  CHECK-SAME:     dnn.config = {block = [64, 1, 1], strategy = "simt-gemm", tile = [32, 32, 8]}
//   CHECK-NOT:   linalg.generic
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c64, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c4608_i32 {
// Step 0 into stage 0: K = 20 and N = 24 are multiples of 4, so a thread
// reads a 16-byte vector of A (along K) and of B (along N), through the
// buffers' addresses; A's goes down a column of its K-outside stage as 4
// floats, B's into a row of its stage whole.
//       CHECK:     %[[PA:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
//       CHECK:     %[[PB:.*]] = memref.extract_aligned_pointer_as_index %[[B]]
//       CHECK:     llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
//       CHECK:     llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
//       CHECK-COUNT-4: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<3>
//       CHECK:     llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<3>
//       CHECK:     gpu.barrier
//       CHECK:     scf.for
// Step kt + 1's loads first (K = 20: guarded), then the FFMAs of step kt.
//       CHECK:       arith.minui
//       CHECK:       arith.cmpi ult, %{{.*}}, %c20 : index
//       CHECK:       llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
//       CHECK:       llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xf32>
//       CHECK:       llvm.call_intrinsic "llvm.fma.f32"
//       CHECK-COUNT-15: llvm.call_intrinsic "llvm.fma.f32"
//       CHECK:       llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xf32>
//       CHECK:       llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<3>
//       CHECK:       gpu.barrier
//       CHECK:       scf.yield
// The epilogue: the bias a pair at a time, relu, 4 columns a store.
//       CHECK:     vector.load %[[BIAS]]
//       CHECK:     arith.addf
//  CHECK-NEXT:     arith.maximumf
//       CHECK:     vector.from_elements %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>
//       CHECK:     vector.store %{{.*}}, %[[Y]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<40x24xf32>, vector<4xf32>
func.func private @f32_bias_relu(%A: memref<40x20xf32>, %B: memref<20x24xf32>, %bias: memref<1x24xf32>, %Y: memref<40x24xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [64, 1, 1], strategy = "simt-gemm", tile = [32, 32, 8]}, dnn.config_reason = "matmul", dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %C = memref.alloc() {alignment = 64 : i64} : memref<40x24xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<40x24xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<40x20xf32>, memref<20x24xf32>) outs(%C : memref<40x24xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %2 = arith.mulf %x, %w : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%C, %bias : memref<40x24xf32>, memref<1x24xf32>) outs(%Y : memref<40x24xf32>) {
  ^bb0(%c: f32, %b: f32, %out: f32):
    %1 = arith.addf %c, %b : f32
    %2 = arith.maximumf %1, %zero : f32
    linalg.yield %2 : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// A stored K x M (M = 33 contiguous: element by element) is read as it
// lies; K = 77 in 10 steps
// split 4 ways (3 steps each, the last 1): a grid of 2 x 4 blocks writes
// the partials, a second launch adds them in split order (staged = 1 asks
// for it; up to 4 splits are otherwise summed by the last block to arrive).
// CHECK-LABEL: func.func private @split_a_k_by_m(
//  CHECK-SAME:     %[[A:.*]]: memref<33x77xf32, strided<[1, 33]>>, %[[B:.*]]: memref<77x9xf32>, %[[C:.*]]: memref<33x9xf32> {bufferize.result})
//  CHECK-SAME:     split = 4 : i64, staged = 1 : i64, strategy = "simt-gemm"
//       CHECK:   %[[P:.*]] = memref.alloc() : memref<4x1x33x9xf32>
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}} = %c4, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c64,
//       CHECK:     %[[S:.*]] = gpu.block_id  y
//       CHECK:     scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1
//       CHECK:     memref.store %{{.*}}, %[[P]][%[[S]], %c0, %{{.*}}, %{{.*}}] : memref<4x1x33x9xf32>
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256,
//       CHECK:       %[[P0:.*]] = memref.load %[[P]][%c0,
//  CHECK-NEXT:       %[[P1:.*]] = memref.load %[[P]][%c1,
//  CHECK-NEXT:       %[[S01:.*]] = arith.addf %[[P0]], %[[P1]] : f32
//  CHECK-NEXT:       %[[P2:.*]] = memref.load %[[P]][%c2,
//  CHECK-NEXT:       %[[S012:.*]] = arith.addf %[[S01]], %[[P2]] : f32
//  CHECK-NEXT:       %[[P3:.*]] = memref.load %[[P]][%c3,
//  CHECK-NEXT:       %[[SUM:.*]] = arith.addf %[[S012]], %[[P3]] : f32
//  CHECK-NEXT:       memref.store %[[SUM]], %[[C]]
func.func private @split_a_k_by_m(%A: memref<33x77xf32, strided<[1, 33]>>, %B: memref<77x9xf32>, %C: memref<33x9xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [64, 1, 1], split = 4 : i64, staged = 1 : i64, strategy = "simt-gemm", tile = [32, 32, 8]}, dnn.config_reason = "matmul", dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<33x9xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<33x77xf32, strided<[1, 33]>>, memref<77x9xf32>) outs(%C : memref<33x9xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %2 = arith.mulf %x, %w : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// The same split 2 ways (5 steps each), summed in the GEMM's launch: each
// block stores its partial, fences, and thread 0 counts the tile's
// arrivals (one i32 a tile, 2 tiles); the block that brings the count to
// 1 puts it back to 0, reads both partials in split order and runs the
// epilogue. No second launch.
// CHECK-LABEL: func.func private @split_last_arrival(
//  CHECK-SAME:     %[[A:.*]]: memref<33x77xf32, strided<[1, 33]>>, %[[B:.*]]: memref<77x9xf32>, %[[C:.*]]: memref<33x9xf32> {bufferize.result})
//  CHECK-SAME:     split = 2 : i64, strategy = "simt-gemm"
//       CHECK:   %[[P:.*]] = memref.alloc() : memref<2x1x33x9xf32>
//       CHECK:   %[[N:.*]] = memref.alloc() : memref<2xi32>
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}} = %c2, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c64,
//       CHECK:     memref.store %{{.*}}, %[[P]]
//       CHECK:     nvvm.memory.barrier
//  CHECK-NEXT:     gpu.barrier
//       CHECK:     memref.atomic_rmw addi %{{.*}}, %[[N]][%{{.*}}] : (i32, memref<2xi32>) -> i32
//  CHECK-NEXT:     nvvm.memory.barrier
//       CHECK:     gpu.barrier
//       CHECK:     %[[BEFORE:.*]] = llvm.load %{{.*}} : !llvm.ptr<3> -> i32
//       CHECK:     arith.cmpi eq, %[[BEFORE]], %c1_i32 : i32
//       CHECK:       memref.store %c0_i32, %[[N]]
//       CHECK:       %[[P0:.*]] = memref.load %[[P]][%c0,
//       CHECK:       %[[P1:.*]] = memref.load %[[P]][%c1,
//       CHECK:       arith.addf %[[P0]], %[[P1]] : f32
//       CHECK:       memref.store %{{.*}}, %[[C]]
//   CHECK-NOT:   gpu.launch
func.func private @split_last_arrival(%A: memref<33x77xf32, strided<[1, 33]>>, %B: memref<77x9xf32>, %C: memref<33x9xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [64, 1, 1], split = 2 : i64, strategy = "simt-gemm", tile = [32, 32, 8]}, dnn.config_reason = "matmul", dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<33x9xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<33x77xf32, strided<[1, 33]>>, memref<77x9xf32>) outs(%C : memref<33x9xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %2 = arith.mulf %x, %w : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// 128 x 128 over 32 threads would give each 512 accumulators: simt-generic,
// with the block the config names.
// CHECK-LABEL: func.func private @too_few_threads(
//  CHECK-SAME:     dnn.config = {block = [32, 1, 1], strategy = "simt-generic"}
//  CHECK-SAME:     dnn.config_reason = "simt-gemm does not apply (micro-tile 32x16: expected at most 64 accumulators a thread): simt-generic, one thread per output; heuristics: matmul"
//       CHECK:   linalg.generic
func.func private @too_few_threads(%A: memref<64x16xf32>, %B: memref<16x64xf32>, %C: memref<64x64xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [32, 1, 1], strategy = "simt-gemm", tile = [128, 128, 8]}, dnn.config_reason = "matmul", dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<64x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<64x16xf32>, memref<16x64xf32>) outs(%C : memref<64x64xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %2 = arith.mulf %x, %w : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}
