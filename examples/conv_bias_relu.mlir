module {
  func.func @conv_bias_relu(%arg0: tensor<2x16x14x14xbf16> {dnn.name = "x", dnn.strides = array<i64: 3136, 1, 224, 16>}, %arg1: tensor<32x16x3x3xbf16> {dnn.name = "w", dnn.strides = array<i64: 144, 1, 48, 16>}, %arg2: tensor<1x32x1x1xbf16> {dnn.name = "bias", dnn.strides = array<i64: 32, 1, 1, 1>}) -> (tensor<2x32x14x14xbf16> {dnn.name = "y", dnn.strides = array<i64: 6272, 196, 14, 1>}) attributes {dnn.graph} {
    %0 = "dnn.conv_fprop"(%arg0, %arg1) {compute_type = f32, dilation = array<i64: 1, 1>, dnn.name = "conv", mode = "cross_correlation", post_padding = array<i64: 1, 1>, pre_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x16x14x14xbf16>, tensor<32x16x3x3xbf16>) -> tensor<2x32x14x14xf32>
    %1 = "dnn.add"(%0, %arg2) : (tensor<2x32x14x14xf32>, tensor<1x32x1x1xbf16>) -> tensor<2x32x14x14xf32>
    %2 = "dnn.relu"(%1) : (tensor<2x32x14x14xf32>) -> tensor<2x32x14x14xbf16>
    return %2 : tensor<2x32x14x14xbf16>
  }
}
