// dnn-tile-transposes: a simt-transpose kernel's copy becomes one gpu.launch
// that moves 64 x 64 tiles through shared memory, reading vectors along
// the source's contiguous dim and writing them along the destination's.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-tile-transposes,canonicalize,cse)' | FileCheck %s

#t = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// 96 x 200 f32 to 200 x 96: 2 x 4 tiles, 16-byte vectors both ways; both
// buffers viewed flat; a shared tile of 64 rows of 65 f32 (an odd pitch);
// four loads a thread before the first shared store.
// CHECK-LABEL: func.func private @transpose_2d(
//  CHECK-SAME:     %[[X:.*]]: memref<96x200xf32>, %[[Y:.*]]: memref<200x96xf32>
//  CHECK-SAME:     dnn.config_reason = "copy by transpose; a 96 x 200 transpose in 64 x 64 tiles: 16-byte reads, 16-byte writes"
//       CHECK:   %[[SRC:.*]] = memref.reinterpret_cast %[[X]] to offset: [0], sizes: [19200], strides: [1]
//       CHECK:   %[[DST:.*]] = memref.reinterpret_cast %[[Y]] to offset: [0], sizes: [19200], strides: [1]
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c8, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1) workgroup(%[[TILE:.*]] : memref<64x65xf32, #gpu.address_space<workgroup>>)
//       CHECK-COUNT-4:  vector.load %[[SRC]][%{{.*}}] {alignment = 16 : i64} : memref<19200xf32>, vector<4xf32>
//   CHECK-NOT:     vector.load
//       CHECK:     memref.store %{{.*}}, %[[TILE]]
//       CHECK:     gpu.barrier
//       CHECK:     memref.load %[[TILE]]
//       CHECK:     scf.if
//       CHECK:       vector.store %{{.*}}, %[[DST]][%{{.*}}] {alignment = 16 : i64} : memref<19200xf32>, vector<4xf32>
//   CHECK-NOT:   linalg.generic
func.func private @transpose_2d(%x: memref<96x200xf32>, %y: memref<200x96xf32> {bufferize.result}) attributes {dnn.anchor = "tensor", dnn.config = {block = [256, 1, 1], strategy = "simt-transpose"}, dnn.config_reason = "copy by transpose", dnn.kernel} {
  linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<96x200xf32>) outs(%y : memref<200x96xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}

// -----

#nchw = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// NCHW to NHWC, bf16 2 x 24 x 7 x 9: H and W merge (adjacent in both), so
// it is a batch of 2 transposes of 24 x 63. Rows of 63 take 2-byte reads;
// rows of 24 channels 16-byte writes. A block is one tile of a batch: 2.
// CHECK-LABEL: func.func private @nchw_to_nhwc(
//  CHECK-SAME:     dnn.config_reason = "copy by transpose; a 24 x 63 transpose over a batch of 2 in 64 x 64 tiles: 2-byte reads, 16-byte writes"
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1) workgroup(%{{.*}} : memref<64x66xbf16, #gpu.address_space<workgroup>>)
//       CHECK-COUNT-16:  memref.load %{{.*}}[%{{.*}}] : memref<3024xbf16>
//       CHECK:     gpu.barrier
//       CHECK:       vector.store %{{.*}}, %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<3024xbf16>, vector<8xbf16>
func.func private @nchw_to_nhwc(%x: memref<2x24x7x9xbf16>, %y: memref<2x7x9x24xbf16> {bufferize.result}) attributes {dnn.anchor = "tensor", dnn.config = {block = [256, 1, 1], strategy = "simt-transpose"}, dnn.config_reason = "copy by transpose", dnn.kernel} {
  linalg.generic {indexing_maps = [#nchw, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<2x24x7x9xbf16>) outs(%y : memref<2x7x9x24xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The same order in both buffers (a plain copy, one axis once its dims
// merge): not a transpose. The copy becomes one between the buffers' flat
// views, handed to simt-pointwise (16-byte vectors), and its reason says
// why.
// CHECK-LABEL: func.func private @plain_copy(
//  CHECK-SAME:     dnn.config = {block = [256, 1, 1], strategy = "simt-pointwise", unroll = 2 : i64, vector = 4 : i64}
//  CHECK-SAME:     dnn.config_reason = "simt-transpose does not apply (one axis to copy, in the same order in both buffers): a plain copy of 2048 contiguous elements, simt-pointwise's vectors; heuristics: copy"
//       CHECK:   %[[X:.*]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [2048], strides: [1]
//       CHECK:   %[[Y:.*]] = memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [2048], strides: [1]
//       CHECK:   linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[X]] : memref<2048xf32>) outs(%[[Y]] : memref<2048xf32>)
//   CHECK-NOT:   gpu.launch
func.func private @plain_copy(%x: memref<64x32xf32>, %y: memref<64x32xf32> {bufferize.result}) attributes {dnn.anchor = "tensor", dnn.config = {block = [256, 1, 1], strategy = "simt-transpose"}, dnn.config_reason = "copy", dnn.kernel} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<64x32xf32>) outs(%y : memref<64x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}

// -----

#t = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// A second input (a residual in the output's layout): not one copy.
// CHECK-LABEL: func.func private @two_inputs(
//  CHECK-SAME:     dnn.config_reason = "simt-transpose does not apply (2 inputs: expected one): simt-generic, one thread per element; heuristics: copy"
func.func private @two_inputs(%x: memref<64x32xf32>, %r: memref<32x64xf32>, %y: memref<32x64xf32> {bufferize.result}) attributes {dnn.anchor = "tensor", dnn.config = {block = [256, 1, 1], strategy = "simt-transpose"}, dnn.config_reason = "copy", dnn.kernel} {
  linalg.generic {indexing_maps = [#t, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %r : memref<64x32xf32>, memref<32x64xf32>) outs(%y : memref<32x64xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %0 = arith.addf %in, %in2 : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

#t = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// A transpose with its epilogue (dnn-fuse joins a cast): the tile holds f32,
// each element is cast as it is written, 8 bf16 to a 16-byte store.
// CHECK-LABEL: func.func private @transpose_cast(
//  CHECK-SAME:     dnn.config_reason = "copy by transpose, cast; a 96 x 200 transpose in 64 x 64 tiles: 16-byte reads, 16-byte writes, each element through the kernel's pointwise ops"
//       CHECK:   gpu.launch {{.*}} workgroup(%[[TILE:.*]] : memref<64x65xf32, #gpu.address_space<workgroup>>)
//       CHECK:     gpu.barrier
//  CHECK-COUNT-8:  memref.load %[[TILE]]
//  CHECK-COUNT-8:  arith.truncf %{{.*}} : f32 to bf16
//       CHECK:     scf.if
//       CHECK:       vector.store %{{.*}}, %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<19200xbf16>, vector<8xbf16>
func.func private @transpose_cast(%x: memref<96x200xf32>, %y: memref<200x96xbf16> {bufferize.result}) attributes {dnn.anchor = "tensor", dnn.config = {block = [256, 1, 1], strategy = "simt-transpose"}, dnn.config_reason = "copy by transpose, cast", dnn.kernel} {
  linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<96x200xf32>) outs(%y : memref<200x96xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  return
}

// -----

#t = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// A body that reads the output's current value is not a copy.
// CHECK-LABEL: func.func private @reads_output(
//  CHECK-SAME:     dnn.config_reason = "simt-transpose does not apply (the kernel's body reads its output or its indices): simt-generic, one thread per element; heuristics: copy"
func.func private @reads_output(%x: memref<64x32xf32>, %y: memref<32x64xf32> {bufferize.result}) attributes {dnn.anchor = "tensor", dnn.config = {block = [256, 1, 1], strategy = "simt-transpose"}, dnn.config_reason = "copy", dnn.kernel} {
  linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%x : memref<64x32xf32>) outs(%y : memref<32x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

#p = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// A transpose whose operand is a view that already permutes it (dims 1 and
// 2 swapped in its strides): both buffers step in the same order, so it is
// a plain copy of the operand's memory, at the view's offset.
// CHECK-LABEL: func.func private @permuted_view(
//  CHECK-SAME:     strategy = "simt-pointwise"
//       CHECK:   memref.reinterpret_cast %{{.*}} to offset: [8], sizes: [24], strides: [1] : memref<2x3x4xbf16, strided<[12, 1, 3], offset: 8>> to memref<24xbf16, strided<[1], offset: 8>>
//       CHECK:   memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [24], strides: [1] : memref<2x4x3xbf16> to memref<24xbf16>
//   CHECK-NOT:   gpu.launch
func.func private @permuted_view(%x: memref<2x3x4xbf16, strided<[12, 1, 3], offset: 8>>, %y: memref<2x4x3xbf16> {bufferize.result}) attributes {dnn.anchor = "tensor", dnn.config = {block = [256, 1, 1], strategy = "simt-transpose"}, dnn.config_reason = "copy", dnn.kernel} {
  linalg.generic {indexing_maps = [#p, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : memref<2x3x4xbf16, strided<[12, 1, 3], offset: 8>>) outs(%y : memref<2x4x3xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  }
  return
}
