// dnn-grid-dependency starts every kernel of an sm_90a gpu.module with
// griddepcontrol.wait, ahead of anything else the kernel does, then, in a
// kernel whose launches have 132 blocks or more, or fewer than 66,
// griddepcontrol.launch_dependents (128 blocks: not), unless a column
// program (simt-reduce-columns, whose blocks are all resident at once) of
// 66 blocks or more launches it (288: not; 3: as any other). A kernel launched with more than 65536 blocks, a function
// that is not a kernel, and the kernels of an sm_80 module, are left as they
// are.

// RUN: dnnc-opt %s --pass-pipeline='builtin.module(dnn-grid-dependency)' | FileCheck %s

// CHECK-LABEL: gpu.module @hopper
//       CHECK:   gpu.func @wide(%{{.*}}: memref<16xf32>) kernel {
//  CHECK-NEXT:     llvm.inline_asm has_side_effects "griddepcontrol.wait;", ""  : () -> ()
//  CHECK-NEXT:     llvm.inline_asm has_side_effects "griddepcontrol.launch_dependents;", ""  : () -> ()
//  CHECK-NEXT:     %{{.*}} = gpu.thread_id  x
//       CHECK:   gpu.func @narrow(%{{.*}}: memref<16xf32>) kernel {
//  CHECK-NEXT:     llvm.inline_asm has_side_effects "griddepcontrol.wait;", ""  : () -> ()
//  CHECK-NEXT:     gpu.return
//       CHECK:   gpu.func @few(%{{.*}}: memref<16xf32>) kernel {
//  CHECK-NEXT:     llvm.inline_asm has_side_effects "griddepcontrol.wait;", ""  : () -> ()
//  CHECK-NEXT:     llvm.inline_asm has_side_effects "griddepcontrol.launch_dependents;", ""  : () -> ()
//  CHECK-NEXT:     gpu.return
//       CHECK:   gpu.func @many(%{{.*}}: memref<16xf32>) kernel {
//  CHECK-NEXT:     gpu.return
//       CHECK:   gpu.func @columns(%{{.*}}: memref<16xf32>) kernel {
//  CHECK-NEXT:     llvm.inline_asm has_side_effects "griddepcontrol.wait;", ""  : () -> ()
//  CHECK-NEXT:     gpu.return
//       CHECK:   gpu.func @few_columns(%{{.*}}: memref<16xf32>) kernel {
//  CHECK-NEXT:     llvm.inline_asm has_side_effects "griddepcontrol.wait;", ""  : () -> ()
//  CHECK-NEXT:     llvm.inline_asm has_side_effects "griddepcontrol.launch_dependents;", ""  : () -> ()
//  CHECK-NEXT:     gpu.return
//       CHECK:   gpu.func @helper(
//   CHECK-NOT:     griddepcontrol
//       CHECK:     gpu.return
// CHECK-LABEL: gpu.module @ampere
//   CHECK-NOT:   griddepcontrol
//       CHECK:   gpu.return

module attributes {gpu.container_module} {
  func.func @plan(%arg0: memref<16xf32>) {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c264 = arith.constant 264 : index
    gpu.launch_func @hopper::@wide blocks in (%c264, %c1, %c1) threads in (%c128, %c1, %c1) args(%arg0 : memref<16xf32>)
    gpu.launch_func @hopper::@narrow blocks in (%c128, %c1, %c1) threads in (%c128, %c1, %c1) args(%arg0 : memref<16xf32>)
    gpu.launch_func @hopper::@few blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%arg0 : memref<16xf32>)
    %c65537 = arith.constant 65537 : index
    gpu.launch_func @hopper::@many blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%arg0 : memref<16xf32>)
    gpu.launch_func @hopper::@many blocks in (%c65537, %c1, %c1) threads in (%c128, %c1, %c1) args(%arg0 : memref<16xf32>)
    gpu.launch_func @ampere::@k blocks in (%c264, %c1, %c1) threads in (%c128, %c1, %c1) args(%arg0 : memref<16xf32>)
    return
  }
  func.func @column_sums(%arg0: memref<16xf32>) attributes {dnn.config = {block = [32, 8, 1], strategy = "simt-reduce-columns", tile = [1856], unroll = 8 : i64, vector = 8 : i64}, dnn.kernel} {
    %c1 = arith.constant 1 : index
    %c9 = arith.constant 9 : index
    %c32 = arith.constant 32 : index
    %c8 = arith.constant 8 : index
    gpu.launch_func @hopper::@columns blocks in (%c32, %c9, %c1) threads in (%c32, %c8, %c1) args(%arg0 : memref<16xf32>)
    %c3 = arith.constant 3 : index
    gpu.launch_func @hopper::@few_columns blocks in (%c3, %c1, %c1) threads in (%c32, %c8, %c1) args(%arg0 : memref<16xf32>)
    return
  }
  gpu.module @hopper [#nvvm.target<chip = "sm_90a">] {
    gpu.func @wide(%arg0: memref<16xf32>) kernel {
      %t = gpu.thread_id x
      %v = arith.constant 1.0 : f32
      memref.store %v, %arg0[%t] : memref<16xf32>
      gpu.return
    }
    gpu.func @narrow(%arg0: memref<16xf32>) kernel {
      gpu.return
    }
    gpu.func @few(%arg0: memref<16xf32>) kernel {
      gpu.return
    }
    gpu.func @many(%arg0: memref<16xf32>) kernel {
      gpu.return
    }
    gpu.func @columns(%arg0: memref<16xf32>) kernel {
      gpu.return
    }
    gpu.func @few_columns(%arg0: memref<16xf32>) kernel {
      gpu.return
    }
    gpu.func @helper(%arg0: memref<16xf32>) {
      gpu.return
    }
  }
  gpu.module @ampere [#nvvm.target<chip = "sm_80">] {
    gpu.func @k(%arg0: memref<16xf32>) kernel {
      gpu.return
    }
  }
}
