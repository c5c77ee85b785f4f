// dnn-register-budget gives a kernel whose warpgroups reallocate registers
// (nvvm.setmaxregister) one block per SM as its launch bound
// (nvvm.minctasm = 1, PTX .minnctapersm 1), so that ptxas knows the
// register count at its entry and applies the reallocation; and tc-sm80's
// attention kernel, so that ptxas gives it the registers it needs; a
// kernel whose builder planned several blocks an SM, that count; and a
// simt-gemm kernel two blocks an SM. Other kernels are left as they are.

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

// -----

// A kernel function whose builder planned several blocks an SM
// (dnn.blocks_per_sm, one count per launch in order: simt-depthwise's filter
// gradient) gives each launched kernel its count as the launch bound; a
// count of 0 leaves its kernel as it is.

// CHECK-LABEL: gpu.module @partials
// CHECK: gpu.func @partials() kernel attributes {nvvm.minctasm = 4 : i32}
// CHECK-LABEL: gpu.module @sum
// CHECK: gpu.func @sum() kernel {

module attributes {gpu.container_module} {
  func.func private @k0_wgrad() attributes {dnn.blocks_per_sm = array<i32: 4, 0>,
      dnn.config = {block = [256, 1, 1], split = 132 : i64, strategy = "simt-depthwise",
                    tile = [1, 8], vector = 4 : i64}, dnn.kernel} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @partials::@partials blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @sum::@sum blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
  gpu.module @partials {
    gpu.func @partials() kernel {
      gpu.return
    }
  }
  gpu.module @sum {
    gpu.func @sum() kernel {
      gpu.return
    }
  }
}

// -----

// A simt-gemm kernel (FFMA GEMM) gets two blocks an SM as its bound, so
// that ptxas keeps a 256-thread block within 128 registers a thread.

// CHECK-LABEL: gpu.module @sgemm
// CHECK: gpu.func @sgemm() kernel attributes {nvvm.minctasm = 2 : i32}

module attributes {gpu.container_module} {
  func.func private @k0_matmul() attributes {
      dnn.config = {block = [256, 1, 1], strategy = "simt-gemm", tile = [128, 128, 8]},
      dnn.kernel} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @sgemm::@sgemm blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
  gpu.module @sgemm {
    gpu.func @sgemm() kernel {
      gpu.return
    }
  }
}
