// dnn-host-to-kernels leaves nothing but allocations, views and calls on
// the host: copies into output parameters are elided, other copies become
// linalg.copy (in a new kernel function when on the host), and splat
// constant buffers become filled allocations.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-host-to-kernels)' | FileCheck %s

// The fresh buffer a kernel fills is replaced by the output parameter it was
// copied into.

// CHECK-LABEL: func.func private @elide_output_copy(
//  CHECK-SAME:     %[[X:.*]]: memref<4xf32>, %[[OUT:.*]]: memref<4xf32>)
//   CHECK-NOT:   memref.alloc
//  CHECK-NEXT:   linalg.copy ins(%[[X]] : memref<4xf32>) outs(%[[OUT]] : memref<4xf32>)
//  CHECK-NEXT:   return
func.func private @elide_output_copy(%x: memref<4xf32>, %out: memref<4xf32>) attributes {dnn.kernel} {
  %a = memref.alloc() : memref<4xf32>
  linalg.copy ins(%x : memref<4xf32>) outs(%a : memref<4xf32>)
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  return
}

// -----

// One buffer returned twice: the first output takes its place, the second is
// copied from the first by a new kernel function.

// CHECK-LABEL: func.func private @same_buffer_twice_copy(
//  CHECK-SAME:     attributes {dnn.anchor = "copy", dnn.kernel}
//  CHECK-NEXT:   linalg.copy
// CHECK-LABEL: func.func @same_buffer_twice(
//  CHECK-SAME:     %[[X:.*]]: memref<4xf32>, %[[O1:.*]]: memref<4xf32>, %[[O2:.*]]: memref<4xf32>)
//  CHECK-NEXT:   call @k(%[[X]], %[[O1]])
//  CHECK-NEXT:   call @same_buffer_twice_copy(%[[O1]], %[[O2]])
//  CHECK-NEXT:   return
func.func private @k(%x: memref<4xf32>, %out: memref<4xf32>) attributes {dnn.kernel} {
  linalg.copy ins(%x : memref<4xf32>) outs(%out : memref<4xf32>)
  return
}
func.func @same_buffer_twice(%x: memref<4xf32>, %o1: memref<4xf32>, %o2: memref<4xf32>) attributes {dnn.graph} {
  %a = memref.alloc() : memref<4xf32>
  call @k(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()
  memref.copy %a, %o1 : memref<4xf32> to memref<4xf32>
  memref.copy %a, %o2 : memref<4xf32> to memref<4xf32>
  return
}

// -----

// An input returned as an output is copied by a new kernel function.

// CHECK-LABEL: func.func private @input_to_output_copy(
//  CHECK-SAME:     %[[SRC:.*]]: memref<2x3xf32>, %[[DST:.*]]: memref<2x3xf32>) attributes {dnn.anchor = "copy", dnn.kernel}
//  CHECK-NEXT:   linalg.copy {{.*}}ins(%[[SRC]] : memref<2x3xf32>) outs(%[[DST]] : memref<2x3xf32>)
// CHECK-LABEL: func.func @input_to_output(
//  CHECK-SAME:     %[[X:.*]]: memref<2x3xf32>, %[[OUT:.*]]: memref<2x3xf32>)
//  CHECK-NEXT:   call @input_to_output_copy(%[[X]], %[[OUT]])
//   CHECK-NOT:   memref.copy
func.func @input_to_output(%x: memref<2x3xf32>, %out: memref<2x3xf32>) attributes {dnn.graph} {
  memref.copy %x, %out : memref<2x3xf32> to memref<2x3xf32>
  return
}

// -----

// A splat constant buffer becomes an allocation filled on the GPU; the
// global goes.

//   CHECK-NOT: memref.global
// CHECK-LABEL: func.func private @splat_constant(
//  CHECK-NEXT:   %[[BUF:.*]] = memref.alloc() : memref<f32>
//  CHECK-NEXT:   %[[C:.*]] = arith.constant 2.500000e-01 : f32
//  CHECK-NEXT:   linalg.fill ins(%[[C]] : f32) outs(%[[BUF]] : memref<f32>)
//  CHECK-NEXT:   linalg.copy ins(%[[BUF]] : memref<f32>)
memref.global "private" constant @__constant_xf32 : memref<f32> = dense<2.500000e-01>
func.func private @splat_constant(%out: memref<f32>) attributes {dnn.kernel} {
  %g = memref.get_global @__constant_xf32 : memref<f32>
  linalg.copy ins(%g : memref<f32>) outs(%out : memref<f32>)
  return
}

// -----

// A strided copy inside a kernel function becomes a linalg.copy in place.

// CHECK-LABEL: func.func private @copy_in_kernel(
//       CHECK:   %[[S:.*]] = memref.subview
//  CHECK-NEXT:   linalg.copy {{.*}}ins(%[[S]] : memref<2x6xf32, strided<[6, 1], offset: 6>>)
//   CHECK-NOT:   memref.copy
func.func private @copy_in_kernel(%x: memref<4x6xf32>, %out: memref<2x6xf32>) attributes {dnn.kernel} {
  %s = memref.subview %x[1, 0] [2, 6] [1, 1] : memref<4x6xf32> to memref<2x6xf32, strided<[6, 1], offset: 6>>
  memref.copy %s, %out : memref<2x6xf32, strided<[6, 1], offset: 6>> to memref<2x6xf32>
  return
}

// -----

// A splat constant on the host is filled by a new kernel function.

// CHECK-LABEL: func.func private @splat_on_host_fill(
//  CHECK-SAME:     %[[B:.*]]: memref<2xf32>) attributes {dnn.anchor = "fill", dnn.kernel}
//  CHECK-NEXT:   %[[C:.*]] = arith.constant 1.500000e+00 : f32
//  CHECK-NEXT:   linalg.fill ins(%[[C]] : f32) outs(%[[B]] : memref<2xf32>)
// CHECK-LABEL: func.func @splat_on_host(
//  CHECK-NEXT:   %[[BUF:.*]] = memref.alloc() : memref<2xf32>
//  CHECK-NEXT:   call @splat_on_host_fill(%[[BUF]])
//  CHECK-NEXT:   call @k(%[[BUF]], %{{.*}})
memref.global "private" constant @__constant_2xf32 : memref<2xf32> = dense<1.500000e+00>
func.func private @k(%x: memref<2xf32>, %out: memref<2xf32>) attributes {dnn.kernel} {
  linalg.copy ins(%x : memref<2xf32>) outs(%out : memref<2xf32>)
  return
}
func.func @splat_on_host(%out: memref<2xf32>) attributes {dnn.graph} {
  %g = memref.get_global @__constant_2xf32 : memref<2xf32>
  call @k(%g, %out) : (memref<2xf32>, memref<2xf32>) -> ()
  return
}
