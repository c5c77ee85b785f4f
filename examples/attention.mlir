module {
  func.func @attention(%arg0: tensor<2x4x33x16xf32> {dnn.name = "q", dnn.strides = array<i64: 2112, 528, 16, 1>}, %arg1: tensor<2x4x47x16xf32> {dnn.name = "k", dnn.strides = array<i64: 3008, 752, 16, 1>}, %arg2: tensor<2x4x47x16xf32> {dnn.name = "v", dnn.strides = array<i64: 3008, 752, 16, 1>}, %arg3: tensor<1x1x33x47xf32> {dnn.name = "mask", dnn.strides = array<i64: 1551, 1551, 47, 1>}) -> (tensor<2x4x33x16xf32> {dnn.name = "o", dnn.strides = array<i64: 2112, 528, 16, 1>}) attributes {dnn.graph} {
    %0 = "dnn.transpose"(%arg1) {permutation = array<i64: 0, 1, 3, 2>} : (tensor<2x4x47x16xf32>) -> tensor<2x4x16x47xf32>
    %1 = "dnn.matmul"(%arg0, %0) {compute_type = f32} : (tensor<2x4x33x16xf32>, tensor<2x4x16x47xf32>) -> tensor<2x4x33x47xf32>
    %2 = "dnn.constant"() {value = 2.500000e-01 : f64} : () -> tensor<f32>
    %3 = "dnn.mul"(%1, %2) : (tensor<2x4x33x47xf32>, tensor<f32>) -> tensor<2x4x33x47xf32>
    %4 = "dnn.add"(%3, %arg3) : (tensor<2x4x33x47xf32>, tensor<1x1x33x47xf32>) -> tensor<2x4x33x47xf32>
    %5 = "dnn.softmax"(%4) {axis = 3 : i64} : (tensor<2x4x33x47xf32>) -> tensor<2x4x33x47xf32>
    %6 = "dnn.matmul"(%5, %arg2) {compute_type = f32} : (tensor<2x4x33x47xf32>, tensor<2x4x47x16xf32>) -> tensor<2x4x33x16xf32>
    return %6 : tensor<2x4x33x16xf32>
  }
}
