// dnn-reduce-rows-columns lowers a simt-reduce-rows-columns kernel, a row
// program with column sums beside it, to one launch over blocks of 4
// consecutive rows (2 blocks of 64 threads, a vector of 2 a thread): each
// row's sum along the row makes y, and the same pass folds x into the
// block's column sums in dynamic shared memory; the blocks' partials go to a
// [2, 128] workspace that a second launch sums in order (a row lane per
// partial, the lanes added in order) and casts.
// A kernel that is not such a program goes to simt-generic, with the reason.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-reduce-rows-columns,canonicalize,cse)' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#col = affine_map<(d0, d1) -> (0, d1)>

// CHECK-LABEL: func.func private @row_and_column_sums(
//  CHECK-SAME:     %[[X:.*]]: memref<8x128xf32>, %[[Y:.*]]: memref<8x128xf32>, %[[C:.*]]: memref<1x128xbf16>)
//  CHECK-SAME:     strategy = "simt-reduce-rows-columns"
//       CHECK:   %[[PART:.*]] = memref.alloc() : memref<2x128xf32>
//       CHECK:   gpu.launch blocks(%[[G:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %c2, {{.*}} = %c1, {{.*}} = %c1) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %c64, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c528_i32 {
//       CHECK:     %[[RAW:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// The row program's slots, then the sums from the next 16 bytes: all in the
// dynamic shared memory (no static buffer to push it off alignment).
//  CHECK-NEXT:     memref.view %[[RAW]][%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2xf32, #gpu.address_space<workgroup>>
//  CHECK-NEXT:     %[[SUMS:.*]] = memref.view %[[RAW]][%c16][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<128xf32, #gpu.address_space<workgroup>>
//       CHECK:     scf.for %[[I:.*]] = %[[T]] to %c128 step %c64 {
//  CHECK-NEXT:       memref.store %{{.*}}, %[[SUMS]][%[[I]]]
//       CHECK:     gpu.barrier
//       CHECK:     %[[FIRST:.*]] = arith.muli %[[G]], %c4 : index
//       CHECK:     %[[END:.*]] = arith.addi %[[FIRST]], %c4 : index
//       CHECK:     scf.for %[[R:.*]] = %[[FIRST]] to %[[END]] step %c1 {
//       CHECK:       vector.load %[[X]][%[[R]], %{{.*}}] {alignment = 8 : i64} : memref<8x128xf32>, vector<2xf32>
//       CHECK:       %[[S:.*]] = vector.load %[[SUMS]][%{{.*}}] {alignment = 8 : i64} : memref<128xf32, #gpu.address_space<workgroup>>, vector<2xf32>
//       CHECK:       vector.store %{{.*}}, %[[SUMS]][%{{.*}}] {alignment = 8 : i64} : memref<128xf32, #gpu.address_space<workgroup>>, vector<2xf32>
//       CHECK:       gpu.shuffle xor
//       CHECK:       gpu.barrier
//       CHECK:       vector.store %{{.*}}, %[[Y]][%[[R]], %{{.*}}] {alignment = 8 : i64} : memref<8x128xf32>, vector<2xf32>
//       CHECK:     }
//       CHECK:     gpu.barrier
//       CHECK:     scf.for %[[J:.*]] = %[[T]] to %c128 step %c64 {
//  CHECK-NEXT:       %[[V:.*]] = memref.load %[[SUMS]][%[[J]]]
//  CHECK-NEXT:       memref.store %[[V]], %[[PART]][%[[G]], %[[J]]] : memref<2x128xf32>
//       CHECK:     gpu.terminator
//   The finish: 32 threads over vectors of 4 partials, 2 row lanes, one partial each.
//       CHECK:   gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in ({{.*}} = %c1, {{.*}} = %c1, {{.*}} = %c1) threads(%[[TX:.*]], %[[TY:.*]], %{{.*}}) in ({{.*}} = %c32, {{.*}} = %c2, {{.*}} = %c1) workgroup(%[[LANES:.*]] : memref<256xf32, #gpu.address_space<workgroup>>) {
//  CHECK-NEXT:     %[[J:.*]] = arith.muli %[[TX]], %c4 : index
//  CHECK-NEXT:     vector.load %[[PART]][%[[TY]], %[[J]]] {alignment = 16 : i64} : memref<2x128xf32>, vector<4xf32>
//       CHECK:     memref.store %{{.*}}, %[[LANES]]
//       CHECK:     gpu.barrier
//       CHECK:     scf.if
//       CHECK:       %[[P0:.*]] = memref.load %[[LANES]][%[[J]]]
//       CHECK:       %[[P1:.*]] = memref.load %[[LANES]]
//  CHECK-NEXT:       arith.addf %[[P0]], %[[P1]] : f32
//       CHECK:       %[[B:.*]] = vector.from_elements %{{.*}} : vector<4xbf16>
//  CHECK-NEXT:       vector.store %[[B]], %[[C]][%c0, %[[J]]] {alignment = 8 : i64} : memref<1x128xbf16>, vector<4xbf16>
//       CHECK:     gpu.terminator
//   CHECK-NOT:   linalg.generic
func.func private @row_and_column_sums(%x: memref<8x128xf32>, %y: memref<8x128xf32>, %c: memref<1x128xbf16>) attributes {dnn.config = {block = [64, 1, 1], strategy = "simt-reduce-rows-columns", tile = [1, 4], vector = 2 : i64}, dnn.kernel} {
  %zero = arith.constant 0.0 : f32
  %s = memref.alloc() : memref<8x1xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%s : memref<8x1xf32>) {
  ^bb0(%o: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<8x128xf32>) outs(%s : memref<8x1xf32>) {
  ^bb0(%i: f32, %o: f32):
    %a = arith.addf %o, %i : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : memref<8x128xf32>, memref<8x1xf32>) outs(%y : memref<8x128xf32>) {
  ^bb0(%i: f32, %t: f32, %o: f32):
    %d = arith.subf %i, %t : f32
    linalg.yield %d : f32
  }
  %acc = memref.alloc() : memref<1x128xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%acc : memref<1x128xf32>) {
  ^bb0(%o: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : memref<8x128xf32>) outs(%acc : memref<1x128xf32>) {
  ^bb0(%i: f32, %o: f32):
    %a = arith.addf %o, %i : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc : memref<1x128xf32>) outs(%c : memref<1x128xbf16>) {
  ^bb0(%i: f32, %o: bf16):
    %t = arith.truncf %i : f32 to bf16
    linalg.yield %t : bf16
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#col = affine_map<(d0, d1) -> (0, d1)>

// A column sum over other rows than the row program's: simt-generic.
// CHECK-LABEL: func.func private @other_rows(
//  CHECK-SAME:     dnn.config = {block = [64, 1, 1], strategy = "simt-generic"}
//  CHECK-SAME:     dnn.config_reason = "simt-reduce-rows-columns does not apply (column sums over [4] x 64, rows of [8] x 64): simt-generic"
//       CHECK:   linalg.generic
func.func private @other_rows(%x: memref<8x64xf32>, %z: memref<4x64xf32>, %y: memref<8x64xf32>, %c: memref<1x64xf32>) attributes {dnn.config = {block = [64, 1, 1], strategy = "simt-reduce-rows-columns", tile = [1, 4], vector = 4 : i64}, dnn.kernel} {
  %zero = arith.constant 0.0 : f32
  %s = memref.alloc() : memref<8x1xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%s : memref<8x1xf32>) {
  ^bb0(%o: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<8x64xf32>) outs(%s : memref<8x1xf32>) {
  ^bb0(%i: f32, %o: f32):
    %a = arith.addf %o, %i : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : memref<8x64xf32>, memref<8x1xf32>) outs(%y : memref<8x64xf32>) {
  ^bb0(%i: f32, %t: f32, %o: f32):
    %d = arith.subf %i, %t : f32
    linalg.yield %d : f32
  }
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%c : memref<1x64xf32>) {
  ^bb0(%o: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%z : memref<4x64xf32>) outs(%c : memref<1x64xf32>) {
  ^bb0(%i: f32, %o: f32):
    %a = arith.addf %o, %i : f32
    linalg.yield %a : f32
  }
  return
}
