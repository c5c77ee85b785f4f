// dnn-reduce-columns lowers a simt-reduce-columns kernel, a reduction of the
// leading dims that keeps the innermost, to a column program: threads fold
// 16-byte vectors of columns down their rows (a block of 4 x 8 threads,
// 16 rows a block, 2 rows a step), the 8 row lanes of a block are summed
// through shared memory, and with the rows split over several blocks each
// writes its partials; the last block of a column of blocks to count its
// arrival sums the partials in order, in the same launch, and casts.
// A kernel that is not a column program goes to simt-generic, with the reason.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-reduce-columns,canonicalize,cse)' | FileCheck %s

// CHECK-LABEL: func.func private @column_sum(
//  CHECK-SAME:     %[[X:.*]]: memref<64x32xbf16>, %[[Y:.*]]: memref<1x32xbf16>)
//  CHECK-SAME:     strategy = "simt-reduce-columns"
//       CHECK:   %[[PART:.*]] = memref.alloc() : memref<4x32xf32>
//       CHECK:   %[[COUNT:.*]] = memref.alloc() : memref<1xi32>
//   One column of blocks: its arrival count is at 0.
//       CHECK:   gpu.launch blocks(%{{.*}}, %[[BY:.*]], %{{.*}}) in ({{.*}} = %c1, {{.*}} = %c4, {{.*}} = %c1) threads(%[[TX:.*]], %[[TY:.*]], %{{.*}}) in ({{.*}} = %c4, {{.*}} = %c8, {{.*}} = %c1) workgroup(%[[SMEM:.*]] : memref<256xf32, #gpu.address_space<workgroup>>, %[[TICKET:.*]] : memref<1xi32, #gpu.address_space<workgroup>>)
//       CHECK:     %[[J:.*]] = arith.muli %[[TX]], %c8 : index
//       CHECK:     %[[V0:.*]] = vector.load %[[X]][%{{.*}}, %[[J]]] {alignment = 16 : i64} : memref<64x32xbf16>, vector<8xbf16>
//       CHECK:     %[[V1:.*]] = vector.load %[[X]][%{{.*}}, %[[J]]] {alignment = 16 : i64} : memref<64x32xbf16>, vector<8xbf16>
//       CHECK:     arith.extf
//       CHECK:     arith.addf
//       CHECK:     memref.store %{{.*}}, %[[SMEM]]
//       CHECK:     gpu.barrier
//       CHECK:     %[[FIRST:.*]] = arith.cmpi eq, %[[TY]], %c0 : index
//  CHECK-NEXT:     scf.if %[[FIRST]] {
//  CHECK-NEXT:       memref.load %[[SMEM]][%[[J]]]
//       CHECK:       %[[SUMS:.*]] = vector.from_elements {{.*}} : vector<8xf32>
//  CHECK-NEXT:       vector.store %[[SUMS]], %[[PART]][%[[BY]], %[[J]]] {alignment = 16 : i64} : memref<4x32xf32>, vector<8xf32>
//       CHECK:     gpu.barrier
//       CHECK:     scf.if
//  CHECK-NEXT:       llvm.fence syncscope("device") acq_rel
//  CHECK-NEXT:       %[[BEFORE:.*]] = memref.atomic_rmw addi %c1_i32, %[[COUNT]][%c0] : (i32, memref<1xi32>) -> i32
//  CHECK-NEXT:       llvm.fence syncscope("device") acq_rel
//  CHECK-NEXT:       memref.store %[[BEFORE]], %[[TICKET]][%c0]
//       CHECK:     gpu.barrier
//  CHECK-NEXT:     %[[T:.*]] = memref.load %[[TICKET]][%c0]
//  CHECK-NEXT:     %[[LAST:.*]] = arith.cmpi eq, %[[T]], %c3_i32 : i32
//  CHECK-NEXT:     scf.if %[[LAST]] {
//       CHECK:       memref.store %c0_i32, %[[COUNT]][%c0] : memref<1xi32>
//   Row lane ty folds partial ty (of 4; lanes 4 to 7 have none).
//       CHECK:       %[[OK:.*]] = arith.cmpi ult, %[[TY]], %c4 : index
//  CHECK-NEXT:       %[[G:.*]] = arith.minui %[[TY]], %c3 : index
//  CHECK-NEXT:       vector.load %[[PART]][%[[G]], %[[J]]] {alignment = 16 : i64} : memref<4x32xf32>, vector<8xf32>
//       CHECK:       arith.select %[[OK]]
//       CHECK:       memref.store %{{.*}}, %[[SMEM]]
//       CHECK:     gpu.barrier
//       CHECK:     scf.if %{{.*}} {
//  CHECK-NEXT:       scf.if %[[FIRST]] {
//       CHECK:         %[[S:.*]] = arith.addf
//       CHECK:         arith.truncf
//       CHECK:         %[[OUT:.*]] = vector.from_elements {{.*}} : vector<8xbf16>
//  CHECK-NEXT:         vector.store %[[OUT]], %[[Y]][%c0, %[[J]]] {alignment = 16 : i64} : memref<1x32xbf16>, vector<8xbf16>
//       CHECK:     gpu.terminator
//   CHECK-NOT:   gpu.launch
//   CHECK-NOT:   linalg.generic

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (0, d1)>

func.func private @column_sum(%x: memref<64x32xbf16>, %y: memref<1x32xbf16>) attributes {dnn.config = {block = [4, 8, 1], strategy = "simt-reduce-columns", tile = [16], unroll = 2 : i64, vector = 8 : i64}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<1x32xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%acc : memref<1x32xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : memref<64x32xbf16>) outs(%acc : memref<1x32xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    %s = arith.addf %out, %e : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc : memref<1x32xf32>) outs(%y : memref<1x32xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  }
  return
}

// -----

// A mean over dims [0, 1] of a 2 x 3 x 16 input, keepdims=false: the 6 rows
// fit one block (one split), so its ty = 0 threads finish their 4 columns
// themselves, the scale and the store included, in the same launch.

// CHECK-LABEL: func.func private @one_split_mean(
//  CHECK-SAME:     %[[X:.*]]: memref<2x3x16xf32>, %[[Y:.*]]: memref<16xf32>)
//   CHECK-NOT:   memref.alloc
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c1, {{.*}} = %c1) threads(%[[TX:.*]], %[[TY:.*]], %{{.*}}) in ({{.*}} = %c4, {{.*}} = %c2, {{.*}} = %c1)
//       CHECK:     %[[J:.*]] = arith.muli %[[TX]], %c4 : index
//       CHECK:     vector.load %[[X]][%{{.*}}, %{{.*}}, %[[J]]] {alignment = 16 : i64} : memref<2x3x16xf32>, vector<4xf32>
//       CHECK:     gpu.barrier
//       CHECK:     scf.if
//       CHECK:       arith.divf
//       CHECK:       %[[MEAN:.*]] = vector.from_elements {{.*}} : vector<4xf32>
//  CHECK-NEXT:       vector.store %[[MEAN]], %[[Y]][%[[J]]] {alignment = 16 : i64} : memref<16xf32>, vector<4xf32>
//       CHECK:     gpu.terminator
//   CHECK-NOT:   gpu.launch

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>
#vec = affine_map<(d0) -> (d0)>

func.func private @one_split_mean(%x: memref<2x3x16xf32>, %y: memref<16xf32>) attributes {dnn.config = {block = [4, 2, 1], strategy = "simt-reduce-columns", tile = [8], vector = 4 : i64}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %six = arith.constant 6.000000e+00 : f32
  %acc = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#vec], iterator_types = ["parallel"]} outs(%acc : memref<16xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#id3, #col3], iterator_types = ["reduction", "reduction", "parallel"]} ins(%x : memref<2x3x16xf32>) outs(%acc : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]} ins(%acc : memref<16xf32>) outs(%y : memref<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.divf %in, %six : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// x minus its column sums needs every row summed before any is read again:
// not a column program.

// CHECK-LABEL: func.func private @centered(
//  CHECK-SAME:     dnn.config = {block = [128, 1, 1], strategy = "simt-generic"}
//  CHECK-SAME:     dnn.config_reason = "simt-reduce-columns does not apply (a reduction's result read over the rows (it needs every row first)): simt-generic, one thread per column; heuristics: column sums"
//       CHECK:   linalg.generic
//   CHECK-NOT:   gpu.launch

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (0, d1)>

func.func private @centered(%x: memref<8x4xf32>, %y: memref<8x4xf32>) attributes {dnn.config = {block = [4, 8, 1], strategy = "simt-reduce-columns", tile = [8], vector = 4 : i64}, dnn.config_reason = "column sums", dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %s = memref.alloc() : memref<1x4xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%s : memref<1x4xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : memref<8x4xf32>) outs(%s : memref<1x4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  }
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : memref<8x4xf32>, memref<1x4xf32>) outs(%y : memref<8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  }
  return
}

// -----

// A row sum is simt-reduce's, not a column program.

// CHECK-LABEL: func.func private @rows(
//  CHECK-SAME:     dnn.config_reason = "simt-reduce-columns does not apply (a reduction that is not over one run of dims before the innermost): simt-generic, one thread per column"
//       CHECK:   linalg.generic

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>

func.func private @rows(%x: memref<8x4xf32>, %s: memref<8x1xf32>) attributes {dnn.config = {block = [4, 8, 1], strategy = "simt-reduce-columns", tile = [8], vector = 4 : i64}, dnn.kernel} {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<8x4xf32>) outs(%s : memref<8x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  }
  return
}

// -----

// A reduction over a middle dim, O x R x N = 3 x 40 x (2 x 16): the outer
// index is grid z; the rows split over 2 blocks (tile 24) whose partials of
// outer index o sit at columns o * 32 + j, and the arrival count of its
// column of blocks at o * 1 + bx; N's two dims indexed from j.

// CHECK-LABEL: func.func private @middle_sum(
//  CHECK-SAME:     %[[X:.*]]: memref<3x40x2x16xf32>, %[[Y:.*]]: memref<3x2x16xf32>)
//  CHECK-SAME:     strategy = "simt-reduce-columns"
//       CHECK:   %[[PART:.*]] = memref.alloc() : memref<2x96xf32>
//       CHECK:   %[[COUNT:.*]] = memref.alloc() : memref<3xi32>
//       CHECK:   gpu.launch blocks(%{{.*}}, %[[BY:.*]], %[[BZ:.*]]) in ({{.*}} = %c1, {{.*}} = %c2, {{.*}} = %c3) threads(%[[TX:.*]], %[[TY:.*]], %{{.*}}) in ({{.*}} = %c8, {{.*}} = %c4, {{.*}} = %c1)
//       CHECK:     %[[J:.*]] = arith.muli %[[TX]], %c4 : index
//       CHECK:     %[[D1:.*]] = arith.remui %[[J]], %c16 : index
//       CHECK:     %[[D0:.*]] = arith.divui %[[J]], %c16 : index
//       CHECK:     vector.load %[[X]][%[[BZ]], %{{.*}}, %[[D0]], %[[D1]]] {alignment = 16 : i64} : memref<3x40x2x16xf32>, vector<4xf32>
//       CHECK:     %[[AT:.*]] = arith.muli %[[BZ]], %c32 : index
//       CHECK:     %[[COL:.*]] = arith.addi %[[AT]], %[[J]] : index
//       CHECK:     vector.store %{{.*}}, %[[PART]][%[[BY]], %[[COL]]] {alignment = 16 : i64} : memref<2x96xf32>, vector<4xf32>
//       CHECK:     memref.atomic_rmw addi %c1_i32, %[[COUNT]][%[[BZ]]] : (i32, memref<3xi32>) -> i32
//       CHECK:     vector.store %{{.*}}, %[[Y]][%[[BZ]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<3x2x16xf32>, vector<4xf32>
//   CHECK-NOT:   linalg.generic

#in = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
module {
  func.func private @middle_sum(%x: memref<3x40x2x16xf32>, %y: memref<3x2x16xf32>)
      attributes {dnn.config = {block = [8, 4, 1], strategy = "simt-reduce-columns", tile = [24],
                                unroll = 2 : i64, vector = 4 : i64}, dnn.kernel} {
    %zero = arith.constant 0.000000e+00 : f32
    linalg.generic {indexing_maps = [#id3], iterator_types = ["parallel", "parallel", "parallel"]}
        outs(%y : memref<3x2x16xf32>) {
    ^bb0(%o: f32):
      linalg.yield %zero : f32
    }
    linalg.generic {indexing_maps = [#in, #out],
                    iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
        ins(%x : memref<3x40x2x16xf32>) outs(%y : memref<3x2x16xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %acc, %a : f32
      linalg.yield %s : f32
    }
    return
  }
}
