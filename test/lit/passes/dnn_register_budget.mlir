// dnn-register-budget gives a kernel whose warpgroups reallocate registers
// (nvvm.setmaxregister) one block per SM as its launch bound
// (nvvm.minctasm = 1, PTX .minnctapersm 1), so that ptxas knows the
// register count at its entry and applies the reallocation; and tc-sm80's
// attention kernel, so that ptxas gives it the registers it needs. Other
// kernels are left as they are.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-register-budget)' | FileCheck %s

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

// -----

// tc-sm80's attention kernel, launched from a kernel function configured
// tc-sm80 that carries dnn.attention, gets the bound too; a tc-sm80 GEMM's
// does not.

// CHECK-LABEL: gpu.module @attention
// CHECK: gpu.func @attention() kernel attributes {nvvm.minctasm = 1 : i32}
// CHECK-LABEL: gpu.module @gemm
// CHECK: gpu.func @gemm() kernel {

module attributes {gpu.container_module} {
  func.func private @k0_sdpa() attributes {dnn.attention = {op = "sdpa"},
      dnn.config = {block = [128, 1, 1], strategy = "tc-sm80", tile = [128, 32]}, dnn.kernel} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @attention::@attention blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
  func.func private @k1_matmul() attributes {
      dnn.config = {block = [128, 1, 1], strategy = "tc-sm80", tile = [128, 128, 32]},
      dnn.kernel} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @gemm::@gemm blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
  gpu.module @attention {
    gpu.func @attention() kernel {
      gpu.return
    }
  }
  gpu.module @gemm {
    gpu.func @gemm() kernel {
      gpu.return
    }
  }
}
