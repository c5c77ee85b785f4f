// dnn-parallel-dims-first moves each linalg.generic's parallel loops before
// its reduction loops, renumbering indexing maps and linalg.index.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-parallel-dims-first)' | FileCheck %s

// A reduction over the middle axis.

//   CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
//   CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, 0, d1)>
// CHECK-LABEL: func.func @middle_reduction(
//       CHECK:   linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "reduction"]}
//       CHECK:     %[[I:.*]] = linalg.index 1 : index
#map = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
func.func @middle_reduction(%x: tensor<3x7x5xf32>, %init: tensor<3x1x5xf32>) -> tensor<3x1x5xf32> {
  %r = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "reduction", "parallel"]} ins(%x : tensor<3x7x5xf32>) outs(%init : tensor<3x1x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 2 : index
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<3x1x5xf32>
  return %r : tensor<3x1x5xf32>
}

// -----

// Already in order: unchanged.

//       CHECK: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
//       CHECK: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @trailing_reduction(
//       CHECK:   linalg.generic {indexing_maps = [#[[ID]], #[[ROW]]], iterator_types = ["parallel", "reduction"]}
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @trailing_reduction(%x: tensor<4x6xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x6xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %out, %in : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
