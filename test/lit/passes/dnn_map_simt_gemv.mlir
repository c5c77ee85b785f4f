// dnn-map-simt-gemv lowers a simt-gemv kernel (a matmul whose M or N is at
// most 8) that reads as one GEMM plus an elementwise epilogue to one
// gpu.launch: each output's K shared by ``split`` threads of a block, the
// loads of ``unroll`` K iterations issued before their FFMAs
// (llvm.fma.f32), then the threads' partial sums added in a fixed order:
// through shared memory where the long operand W is MN-major (lanes across
// its columns, groups down K), by XOR shuffles where it is K-major (lanes
// along K, 16-byte loads where K allows); the epilogue on each output. A
// kernel simt-gemv does not take goes to simt-generic with the reason.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-map-simt-gemv,canonicalize,cse)' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>

// M = 1, W = B (40 x 24, N contiguous): 32 lanes across N, 2 groups down
// K = 40, 4 loads of K each in flight (5 chunks, each group's K at group
// + 2 i), one block of 64 threads; the 2 groups' partials (2 x 32 floats,
// 256 bytes) added in group order by the first 32 threads, which run the
// bias and relu on the sum and store it inside N = 24.
// CHECK-LABEL: func.func private @m1_bias_relu(
//  CHECK-SAME:     %[[A:.*]]: memref<1x40xf32>, %[[B:.*]]: memref<40x24xf32>, %[[BIAS:.*]]: memref<1x24xf32>, %[[Y:.*]]: memref<1x24xf32> {bufferize.result})
//  CHECK-SAME:     dnn.config = {block = [64, 1, 1], split = 2 : i64, strategy = "simt-gemv", unroll = 4 : i64}
//   CHECK-NOT:   linalg.generic
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c64, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c256_i32 {
//       CHECK:     %[[COL:.*]] = arith.minui %{{.*}}, %c23 : index
//       CHECK:     scf.for %{{.*}} = %c0 to %c5 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (f32) {
//       CHECK-COUNT-4: memref.load %[[A]]
//       CHECK-NOT:     llvm.call_intrinsic
//       CHECK:       memref.load %[[B]]{{.*}}, %[[COL]]]
//       CHECK:       llvm.call_intrinsic "llvm.fma.f32"
//       CHECK-COUNT-3: llvm.call_intrinsic "llvm.fma.f32"
//       CHECK:       scf.yield
//       CHECK:     llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<3>
//       CHECK:     gpu.barrier
//       CHECK:     scf.if
//       CHECK:       llvm.load %{{.*}} : !llvm.ptr<3> -> f32
//       CHECK:       llvm.load %{{.*}} : !llvm.ptr<3> -> f32
//       CHECK:       arith.addf
//       CHECK:       arith.cmpi ult, %{{.*}}, %c24 : index
//       CHECK:       memref.load %[[BIAS]]
//       CHECK:       arith.maximumf
//       CHECK:       memref.store %{{.*}}, %[[Y]]
func.func private @m1_bias_relu(%A: memref<1x40xf32>, %B: memref<40x24xf32>, %bias: memref<1x24xf32>, %Y: memref<1x24xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [64, 1, 1], split = 2 : i64, strategy = "simt-gemv", unroll = 4 : i64}, dnn.config_reason = "matmul", dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %C = memref.alloc() {alignment = 64 : i64} : memref<1x24xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<1x24xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<1x40xf32>, memref<40x24xf32>) outs(%C : memref<1x24xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %2 = arith.mulf %x, %w : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%C, %bias : memref<1x24xf32>, memref<1x24xf32>) outs(%Y : memref<1x24xf32>) {
  ^bb0(%c: f32, %b: f32, %out: f32):
    %1 = arith.addf %c, %b : f32
    %2 = arith.maximumf %1, %zero : f32
    linalg.yield %2 : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#bt = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// N = 3, W = A (50 x 64, K contiguous): 8 lanes a column, 16-byte loads
// of K (vector 4; B stored N x K is read in vectors too), 8 columns a block
// of 64 threads (7 blocks for 50 rows); K = 64 is one chunk of 2 loads.
// Three XOR shuffles (4, 2, 1) sum each of the 3 rows over the 8 lanes;
// lane r stores row r, inside M = 50. No shared memory.
// CHECK-LABEL: func.func private @n3_k_major_shuffles(
//  CHECK-SAME:     %[[A:.*]]: memref<50x64xf32>, %[[B:.*]]: memref<3x64xf32>, %[[Y:.*]]: memref<50x3xf32> {bufferize.result})
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c7, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c64, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c0_i32 {
//       CHECK:     memref.extract_aligned_pointer_as_index %[[A]]
//       CHECK:     memref.extract_aligned_pointer_as_index %[[B]]
//       CHECK-COUNT-8: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
//       CHECK-COUNT-24: llvm.call_intrinsic "llvm.fma.f32"
//       CHECK:     gpu.shuffle  xor %{{.*}}, %c4_i32, %c32_i32 : f32
//       CHECK:     gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
//       CHECK:     gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
//       CHECK:     arith.cmpi ult, %{{.*}}, %c50 : index
//       CHECK:     scf.if
//  CHECK-NEXT:       memref.store %{{.*}}, %[[Y]][%{{.*}}, %c0] : memref<50x3xf32>
//       CHECK:     memref.store %{{.*}}, %[[Y]][%{{.*}}, %c1] : memref<50x3xf32>
//       CHECK:     memref.store %{{.*}}, %[[Y]][%{{.*}}, %c2] : memref<50x3xf32>
//   CHECK-NOT:     gpu.barrier
func.func private @n3_k_major_shuffles(%A: memref<50x64xf32>, %B: memref<3x64xf32>, %Y: memref<50x3xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [64, 1, 1], split = 8 : i64, strategy = "simt-gemv", vector = 4 : i64, unroll = 2 : i64}, dnn.config_reason = "matmul", dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%Y : memref<50x3xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #bt, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<50x64xf32>, memref<3x64xf32>) outs(%Y : memref<50x3xf32>) {
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

// M = 12 and N = 24: no side of at most 8; simt-generic, saying why.
// CHECK-LABEL: func.func private @m12_falls_back(
//  CHECK-SAME:     dnn.config = {block = [256, 1, 1], strategy = "simt-generic"}
//  CHECK-SAME:     dnn.config_reason = "simt-gemv does not apply (M 12 and N 24: expected one of them at most 8): simt-generic, one thread per output
//       CHECK:   linalg.generic
func.func private @m12_falls_back(%A: memref<12x16xf32>, %B: memref<16x24xf32>, %Y: memref<12x24xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [64, 1, 1], split = 2 : i64, strategy = "simt-gemv"}, dnn.config_reason = "matmul", dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%Y : memref<12x24xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<12x16xf32>, memref<16x24xf32>) outs(%Y : memref<12x24xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %2 = arith.mulf %x, %w : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}
