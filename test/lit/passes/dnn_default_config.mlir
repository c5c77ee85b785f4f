// dnn-default-config gives every kernel function without a dnn.config the
// simt-generic config, or simt-pointwise for a copy that vectorizes; other
// functions and existing configs stay.

// RUN: dnnc-opt %s --pass-pipeline='builtin.module(dnn-default-config{block=64})' | FileCheck %s
// RUN: dnnc-opt %s --pass-pipeline='builtin.module(dnn-default-config)' | FileCheck %s --check-prefix=DEFAULT
// RUN: not dnnc-opt %s --pass-pipeline='builtin.module(dnn-default-config{block=2048})' 2>&1 | FileCheck %s --check-prefix=OPTION

// OPTION: dnnc-opt: error: pass 'dnn-default-config' option 'block': expected 1 to 1024 threads, got 2048

// CHECK-LABEL: func.func private @gets_default(
//  CHECK-SAME:     attributes {dnn.config = {block = [64, 1, 1], strategy = "simt-generic"}, dnn.kernel}
// DEFAULT-LABEL: func.func private @gets_default(
//  DEFAULT-SAME:     attributes {dnn.config = {block = [256, 1, 1], strategy = "simt-generic"}, dnn.kernel}
func.func private @gets_default(%x: memref<4xf32>) attributes {dnn.kernel} {
  return
}

// CHECK-LABEL: func.func private @keeps_its_config(
//  CHECK-SAME:     attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-generic"}, dnn.kernel}
func.func private @keeps_its_config(%x: memref<4xf32>) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-generic"}, dnn.kernel} {
  return
}

// CHECK-LABEL: func.func @graph_is_not_a_kernel(
//  CHECK-SAME:     attributes {dnn.graph} {
func.func @graph_is_not_a_kernel(%x: memref<4xf32>) attributes {dnn.graph} {
  return
}

// A kernel born in the gpu stage that is a copy whose every op vectorizes
// (a strided graph input's layout copy: innermost stride 1, the others
// multiples of the vector) gets simt-pointwise, vectors of 16 bytes.
// CHECK-LABEL: func.func private @layout_copy(
//  CHECK-SAME:     attributes {dnn.config = {block = [64, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.kernel}
// DEFAULT-LABEL: func.func private @layout_copy(
//  DEFAULT-SAME:     attributes {dnn.config = {block = [256, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.kernel}
func.func private @layout_copy(%x: memref<4x2x16xbf16, strided<[16, 64, 1]>>, %y: memref<4x2x16xbf16>) attributes {dnn.kernel} {
  linalg.copy ins(%x : memref<4x2x16xbf16, strided<[16, 64, 1]>>) outs(%y : memref<4x2x16xbf16>)
  return
}

// One whose innermost dim is not contiguous keeps simt-generic.
// CHECK-LABEL: func.func private @column_copy(
//  CHECK-SAME:     attributes {dnn.config = {block = [64, 1, 1], strategy = "simt-generic"}, dnn.kernel}
func.func private @column_copy(%x: memref<4x16xbf16, strided<[1, 4]>>, %y: memref<4x16xbf16>) attributes {dnn.kernel} {
  linalg.copy ins(%x : memref<4x16xbf16, strided<[1, 4]>>) outs(%y : memref<4x16xbf16>)
  return
}
