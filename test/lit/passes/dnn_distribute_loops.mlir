// dnn-distribute-loops linearizes each kernel function's top-level
// scf.parallel and splits it into blocks (outer loop) of dnn.config's
// block[0] threads (inner loop), guarded by index < total; nested parallel
// loops run sequentially, and compute outside any loop gets a one-thread
// loop.

// RUN: not dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-distribute-loops,cse)' 2>%t.stderr | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERROR --input-file=%t.stderr

// CHECK-LABEL: func.func private @two_dims(
//  CHECK-SAME:     %[[X:.*]]: memref<3x5xf32>, %[[Y:.*]]: memref<3x5xf32>)
//       CHECK:   %[[C1:.*]] = arith.constant 1 : index
//  CHECK-NEXT:   scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%[[C1]]) step (%[[C1]]) {
//  CHECK-NEXT:     %[[C256:.*]] = arith.constant 256 : index
//  CHECK-NEXT:     scf.parallel (%[[T:.*]]) = (%{{.*}}) to (%[[C256]]) step (%[[C1]]) {
//  CHECK-NEXT:       %[[M:.*]] = arith.muli %[[B]], %[[C256]] : index
//  CHECK-NEXT:       %[[L:.*]] = arith.addi %[[M]], %[[T]] : index
//  CHECK-NEXT:       %[[C15:.*]] = arith.constant 15 : index
//  CHECK-NEXT:       %[[IN:.*]] = arith.cmpi ult, %[[L]], %[[C15]] : index
//  CHECK-NEXT:       scf.if %[[IN]] {
//  CHECK-NEXT:         %[[C5:.*]] = arith.constant 5 : index
//  CHECK-NEXT:         %[[J:.*]] = arith.remui %[[L]], %[[C5]] : index
//  CHECK-NEXT:         %[[I:.*]] = arith.divui %[[L]], %[[C5]] : index
//  CHECK-NEXT:         %[[V:.*]] = memref.load %[[X]][%[[I]], %[[J]]]
//  CHECK-NEXT:         memref.store %[[V]], %[[Y]][%[[I]], %[[J]]]
func.func private @two_dims(%x: memref<3x5xf32>, %y: memref<3x5xf32>) attributes {dnn.config = {block = [256, 1, 1], strategy = "simt-generic"}, dnn.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c3, %c5) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<3x5xf32>
    memref.store %v, %y[%i, %j] : memref<3x5xf32>
    scf.reduce
  }
  return
}

// -----

// 1000 points in blocks of 128 threads: 8 blocks, the last one partial.

// CHECK-LABEL: func.func private @many_blocks(
//       CHECK:   %[[C8:.*]] = arith.constant 8 : index
//  CHECK-NEXT:   scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[C8]])
//  CHECK-NEXT:     %[[C128:.*]] = arith.constant 128 : index
//  CHECK-NEXT:     scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[C128]])
//       CHECK:       %[[C1000:.*]] = arith.constant 1000 : index
//  CHECK-NEXT:       arith.cmpi ult, %{{.*}}, %[[C1000]] : index
func.func private @many_blocks(%x: memref<1000xf32>) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-generic"}, dnn.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  %cst = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c1000) step (%c1) {
    memref.store %cst, %x[%i] : memref<1000xf32>
    scf.reduce
  }
  return
}

// -----

// A rank-0 computation on the host runs in a one-thread loop.

// CHECK-LABEL: func.func private @rank0_on_host(
//       CHECK:   scf.parallel
//       CHECK:     scf.parallel
//       CHECK:       scf.if
//  CHECK-NEXT:         memref.load
//  CHECK-NEXT:         arith.addf
//  CHECK-NEXT:         memref.store
func.func private @rank0_on_host(%x: memref<f32>, %y: memref<f32>) attributes {dnn.config = {block = [256, 1, 1], strategy = "simt-generic"}, dnn.kernel} {
  %v = memref.load %x[] : memref<f32>
  %w = arith.addf %v, %v : f32
  memref.store %w, %y[] : memref<f32>
  return
}

// -----

// A parallel loop nested in a reduction loop becomes an scf.for.

// CHECK-LABEL: func.func private @nested_parallel(
//       CHECK:       scf.if
//  CHECK-NEXT:         scf.for
//  CHECK-NEXT:           scf.for
//   CHECK-NOT:             scf.parallel
func.func private @nested_parallel(%x: memref<3x7x5xf32>, %y: memref<3x5xf32>) attributes {dnn.config = {block = [256, 1, 1], strategy = "simt-generic"}, dnn.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  scf.parallel (%i) = (%c0) to (%c3) step (%c1) {
    scf.for %k = %c0 to %c7 step %c1 {
      scf.parallel (%j) = (%c0) to (%c5) step (%c1) {
        %v = memref.load %x[%i, %k, %j] : memref<3x7x5xf32>
        %a = memref.load %y[%i, %j] : memref<3x5xf32>
        %s = arith.addf %a, %v : f32
        memref.store %s, %y[%i, %j] : memref<3x5xf32>
        scf.reduce
      }
    }
    scf.reduce
  }
  return
}

// -----

// ERROR: error: kernel 'no_config' has no dnn.config; run dnn-default-config or the heuristics first
func.func private @no_config(%x: memref<f32>) attributes {dnn.kernel} {
  return
}

// -----

// ERROR: error: kernel 'other_strategy': strategy 'tc-sm100' has no GPU lowering yet; expected one of simt-generic, simt-pointwise, simt-reduce, simt-reduce-columns, simt-reduce-rows-columns, simt-window, simt-transpose, simt-depthwise, tc-sm90, tc-sm80
func.func private @other_strategy(%x: memref<f32>) attributes {dnn.config = {strategy = "tc-sm100"}, dnn.kernel} {
  return
}
