// dnn-expand-fp8 lowers arith.truncf to and arith.extf from the fp8 formats:
// with the converter instructions in a gpu.module for sm_89 or newer, with
// integer code anywhere else. The integer code's values are checked against
// ml_dtypes in test/python/test_cpu_ops.py, the instructions' on the GPU
// (test/gpu).

// RUN: not dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-expand-fp8,canonicalize)' 2>%t.stderr | FileCheck %s --implicit-check-not=arith.truncf --implicit-check-not=arith.extf
// RUN: FileCheck %s --check-prefix=ERROR --input-file=%t.stderr

// On sm_90a: one cvt per encode; E5M2 keeps an infinity (.satfinite would
// make it 57344); a decode goes through f16; a bf16 input is widened first.

// CHECK-LABEL: gpu.module @hopper
//       CHECK:   gpu.func @f(%[[X:.*]]: f32, %[[H:.*]]: bf16, %[[A:.*]]: f8E4M3FN)
//       CHECK:     %[[P:.*]] = llvm.inline_asm "cvt.rn.satfinite.e4m3x2.f32 $0, $1, $1;", "=h,f" %[[X]] : (f32) -> i16
//  CHECK-NEXT:     %[[B:.*]] = arith.trunci %[[P]] : i16 to i8
//  CHECK-NEXT:     %[[Y:.*]] = arith.bitcast %[[B]] : i8 to f8E4M3FN
//  CHECK-NEXT:     %[[W:.*]] = arith.extf %[[H]] : bf16 to f32
//  CHECK-NEXT:     %[[Q:.*]] = llvm.inline_asm "cvt.rn.satfinite.e5m2x2.f32 $0, $1, $1;", "=h,f" %[[W]] : (f32) -> i16
//  CHECK-NEXT:     %[[C:.*]] = arith.trunci %[[Q]] : i16 to i8
//       CHECK:     %[[INF:.*]] = arith.cmpi eq, %{{.*}}, %c2139095040_i32 : i32
//       CHECK:     %[[SINF:.*]] = arith.ori %{{.*}}, %c124_i8 : i8
//  CHECK-NEXT:     %[[S:.*]] = arith.select %[[INF]], %[[SINF]], %[[C]] : i8
//  CHECK-NEXT:     %[[Z:.*]] = arith.bitcast %[[S]] : i8 to f8E5M2
//  CHECK-NEXT:     %[[AI:.*]] = arith.bitcast %[[A]] : f8E4M3FN to i8
//  CHECK-NEXT:     %[[AW:.*]] = arith.extui %[[AI]] : i8 to i16
//  CHECK-NEXT:     %[[HH:.*]] = llvm.inline_asm "cvt.rn.f16x2.e4m3x2 $0, $1;", "=r,h" %[[AW]] : (i16) -> i32
//  CHECK-NEXT:     %[[LO:.*]] = arith.trunci %[[HH]] : i32 to i16
//  CHECK-NEXT:     %[[F16:.*]] = arith.bitcast %[[LO]] : i16 to f16
//  CHECK-NEXT:     %[[V:.*]] = arith.extf %[[F16]] : f16 to f32
//  CHECK-NEXT:     gpu.return %[[Y]], %[[Z]], %[[V]]
gpu.module @hopper [#nvvm.target<chip = "sm_90a">] {
  gpu.func @f(%x: f32, %h: bf16, %a: f8E4M3FN) -> (f8E4M3FN, f8E5M2, f32) {
    %y = arith.truncf %x : f32 to f8E4M3FN
    %z = arith.truncf %h : bf16 to f8E5M2
    %v = arith.extf %a : f8E4M3FN to f32
    gpu.return %y, %z, %v : f8E4M3FN, f8E5M2, f32
  }
}

// -----

// sm_80 has no fp8 converters, and neither has the host: integer code on the
// f32 bits (round to nearest even, saturate, then the sign).

// CHECK-LABEL: gpu.module @ampere
//   CHECK-NOT:   llvm.inline_asm
//       CHECK:   arith.bitcast %{{.*}} : f32 to i32
//       CHECK:   arith.minsi %{{.*}}, %c126_i32 : i32
//       CHECK:   arith.trunci %{{.*}} : i32 to i8
//       CHECK:   arith.bitcast %{{.*}} : i8 to f8E4M3FN
// CHECK-LABEL: func.func @host(
//   CHECK-NOT:   llvm.inline_asm
//       CHECK:   arith.bitcast %{{.*}} : f8E5M2 to i8
//       CHECK:   arith.extui %{{.*}} : i8 to i32
//       CHECK:   return
gpu.module @ampere [#nvvm.target<chip = "sm_80">] {
  gpu.func @g(%x: f32) -> f8E4M3FN {
    %y = arith.truncf %x : f32 to f8E4M3FN
    gpu.return %y : f8E4M3FN
  }
}
func.func @host(%b: f8E5M2) -> f32 {
  %z = arith.extf %b : f8E5M2 to f32
  return %z : f32
}

// -----

// Only scalars convert.

// ERROR: dnn-expand-fp8: 'arith.truncf' at {{.*}} converts f8E4M3FN from vector<4xf32>: expected an f32, f16 or bf16 scalar
func.func @vector(%x: vector<4xf32>) -> vector<4xf8E4M3FN> {
  %y = arith.truncf %x : vector<4xf32> to vector<4xf8E4M3FN>
  return %y : vector<4xf8E4M3FN>
}
