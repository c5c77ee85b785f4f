// dnn-reduce-rows with split = C (sm_90) deals each row to a thread-block
// cluster of C blocks (dnnc/codegen/gpu/rowsplit.py): the launch is in
// clusters of (C, 1, 1), block b is rank b mod C of row b / C, its thread t
// thread (b mod C) * T + t of the row's C * T. A reduction folds the block's
// part as a row program does (shuffles, shared memory across warps), then
// thread 0 writes the block's partial to its exchange slot, the cluster
// meets at a barrier, and every thread reads the C partials through
// distributed shared memory (mapa to rank 0, 1, ...) and combines them in
// rank order. After the last reads each thread arrives once more, and waits
// before the end, so that no block's shared memory goes while another reads
// it; the output is stored in between. A per-row scalar is stored by the
// row's first thread, rank 0's thread 0.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-reduce-rows,canonicalize,cse)' | FileCheck %s

// CHECK-LABEL: func.func private @softmax_split(
//  CHECK-SAME:     %[[X:.*]]: memref<2x512xf32>, %[[Y:.*]]: memref<2x512xf32>)
//       CHECK:   gpu.launch clusters({{.*}}) in ({{.*}} = %c2, {{.*}} = %c1, {{.*}} = %c1) blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %c4, {{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %c64, {{.*}}) workgroup(%[[SMEM:.*]] : memref<4xf32, #gpu.address_space<workgroup>>, %[[XCH:.*]] : memref<2xf32, #gpu.address_space<workgroup>>)
//       CHECK:     %[[RANK:.*]] = arith.remui %[[B]], %c2 : index
//  CHECK-NEXT:     %[[BASE:.*]] = arith.muli %[[RANK]], %c64 : index
//  CHECK-NEXT:     %[[LANE:.*]] = arith.addi %[[BASE]], %[[T]] : index
//  CHECK-NEXT:     %[[ROW:.*]] = arith.divui %[[B]], %c2 : index
//       CHECK:     %[[AT:.*]] = arith.index_cast %{{.*}} : index to i64
//  CHECK-NEXT:     %[[J:.*]] = arith.muli %[[LANE]], %c4 : index
//  CHECK-NEXT:     vector.load %[[X]][%[[ROW]], %[[J]]] {alignment = 16 : i64} : memref<2x512xf32>, vector<4xf32>
//   CHECK-NOT:     vector.load
//       CHECK:     gpu.barrier
//       CHECK:     %[[BMAX:.*]] = arith.maximumf
//  CHECK-NEXT:     %[[FIRST:.*]] = arith.cmpi eq, %[[T]], %c0 : index
//  CHECK-NEXT:     scf.if %[[FIRST]] {
//  CHECK-NEXT:       memref.store %[[BMAX]], %[[XCH]][%c0] : memref<2xf32, #gpu.address_space<workgroup>>
//  CHECK-NEXT:     }
//  CHECK-NEXT:     nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:     nvvm.cluster.wait {aligned}
//  CHECK-NEXT:     %[[SLOT0:.*]] = llvm.inttoptr %[[AT]] : i64 to !llvm.ptr<3>
//  CHECK-NEXT:     %[[P0:.*]] = nvvm.mapa %[[SLOT0]], %c0_i32 : !llvm.ptr<3> -> !llvm.ptr<7>
//  CHECK-NEXT:     %[[M0:.*]] = llvm.load %[[P0]] : !llvm.ptr<7> -> f32
//  CHECK-NEXT:     %[[P1:.*]] = nvvm.mapa %[[SLOT0]], %c1_i32 : !llvm.ptr<3> -> !llvm.ptr<7>
//  CHECK-NEXT:     %[[M1:.*]] = llvm.load %[[P1]] : !llvm.ptr<7> -> f32
//  CHECK-NEXT:     arith.maximumf %[[M0]], %[[M1]] : f32
//  CHECK-COUNT-4:  llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
//       CHECK:     gpu.barrier
//       CHECK:     memref.store %{{.*}}, %[[XCH]][%c1]
//       CHECK:     nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:     nvvm.cluster.wait {aligned}
//  CHECK-NEXT:     %[[AT1:.*]] = arith.addi %[[AT]], %c4_i64 : i64
//  CHECK-NEXT:     %[[SLOT1:.*]] = llvm.inttoptr %[[AT1]] : i64 to !llvm.ptr<3>
//  CHECK-NEXT:     %[[Q0:.*]] = nvvm.mapa %[[SLOT1]], %c0_i32
//  CHECK-NEXT:     %[[S0:.*]] = llvm.load %[[Q0]]
//  CHECK-NEXT:     %[[Q1:.*]] = nvvm.mapa %[[SLOT1]], %c1_i32
//  CHECK-NEXT:     %[[S1:.*]] = llvm.load %[[Q1]]
//  CHECK-NEXT:     arith.addf %[[S0]], %[[S1]] : f32
//  CHECK-NEXT:     nvvm.cluster.arrive {aligned}
//   CHECK-NOT:     llvm.load
//       CHECK:     vector.store %{{.*}}, %[[Y]][%[[ROW]], %[[J]]] {alignment = 16 : i64}
//  CHECK-NEXT:     nvvm.cluster.wait {aligned}
//  CHECK-NEXT:     gpu.terminator
//   CHECK-NOT:   linalg.generic

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>

func.func private @softmax_split(%arg0: memref<2x512xf32>, %arg1: memref<2x512xf32>) attributes {dnn.config = {block = [64, 1, 1], split = 2 : i64, strategy = "simt-reduce", vector = 4 : i64}, dnn.kernel} {
  %cst = arith.constant 1.000000e+00 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %cst_1 = arith.constant 0xFF800000 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<2x1xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%alloc : memref<2x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<2x512xf32>) outs(%alloc : memref<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %alloc : memref<2x512xf32>, memref<2x1xf32>) outs(%arg1 : memref<2x512xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %0 = arith.cmpf oeq, %in_2, %cst_1 : f32
    %1 = arith.select %0, %cst_0, %in_2 : f32
    %2 = arith.subf %in, %1 : f32
    %3 = math.exp %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%alloc : memref<2x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_0 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg1 : memref<2x512xf32>) outs(%alloc : memref<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg1, %alloc : memref<2x512xf32>, memref<2x1xf32>) outs(%arg1 : memref<2x512xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %0 = arith.maximumf %in_2, %cst : f32
    %1 = arith.divf %in, %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// A per-row result: the sum is stored by the row's thread 0 alone (rank 0's
// thread 0), after the exchange.

// CHECK-LABEL: func.func private @row_sum_split(
//  CHECK-SAME:     %[[X:.*]]: memref<2x512xf32>, %[[S:.*]]: memref<2x1xf32>)
//       CHECK:     %[[RANK:.*]] = arith.remui %[[B:.*]], %c2 : index
//  CHECK-NEXT:     %[[BASE:.*]] = arith.muli %[[RANK]], %c64 : index
//  CHECK-NEXT:     %[[LANE:.*]] = arith.addi %[[BASE]], %{{.*}} : index
//  CHECK-NEXT:     %[[ROW:.*]] = arith.divui %[[B]], %c2 : index
//       CHECK:     nvvm.cluster.wait {aligned}
//       CHECK:     nvvm.cluster.arrive {aligned}
//       CHECK:     %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0 : index
//  CHECK-NEXT:     scf.if %[[FIRST]] {
//  CHECK-NEXT:       memref.store %{{.*}}, %[[S]][%[[ROW]], %c0] : memref<2x1xf32>
//       CHECK:     nvvm.cluster.wait {aligned}
//  CHECK-NEXT:     gpu.terminator

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>

func.func private @row_sum_split(%arg0: memref<2x512xf32>, %arg1: memref<2x1xf32>) attributes {dnn.config = {block = [64, 1, 1], split = 2 : i64, strategy = "simt-reduce", vector = 4 : i64}, dnn.kernel} {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%arg1 : memref<2x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<2x512xf32>) outs(%arg1 : memref<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  return
}
