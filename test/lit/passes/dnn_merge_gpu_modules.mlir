// dnn-merge-gpu-modules moves every outlined kernel into one gpu.module,
// names each after the module it came from, and retargets the launches.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-merge-gpu-modules)' | FileCheck %s
// RUN: not dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-merge-gpu-modules{name=k0})' 2>&1 | FileCheck %s --check-prefix=TAKEN

// TAKEN: error: dnn-merge-gpu-modules: symbol @k0 is already taken

// Two modules with a kernel of the same name.

// CHECK-LABEL: func.func private @k0(
//  CHECK-NEXT:   %[[C1:.*]] = arith.constant 1 : index
//  CHECK-NEXT:   gpu.launch_func @dnn_kernels::@k0_kernel blocks
//  CHECK-NEXT:   gpu.launch_func @dnn_kernels::@k0_kernel_0 blocks
//       CHECK: gpu.module @dnn_kernels {
//  CHECK-NEXT:   gpu.func @k0_kernel(%{{.*}}: memref<4xf32>) kernel {
//       CHECK:   gpu.func @k0_kernel_0(%{{.*}}: memref<4xf32>) kernel {
//   CHECK-NOT: gpu.module
module attributes {gpu.container_module} {
  func.func private @k0(%x: memref<4xf32>) attributes {dnn.kernel} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k0_kernel::@k0_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    gpu.launch_func @k0_kernel_0::@k0_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
  gpu.module @k0_kernel {
    gpu.func @k0_kernel(%x: memref<4xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @k0_kernel_0 {
    gpu.func @k0_kernel(%x: memref<4xf32>) kernel {
      gpu.return
    }
  }
}

// -----

// No gpu.module: nothing to do.

// CHECK-LABEL: func.func @no_kernels(
//   CHECK-NOT: gpu.module
func.func @no_kernels() {
  return
}
