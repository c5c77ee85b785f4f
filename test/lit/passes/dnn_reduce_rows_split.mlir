// dnn-reduce-rows with split = C (sm_90) deals each row to a thread-block
// cluster of C blocks (dnnc/codegen/gpu/reduce/rowsplit.py): the launch is in
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
//
// softmax's max and sum, and a layernorm's sum and centred squares, meet in
// one exchange (dnnc/codegen/gpu/reduce/rowmerge.py) where the option merge names
// their form: the block folds the second around its own first, writes both
// partials, and moves the blocks' second to the row's first after the one
// barrier. By default only the layernorm's (centred) form is merged: the
// softmax exchanges its max, then its sum (DEFAULT).

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-reduce-rows{merge=centred,shifted},canonicalize,cse)' | FileCheck %s
// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-reduce-rows,canonicalize,cse)' | FileCheck %s --check-prefix=DEFAULT

// DEFAULT-LABEL: func.func private @softmax_split(
//       DEFAULT:     memref.store %{{.*}}[%c0] : memref<2xf32, #gpu.address_space<workgroup>>
//  DEFAULT-NEXT:     }
//  DEFAULT-NEXT:     nvvm.cluster.arrive {aligned}
//  DEFAULT-NEXT:     nvvm.cluster.wait {aligned}
//       DEFAULT:     memref.store %{{.*}}[%c1] : memref<2xf32, #gpu.address_space<workgroup>>
//  DEFAULT-NEXT:     }
//  DEFAULT-NEXT:     nvvm.cluster.arrive {aligned}
//  DEFAULT-NEXT:     nvvm.cluster.wait {aligned}
//       DEFAULT:     vector.store
//  DEFAULT-NEXT:     nvvm.cluster.wait {aligned}
//  DEFAULT-LABEL: func.func private @layernorm_split(
//       DEFAULT:     memref.store %{{.*}}[%c0]
//  DEFAULT-NEXT:     memref.store %{{.*}}[%c1]
//  DEFAULT-NEXT:     }
//  DEFAULT-NEXT:     nvvm.cluster.arrive {aligned}
//   DEFAULT-NOT:     memref.store %{{.*}}[%c1]
//       DEFAULT:     vector.store

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
//   CHECK-NOT:     nvvm.cluster.arrive
//       CHECK:     %[[G:.*]] = arith.select %{{.*}}, %cst_1, %[[BMAX]] : f32
//       CHECK:     %[[E0:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
//  CHECK-COUNT-3:  llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
//       CHECK:     gpu.barrier
//       CHECK:     %[[BSUM:.*]] = arith.addf
//  CHECK-NEXT:     %[[FIRST:.*]] = arith.cmpi eq, %[[T]], %c0 : index
//  CHECK-NEXT:     scf.if %[[FIRST]] {
//  CHECK-NEXT:       memref.store %[[BMAX]], %[[XCH]][%c0] : memref<2xf32, #gpu.address_space<workgroup>>
//  CHECK-NEXT:       memref.store %[[BSUM]], %[[XCH]][%c1] : memref<2xf32, #gpu.address_space<workgroup>>
//  CHECK-NEXT:     }
//  CHECK-NEXT:     nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:     nvvm.cluster.wait {aligned}
//  CHECK-NEXT:     %[[SLOT0:.*]] = llvm.inttoptr %[[AT]] : i64 to !llvm.ptr<3>
//  CHECK-NEXT:     %[[P0:.*]] = nvvm.mapa %[[SLOT0]], %c0_i32 : !llvm.ptr<3> -> !llvm.ptr<7>
//  CHECK-NEXT:     %[[M0:.*]] = llvm.load %[[P0]] : !llvm.ptr<7> -> f32
//  CHECK-NEXT:     %[[P1:.*]] = nvvm.mapa %[[SLOT0]], %c1_i32 : !llvm.ptr<3> -> !llvm.ptr<7>
//  CHECK-NEXT:     %[[M1:.*]] = llvm.load %[[P1]] : !llvm.ptr<7> -> f32
//  CHECK-NEXT:     %[[AT1:.*]] = arith.addi %[[AT]], %c4_i64 : i64
//  CHECK-NEXT:     %[[SLOT1:.*]] = llvm.inttoptr %[[AT1]] : i64 to !llvm.ptr<3>
//  CHECK-NEXT:     %[[Q0:.*]] = nvvm.mapa %[[SLOT1]], %c0_i32
//  CHECK-NEXT:     %[[S0:.*]] = llvm.load %[[Q0]]
//  CHECK-NEXT:     %[[Q1:.*]] = nvvm.mapa %[[SLOT1]], %c1_i32
//  CHECK-NEXT:     %[[S1:.*]] = llvm.load %[[Q1]]
//  CHECK-NEXT:     nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:     %[[M:.*]] = arith.maximumf %[[M0]], %[[M1]] : f32
//  CHECK-NEXT:     %[[MINF:.*]] = arith.cmpf oeq, %[[M]], %cst_2 : f32
//  CHECK-NEXT:     %[[GM:.*]] = arith.select %[[MINF]], %cst_1, %[[M]] : f32
//       CHECK:     %[[D0:.*]] = arith.subf %{{.*}}, %[[GM]] : f32
//       CHECK:     %[[F0:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
//  CHECK-NEXT:     %[[EMPTY0:.*]] = arith.cmpf oeq, %[[S0]], %cst_1 : f32
//  CHECK-NEXT:     %[[MOVED0:.*]] = arith.mulf %[[S0]], %[[F0]] : f32
//  CHECK-NEXT:     arith.select %[[EMPTY0]], %cst_1, %[[MOVED0]] : f32
//       CHECK:     %[[DB:.*]] = arith.subf %[[G]], %[[GM]] : f32
//       CHECK:     %[[FB:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
//  CHECK-NEXT:     %[[EMPTY:.*]] = arith.cmpf oeq, %[[BSUM]], %cst_1 : f32
//  CHECK-NEXT:     %[[FACTOR:.*]] = arith.select %[[EMPTY]], %cst_1, %[[FB]] : f32
//  CHECK-NEXT:     arith.mulf %[[E0]], %[[FACTOR]] : f32
//   CHECK-NOT:     llvm.call_intrinsic
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

// -----

// A layernorm's mean and centred squares in one exchange: each block
// centres its squares on its own mean (its sum times C, over N), and the
// row's squares are the blocks' moved to the row's mean, in rank order:
// v_q + 2 (h_q - h) (s_q - n h_q) + n (h_q - h)^2, n = 256 positions a block.
// The held x - mean moves by the block's mean less the row's.

// CHECK-LABEL: func.func private @layernorm_split(
//       CHECK:     gpu.barrier
//       CHECK:     %[[BSUM:.*]] = arith.addf
//  CHECK-NEXT:     %[[TWICE:.*]] = arith.mulf %[[BSUM]], %cst_1 : f32
//  CHECK-NEXT:     %[[BSUM2:.*]] = arith.addf %[[TWICE]], %cst_4 : f32
//  CHECK-NEXT:     %[[BMEAN:.*]] = arith.mulf %[[BSUM2]], %cst : f32
//  CHECK-NEXT:     %[[D0:.*]] = arith.subf %{{.*}}, %[[BMEAN]] : f32
//   CHECK-NOT:     nvvm.cluster.arrive
//       CHECK:     gpu.barrier
//       CHECK:     %[[BSQ:.*]] = arith.addf
//  CHECK-NEXT:     %[[FIRST:.*]] = arith.cmpi eq, %{{.*}}, %c0 : index
//  CHECK-NEXT:     scf.if %[[FIRST]] {
//  CHECK-NEXT:       memref.store %[[BSUM]], %{{.*}}[%c0]
//  CHECK-NEXT:       memref.store %[[BSQ]], %{{.*}}[%c1]
//  CHECK-NEXT:     }
//  CHECK-NEXT:     nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:     nvvm.cluster.wait {aligned}
//       CHECK:     %[[S0:.*]] = llvm.load
//       CHECK:     %[[S1:.*]] = llvm.load
//       CHECK:     %[[V0:.*]] = llvm.load
//       CHECK:     %[[V1:.*]] = llvm.load
//  CHECK-NEXT:     nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:     %[[SUM:.*]] = arith.addf %[[S0]], %[[S1]] : f32
//  CHECK-NEXT:     %[[SUM2:.*]] = arith.addf %[[SUM]], %cst_4 : f32
//  CHECK-NEXT:     %[[MEAN:.*]] = arith.mulf %[[SUM2]], %cst : f32
//       CHECK:     %[[H0:.*]] = arith.mulf %{{.*}}, %cst : f32
//  CHECK-NEXT:     %[[DH0:.*]] = arith.subf %[[H0]], %[[MEAN]] : f32
//  CHECK-NEXT:     %[[NH0:.*]] = arith.mulf %[[H0]], %cst_0 : f32
//  CHECK-NEXT:     %[[OFF0:.*]] = arith.subf %[[S0]], %[[NH0]] : f32
//  CHECK-NEXT:     %[[CROSS0:.*]] = arith.mulf %[[DH0]], %[[OFF0]] : f32
//  CHECK-NEXT:     %[[CROSS0X2:.*]] = arith.mulf %[[CROSS0]], %cst_1 : f32
//  CHECK-NEXT:     %[[PLUS0:.*]] = arith.addf %[[V0]], %[[CROSS0X2]] : f32
//  CHECK-NEXT:     %[[SQ0:.*]] = arith.mulf %[[DH0]], %[[DH0]] : f32
//  CHECK-NEXT:     %[[NSQ0:.*]] = arith.mulf %[[SQ0]], %cst_0 : f32
//  CHECK-NEXT:     arith.addf %[[PLUS0]], %[[NSQ0]] : f32
//       CHECK:     %[[DELTA:.*]] = arith.subf %[[BMEAN]], %[[MEAN]] : f32
//  CHECK-NEXT:     arith.addf %[[D0]], %[[DELTA]] : f32
//   CHECK-NOT:     nvvm.cluster.arrive
//       CHECK:     vector.store
//  CHECK-NEXT:     nvvm.cluster.wait {aligned}
//  CHECK-NEXT:     gpu.terminator

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>

func.func private @layernorm_split(%arg0: memref<2x512xf32>, %arg1: memref<2x512xf32>) attributes {dnn.config = {block = [64, 1, 1], split = 2 : i64, strategy = "simt-reduce", vector = 4 : i64}, dnn.kernel} {
  %cst = arith.constant 9.99999974E-6 : f32
  %cst_0 = arith.constant 1.000000e+00 : f32
  %cst_1 = arith.constant 5.120000e+02 : f32
  %cst_2 = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<2x1xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%alloc : memref<2x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  }
  %alloc_3 = memref.alloc() {alignment = 64 : i64} : memref<2x1xf32>
  linalg.copy ins(%alloc : memref<2x1xf32>) outs(%alloc_3 : memref<2x1xf32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<2x512xf32>) outs(%alloc_3 : memref<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  %alloc_4 = memref.alloc() {alignment = 64 : i64} : memref<2x512xf32>
  linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %alloc_3 : memref<2x512xf32>, memref<2x1xf32>) outs(%alloc_4 : memref<2x512xf32>) {
  ^bb0(%in: f32, %in_5: f32, %out: f32):
    %0 = arith.divf %in_5, %cst_1 : f32
    %1 = arith.subf %in, %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%alloc_4 : memref<2x512xf32>) outs(%alloc : memref<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%alloc_4, %alloc : memref<2x512xf32>, memref<2x1xf32>) outs(%arg1 : memref<2x512xf32>) {
  ^bb0(%in: f32, %in_5: f32, %out: f32):
    %0 = arith.divf %in_5, %cst_1 : f32
    %1 = arith.addf %0, %cst : f32
    %2 = math.sqrt %1 : f32
    %3 = arith.divf %cst_0, %2 : f32
    %4 = arith.mulf %in, %3 : f32
    linalg.yield %4 : f32
  }
  return
}

// -----

// Persistent clusters (tile = [rows per cluster]): 4 rows on 2 clusters,
// cluster c on rows c, c + 2. The loads of the next row (the row itself
// again on the cluster's last) are issued at the start of the current one,
// before its barriers, and carried into the next iteration; the rows use
// the two halves of the exchange slots in turn (no block rewrites a slot
// another may still read: it passes the next row's barrier first), and the
// blocks meet once more after the last row.

// CHECK-LABEL: func.func private @sum_rows_persistent(
//  CHECK-SAME:     %[[X:.*]]: memref<4x512xf32>, %[[Y:.*]]: memref<4x512xf32>)
//       CHECK:   gpu.launch clusters({{.*}}) in ({{.*}} = %c2, {{.*}}) blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %c4, {{.*}}) threads({{.*}}) workgroup(%{{.*}} : memref<2xf32, #gpu.address_space<workgroup>>, %[[XCH:.*]] : memref<2xf32, #gpu.address_space<workgroup>>)
//       CHECK:     %[[CLUSTER:.*]] = arith.divui %[[B]], %c2 : index
//       CHECK:     %[[J:.*]] = arith.muli %{{.*}}, %c4 : index
//  CHECK-NEXT:     %[[V0:.*]] = vector.load %[[X]][%[[CLUSTER]], %[[J]]]
//  CHECK-NEXT:     scf.for %[[R:.*]] = %[[CLUSTER]] to %c4 step %c2 iter_args(%[[V:.*]] = %[[V0]], %[[PARITY:.*]] = %c0) -> (vector<4xf32>, index) {
//  CHECK-NEXT:       %[[AFTER:.*]] = arith.addi %[[R]], %c2 : index
//  CHECK-NEXT:       %[[IN:.*]] = arith.cmpi ult, %[[AFTER]], %c4 : index
//  CHECK-NEXT:       %[[NEXT:.*]] = arith.select %[[IN]], %[[AFTER]], %[[R]] : index
//  CHECK-NEXT:       %[[VN:.*]] = vector.load %[[X]][%[[NEXT]], %[[J]]]
//  CHECK-NEXT:       vector.extract %[[V]][0]
//       CHECK:       gpu.barrier
//       CHECK:       scf.if
//  CHECK-NEXT:         memref.store %{{.*}}, %[[XCH]][%[[PARITY]]]
//       CHECK:       nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:       nvvm.cluster.wait {aligned}
//  CHECK-NEXT:       arith.index_cast %[[PARITY]] : index to i64
//   CHECK-NOT:       nvvm.cluster
//       CHECK:       vector.store %{{.*}}, %[[Y]][%[[R]], %[[J]]]
//  CHECK-NEXT:       %[[FLIP:.*]] = arith.subi %c1, %[[PARITY]] : index
//  CHECK-NEXT:       scf.yield %[[VN]], %[[FLIP]] : vector<4xf32>, index
//  CHECK-NEXT:     }
//  CHECK-NEXT:     nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:     nvvm.cluster.wait {aligned}
//  CHECK-NEXT:     gpu.terminator

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>

func.func private @sum_rows_persistent(%arg0: memref<4x512xf32>, %arg1: memref<4x512xf32>) attributes {dnn.config = {block = [64, 1, 1], split = 2 : i64, strategy = "simt-reduce", tile = [2], vector = 4 : i64}, dnn.kernel} {
  %cst = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<4x1xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%alloc : memref<4x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<4x512xf32>) outs(%alloc : memref<4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %alloc : memref<4x512xf32>, memref<4x1xf32>) outs(%arg1 : memref<4x512xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %0 = arith.subf %in, %in_2 : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// staged = 1: block rank r of the cluster copies elements r * 512 to
// r * 512 + 511 of its row (its contiguous part) into dynamic shared memory
// with a bulk copy that completes on an mbarrier (one piece: the part is
// under 16 KB); the first pass waits for it, then each pass reads the part
// from shared memory, vectors t and
// t + 64 of it (unroll = 2: both in one iteration, the loops fold away),
// and the output pass computes both vectors before it stores them to the
// row's elements r * 512 + 4t and r * 512 + 4(t + 64).

// CHECK-LABEL: func.func private @sum_rows_staged(
//  CHECK-SAME:     %[[X:.*]]: memref<2x1024xf32>, %[[Y:.*]]: memref<2x1024xf32>)
//       CHECK:   gpu.launch clusters({{.*}}) in ({{.*}} = %c2, {{.*}}) blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %c4, {{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %c64, {{.*}}) dynamic_shared_memory_size %c2176_i32 {
//  CHECK-NEXT:     %[[RAW:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
//  CHECK-NEXT:     memref.view %[[RAW]][%c16][] {{.*}} to memref<2xf32, #gpu.address_space<workgroup>>
//  CHECK-NEXT:     memref.view %[[RAW]][%c32][] {{.*}} to memref<1xf32, #gpu.address_space<workgroup>>
//  CHECK-NEXT:     %[[PART:.*]] = memref.view %[[RAW]][%c128][] {{.*}} to memref<512xf32, #gpu.address_space<workgroup>>
//       CHECK:     %[[ROW:.*]] = arith.divui %[[B]], %c2 : index
//       CHECK:     %[[RANK:.*]] = arith.remui %[[B]], %c2 : index
//  CHECK-NEXT:     %[[FIRST:.*]] = arith.muli %[[RANK]], %c512 : index
//  CHECK-NEXT:     %[[BAR:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
//       CHECK:     scf.if
//  CHECK-NEXT:       nvvm.mbarrier.init %[[BAR]], %c1_i32
//  CHECK-NEXT:       nvvm.fence.mbarrier.init
//  CHECK-NEXT:       nvvm.mbarrier.arrive.expect_tx %[[BAR]], %c2048_i32
//       CHECK:       nvvm.cp.async.bulk.shared.cluster.global %{{.*}}, %{{.*}}, %[[BAR]], %c2048_i32
//  CHECK-NEXT:     }
//  CHECK-NEXT:     gpu.barrier
//  CHECK-NEXT:     llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity{{.*}} %[[BAR]], %c0_i32
//  CHECK-NEXT:     %[[J0:.*]] = arith.muli %[[T]], %c4 : index
//  CHECK-NEXT:     vector.load %[[PART]][%[[J0]]]
//       CHECK:     %[[T1:.*]] = arith.addi %[[T]], %c64 : index
//  CHECK-NEXT:     %[[J1:.*]] = arith.muli %[[T1]], %c4 : index
//  CHECK-NEXT:     vector.load %[[PART]][%[[J1]]]
//   CHECK-NOT:     vector.load %[[X]]
//       CHECK:     nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:     nvvm.cluster.wait {aligned}
//       CHECK:     %[[AT0:.*]] = arith.addi %[[FIRST]], %[[J0]] : index
//  CHECK-NEXT:     vector.load %[[PART]][%[[J0]]]
//       CHECK:     %[[AT1:.*]] = arith.addi %[[FIRST]], %[[J1]] : index
//  CHECK-NEXT:     vector.load %[[PART]][%[[J1]]]
//       CHECK:     vector.store %{{.*}}, %[[Y]][%[[ROW]], %[[AT0]]]
//       CHECK:     vector.store %{{.*}}, %[[Y]][%[[ROW]], %[[AT1]]]
//  CHECK-NEXT:     nvvm.cluster.wait {aligned}
//  CHECK-NEXT:     gpu.terminator

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>

func.func private @sum_rows_staged(%arg0: memref<2x1024xf32>, %arg1: memref<2x1024xf32>) attributes {dnn.config = {block = [64, 1, 1], split = 2 : i64, staged = 1 : i64, strategy = "simt-reduce", unroll = 2 : i64, vector = 4 : i64}, dnn.kernel} {
  %cst = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<2x1xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%alloc : memref<2x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<2x1024xf32>) outs(%alloc : memref<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %alloc : memref<2x1024xf32>, memref<2x1xf32>) outs(%arg1 : memref<2x1024xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %0 = arith.subf %in, %in_2 : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A staged layernorm (rows of 16384 f32, 2 blocks of 64 a row, unroll = 4):
// each block's part is 32 KB, copied in two pieces of 16 KB on an mbarrier
// each. The first pass waits for a piece before its first vector (piece
// iv / 16 of the loop's vector iv), so that it works on the first piece
// while the second lands. It folds the sum and the centred squares at once
// (Chan et al.): per vector, its sum and its squares about its own mean;
// the vectors of an iteration merged pairwise, then into the loop's fold
// (weights from the count so far). The threads' folds merge the same way
// over shuffles and the warps' through shared memory: the block's pair is
// ready for the one exchange, with no second pass over the part. Two loops
// in all: the statistics and the output.

// CHECK-LABEL: func.func private @layernorm_staged(
//       CHECK:     %[[RAW:.*]] = gpu.dynamic_shared_memory
//       CHECK:     %[[BASE:.*]] = arith.index_cast %{{.*}} : index to i64
//       CHECK:     %[[BAR0:.*]] = llvm.inttoptr %[[BASE]] : i64 to !llvm.ptr<3>
//  CHECK-NEXT:     %[[AT1:.*]] = arith.addi %[[BASE]], %c8_i64 : i64
//  CHECK-NEXT:     %[[BAR1:.*]] = llvm.inttoptr %[[AT1]] : i64 to !llvm.ptr<3>
//       CHECK:     scf.if
//  CHECK-NEXT:       nvvm.mbarrier.init %[[BAR0]], %c1_i32
//  CHECK-NEXT:       nvvm.mbarrier.init %[[BAR1]], %c1_i32
//  CHECK-NEXT:       nvvm.fence.mbarrier.init
//  CHECK-NEXT:       nvvm.mbarrier.arrive.expect_tx %[[BAR0]], %c16384_i32
//       CHECK:       nvvm.cp.async.bulk.shared.cluster.global %{{.*}}, %{{.*}}, %[[BAR0]], %c16384_i32
//  CHECK-NEXT:       nvvm.mbarrier.arrive.expect_tx %[[BAR1]], %c16384_i32
//       CHECK:       nvvm.cp.async.bulk.shared.cluster.global %{{.*}}, %{{.*}}, %[[BAR1]], %c16384_i32
//  CHECK-NEXT:     }
//  CHECK-NEXT:     gpu.barrier
//  CHECK-NEXT:     %[[STATS:.*]]:2 = scf.for %[[IV:.*]] = %c0 to %c32 step %c4 iter_args(%[[S:.*]] = %{{.*}}, %[[V:.*]] = %{{.*}}) -> (f32, f32) {
//  CHECK-NEXT:       %[[PIECE:.*]] = arith.divui %[[IV]], %c16 : index
//       CHECK:       %[[BAR:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
//  CHECK-NEXT:       llvm.inline_asm has_side_effects {{.*}}mbarrier.try_wait.parity{{.*}} %[[BAR]], %c0_i32
//       CHECK:       %[[VEC:.*]] = vector.load
//  CHECK-NEXT:       %[[E0:.*]] = vector.extract %[[VEC]][0]
//  CHECK-NEXT:       %[[E1:.*]] = vector.extract %[[VEC]][1]
//  CHECK-NEXT:       %[[E2:.*]] = vector.extract %[[VEC]][2]
//  CHECK-NEXT:       %[[E3:.*]] = vector.extract %[[VEC]][3]
//  CHECK-NEXT:       %[[A01:.*]] = arith.addf %[[E0]], %[[E1]] : f32
//  CHECK-NEXT:       %[[A012:.*]] = arith.addf %[[A01]], %[[E2]] : f32
//  CHECK-NEXT:       %[[SUM0:.*]] = arith.addf %[[A012]], %[[E3]] : f32
//  CHECK-NEXT:       %[[MEAN0:.*]] = arith.mulf %[[SUM0]], %{{.*}} : f32
//  CHECK-NEXT:       %[[D0:.*]] = arith.subf %[[E0]], %[[MEAN0]] : f32
//  CHECK-NEXT:       %[[SQ0:.*]] = arith.mulf %[[D0]], %[[D0]] : f32
//  CHECK-NEXT:       %[[D1:.*]] = arith.subf %[[E1]], %[[MEAN0]] : f32
//  CHECK-NEXT:       math.fma %[[D1]], %[[D1]], %[[SQ0]] : f32
//   CHECK-NOT:       mbarrier
//       CHECK:       %[[BEFORE:.*]] = arith.uitofp %{{.*}} : i32 to f32
//       CHECK:       %[[N:.*]] = arith.maximumf %[[BEFORE]], %{{.*}} : f32
//  CHECK-NEXT:       arith.divf %[[S]], %[[N]] : f32
//       CHECK:       scf.yield
//  CHECK-NEXT:     }
//  CHECK-NEXT:     gpu.shuffle  xor %[[STATS]]#0, %c16_i32
//  CHECK-NEXT:     gpu.shuffle  xor %[[STATS]]#1, %c16_i32
//   CHECK-NOT:     scf.for
//       CHECK:     nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:     nvvm.cluster.wait {aligned}
//   CHECK-NOT:     nvvm.cluster.wait
//       CHECK:     scf.for
//   CHECK-NOT:       mbarrier
//       CHECK:       vector.store
//       CHECK:     nvvm.cluster.wait {aligned}
//  CHECK-NEXT:     gpu.terminator

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>

func.func private @layernorm_staged(%arg0: memref<2x16384xf32>, %arg1: memref<2x16384xf32>) attributes {dnn.config = {block = [64, 1, 1], split = 2 : i64, staged = 1 : i64, strategy = "simt-reduce", unroll = 4 : i64, vector = 4 : i64}, dnn.kernel} {
  %cst = arith.constant 9.99999974E-6 : f32
  %cst_0 = arith.constant 1.000000e+00 : f32
  %cst_1 = arith.constant 1.638400e+04 : f32
  %cst_2 = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<2x1xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel"]} outs(%alloc : memref<2x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  }
  %alloc_3 = memref.alloc() {alignment = 64 : i64} : memref<2x1xf32>
  linalg.copy ins(%alloc : memref<2x1xf32>) outs(%alloc_3 : memref<2x1xf32>)
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<2x16384xf32>) outs(%alloc_3 : memref<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  %alloc_4 = memref.alloc() {alignment = 64 : i64} : memref<2x16384xf32>
  linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %alloc_3 : memref<2x16384xf32>, memref<2x1xf32>) outs(%alloc_4 : memref<2x16384xf32>) {
  ^bb0(%in: f32, %in_5: f32, %out: f32):
    %0 = arith.divf %in_5, %cst_1 : f32
    %1 = arith.subf %in, %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%alloc_4 : memref<2x16384xf32>) outs(%alloc : memref<2x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %in : f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%alloc_4, %alloc : memref<2x16384xf32>, memref<2x1xf32>) outs(%arg1 : memref<2x16384xf32>) {
  ^bb0(%in: f32, %in_5: f32, %out: f32):
    %0 = arith.divf %in_5, %cst_1 : f32
    %1 = arith.addf %0, %cst : f32
    %2 = math.sqrt %1 : f32
    %3 = arith.divf %cst_0, %2 : f32
    %4 = arith.mulf %in, %3 : f32
    linalg.yield %4 : f32
  }
  return
}
