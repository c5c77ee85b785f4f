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

// sin reduces by pi/2 in f64.

// CHECK-LABEL: func.func @sin(
//       CHECK:   arith.extf %{{.*}} : f32 to f64
//       CHECK:   llvm.call_intrinsic "llvm.roundeven.f64"
//       CHECK:   llvm.call_intrinsic "llvm.fma.f64"
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
