// dnn-register-budget gives a kernel whose warpgroups reallocate registers
// (nvvm.setmaxregister) one block per SM as its launch bound
// (nvvm.minctasm = 1, PTX .minnctapersm 1), so that ptxas knows the
// register count at its entry and applies the reallocation. Other kernels
// are left as they are.

// RUN: dnnc-opt %s --pass-pipeline='builtin.module(dnn-register-budget)' | FileCheck %s

// CHECK: gpu.func @warp_specialized() kernel attributes {nvvm.minctasm = 1 : i32}
// CHECK: gpu.func @plain() kernel {

module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @warp_specialized() kernel {
      nvvm.setmaxregister increase 240
      gpu.return
    }
    gpu.func @plain() kernel {
      gpu.return
    }
  }
}
