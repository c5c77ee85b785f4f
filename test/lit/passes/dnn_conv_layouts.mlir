// dnn-conv-layouts gives a tensor-core convolution's operands the
// channels-last layout its kernel reads and writes. A row-major (NCHW)
// graph input is transposed into a channels-last buffer by a layout kernel
// (simt-transpose) before the convolution; an intermediate whose every user
// takes any layout (here a pooling kernel, simt-window) is allocated
// channels-last instead, its users' arguments retyped; an intermediate a
// kernel needs row-major (a row reduction) gets a layout kernel after the
// convolution that writes it; channels-last operands whose pixels are not
// a multiple of 16 bytes (C = 3, a strided data gradient's dy of K = 12)
// are read where they lie, not copied into padded pixels.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-conv-layouts)' | FileCheck %s

module {
  func.func private @g_k0_conv_fprop(%x: memref<2x16x6x6xbf16>, %w: memref<32x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %y: memref<2x32x6x6xbf16> {bufferize.result}) attributes {dnn.anchor = "conv_fprop", dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 64]}, dnn.conv = {dilation = array<i64: 1, 1>, direction = "fprop", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
    return
  }
  func.func private @g_k1_pooling(%x: memref<2x32x6x6xbf16>, %y: memref<2x32x3x3xbf16> {bufferize.result}) attributes {dnn.anchor = "pooling", dnn.config = {block = [128, 1, 1], strategy = "simt-window"}, dnn.kernel} {
    return
  }
  func.func private @g_k2_conv_fprop(%x: memref<2x32x3x3xbf16>, %w: memref<32x32x1x1xbf16, strided<[32, 1, 32, 32]>>, %y: memref<2x32x3x3xbf16> {bufferize.result}) attributes {dnn.anchor = "conv_fprop", dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 64]}, dnn.conv = {dilation = array<i64: 1, 1>, direction = "fprop", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 0, 0>, pre = array<i64: 0, 0>, stride = array<i64: 1, 1>}, dnn.kernel} {
    return
  }
  func.func private @g_k3_reduction(%x: memref<2x32x3x3xbf16>, %y: memref<2x1x3x3xbf16> {bufferize.result}) attributes {dnn.anchor = "reduction", dnn.config = {block = [128, 1, 1], strategy = "simt-reduce"}, dnn.kernel} {
    return
  }
  func.func @g(%x: memref<2x16x6x6xbf16>, %w: memref<32x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %w2: memref<32x32x1x1xbf16, strided<[32, 1, 32, 32]>>, %out: memref<2x1x3x3xbf16> {bufferize.result}) attributes {dnn.graph} {
    %0 = memref.alloc() : memref<2x32x6x6xbf16>
    call @g_k0_conv_fprop(%x, %w, %0) : (memref<2x16x6x6xbf16>, memref<32x16x3x3xbf16, strided<[144, 1, 48, 16]>>, memref<2x32x6x6xbf16>) -> ()
    %1 = memref.alloc() : memref<2x32x3x3xbf16>
    call @g_k1_pooling(%0, %1) : (memref<2x32x6x6xbf16>, memref<2x32x3x3xbf16>) -> ()
    %2 = memref.alloc() : memref<2x32x3x3xbf16>
    call @g_k2_conv_fprop(%1, %w2, %2) : (memref<2x32x3x3xbf16>, memref<32x32x1x1xbf16, strided<[32, 1, 32, 32]>>, memref<2x32x3x3xbf16>) -> ()
    call @g_k3_reduction(%2, %out) : (memref<2x32x3x3xbf16>, memref<2x1x3x3xbf16>) -> ()
    return
  }
}

// The layout kernels' reads: NCHW -> NHWC for x (loops over the
// destination's dims), NHWC -> NCHW for the reduction's input.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>

// The kernels' arguments retyped channels-last; the reduction's kept.
// CHECK-LABEL: func.func private @g_k0_conv_fprop(
//  CHECK-SAME:     memref<2x16x6x6xbf16, strided<[576, 1, 96, 16]>>
//  CHECK-SAME:     memref<2x32x6x6xbf16, strided<[1152, 1, 192, 32]>> {bufferize.result}
// CHECK-LABEL: func.func private @g_k1_pooling(
//  CHECK-SAME:     memref<2x32x6x6xbf16, strided<[1152, 1, 192, 32]>>
//  CHECK-SAME:     memref<2x32x3x3xbf16, strided<[288, 1, 96, 32]>> {bufferize.result}
// CHECK-LABEL: func.func private @g_k2_conv_fprop(
//  CHECK-SAME:     memref<2x32x3x3xbf16, strided<[288, 1, 96, 32]>>
//  CHECK-SAME:     memref<2x32x3x3xbf16, strided<[288, 1, 96, 32]>> {bufferize.result}
// CHECK-LABEL: func.func private @g_k3_reduction(
//  CHECK-SAME:     %{{.*}}: memref<2x32x3x3xbf16>, %{{.*}}: memref<2x1x3x3xbf16> {bufferize.result}

// The layout kernels: transposes.
// CHECK-LABEL: func.func private @g_layout_0(
//  CHECK-SAME:     %{{.*}}: memref<2x16x6x6xbf16>, %{{.*}}: memref<2x6x6x16xbf16>)
//  CHECK-SAME:     dnn.config = {block = [256, 1, 1], strategy = "simt-transpose"}
//  CHECK-SAME:     dnn.config_reason = "created by dnn-conv-layouts after the heuristics: moves a tensor-core convolution's operand between its channels-last layout and the row-major one"
//       CHECK:   linalg.generic {indexing_maps = [#[[IN]], #{{.*}}]
// CHECK-LABEL: func.func private @g_layout_1(
//  CHECK-SAME:     %{{.*}}: memref<2x3x3x32xbf16>, %{{.*}}: memref<2x32x3x3xbf16>)
//  CHECK-SAME:     strategy = "simt-transpose"
//       CHECK:   linalg.generic {indexing_maps = [#[[OUT]], #{{.*}}]

// CHECK-LABEL: func.func @g(
//       CHECK:   %[[A0:.*]] = memref.alloc() : memref<2x6x6x32xbf16>
//       CHECK:   %[[V0:.*]] = memref.reinterpret_cast %[[A0]] to offset: [0], sizes: [2, 32, 6, 6], strides: [1152, 1, 192, 32]
//       CHECK:   %[[XP:.*]] = memref.alloc() : memref<2x6x6x16xbf16>
//       CHECK:   %[[XV:.*]] = memref.reinterpret_cast %[[XP]] to offset: [0], sizes: [2, 16, 6, 6], strides: [576, 1, 96, 16]
//       CHECK:   call @g_layout_0(%{{.*}}, %[[XP]])
//       CHECK:   call @g_k0_conv_fprop(%[[XV]], %{{.*}}, %[[V0]])
//       CHECK:   %[[A1:.*]] = memref.alloc() : memref<2x3x3x32xbf16>
//       CHECK:   %[[V1:.*]] = memref.reinterpret_cast %[[A1]]
//       CHECK:   call @g_k1_pooling(%[[V0]], %[[V1]])
//       CHECK:   %[[R:.*]] = memref.alloc() : memref<2x32x3x3xbf16>
//       CHECK:   %[[P2:.*]] = memref.alloc() : memref<2x3x3x32xbf16>
//       CHECK:   %[[V2:.*]] = memref.reinterpret_cast %[[P2]]
//       CHECK:   call @g_k2_conv_fprop(%[[V1]], %{{.*}}, %[[V2]])
//       CHECK:   call @g_layout_1(%[[P2]], %[[R]])
//       CHECK:   call @g_k3_reduction(%[[R]], %{{.*}})

// -----

module {
  func.func private @s_k0_conv_fprop(%x: memref<2x3x16x16xbf16, strided<[768, 1, 48, 3]>>, %w: memref<16x3x7x1xbf16, strided<[21, 1, 3, 3]>>, %y: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>> {bufferize.result}) attributes {dnn.anchor = "conv_fprop", dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 64]}, dnn.conv = {dilation = array<i64: 1, 1>, direction = "fprop", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 3, 0>, pre = array<i64: 3, 0>, stride = array<i64: 2, 2>}, dnn.kernel} {
    return
  }
  func.func @s(%x: memref<2x3x16x16xbf16, strided<[768, 1, 48, 3]>>, %w: memref<16x3x7x1xbf16, strided<[21, 1, 3, 3]>>, %y: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>> {bufferize.result}) attributes {dnn.graph} {
    call @s_k0_conv_fprop(%x, %w, %y) : (memref<2x3x16x16xbf16, strided<[768, 1, 48, 3]>>, memref<16x3x7x1xbf16, strided<[21, 1, 3, 3]>>, memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>) -> ()
    return
  }
}

// A C = 3 image and its 7 x 1 filter (one column: nothing to fold into the
// channels, tensorcore/fold.py), channels-last already: read where they lie
// (tc-sm80's loader zero-fills past C where tc-sm90's TMA cannot step such
// pixels), no layout kernel, no argument retyped.
// CHECK-LABEL: func.func private @s_k0_conv_fprop(
//  CHECK-SAME:     memref<2x3x16x16xbf16, strided<[768, 1, 48, 3]>>, %{{.*}}: memref<16x3x7x1xbf16, strided<[21, 1, 3, 3]>>, %{{.*}}: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>> {bufferize.result}
//   CHECK-NOT: @s_layout_
// CHECK-LABEL: func.func @s(
//   CHECK-NOT:   memref.alloc
//       CHECK:   call @s_k0_conv_fprop(%{{.*}}, %{{.*}}, %{{.*}})
//   CHECK-NOT: @s_layout_

// -----

module {
  func.func private @d_k0_conv_dgrad(%dy: memref<2x12x4x4xbf16, strided<[192, 1, 48, 12]>>, %w: memref<12x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %dx: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>> {bufferize.result}) attributes {dnn.anchor = "conv_dgrad", dnn.config = {block = [256, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.conv = {dilation = array<i64: 1, 1>, direction = "dgrad", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 0, 0>, pre = array<i64: 1, 1>, stride = array<i64: 2, 2>}, dnn.kernel} {
    return
  }
  func.func @d(%dy: memref<2x12x4x4xbf16, strided<[192, 1, 48, 12]>>, %w: memref<12x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %dx: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>> {bufferize.result}) attributes {dnn.graph} {
    call @d_k0_conv_dgrad(%dy, %w, %dx) : (memref<2x12x4x4xbf16, strided<[192, 1, 48, 12]>>, memref<12x16x3x3xbf16, strided<[144, 1, 48, 16]>>, memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>) -> ()
    return
  }
}

// A data gradient of stride 2 whose dy has K = 12 channels (24-byte
// pixels): read where it lies (its stride phases run on tc-sm80, whose
// loader copies 8-byte pieces cut at K), no layout kernel.
// CHECK-LABEL: func.func private @d_k0_conv_dgrad(
//  CHECK-SAME:     memref<2x12x4x4xbf16, strided<[192, 1, 48, 12]>>, %{{.*}}: memref<12x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %{{.*}}: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>> {bufferize.result}
//   CHECK-NOT: @d_layout_
// CHECK-LABEL: func.func @d(
//   CHECK-NOT:   memref.alloc
//       CHECK:   call @d_k0_conv_dgrad(%{{.*}}, %{{.*}}, %{{.*}})
//   CHECK-NOT: @d_layout_

// -----

module {
  func.func private @e_k0_conv_fprop(%x: memref<2x16x6x6xbf16, strided<[576, 1, 96, 16]>>, %w: memref<32x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %t: memref<1x32x6x6xbf16>, %r: memref<2x32x6x6xbf16>, %y: memref<2x32x6x6xbf16, strided<[1152, 1, 192, 32]>> {bufferize.result}) attributes {dnn.anchor = "conv_fprop", dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 64]}, dnn.conv = {dilation = array<i64: 1, 1>, direction = "fprop", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
    return
  }
  func.func @e(%x: memref<2x16x6x6xbf16, strided<[576, 1, 96, 16]>>, %w: memref<32x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %t: memref<1x32x6x6xbf16>, %r: memref<2x32x6x6xbf16>, %y: memref<2x32x6x6xbf16, strided<[1152, 1, 192, 32]>> {bufferize.result}) attributes {dnn.graph} {
    call @e_k0_conv_fprop(%x, %w, %t, %r, %y) : (memref<2x16x6x6xbf16, strided<[576, 1, 96, 16]>>, memref<32x16x3x3xbf16, strided<[144, 1, 48, 16]>>, memref<1x32x6x6xbf16>, memref<2x32x6x6xbf16>, memref<2x32x6x6xbf16, strided<[1152, 1, 192, 32]>>) -> ()
    return
  }
}

// Two row-major (NCHW) inputs of the epilogue: a table over the batch
// [1, K, H, W] stays as it lies (the implicit GEMM's epilogue reads it
// through a split view; a layout kernel would cost a launch), the
// full-size residual gets its layout kernel as before.
// CHECK-LABEL: func.func private @e_k0_conv_fprop(
//  CHECK-SAME:     %{{.*}}: memref<1x32x6x6xbf16>, %{{.*}}: memref<2x32x6x6xbf16, strided<[1152, 1, 192, 32]>>, %{{.*}}: memref<2x32x6x6xbf16, strided<[1152, 1, 192, 32]>> {bufferize.result}
// CHECK-LABEL: func.func private @e_layout_0(
// CHECK-LABEL: func.func @e(
//  CHECK-SAME:     %[[T:[^:]*]]: memref<1x32x6x6xbf16>, %[[R:[^:]*]]: memref<2x32x6x6xbf16>
//       CHECK:   call @e_layout_0(%[[R]], %{{.*}})
//       CHECK:   call @e_k0_conv_fprop(%{{.*}}, %{{.*}}, %[[T]], %{{.*}}, %{{.*}})
//   CHECK-NOT: @e_layout_1

// -----

// A filter computed channels-last ([K, R, S, C], row-major) and transposed
// to [K, C, R, S] for the convolution (dnn-widen-groups' block-diagonal
// filter): the convolution's channels-last view of the transpose's output
// is where the transpose's input already lies, so the filter becomes a
// view of the input and the transpose goes. The other way round for a
// filter gradient written channels-last and transposed to [K, R, S, C]
// for a pointwise kernel: that kernel reads the gradient's own buffer.

module {
  func.func private @h_k0_pointwise(%w: memref<128x3x3x64xbf16> {bufferize.result}) attributes {dnn.anchor = "pointwise", dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.kernel} {
    return
  }
  func.func private @h_k1_tensor(%a: memref<128x3x3x64xbf16>, %t: memref<128x64x3x3xbf16> {bufferize.result}) attributes {dnn.anchor = "tensor", dnn.config = {block = [256, 1, 1], strategy = "simt-transpose"}, dnn.kernel} {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a : memref<128x3x3x64xbf16>) outs(%t : memref<128x64x3x3xbf16>) {
    ^bb0(%in: bf16, %out: bf16):
      linalg.yield %in : bf16
    }
    return
  }
  func.func private @h_k2_conv_fprop(%x: memref<2x128x6x6xbf16, strided<[4608, 1, 768, 128]>>, %w: memref<128x64x3x3xbf16>, %y: memref<2x128x6x6xbf16, strided<[4608, 1, 768, 128]>> {bufferize.result}) attributes {dnn.anchor = "conv_fprop", dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 64]}, dnn.conv = {dilation = array<i64: 1, 1>, direction = "fprop", flip = false, groups = 2 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
    return
  }
  func.func private @h_k3_conv_wgrad(%dy: memref<2x128x6x6xbf16, strided<[4608, 1, 768, 128]>>, %x: memref<2x128x6x6xbf16, strided<[4608, 1, 768, 128]>>, %dw: memref<128x64x3x3xbf16> {bufferize.result}) attributes {dnn.anchor = "conv_wgrad", dnn.config = {block = [256, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.conv = {dilation = array<i64: 1, 1>, direction = "wgrad", flip = false, groups = 2 : i64, operands = array<i64: 1, 0>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
    return
  }
  func.func private @h_k4_tensor(%a: memref<128x64x3x3xbf16>, %t: memref<128x3x3x64xbf16> {bufferize.result}) attributes {dnn.anchor = "tensor", dnn.config = {block = [256, 1, 1], strategy = "simt-transpose"}, dnn.kernel} {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a : memref<128x64x3x3xbf16>) outs(%t : memref<128x3x3x64xbf16>) {
    ^bb0(%in: bf16, %out: bf16):
      linalg.yield %in : bf16
    }
    return
  }
  func.func private @h_k5_pointwise(%u: memref<128x3x3x64xbf16>, %v: memref<128x3x3x64xbf16> {bufferize.result}) attributes {dnn.anchor = "pointwise", dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.kernel} {
    return
  }
  func.func @h(%x: memref<2x128x6x6xbf16, strided<[4608, 1, 768, 128]>>, %dy: memref<2x128x6x6xbf16, strided<[4608, 1, 768, 128]>>, %y: memref<2x128x6x6xbf16, strided<[4608, 1, 768, 128]>> {bufferize.result}, %out: memref<128x3x3x64xbf16> {bufferize.result}) attributes {dnn.graph} {
    %a = memref.alloc() : memref<128x3x3x64xbf16>
    call @h_k0_pointwise(%a) : (memref<128x3x3x64xbf16>) -> ()
    %t = memref.alloc() : memref<128x64x3x3xbf16>
    call @h_k1_tensor(%a, %t) : (memref<128x3x3x64xbf16>, memref<128x64x3x3xbf16>) -> ()
    call @h_k2_conv_fprop(%x, %t, %y) : (memref<2x128x6x6xbf16, strided<[4608, 1, 768, 128]>>, memref<128x64x3x3xbf16>, memref<2x128x6x6xbf16, strided<[4608, 1, 768, 128]>>) -> ()
    %dw = memref.alloc() : memref<128x64x3x3xbf16>
    call @h_k3_conv_wgrad(%dy, %x, %dw) : (memref<2x128x6x6xbf16, strided<[4608, 1, 768, 128]>>, memref<2x128x6x6xbf16, strided<[4608, 1, 768, 128]>>, memref<128x64x3x3xbf16>) -> ()
    %u = memref.alloc() : memref<128x3x3x64xbf16>
    call @h_k4_tensor(%dw, %u) : (memref<128x64x3x3xbf16>, memref<128x3x3x64xbf16>) -> ()
    call @h_k5_pointwise(%u, %out) : (memref<128x3x3x64xbf16>, memref<128x3x3x64xbf16>) -> ()
    return
  }
}

// CHECK-NOT:   func.func private @h_k1_tensor
// CHECK-NOT:   func.func private @h_k4_tensor
// CHECK-LABEL: func.func @h(
//       CHECK:   %[[A:.*]] = memref.alloc() : memref<128x3x3x64xbf16>
//       CHECK:   %[[W:.*]] = memref.reinterpret_cast %[[A]] to offset: [0], sizes: [128, 64, 3, 3], strides: [576, 1, 192, 64]
//       CHECK:   call @h_k0_pointwise(%[[A]])
//   CHECK-NOT:   call @h_k1_tensor
//       CHECK:   call @h_k2_conv_fprop(%{{.*}}, %[[W]], %{{.*}})
//       CHECK:   %[[P:.*]] = memref.alloc() : memref<128x3x3x64xbf16>
//       CHECK:   %[[DW:.*]] = memref.reinterpret_cast %[[P]] to offset: [0], sizes: [128, 64, 3, 3], strides: [576, 1, 192, 64]
//       CHECK:   call @h_k3_conv_wgrad(%{{.*}}, %{{.*}}, %[[DW]])
//   CHECK-NOT:   call @h_k4_tensor
//       CHECK:   call @h_k5_pointwise(%[[P]], %{{.*}})

// -----

// A data gradient copied for a batchnorm backward's rows view ([N*H*W, C],
// the copy a transpose into [N, H, W, C]) and read again after the copy,
// as the residual of the next data gradient's epilogue: once the gradient
// is allocated channels-last, the copy's destination is its buffer, so the
// rows kernel reads that buffer and the copy goes; the later convolution
// reads the channels-last view.

module {
  func.func private @r_k0_conv_dgrad(%dy: memref<2x12x8x8xbf16, strided<[768, 1, 96, 12]>>, %w: memref<12x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %dx: memref<2x16x8x8xbf16> {bufferize.result}) attributes {dnn.anchor = "conv_dgrad", dnn.config = {block = [256, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.conv = {dilation = array<i64: 1, 1>, direction = "dgrad", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
    return
  }
  func.func private @r_k1_tensor(%a: memref<2x16x8x8xbf16>, %t: memref<2x8x8x16xbf16> {bufferize.result}) attributes {dnn.anchor = "tensor", dnn.config = {block = [256, 1, 1], strategy = "simt-transpose"}, dnn.kernel} {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a : memref<2x16x8x8xbf16>) outs(%t : memref<2x8x8x16xbf16>) {
    ^bb0(%in: bf16, %out: bf16):
      linalg.yield %in : bf16
    }
    return
  }
  func.func private @r_k2_pointwise(%u: memref<128x16xbf16>, %v: memref<128x16xbf16> {bufferize.result}) attributes {dnn.anchor = "pointwise", dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.kernel} {
    return
  }
  func.func private @r_k3_conv_dgrad(%dy: memref<2x12x8x8xbf16, strided<[768, 1, 96, 12]>>, %w: memref<12x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %res: memref<2x16x8x8xbf16>, %dx: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>> {bufferize.result}) attributes {dnn.anchor = "conv_dgrad", dnn.config = {block = [256, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.conv = {dilation = array<i64: 1, 1>, direction = "dgrad", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
    return
  }
  func.func @r(%dy: memref<2x12x8x8xbf16, strided<[768, 1, 96, 12]>>, %w: memref<12x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %w2: memref<12x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %rows: memref<128x16xbf16> {bufferize.result}, %dx2: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>> {bufferize.result}) attributes {dnn.graph} {
    %dx = memref.alloc() : memref<2x16x8x8xbf16>
    call @r_k0_conv_dgrad(%dy, %w, %dx) : (memref<2x12x8x8xbf16, strided<[768, 1, 96, 12]>>, memref<12x16x3x3xbf16, strided<[144, 1, 48, 16]>>, memref<2x16x8x8xbf16>) -> ()
    %t = memref.alloc() : memref<2x8x8x16xbf16>
    call @r_k1_tensor(%dx, %t) : (memref<2x16x8x8xbf16>, memref<2x8x8x16xbf16>) -> ()
    %c = memref.collapse_shape %t [[0, 1, 2], [3]] : memref<2x8x8x16xbf16> into memref<128x16xbf16>
    call @r_k2_pointwise(%c, %rows) : (memref<128x16xbf16>, memref<128x16xbf16>) -> ()
    call @r_k3_conv_dgrad(%dy, %w2, %dx, %dx2) : (memref<2x12x8x8xbf16, strided<[768, 1, 96, 12]>>, memref<12x16x3x3xbf16, strided<[144, 1, 48, 16]>>, memref<2x16x8x8xbf16>, memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>) -> ()
    return
  }
}

// CHECK-NOT:   func.func private @r_k1_tensor
// CHECK-LABEL: func.func @r(
//       CHECK:   %[[P:.*]] = memref.alloc() : memref<2x8x8x16xbf16>
//       CHECK:   %[[DX:.*]] = memref.reinterpret_cast %[[P]] to offset: [0], sizes: [2, 16, 8, 8], strides: [1024, 1, 128, 16]
//       CHECK:   call @r_k0_conv_dgrad(%{{.*}}, %{{.*}}, %[[DX]])
//   CHECK-NOT:   call @r_k1_tensor
//       CHECK:   %[[C:.*]] = memref.collapse_shape %[[P]]
//       CHECK:   call @r_k2_pointwise(%[[C]], %{{.*}})
//       CHECK:   call @r_k3_conv_dgrad(%{{.*}}, %{{.*}}, %[[DX]], %{{.*}})

// -----

// The same, but the rows kernel writes the copy in place: the copy's
// destination cannot be the gradient that the next convolution still
// reads, so the copy stays (reading the channels-last gradient).

module {
  func.func private @q_k0_conv_dgrad(%dy: memref<2x12x8x8xbf16, strided<[768, 1, 96, 12]>>, %w: memref<12x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %dx: memref<2x16x8x8xbf16> {bufferize.result}) attributes {dnn.anchor = "conv_dgrad", dnn.config = {block = [256, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.conv = {dilation = array<i64: 1, 1>, direction = "dgrad", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
    return
  }
  func.func private @q_k1_tensor(%a: memref<2x16x8x8xbf16>, %t: memref<2x8x8x16xbf16> {bufferize.result}) attributes {dnn.anchor = "tensor", dnn.config = {block = [256, 1, 1], strategy = "simt-transpose"}, dnn.kernel} {
    linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d3, d1, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a : memref<2x16x8x8xbf16>) outs(%t : memref<2x8x8x16xbf16>) {
    ^bb0(%in: bf16, %out: bf16):
      linalg.yield %in : bf16
    }
    return
  }
  func.func private @q_k2_pointwise(%u: memref<128x16xbf16> {bufferize.result}) attributes {dnn.anchor = "pointwise", dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}, dnn.kernel} {
    return
  }
  func.func private @q_k3_conv_dgrad(%dy: memref<2x12x8x8xbf16, strided<[768, 1, 96, 12]>>, %w: memref<12x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %res: memref<2x16x8x8xbf16>, %dx: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>> {bufferize.result}) attributes {dnn.anchor = "conv_dgrad", dnn.config = {block = [256, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.conv = {dilation = array<i64: 1, 1>, direction = "dgrad", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
    return
  }
  func.func @q(%dy: memref<2x12x8x8xbf16, strided<[768, 1, 96, 12]>>, %w: memref<12x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %w2: memref<12x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %dx2: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>> {bufferize.result}) attributes {dnn.graph} {
    %dx = memref.alloc() : memref<2x16x8x8xbf16>
    call @q_k0_conv_dgrad(%dy, %w, %dx) : (memref<2x12x8x8xbf16, strided<[768, 1, 96, 12]>>, memref<12x16x3x3xbf16, strided<[144, 1, 48, 16]>>, memref<2x16x8x8xbf16>) -> ()
    %t = memref.alloc() : memref<2x8x8x16xbf16>
    call @q_k1_tensor(%dx, %t) : (memref<2x16x8x8xbf16>, memref<2x8x8x16xbf16>) -> ()
    %c = memref.collapse_shape %t [[0, 1, 2], [3]] : memref<2x8x8x16xbf16> into memref<128x16xbf16>
    call @q_k2_pointwise(%c) : (memref<128x16xbf16>) -> ()
    call @q_k3_conv_dgrad(%dy, %w2, %dx, %dx2) : (memref<2x12x8x8xbf16, strided<[768, 1, 96, 12]>>, memref<12x16x3x3xbf16, strided<[144, 1, 48, 16]>>, memref<2x16x8x8xbf16>, memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>) -> ()
    return
  }
}

// CHECK-LABEL: func.func @q(
//       CHECK:   %[[P:.*]] = memref.alloc() : memref<2x8x8x16xbf16>
//       CHECK:   %[[DX:.*]] = memref.reinterpret_cast %[[P]]
//       CHECK:   call @q_k0_conv_dgrad(%{{.*}}, %{{.*}}, %[[DX]])
//       CHECK:   %[[T:.*]] = memref.alloc() : memref<2x8x8x16xbf16>
//       CHECK:   call @q_k1_tensor(%[[DX]], %[[T]])
//       CHECK:   call @q_k3_conv_dgrad(%{{.*}}, %{{.*}}, %[[DX]], %{{.*}})
