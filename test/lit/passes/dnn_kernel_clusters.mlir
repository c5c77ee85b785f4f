// dnn-kernel-clusters gives a kernel launched in thread-block clusters its
// cluster shape as nvvm.cluster_dim (PTX .reqnctapercluster), so that a
// plain launch runs it in clusters; the launch keeps its clusters. A launch
// without clusters leaves its kernel as it is; one kernel launched in two
// cluster shapes is an error.

// RUN: not dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-kernel-clusters)' 2>%t.stderr | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERROR --input-file=%t.stderr

// CHECK-LABEL: func.func @clusters(
//       CHECK:   gpu.launch_func  @m::@split clusters in (%c4, %c1, %c1) blocks in (%c8, %c1, %c1)
//       CHECK:   gpu.launch_func  @m::@plain blocks in
//       CHECK: gpu.func @split(%{{.*}}: memref<16xf32>) kernel attributes {nvvm.cluster_dim = array<i32: 4, 1, 1>}
//       CHECK: gpu.func @plain(%{{.*}}: memref<16xf32>) kernel {

module attributes {gpu.container_module} {
  func.func @clusters(%arg0: memref<16xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    gpu.launch_func @m::@split clusters in (%c4, %c1, %c1) blocks in (%c8, %c1, %c1) threads in (%c8, %c1, %c1) args(%arg0 : memref<16xf32>)
    gpu.launch_func @m::@plain blocks in (%c8, %c1, %c1) threads in (%c8, %c1, %c1) args(%arg0 : memref<16xf32>)
    return
  }
  gpu.module @m {
    gpu.func @split(%arg0: memref<16xf32>) kernel {
      gpu.return
    }
    gpu.func @plain(%arg0: memref<16xf32>) kernel {
      gpu.return
    }
  }
}

// -----

// ERROR: error: dnn-kernel-clusters: kernel @twice is launched in clusters of [2, 1, 1] and of [4, 1, 1]

module attributes {gpu.container_module} {
  func.func @two_shapes(%arg0: memref<16xf32>) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    gpu.launch_func @m::@twice clusters in (%c2, %c1, %c1) blocks in (%c8, %c1, %c1) threads in (%c8, %c1, %c1) args(%arg0 : memref<16xf32>)
    gpu.launch_func @m::@twice clusters in (%c4, %c1, %c1) blocks in (%c8, %c1, %c1) threads in (%c8, %c1, %c1) args(%arg0 : memref<16xf32>)
    return
  }
  gpu.module @m {
    gpu.func @twice(%arg0: memref<16xf32>) kernel {
      gpu.return
    }
  }
}
