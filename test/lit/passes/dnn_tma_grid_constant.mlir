// dnn-tma-grid-constant marks each kernel argument that a launch fills with
// the address of a TMA descriptor (an unrealized_conversion_cast of an
// !nvgpu.tensormap.descriptor to !llvm.ptr) as a by-value, 64-byte aligned
// grid constant of 128 bytes, so the NVPTX backend makes it
// `.param .align 64 .b8 NAME[128]`. Other arguments, and their attributes,
// stay.

// RUN: not dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-tma-grid-constant)' 2>%t.stderr | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR --input-file=%t.stderr

// ERR: error: dnn-tma-grid-constant: kernel @m::@k gets a TMA descriptor as argument 1 from the launch at {{.*}} but not from the launch at

// Two descriptors (one launched twice), a plain pointer between them, and an
// attribute on the plain pointer that stays.

// CHECK-LABEL: func.func @host(
//       CHECK: gpu.launch_func @m::@k
//       CHECK: llvm.func @k(
//  CHECK-SAME:   %arg0: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
//  CHECK-SAME:   %arg1: !llvm.ptr {llvm.noalias},
//  CHECK-SAME:   %arg2: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
//  CHECK-SAME:   %arg3: i64)
//  CHECK-SAME:   attributes {gpu.kernel, nvvm.kernel}
module attributes {gpu.container_module} {
  func.func @host(%a: memref<256x512xbf16>, %b: memref<512x256xbf16>, %c: memref<256x256xf32>) {
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : i64
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %ua = memref.cast %a : memref<256x512xbf16> to memref<*xbf16>
    %da = nvgpu.tma.create.descriptor %ua box[%c128, %c64] : memref<*xbf16> -> !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
    %pa = builtin.unrealized_conversion_cast %da : !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> to !llvm.ptr
    %ub = memref.cast %b : memref<512x256xbf16> to memref<*xbf16>
    %db = nvgpu.tma.create.descriptor %ub box[%c64, %c64] : memref<*xbf16> -> !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, 3>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
    %pb = builtin.unrealized_conversion_cast %db : !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, 3>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none> to !llvm.ptr
    gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%pa : !llvm.ptr, %c : memref<256x256xf32>, %pb : !llvm.ptr, %c7 : i64)
    gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%pb : !llvm.ptr, %c : memref<256x256xf32>, %pa : !llvm.ptr, %c7 : i64)
    return
  }
  gpu.module @m {
    llvm.func @k(%d0: !llvm.ptr, %p: !llvm.ptr {llvm.noalias}, %d1: !llvm.ptr, %n: i64) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
}

// -----

// No descriptor: the kernel's arguments stay as they are.

// CHECK-LABEL: func.func @plain(
//       CHECK: llvm.func @k(%arg0: !llvm.ptr, %arg1: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
module attributes {gpu.container_module} {
  func.func @plain(%x: memref<4xf32>, %y: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>, %y : memref<4xf32>)
    return
  }
  gpu.module @m {
    llvm.func @k(%x: !llvm.ptr, %y: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
}

// -----

// One launch passes a descriptor where another passes a buffer: an error.

module attributes {gpu.container_module} {
  func.func @mixed(%a: memref<256x512xbf16>, %x: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %ua = memref.cast %a : memref<256x512xbf16> to memref<*xbf16>
    %da = nvgpu.tma.create.descriptor %ua box[%c128, %c64] : memref<*xbf16> -> !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
    %pa = builtin.unrealized_conversion_cast %da : !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none> to !llvm.ptr
    gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>, %pa : !llvm.ptr)
    gpu.launch_func @m::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>, %x : memref<4xf32>)
    return
  }
  gpu.module @m {
    llvm.func @k(%x: !llvm.ptr, %p: !llvm.ptr) attributes {gpu.kernel, nvvm.kernel} {
      llvm.return
    }
  }
}
