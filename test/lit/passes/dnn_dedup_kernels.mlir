// dnn-dedup-kernels keeps the first of each set of kernels whose code is
// identical (the name aside) and points the launches of the others at it.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-dedup-kernels)' | FileCheck %s

// Three kernels, two of the same code: k2's launch goes to k0, k2 is gone;
// k1 (another body) and k3 (other attributes) stay.

// CHECK-LABEL: func.func private @launches(
//  CHECK-NEXT:   %[[C1:.*]] = arith.constant 1 : index
//  CHECK-NEXT:   %[[C2:.*]] = arith.constant 2 : index
//  CHECK-NEXT:   gpu.launch_func @dnn_kernels::@k0_kernel blocks in (%[[C1]], %[[C1]], %[[C1]])
//  CHECK-NEXT:   gpu.launch_func @dnn_kernels::@k1_kernel blocks
//  CHECK-NEXT:   gpu.launch_func @dnn_kernels::@k0_kernel blocks in (%[[C2]], %[[C1]], %[[C1]])
//  CHECK-NEXT:   gpu.launch_func @dnn_kernels::@k3_kernel blocks
//       CHECK: gpu.module @dnn_kernels {
//  CHECK-NEXT:   gpu.func @k0_kernel(%{{.*}}: memref<4xf32>) kernel {
//       CHECK:   gpu.func @k1_kernel(%{{.*}}: memref<4xf32>) kernel {
//   CHECK-NOT:   gpu.func @k2_kernel
//       CHECK:   gpu.func @k3_kernel(%{{.*}}: memref<4xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
module attributes {gpu.container_module} {
  func.func private @launches(%x: memref<4xf32>) attributes {dnn.kernel} {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    gpu.launch_func @dnn_kernels::@k0_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @dnn_kernels::@k1_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @dnn_kernels::@k2_kernel blocks in (%c2, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @dnn_kernels::@k3_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
  gpu.module @dnn_kernels {
    gpu.func @k0_kernel(%x: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %f = arith.constant 1.0 : f32
      memref.store %f, %x[%c0] : memref<4xf32>
      gpu.return
    }
    gpu.func @k1_kernel(%x: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %f = arith.constant 2.0 : f32
      memref.store %f, %x[%c0] : memref<4xf32>
      gpu.return
    }
    gpu.func @k2_kernel(%x: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %f = arith.constant 1.0 : f32
      memref.store %f, %x[%c0] : memref<4xf32>
      gpu.return
    }
    gpu.func @k3_kernel(%x: memref<4xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      %c0 = arith.constant 0 : index
      %f = arith.constant 1.0 : f32
      memref.store %f, %x[%c0] : memref<4xf32>
      gpu.return
    }
  }
}

// -----

// No gpu.module: nothing to do.

// CHECK-LABEL: func.func private @no_kernels(
//  CHECK-NEXT:   return
func.func private @no_kernels() {
  return
}
