// dnn-scalar-args gives each kernel function that reads a runtime scalar (a
// graph argument marked dnn.by_value) one load of it on the host, at its
// entry, and makes every load inside its launches (also through a view)
// use that value, so that gpu-kernel-outlining passes an f32 to the kernel.
// The kernel function's argument is marked dnn.by_value. An argument that
// is not by value, or a kernel that does not read the scalar, is left
// alone; any other read of the scalar is an error naming the kernel.

// RUN: not dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-scalar-args)' 2>%t.stderr | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERROR --input-file=%t.stderr
// RUN: not dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-scalar-args,gpu-kernel-outlining)' 2>/dev/null | FileCheck %s --check-prefix=OUTLINED

// CHECK-LABEL: func.func private @scaled_k0(
//  CHECK-SAME:     %[[X:.*]]: memref<4xf32>, %[[S:.*]]: memref<f32> {dnn.by_value}, %[[Y:.*]]: memref<4xf32>)
//  CHECK-NEXT:   %[[V:.*]] = memref.load %[[S]][] : memref<f32>
//       CHECK:   gpu.launch
//   CHECK-NOT:     memref.load %[[S]]
//       CHECK:     %[[E:.*]] = memref.load %[[X]][%{{.*}}] : memref<4xf32>
//  CHECK-NEXT:     %[[P:.*]] = arith.mulf %[[E]], %[[V]] : f32
//  CHECK-NEXT:     %[[Q:.*]] = arith.addf %[[P]], %[[V]] : f32
//  CHECK-NEXT:     memref.store %[[Q]], %[[Y]][%{{.*}}] : memref<4xf32>
// CHECK-LABEL: func.func private @unscaled_k1(
//  CHECK-SAME:     %{{.*}}: memref<4xf32>, %{{.*}}: memref<f32>, %{{.*}}: memref<4xf32>)
//   CHECK-NOT:   memref.load
//       CHECK:   gpu.launch
//       CHECK:     memref.load %{{.*}}[] : memref<f32>
// CHECK-LABEL: func.func @scaled(

// The outlined kernel takes the scalar as an f32 parameter, the second
// kernel (its argument not by value) a pointer to it.
// OUTLINED-LABEL: func.func private @scaled_k0(
//       OUTLINED:   %[[V:.*]] = memref.load %{{.*}}[] : memref<f32>
//       OUTLINED:   gpu.launch_func  @scaled_k0_kernel::@scaled_k0_kernel {{.*}} args(%{{.*}} : memref<4xf32>, %[[V]] : f32, %{{.*}} : memref<4xf32>)
//       OUTLINED: gpu.func @scaled_k0_kernel(%{{.*}}: memref<4xf32>, %{{.*}}: f32, %{{.*}}: memref<4xf32>) kernel
//       OUTLINED: gpu.func @unscaled_k1_kernel(%{{.*}}: memref<4xf32>, %{{.*}}: memref<f32>, %{{.*}}: memref<4xf32>) kernel

func.func private @scaled_k0(%x: memref<4xf32>, %s: memref<f32>, %y: memref<4xf32>) attributes {dnn.kernel} {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %e = memref.load %x[%tx] : memref<4xf32>
    %a = memref.load %s[] : memref<f32>
    %p = arith.mulf %e, %a : f32
    %b = memref.load %s[] : memref<f32>
    %q = arith.addf %p, %b : f32
    memref.store %q, %y[%tx] : memref<4xf32>
    gpu.terminator
  }
  return
}
func.func private @unscaled_k1(%x: memref<4xf32>, %t: memref<f32>, %y: memref<4xf32>) attributes {dnn.kernel} {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %e = memref.load %x[%tx] : memref<4xf32>
    %a = memref.load %t[] : memref<f32>
    %p = arith.mulf %e, %a : f32
    memref.store %p, %y[%tx] : memref<4xf32>
    gpu.terminator
  }
  return
}
func.func @scaled(%x: memref<4xf32> {dnn.name = "x"}, %s: memref<f32> {dnn.by_value, dnn.name = "s"}, %t: memref<f32> {dnn.name = "t"}, %y: memref<4xf32> {dnn.name = "y"}, %z: memref<4xf32> {dnn.name = "z"}) attributes {dnn.graph} {
  call @scaled_k0(%x, %s, %y) : (memref<4xf32>, memref<f32>, memref<4xf32>) -> ()
  call @unscaled_k1(%x, %t, %z) : (memref<4xf32>, memref<f32>, memref<4xf32>) -> ()
  return
}

// -----

// A load through a view of the scalar (a convolution epilogue's broadcast
// operand) reads its one element: replaced too, and the view erased.

// CHECK-LABEL: func.func private @viewed_k0(
//  CHECK-SAME:     %{{.*}}: memref<2x2xf32>, %[[S:.*]]: memref<f32> {dnn.by_value}, %[[Y:.*]]: memref<2x2xf32>)
//  CHECK-NEXT:   %[[V:.*]] = memref.load %[[S]][] : memref<f32>
//   CHECK-NOT:   memref.reinterpret_cast
//       CHECK:     %[[P:.*]] = arith.mulf %{{.*}}, %[[V]] : f32

func.func private @viewed_k0(%x: memref<2x2xf32>, %s: memref<f32>, %y: memref<2x2xf32>) attributes {dnn.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %v = memref.reinterpret_cast %s to offset: [0], sizes: [1, 1], strides: [1, 1] : memref<f32> to memref<1x1xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c2, %sy = %c1, %sz = %c1) {
    %e = memref.load %x[%bx, %tx] : memref<2x2xf32>
    %a = memref.load %v[%c0, %c0] : memref<1x1xf32>
    %p = arith.mulf %e, %a : f32
    memref.store %p, %y[%bx, %tx] : memref<2x2xf32>
    gpu.terminator
  }
  return
}
func.func @viewed(%x: memref<2x2xf32> {dnn.name = "x"}, %s: memref<f32> {dnn.by_value, dnn.name = "s"}, %y: memref<2x2xf32> {dnn.name = "y"}) attributes {dnn.graph} {
  call @viewed_k0(%x, %s, %y) : (memref<2x2xf32>, memref<f32>, memref<2x2xf32>) -> ()
  return
}

// -----

// A vector read of the scalar cannot become a kernel parameter.

// ERROR: error: kernel 'vector_k0' (kernel): runtime scalar 'eps' is read by 'vector.transfer_read' at {{.*}}; expected scalar loads only (the strategy 'simt-generic' cannot take it as a kernel parameter): compile its value in with Graph.constant instead

func.func private @vector_k0(%s: memref<f32>, %y: memref<4xf32>) attributes {dnn.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %pad = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = vector.transfer_read %s[], %pad {permutation_map = affine_map<() -> (0)>} : memref<f32>, vector<4xf32>
    vector.store %v, %y[%c0] : memref<4xf32>, vector<4xf32>
    gpu.terminator
  }
  return
}
func.func @vector(%s: memref<f32> {dnn.by_value, dnn.name = "eps"}, %y: memref<4xf32> {dnn.name = "y"}) attributes {dnn.graph} {
  call @vector_k0(%s, %y) : (memref<f32>, memref<4xf32>) -> ()
  return
}
