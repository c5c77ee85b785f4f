module {
  func.func @mlp(%arg0: tensor<7x64xf32> {dnn.name = "x", dnn.strides = array<i64: 64, 1>}, %arg1: tensor<7x64xf32> {dnn.name = "residual", dnn.strides = array<i64: 64, 1>}, %arg2: tensor<1x64xf32> {dnn.name = "gamma", dnn.strides = array<i64: 64, 1>}, %arg3: tensor<1x64xf32> {dnn.name = "beta", dnn.strides = array<i64: 64, 1>}, %arg4: tensor<64x96xf32> {dnn.name = "w", dnn.strides = array<i64: 96, 1>}, %arg5: tensor<1x96xf32> {dnn.name = "b", dnn.strides = array<i64: 96, 1>}) -> (tensor<7x64xf32> {dnn.name = "h", dnn.strides = array<i64: 64, 1>}, tensor<7x96xf32> {dnn.name = "y", dnn.strides = array<i64: 96, 1>}) attributes {dnn.graph} {
    %0 = "dnn.add"(%arg0, %arg1) : (tensor<7x64xf32>, tensor<7x64xf32>) -> tensor<7x64xf32>
    %1 = "dnn.layernorm"(%0, %arg2, %arg3) {axis = 1 : i64, epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0>, resultSegmentSizes = array<i32: 1, 0, 0>, training = false} : (tensor<7x64xf32>, tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<7x64xf32>
    %2 = "dnn.matmul"(%1, %arg4) {compute_type = f32} : (tensor<7x64xf32>, tensor<64x96xf32>) -> tensor<7x96xf32>
    %3 = "dnn.add"(%2, %arg5) : (tensor<7x96xf32>, tensor<1x96xf32>) -> tensor<7x96xf32>
    %4 = "dnn.gelu"(%3) {approximate = "tanh"} : (tensor<7x96xf32>) -> tensor<7x96xf32>
    return %0, %4 : tensor<7x64xf32>, tensor<7x96xf32>
  }
}
