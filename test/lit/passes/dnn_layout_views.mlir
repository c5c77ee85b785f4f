// dnn-layout-views: a transpose kernel between a channels-last graph input
// (or output) and a buffer holding it in its memory order becomes a
// reinterpret_cast of the argument, which takes its strided type; a kernel
// that copies a buffer into a graph output through reshapes makes the buffer
// a view of the output. A copy whose elements would move stays.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-layout-views)' | FileCheck %s

#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>
#nchw = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-NOT:   func.func private @g_k0_tensor
// CHECK-NOT:   func.func private @g_k3_tensor
// CHECK-LABEL: func.func @g(
//  CHECK-SAME:     %[[X:[^:]*]]: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>> {dnn.name = "x"
//  CHECK-SAME:     %[[Y:[^:]*]]: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>> {bufferize.result
//  CHECK-NEXT:   %[[V:.*]] = memref.reinterpret_cast %[[X]] to offset: [0], sizes: [2, 4, 5, 3], strides: [60, 15, 3, 1] : memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>> to memref<2x4x5x3xf32>
//  CHECK-NEXT:   %[[R:.*]] = memref.collapse_shape %[[V]]
//  CHECK-NEXT:   %[[W:.*]] = memref.reinterpret_cast %[[Y]] to offset: [0], sizes: [40, 3], strides: [3, 1] : memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>> to memref<40x3xf32>
//  CHECK-NEXT:   call @g_k1_pointwise(%[[R]], %[[W]])
//  CHECK-NEXT:   return
func.func private @g_k0_tensor(%x: memref<2x3x4x5xf32>, %t: memref<2x4x5x3xf32>) attributes {dnn.kernel} {
  linalg.generic {indexing_maps = [#nhwc, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<2x3x4x5xf32>) outs(%t : memref<2x4x5x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}
func.func private @g_k1_pointwise(%r: memref<40x3xf32>, %o: memref<40x3xf32>) attributes {dnn.kernel} {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%r : memref<40x3xf32>) outs(%o : memref<40x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  return
}
func.func private @g_k3_tensor(%s: memref<2x4x5x3xf32>, %y: memref<2x3x4x5xf32>) attributes {dnn.kernel} {
  linalg.generic {indexing_maps = [#nchw, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : memref<2x4x5x3xf32>) outs(%y : memref<2x3x4x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}
func.func @g(%x: memref<2x3x4x5xf32> {dnn.name = "x", dnn.strides = array<i64: 60, 1, 15, 3>}, %y: memref<2x3x4x5xf32> {bufferize.result, dnn.name = "y", dnn.strides = array<i64: 60, 1, 15, 3>}) attributes {dnn.graph} {
  %t = memref.alloc() : memref<2x4x5x3xf32>
  call @g_k0_tensor(%x, %t) : (memref<2x3x4x5xf32>, memref<2x4x5x3xf32>) -> ()
  %r = memref.collapse_shape %t [[0, 1, 2], [3]] : memref<2x4x5x3xf32> into memref<40x3xf32>
  %o = memref.alloc() : memref<40x3xf32>
  call @g_k1_pointwise(%r, %o) : (memref<40x3xf32>, memref<40x3xf32>) -> ()
  %s = memref.expand_shape %o [[0, 1, 2], [3]] output_shape [2, 4, 5, 3] : memref<40x3xf32> into memref<2x4x5x3xf32>
  call @g_k3_tensor(%s, %y) : (memref<2x4x5x3xf32>, memref<2x3x4x5xf32>) -> ()
  return
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>

// A per-channel statistic made as 1 x 3 and returned as 1 x 3 x 1 x 1: the
// kernels write the output through a view, and a later reader reads it there.

// CHECK-NOT:   func.func private @r_k1_tensor
// CHECK-LABEL: func.func @r(
//  CHECK-SAME:     %[[X:[^:]*]]: memref<8x3xf32>, %[[M:[^:]*]]: memref<1x3x1x1xf32> {bufferize.result
//  CHECK-NEXT:   %[[V:.*]] = memref.reinterpret_cast %[[M]] to offset: [0], sizes: [1, 3], strides: [3, 1] : memref<1x3x1x1xf32> to memref<1x3xf32>
//  CHECK-NEXT:   call @r_k0_reduction(%[[X]], %[[V]])
//  CHECK-NEXT:   call @r_k2_pointwise(%[[X]], %[[V]], %{{.*}})
func.func private @r_k0_reduction(%x: memref<8x3xf32>, %s: memref<1x3xf32>) attributes {dnn.kernel} {
  return
}
func.func private @r_k1_tensor(%s: memref<1x3xf32>, %m: memref<1x3x1x1xf32>) attributes {dnn.kernel} {
  %e = memref.expand_shape %s [[0], [1, 2, 3]] output_shape [1, 3, 1, 1] : memref<1x3xf32> into memref<1x3x1x1xf32>
  linalg.copy ins(%e : memref<1x3x1x1xf32>) outs(%m : memref<1x3x1x1xf32>)
  return
}
func.func private @r_k2_pointwise(%x: memref<8x3xf32>, %s: memref<1x3xf32>, %o: memref<8x3xf32>) attributes {dnn.kernel} {
  linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> (0, d1)>, #id2], iterator_types = ["parallel", "parallel"]} ins(%x, %s : memref<8x3xf32>, memref<1x3xf32>) outs(%o : memref<8x3xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  }
  return
}
func.func @r(%x: memref<8x3xf32>, %m: memref<1x3x1x1xf32> {bufferize.result}, %y: memref<8x3xf32> {bufferize.result}) attributes {dnn.graph} {
  %s = memref.alloc() : memref<1x3xf32>
  call @r_k0_reduction(%x, %s) : (memref<8x3xf32>, memref<1x3xf32>) -> ()
  call @r_k1_tensor(%s, %m) : (memref<1x3xf32>, memref<1x3x1x1xf32>) -> ()
  call @r_k2_pointwise(%x, %s, %y) : (memref<8x3xf32>, memref<1x3xf32>, memref<8x3xf32>) -> ()
  return
}

// -----

#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// x is row-major: transposing it moves its elements, and the copy stays.

// CHECK-LABEL: func.func @moves(
//  CHECK-SAME:     memref<2x3x4x5xf32> {dnn.name = "x"
//  CHECK-NEXT:   %[[T:.*]] = memref.alloc() : memref<2x4x5x3xf32>
//  CHECK-NEXT:   call @moves_k0_tensor(%{{.*}}, %[[T]])
func.func private @moves_k0_tensor(%x: memref<2x3x4x5xf32>, %t: memref<2x4x5x3xf32>) attributes {dnn.kernel} {
  linalg.generic {indexing_maps = [#nhwc, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<2x3x4x5xf32>) outs(%t : memref<2x4x5x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}
func.func private @moves_k1(%t: memref<2x4x5x3xf32>) attributes {dnn.kernel} {
  return
}
func.func @moves(%x: memref<2x3x4x5xf32> {dnn.name = "x", dnn.strides = array<i64: 60, 20, 5, 1>}) attributes {dnn.graph} {
  %t = memref.alloc() : memref<2x4x5x3xf32>
  call @moves_k0_tensor(%x, %t) : (memref<2x3x4x5xf32>, memref<2x4x5x3xf32>) -> ()
  call @moves_k1(%t) : (memref<2x4x5x3xf32>) -> ()
  return
}

// -----

#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

// Output read back: a kernel writes output y (already of its channels-last
// type, as dnn-io-strides leaves a convolution's output that a training
// step saves), and a transpose reads it into y's memory order for the
// column sums of a batchnorm: the buffer becomes a view of y.

// CHECK-NOT:   func.func private @b_k1_tensor
// CHECK-LABEL: func.func @b(
//  CHECK-SAME:     %[[X:[^:]*]]: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>> {dnn.name = "x"
//  CHECK-SAME:     %[[Y:[^:]*]]: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>> {bufferize.result
//  CHECK-NEXT:   call @b_k0_writer(%[[X]], %[[Y]])
//  CHECK-NEXT:   %[[V:.*]] = memref.reinterpret_cast %[[Y]] to offset: [0], sizes: [2, 4, 5, 3], strides: [60, 15, 3, 1] : memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>> to memref<2x4x5x3xf32>
//  CHECK-NEXT:   %[[R:.*]] = memref.collapse_shape %[[V]]
//  CHECK-NEXT:   call @b_k2_reduction(%[[R]], %{{.*}})
func.func private @b_k0_writer(%x: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>, %y: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>) attributes {dnn.kernel} {
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>) outs(%y : memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  return
}
func.func private @b_k1_tensor(%y: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>, %t: memref<2x4x5x3xf32>) attributes {dnn.kernel} {
  linalg.generic {indexing_maps = [#nhwc, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>) outs(%t : memref<2x4x5x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}
func.func private @b_k2_reduction(%r: memref<40x3xf32>, %s: memref<1x3xf32>) attributes {dnn.kernel} {
  linalg.generic {indexing_maps = [#id2, affine_map<(d0, d1) -> (0, d1)>], iterator_types = ["reduction", "parallel"]} ins(%r : memref<40x3xf32>) outs(%s : memref<1x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  }
  return
}
func.func @b(%x: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>> {dnn.name = "x", dnn.strides = array<i64: 60, 1, 15, 3>}, %y: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>> {bufferize.result, dnn.name = "y", dnn.strides = array<i64: 60, 1, 15, 3>}, %s: memref<1x3xf32> {bufferize.result, dnn.name = "s"}) attributes {dnn.graph} {
  call @b_k0_writer(%x, %y) : (memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>, memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>) -> ()
  %t = memref.alloc() : memref<2x4x5x3xf32>
  call @b_k1_tensor(%y, %t) : (memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>, memref<2x4x5x3xf32>) -> ()
  %r = memref.collapse_shape %t [[0, 1, 2], [3]] : memref<2x4x5x3xf32> into memref<40x3xf32>
  call @b_k2_reduction(%r, %s) : (memref<40x3xf32>, memref<1x3xf32>) -> ()
  return
}

// -----

#nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// The same copy with a kernel writing y after it: the copy stays (the view
// would read what the later write leaves).

// CHECK-LABEL: func.func @late(
//       CHECK:   memref.alloc() : memref<2x4x5x3xf32>
//  CHECK-NEXT:   call @late_k1_tensor
//  CHECK-NEXT:   call @late_k2_writer
func.func private @late_k1_tensor(%y: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>, %t: memref<2x4x5x3xf32>) attributes {dnn.kernel} {
  linalg.generic {indexing_maps = [#nhwc, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>) outs(%t : memref<2x4x5x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}
func.func private @late_k2_writer(%t: memref<2x4x5x3xf32>, %y: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>) attributes {dnn.kernel} {
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>) outs(%y : memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  return
}
func.func @late(%y: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>> {bufferize.result, dnn.name = "y", dnn.strides = array<i64: 60, 1, 15, 3>}) attributes {dnn.graph} {
  %t = memref.alloc() : memref<2x4x5x3xf32>
  call @late_k1_tensor(%y, %t) : (memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>, memref<2x4x5x3xf32>) -> ()
  call @late_k2_writer(%t, %y) : (memref<2x4x5x3xf32>, memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>) -> ()
  return
}

// -----

#nchw = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>

// Output with a reader: a kernel fills a buffer in y's memory order, a
// transpose copies it into y, and a kernel that reads any layout (here a
// pooling window) reads y after the copy, as a relu's output that the next
// convolution reads and a training step saves. The buffer becomes a view
// of y, y takes its strided type and so does the reader's argument.

// CHECK-NOT:   func.func private @o_k1_tensor
// CHECK-LABEL: func.func private @o_k2_pool(
//  CHECK-SAME:     %{{[^:]*}}: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>
// CHECK-LABEL: func.func @o(
//  CHECK-SAME:     %[[Y:[^:]*]]: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>> {bufferize.result
//  CHECK-NEXT:   %[[V:.*]] = memref.reinterpret_cast %[[Y]] to offset: [0], sizes: [40, 3], strides: [3, 1] : memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>> to memref<40x3xf32>
//  CHECK-NEXT:   call @o_k0_pointwise(%{{.*}}, %[[V]])
//  CHECK-NEXT:   call @o_k2_pool(%[[Y]], %{{.*}})
func.func private @o_k0_pointwise(%x: memref<40x3xf32>, %o: memref<40x3xf32>) attributes {dnn.kernel} {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} ins(%x : memref<40x3xf32>) outs(%o : memref<40x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  return
}
func.func private @o_k1_tensor(%s: memref<2x4x5x3xf32>, %y: memref<2x3x4x5xf32> {bufferize.result}) attributes {dnn.kernel} {
  linalg.generic {indexing_maps = [#nchw, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : memref<2x4x5x3xf32>) outs(%y : memref<2x3x4x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}
func.func private @o_k2_pool(%y: memref<2x3x4x5xf32>, %p: memref<2x3x4x5xf32> {bufferize.result}) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-window"}, dnn.kernel} {
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%y : memref<2x3x4x5xf32>) outs(%p : memref<2x3x4x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}
func.func @o(%x: memref<40x3xf32> {dnn.name = "x"}, %y: memref<2x3x4x5xf32> {bufferize.result, dnn.name = "y", dnn.strides = array<i64: 60, 1, 15, 3>}, %p: memref<2x3x4x5xf32> {bufferize.result, dnn.name = "p"}) attributes {dnn.graph} {
  %o = memref.alloc() : memref<40x3xf32>
  call @o_k0_pointwise(%x, %o) : (memref<40x3xf32>, memref<40x3xf32>) -> ()
  %s = memref.expand_shape %o [[0, 1, 2], [3]] output_shape [2, 4, 5, 3] : memref<40x3xf32> into memref<2x4x5x3xf32>
  call @o_k1_tensor(%s, %y) : (memref<2x4x5x3xf32>, memref<2x3x4x5xf32>) -> ()
  call @o_k2_pool(%y, %p) : (memref<2x3x4x5xf32>, memref<2x3x4x5xf32>) -> ()
  return
}
