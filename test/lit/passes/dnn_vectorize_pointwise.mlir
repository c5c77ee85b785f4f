// dnn-vectorize-pointwise rewrites the elementwise linalg.generic ops of
// simt-pointwise kernels into loops over vectors: aligned vector loads of
// the operands that run along the innermost dim, scalar loads of those
// broadcast along it, the body once per lane, one vector store per output.
// Copies (linalg.copy, and generics that only move data) are vectorized the
// same way where the innermost dim stays innermost and contiguous. Ops it
// cannot vectorize, and kernels of other strategies, stay; a kernel none of
// whose ops vectorizes goes to simt-generic, with the reason.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-vectorize-pointwise,cse)' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (0, d1)>
#col = affine_map<(d0, d1) -> (d0, 0)>

// A row vector broadcast over the rows is loaded as a vector; a column
// broadcast along the innermost dim is loaded once and used by every lane.
// 6 vectors fill 3 blocks of 2 threads: no guard.

// CHECK-LABEL: func.func private @broadcasts(
//  CHECK-SAME:     %[[X:.*]]: memref<3x8xf32>, %[[R:.*]]: memref<1x8xf32>, %[[C:.*]]: memref<3x1xf32>, %[[Y:.*]]: memref<3x8xf32>)
//  CHECK-SAME:     dnn.vectorized = [1, 1]
//       CHECK:   %[[C0:.*]] = arith.constant 0 : index
//       CHECK:   %[[C6:.*]] = arith.constant 6 : index
//       CHECK:   scf.parallel (%[[G:.*]]) = (%[[C0]]) to (%[[C6]])
//       CHECK:     %[[C2:.*]] = arith.constant 2 : index
//  CHECK-NEXT:     %[[J:.*]] = arith.remui %[[G]], %[[C2]] : index
//  CHECK-NEXT:     %[[I:.*]] = arith.divui %[[G]], %[[C2]] : index
//  CHECK-NEXT:     %[[C4:.*]] = arith.constant 4 : index
//  CHECK-NEXT:     %[[E:.*]] = arith.muli %[[J]], %[[C4]] : index
//  CHECK-NEXT:     %[[VX:.*]] = vector.load %[[X]][%[[I]], %[[E]]] {alignment = 16 : i64} : memref<3x8xf32>, vector<4xf32>
//  CHECK-NEXT:     %[[VR:.*]] = vector.load %[[R]][%[[C0]], %[[E]]] {alignment = 16 : i64} : memref<1x8xf32>, vector<4xf32>
//  CHECK-NEXT:     %[[SC:.*]] = memref.load %[[C]][%[[I]], %[[C0]]] : memref<3x1xf32>
//  CHECK-NEXT:     %[[X0:.*]] = vector.extract %[[VX]][0] : f32 from vector<4xf32>
//  CHECK-NEXT:     %[[R0:.*]] = vector.extract %[[VR]][0] : f32 from vector<4xf32>
//  CHECK-NEXT:     %[[A0:.*]] = arith.addf %[[X0]], %[[R0]] : f32
//  CHECK-NEXT:     %[[M0:.*]] = arith.mulf %[[A0]], %[[SC]] : f32
//       CHECK:     %[[X3:.*]] = vector.extract %[[VX]][3] : f32 from vector<4xf32>
//       CHECK:     %[[M3:.*]] = arith.mulf %{{.*}}, %[[SC]] : f32
//  CHECK-NEXT:     %[[OUT:.*]] = vector.from_elements %[[M0]], %{{.*}}, %{{.*}}, %[[M3]] : vector<4xf32>
//  CHECK-NEXT:     vector.store %[[OUT]], %[[Y]][%[[I]], %[[E]]] {alignment = 16 : i64} : memref<3x8xf32>, vector<4xf32>
//   CHECK-NOT:   linalg.generic
func.func private @broadcasts(%x: memref<3x8xf32>, %r: memref<1x8xf32>, %c: memref<3x1xf32>, %y: memref<3x8xf32>) attributes {dnn.config = {block = [2, 1, 1], strategy = "simt-pointwise", vector = 4 : i64}, dnn.kernel} {
  linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %r, %c : memref<3x8xf32>, memref<1x8xf32>, memref<3x1xf32>) outs(%y : memref<3x8xf32>) {
  ^bb0(%a: f32, %b: f32, %s: f32, %out: f32):
    %t = arith.addf %a, %b : f32
    %u = arith.mulf %t, %s : f32
    linalg.yield %u : f32
  }
  return
}

// -----

// Trailing loops of one element (cudnn-frontend's [rows, hidden, 1, 1]): the
// vectors run along hidden, each operand read and written through a view
// of its leading dims; the per-row operand is broadcast along the vectors.

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#row4 = affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>
#col4 = affine_map<(d0, d1, d2, d3) -> (d0, 0, 0, 0)>

// CHECK-LABEL: func.func private @unit_dims(
//  CHECK-SAME:     %[[X:.*]]: memref<3x8x1x1xf32>, %[[R:.*]]: memref<1x8x1x1xf32>, %[[C:.*]]: memref<3x1x1x1xf32>, %[[Y:.*]]: memref<3x8x1x1xf32>)
//  CHECK-SAME:     dnn.vectorized = [1, 1]
//   CHECK-DAG:   %[[XV:.*]] = memref.reinterpret_cast %[[X]] to offset: [0], sizes: [3, 8], strides: [8, 1] : memref<3x8x1x1xf32> to memref<3x8xf32>
//   CHECK-DAG:   %[[RV:.*]] = memref.reinterpret_cast %[[R]] to offset: [0], sizes: [1, 8], strides: [8, 1] : memref<1x8x1x1xf32> to memref<1x8xf32>
//   CHECK-DAG:   %[[CV:.*]] = memref.reinterpret_cast %[[C]] to offset: [0], sizes: [3], strides: [1] : memref<3x1x1x1xf32> to memref<3xf32>
//   CHECK-DAG:   %[[YV:.*]] = memref.reinterpret_cast %[[Y]] to offset: [0], sizes: [3, 8], strides: [8, 1] : memref<3x8x1x1xf32> to memref<3x8xf32>
//       CHECK:   scf.parallel
//       CHECK:     %[[VX:.*]] = vector.load %[[XV]][%[[I:.*]], %[[E:.*]]] {alignment = 16 : i64} : memref<3x8xf32>, vector<4xf32>
//  CHECK-NEXT:     vector.load %[[RV]][%{{.*}}, %[[E]]] {alignment = 16 : i64} : memref<1x8xf32>, vector<4xf32>
//  CHECK-NEXT:     memref.load %[[CV]][%[[I]]] : memref<3xf32>
//       CHECK:     vector.store %{{.*}}, %[[YV]][%[[I]], %[[E]]] {alignment = 16 : i64} : memref<3x8xf32>, vector<4xf32>
//   CHECK-NOT:   linalg.generic
func.func private @unit_dims(%x: memref<3x8x1x1xf32>, %r: memref<1x8x1x1xf32>, %c: memref<3x1x1x1xf32>, %y: memref<3x8x1x1xf32>) attributes {dnn.config = {block = [2, 1, 1], strategy = "simt-pointwise", vector = 4 : i64}, dnn.kernel} {
  linalg.generic {indexing_maps = [#id4, #row4, #col4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %r, %c : memref<3x8x1x1xf32>, memref<1x8x1x1xf32>, memref<3x1x1x1xf32>) outs(%y : memref<3x8x1x1xf32>) {
  ^bb0(%a: f32, %b: f32, %s: f32, %out: f32):
    %t = arith.addf %a, %b : f32
    %u = arith.mulf %t, %s : f32
    linalg.yield %u : f32
  }
  return
}

// -----

// Two vectors per thread of a 4-thread block: thread t of group block b
// takes vectors 8b + t and 8b + t + 4, and loads both before computing.

// CHECK-LABEL: func.func private @unrolled(
//  CHECK-SAME:     %[[X:.*]]: memref<64xbf16>, %[[Y:.*]]: memref<64xbf16>)
//       CHECK:   scf.parallel (%[[G:.*]]) = (%{{.*}}) to (%[[C4:.*]]) step
//  CHECK-NEXT:     %[[B:.*]] = arith.divui %[[G]], %[[C4]] : index
//       CHECK:     %[[BASE:.*]] = arith.muli %[[B]], %[[C8:.*]] : index
//  CHECK-NEXT:     %[[T:.*]] = arith.remui %[[G]], %[[C4]] : index
//  CHECK-NEXT:     %[[V0:.*]] = arith.addi %[[BASE]], %[[T]] : index
//  CHECK-NEXT:     %[[T4:.*]] = arith.addi %[[T]], %[[C4]] : index
//  CHECK-NEXT:     %[[V1:.*]] = arith.addi %[[BASE]], %[[T4]] : index
//  CHECK-NEXT:     %[[E0:.*]] = arith.muli %[[V0]], %[[C8]] : index
//  CHECK-NEXT:     %[[L0:.*]] = vector.load %[[X]][%[[E0]]] {alignment = 16 : i64} : memref<64xbf16>, vector<8xbf16>
//  CHECK-NEXT:     %[[E1:.*]] = arith.muli %[[V1]], %[[C8]] : index
//  CHECK-NEXT:     %[[L1:.*]] = vector.load %[[X]][%[[E1]]] {alignment = 16 : i64} : memref<64xbf16>, vector<8xbf16>
//       CHECK:     vector.store %{{.*}}, %[[Y]][%[[E0]]] {alignment = 16 : i64}
//       CHECK:     vector.store %{{.*}}, %[[Y]][%[[E1]]] {alignment = 16 : i64}
func.func private @unrolled(%x: memref<64xbf16>, %y: memref<64xbf16>) attributes {dnn.config = {block = [4, 1, 1], strategy = "simt-pointwise", unroll = 2 : i64, vector = 8 : i64}, dnn.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<64xbf16>) outs(%y : memref<64xbf16>) {
  ^bb0(%a: bf16, %out: bf16):
    %e = arith.negf %a : bf16
    linalg.yield %e : bf16
  }
  return
}

// -----

// 10 vectors do not fill blocks of 4 threads: each vector is guarded.
// linalg.index reads the lane's own position along the innermost dim.

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func private @guarded_with_index(
//       CHECK:   %[[C12:.*]] = arith.constant 12 : index
//       CHECK:   scf.parallel (%[[G:.*]]) = (%{{.*}}) to (%[[C12]])
//       CHECK:     %[[C10:.*]] = arith.constant 10 : index
//  CHECK-NEXT:     %[[IN:.*]] = arith.cmpi ult, %[[G]], %[[C10]] : index
//  CHECK-NEXT:     scf.if %[[IN]] {
//       CHECK:       %[[E:.*]] = arith.muli %{{.*}}, %[[C2:.*]] : index
//       CHECK:       arith.index_cast %[[E]] : index to i64
//       CHECK:       %[[E1:.*]] = arith.addi %[[E]], %{{.*}} : index
//  CHECK-NEXT:       arith.index_cast %[[E1]] : index to i64
//       CHECK:       vector.store %{{.*}} {alignment = 8 : i64} : memref<5x4xf32>, vector<2xf32>
func.func private @guarded_with_index(%y: memref<5x4xf32>) attributes {dnn.config = {block = [4, 1, 1], strategy = "simt-pointwise", vector = 2 : i64}, dnn.kernel} {
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%y : memref<5x4xf32>) {
  ^bb0(%out: f32):
    %j = linalg.index 1 : index
    %i = arith.index_cast %j : index to i64
    %f = arith.uitofp %i : i64 to f32
    linalg.yield %f : f32
  }
  return
}

// -----

// Copies: a transpose that keeps the innermost dim reads its input through
// the permuted map, by vectors; a slice and a concat's part of its output,
// whose strides and offsets are multiples of the vector, are loaded and
// stored whole.

// CHECK-LABEL: func.func private @copies(
//  CHECK-SAME:     %[[X:.*]]: memref<2x4x3x8xbf16>, %[[Y:.*]]: memref<2x3x4x8xbf16>, %[[Q:.*]]: memref<4x24xbf16>, %[[K:.*]]: memref<4x8xbf16>, %[[C:.*]]: memref<4x16xbf16>)
//  CHECK-SAME:     dnn.vectorized = [3, 3]
//       CHECK:   scf.parallel (%[[G:.*]]) = (%c0) to (%c24) step (%c1) {
//       CHECK:     %[[V:.*]] = vector.load %[[X]][%[[I0:.*]], %[[I2:.*]], %[[I1:.*]], %[[E:.*]]] {alignment = 16 : i64} : memref<2x4x3x8xbf16>, vector<8xbf16>
//  CHECK-NEXT:     vector.store %[[V]], %[[Y]][%[[I0]], %[[I1]], %[[I2]], %[[E]]] {alignment = 16 : i64} : memref<2x3x4x8xbf16>, vector<8xbf16>
//       CHECK:   %[[SLICE:.*]] = memref.subview %[[Q]][0, 8] [4, 8] [1, 1]
//       CHECK:   scf.parallel
//       CHECK:     %[[W:.*]] = vector.load %[[SLICE]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<4x8xbf16, strided<[24, 1], offset: 8>>, vector<8xbf16>
//  CHECK-NEXT:     vector.store %[[W]], %[[K]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<4x8xbf16>, vector<8xbf16>
//       CHECK:   %[[PART:.*]] = memref.subview %[[C]][0, 8] [4, 8] [1, 1]
//       CHECK:   scf.parallel
//       CHECK:     %[[U:.*]] = vector.load %[[K]]
//  CHECK-NEXT:     vector.store %[[U]], %[[PART]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<4x8xbf16, strided<[16, 1], offset: 8>>, vector<8xbf16>
//   CHECK-NOT:   linalg.
func.func private @copies(%x: memref<2x4x3x8xbf16>, %y: memref<2x3x4x8xbf16>, %q: memref<4x24xbf16>, %k: memref<4x8xbf16>, %c: memref<4x16xbf16>) attributes {dnn.config = {block = [8, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<2x4x3x8xbf16>) outs(%y : memref<2x3x4x8xbf16>) {
  ^bb0(%a: bf16, %out: bf16):
    linalg.yield %a : bf16
  }
  %slice = memref.subview %q[0, 8] [4, 8] [1, 1] : memref<4x24xbf16> to memref<4x8xbf16, strided<[24, 1], offset: 8>>
  linalg.copy ins(%slice : memref<4x8xbf16, strided<[24, 1], offset: 8>>) outs(%k : memref<4x8xbf16>)
  %part = memref.subview %c[0, 8] [4, 8] [1, 1] : memref<4x16xbf16> to memref<4x8xbf16, strided<[16, 1], offset: 8>>
  linalg.copy ins(%k : memref<4x8xbf16>) outs(%part : memref<4x8xbf16, strided<[16, 1], offset: 8>>)
  return
}

// -----

// A concat's copies into its slabs: parts of one buffer that share no
// element (their columns are apart), from inputs that are not that buffer.
// They run in any order, at once: one loop over both parts' groups (4 and
// 8, multiples of the block's 2 threads, so that a block runs one part),
// group g running the first copy below 4 and the second at g - 4.

// CHECK-LABEL: func.func private @concat_parts(
//  CHECK-SAME:     %[[A:.*]]: memref<4x8xbf16>, %[[B:.*]]: memref<4x16xbf16>, %[[Y:.*]]: memref<4x24xbf16>)
//  CHECK-SAME:     dnn.vectorized = [2, 2]
//       CHECK:   %[[PA:.*]] = memref.subview %[[Y]][0, 0] [4, 8] [1, 1]
//       CHECK:   %[[PB:.*]] = memref.subview %[[Y]][0, 8] [4, 16] [1, 1]
//       CHECK:   scf.parallel (%[[G:.*]]) = (%c0) to (%c12) step (%c1) {
//       CHECK:     %[[FIRST:.*]] = arith.cmpi ult, %[[G]], %c4 : index
//  CHECK-NEXT:     scf.if %[[FIRST]] {
//       CHECK:       %[[U:.*]] = vector.load %[[A]][%[[G]], %{{.*}}]
//  CHECK-NEXT:       vector.store %[[U]], %[[PA]][%[[G]], %{{.*}}] {{.*}}
//  CHECK-NEXT:     } else {
//  CHECK-NEXT:       %[[H:.*]] = arith.subi %[[G]], %c4 : index
//       CHECK:       %[[V:.*]] = vector.load %[[B]][{{.*}}]
//  CHECK-NEXT:       vector.store %[[V]], %[[PB]][{{.*}}] {{.*}}
//  CHECK-NEXT:     }
//  CHECK-NEXT:     scf.reduce
//  CHECK-NEXT:   }
//   CHECK-NOT:   scf.parallel
//   CHECK-NOT:   linalg.
func.func private @concat_parts(%a: memref<4x8xbf16>, %b: memref<4x16xbf16>, %y: memref<4x24xbf16>) attributes {dnn.config = {block = [2, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.kernel} {
  %pa = memref.subview %y[0, 0] [4, 8] [1, 1] : memref<4x24xbf16> to memref<4x8xbf16, strided<[24, 1]>>
  linalg.copy ins(%a : memref<4x8xbf16>) outs(%pa : memref<4x8xbf16, strided<[24, 1]>>)
  %pb = memref.subview %y[0, 8] [4, 16] [1, 1] : memref<4x24xbf16> to memref<4x16xbf16, strided<[24, 1], offset: 8>>
  linalg.copy ins(%b : memref<4x16xbf16>) outs(%pb : memref<4x16xbf16, strided<[24, 1], offset: 8>>)
  return
}

// -----

// A kernel none of whose ops vectorizes is handed to simt-generic, with the
// reason: here a slice that starts inside a vector.

// CHECK-LABEL: func.func private @misaligned_slice(
//  CHECK-SAME:     dnn.config = {block = [8, 1, 1], strategy = "simt-generic"}
//  CHECK-SAME:     dnn.config_reason = "simt-pointwise does not apply (operand 0: a layout (strided<[24, 1], offset: 3>) that breaks vectors of 8): simt-generic, one thread per element; heuristics: copy by slice"
//  CHECK-SAME:     dnn.vectorized = [0, 1]
//       CHECK:   linalg.copy
func.func private @misaligned_slice(%q: memref<4x24xbf16>, %k: memref<4x8xbf16>) attributes {dnn.config = {block = [8, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.config_reason = "copy by slice", dnn.kernel} {
  %slice = memref.subview %q[0, 3] [4, 8] [1, 1] : memref<4x24xbf16> to memref<4x8xbf16, strided<[24, 1], offset: 3>>
  linalg.copy ins(%slice : memref<4x8xbf16, strided<[24, 1], offset: 3>>) outs(%k : memref<4x8xbf16>)
  return
}

// -----

// Not vectorized: a map that moves the innermost dim, an innermost dim that
// is not a multiple of the vector, a reduction. A simt-generic kernel is not
// touched.

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func private @stays(
//  CHECK-SAME:     dnn.config = {block = [128, 1, 1], strategy = "simt-generic"}
//  CHECK-SAME:     dnn.config_reason = "simt-pointwise does not apply (operand 0 reads the innermost loop dim at its dim 0 of 2: the copy moves the innermost dim): simt-generic, one thread per element"
//  CHECK-SAME:     dnn.vectorized = [0, 3]
//   CHECK-NOT:   vector.
//       CHECK:   linalg.generic
//       CHECK:   linalg.generic
//       CHECK:   linalg.generic
func.func private @stays(%x: memref<8x4xf32>, %y: memref<4x8xf32>, %z: memref<4x6xf32>, %s: memref<4xf32>) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 4 : i64}, dnn.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x4xf32>) outs(%y : memref<4x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%z : memref<4x6xf32>) {
  ^bb0(%out: f32):
    %n = arith.negf %out : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%y : memref<4x8xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  }
  return
}

// CHECK-LABEL: func.func private @other_strategy(
//   CHECK-NOT:   dnn.vectorized
//       CHECK:   linalg.generic
func.func private @other_strategy(%x: memref<8xf32>, %y: memref<8xf32>) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-generic"}, dnn.kernel} {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  }
  return
}
