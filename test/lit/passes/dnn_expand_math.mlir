// dnn-expand-math replaces math ops with arith code and calls of native
// LLVM intrinsics, so that GPU kernels need no libdevice. The numbers are
// checked against float64 in test/python/test_cuda_compile.py.

// RUN: not dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-expand-math)' 2>%t.stderr | FileCheck %s --implicit-check-not=math.
// RUN: FileCheck %s --check-prefix=ERROR --input-file=%t.stderr

// exp: clamp, range reduction by ln2 with fma, polynomial, scaling by 2^k,
// NaN kept.

// CHECK-LABEL: func.func @exp(
//  CHECK-SAME:     %[[X:.*]]: f32) -> f32
//       CHECK:   %[[LO:.*]] = arith.maximumf %[[X]], %{{.*}} : f32
//       CHECK:   %[[XC:.*]] = arith.minimumf %[[LO]], %{{.*}} : f32
//       CHECK:   llvm.call_intrinsic "llvm.floor.f32"
//       CHECK:   llvm.call_intrinsic "llvm.fma.f32"
//       CHECK:   arith.fptosi
//       CHECK:   arith.shli
//       CHECK:   %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : f32
//  CHECK-NEXT:   %[[Y:.*]] = arith.select %[[NAN]], %[[X]], %{{.*}} : f32
//  CHECK-NEXT:   return %[[Y]] : f32
func.func @exp(%x: f32) -> f32 {
  %y = math.exp %x : f32
  return %y : f32
}

// -----

// bf16 is computed in f32 and rounded back; sqrt is the native intrinsic.

// CHECK-LABEL: func.func @sqrt_bf16(
//  CHECK-SAME:     %[[X:.*]]: bf16) -> bf16
//  CHECK-NEXT:   %[[W:.*]] = arith.extf %[[X]] : bf16 to f32
//  CHECK-NEXT:   %[[S:.*]] = llvm.call_intrinsic "llvm.sqrt.f32"(%[[W]]) : (f32) -> f32
//  CHECK-NEXT:   %[[Y:.*]] = arith.truncf %[[S]] : f32 to bf16
//  CHECK-NEXT:   return %[[Y]] : bf16
func.func @sqrt_bf16(%x: bf16) -> bf16 {
  %y = math.sqrt %x : bf16
  return %y : bf16
}

// -----

// CHECK-LABEL: func.func @isnan(
//  CHECK-SAME:     %[[X:.*]]: f32) -> i1
//  CHECK-NEXT:   %[[N:.*]] = arith.cmpf uno, %[[X]], %[[X]] : f32
//  CHECK-NEXT:   return %[[N]] : i1
func.func @isnan(%x: f32) -> i1 {
  %y = math.isnan %x : f32
  return %y : i1
}

// -----

// sin reduces by pi/2 in f64; past 2^20, exactly in integers (2/pi's bits
// funnel-shifted out of 64-bit words), in a branch only such lanes take.

// CHECK-LABEL: func.func @sin(
//       CHECK:   arith.extf %{{.*}} : f32 to f64
//       CHECK:   llvm.call_intrinsic "llvm.roundeven.f64"
//       CHECK:   llvm.call_intrinsic "llvm.fma.f64"
//       CHECK:   %[[SMALL:.*]] = arith.cmpf olt, %{{.*}}, %{{.*}} : f32
//       CHECK:   %[[BIG:.*]] = arith.xori %[[SMALL]]
//       CHECK:   %[[EXACT:.*]]:2 = scf.if %[[BIG]] -> (i32, f64) {
//       CHECK:     llvm.call_intrinsic "llvm.fshl.i64"
//       CHECK:     arith.muli %{{.*}} : i64
//       CHECK:     scf.yield
//       CHECK:   } else {
//       CHECK:   arith.select %[[SMALL]], %{{.*}}, %[[EXACT]]#1 : f64
//       CHECK:   arith.truncf %{{.*}} : f64 to f32
func.func @sin(%x: f32) -> f32 {
  %y = math.sin %x : f32
  return %y : f32
}

// -----

// ERROR: error: dnn-expand-math: 'math.exp' on f64: expected f32, f16 or bf16 scalars
func.func @exp_f64(%x: f64) -> f64 {
  %y = math.exp %x : f64
  return %y : f64
}

// -----

// A result only rounded to bf16 takes the hardware's approximation: inside a
// gpu.module, ex2.approx.ftz of x log2(e); sigmoid's 1 / (1 + e^-x), whose
// divisor is at least 1, rcp.approx.ftz.

// CHECK-LABEL: gpu.func @sigmoid_bf16(
//  CHECK-SAME:     %[[X:.*]]: f32) -> bf16
//       CHECK:   %[[L:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
//  CHECK-NEXT:   %[[E:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[L]]) : (f32) -> f32
//  CHECK-NEXT:   %[[D:.*]] = arith.addf %{{.*}}, %[[E]] : f32
//  CHECK-NEXT:   %[[R:.*]] = llvm.call_intrinsic "llvm.nvvm.rcp.approx.ftz.f"(%[[D]]) : (f32) -> f32
//  CHECK-NEXT:   %[[Y:.*]] = arith.truncf %[[R]] : f32 to bf16
//  CHECK-NEXT:   gpu.return %[[Y]] : bf16
gpu.module @kernels {
  gpu.func @sigmoid_bf16(%x: f32) -> bf16 {
    %one = arith.constant 1.0 : f32
    %n = arith.negf %x : f32
    %e = math.exp %n : f32
    %d = arith.addf %one, %e : f32
    %s = arith.divf %one, %d : f32
    %y = arith.truncf %s : f32 to bf16
    gpu.return %y : bf16
  }
}

// -----

// Outside a gpu.module (the CPU emulation of the GPU lowering) the same
// formula uses exact stand-ins: llvm.exp2 and a division.

// CHECK-LABEL: func.func @exp_bf16_portable(
//       CHECK:   %[[E:.*]] = llvm.call_intrinsic "llvm.exp2.f32"
//  CHECK-NEXT:   arith.truncf %[[E]] : f32 to bf16
func.func @exp_bf16_portable(%x: f32) -> bf16 {
  %e = math.exp %x : f32
  %y = arith.truncf %e : f32 to bf16
  return %y : bf16
}

// -----

// A result also used in f32 keeps the accurate form; tanh.approx (2^-11)
// serves bf16 roundings only, not f16.

// CHECK-LABEL: gpu.func @accurate_uses(
//   CHECK-NOT:   llvm.nvvm
//       CHECK:   llvm.call_intrinsic "llvm.floor.f32"
//   CHECK-NOT:   llvm.nvvm
//       CHECK:   gpu.return
gpu.module @kernels {
  gpu.func @accurate_uses(%x: f32) -> (f32, bf16, f16) {
    %e = math.exp %x : f32
    %b = arith.truncf %e : f32 to bf16
    %t = math.tanh %x : f32
    %h = arith.truncf %t : f32 to f16
    gpu.return %e, %b, %h : f32, bf16, f16
  }
}

// -----

// CHECK-LABEL: gpu.func @tanh_bf16(
//       CHECK:   %[[T:.*]] = llvm.call_intrinsic "llvm.tanh.f32"(%{{.*}}) {fastmathFlags = #llvm.fastmath<afn>} : (f32) -> f32
//  CHECK-NEXT:   arith.truncf %[[T]] : f32 to bf16
gpu.module @kernels {
  gpu.func @tanh_bf16(%x: f32) -> bf16 {
    %t = math.tanh %x : f32
    %y = arith.truncf %t : f32 to bf16
    gpu.return %y : bf16
  }
}
