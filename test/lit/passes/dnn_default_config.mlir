// dnn-default-config gives every kernel function without a dnn.config the
// simt-generic config; other functions and existing configs stay.

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
