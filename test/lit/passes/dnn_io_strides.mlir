// dnn-io-strides gives graph inputs and outputs the layout of their
// dnn.strides, with copy kernels to and from row-major buffers. Outputs are
// the arguments marked bufferize.result. Kernels that read or write any
// layout take the strided memref itself, no copy; the reshapes of an
// argument so retyped get the layout it now has.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-io-strides)' | FileCheck %s

// A channels-last input and output each get a strided type and a copy
// kernel; the row-major argument keeps its type. Their strides permute a
// dense layout, so each copy is a transpose configured simt-transpose
// (a linalg.generic between the strided argument and the row-major
// buffer, whose tiles follow the two types' strides).

// CHECK-LABEL: func.func private @channels_last_load_x(
//  CHECK-SAME:     memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>, %{{.*}}: memref<2x3x4x5xf32>) attributes {dnn.anchor = "copy", dnn.config = {block = [256, 1, 1], strategy = "simt-transpose"}
//  CHECK-NEXT:   linalg.generic
// CHECK-LABEL: func.func private @channels_last_store_y(
//  CHECK-SAME:     memref<2x3x4x5xf32>, %{{.*}}: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>>) attributes {dnn.anchor = "copy", dnn.config = {block = [256, 1, 1], strategy = "simt-transpose"}
//  CHECK-NEXT:   linalg.generic
// CHECK-LABEL: func.func @channels_last(
//  CHECK-SAME:     %[[X:.*]]: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>> {dnn.name = "x"
//  CHECK-SAME:     %[[B:.*]]: memref<1x3x1x1xf32> {dnn.name = "b"
//  CHECK-SAME:     %[[Y:.*]]: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>> {bufferize.result, dnn.name = "y"
//  CHECK-NEXT:   %[[XB:.*]] = memref.alloc() : memref<2x3x4x5xf32>
//  CHECK-NEXT:   call @channels_last_load_x(%[[X]], %[[XB]])
//  CHECK-NEXT:   %[[YB:.*]] = memref.alloc() : memref<2x3x4x5xf32>
//  CHECK-NEXT:   call @k(%[[XB]], %[[B]], %[[YB]])
//  CHECK-NEXT:   call @channels_last_store_y(%[[YB]], %[[Y]])
//  CHECK-NEXT:   return
func.func private @k(%x: memref<2x3x4x5xf32>, %b: memref<1x3x1x1xf32>, %y: memref<2x3x4x5xf32>) attributes {dnn.kernel} {
  return
}
func.func @channels_last(%x: memref<2x3x4x5xf32> {dnn.name = "x", dnn.strides = array<i64: 60, 1, 15, 3>}, %b: memref<1x3x1x1xf32> {dnn.name = "b", dnn.strides = array<i64: 3, 1, 1, 1>}, %y: memref<2x3x4x5xf32> {bufferize.result, dnn.name = "y", dnn.strides = array<i64: 60, 1, 15, 3>}) attributes {dnn.graph} {
  call @k(%x, %b, %y) : (memref<2x3x4x5xf32>, memref<1x3x1x1xf32>, memref<2x3x4x5xf32>) -> ()
  return
}

// -----

// Strides of size-1 dims move no element: nothing changes.

// CHECK-LABEL: func.func @unit_dims_ignored(
//  CHECK-SAME:     %{{.*}}: memref<1x4x1xf32> {dnn.name = "x"
//  CHECK-SAME:     %{{.*}}: memref<1x4x1xf32> {bufferize.result
//  CHECK-NEXT:   memref.copy
//  CHECK-NEXT:   return
func.func @unit_dims_ignored(%x: memref<1x4x1xf32> {dnn.name = "x", dnn.strides = array<i64: 99, 1, 7>}, %y: memref<1x4x1xf32> {bufferize.result, dnn.name = "y", dnn.strides = array<i64: 4, 1, 1>}) attributes {dnn.graph} {
  memref.copy %x, %y : memref<1x4x1xf32> to memref<1x4x1xf32>
  return
}

// -----

// A transposed input read only by a tc-sm90 kernel (called once) is not
// copied: the kernel takes the strided memref and its TMA descriptor
// describes it. Read by a simt kernel too, it gets its copy.

// CHECK-LABEL: func.func private @tc(
//  CHECK-SAME:     memref<8x16xbf16>, %{{.*}}: memref<16x32xbf16, strided<[1, 16]>>, %{{.*}}: memref<8x32xbf16>)
// CHECK-LABEL: func.func @weight_n_by_k(
//  CHECK-SAME:     %[[A:.*]]: memref<8x16xbf16> {dnn.name = "a"
//  CHECK-SAME:     %[[W:.*]]: memref<16x32xbf16, strided<[1, 16]>> {dnn.name = "w"
//  CHECK-NEXT:   call @tc(%[[A]], %[[W]], %{{.*}})
//  CHECK-NEXT:   return
func.func private @tc(%a: memref<8x16xbf16>, %w: memref<16x32xbf16>, %y: memref<8x32xbf16>) attributes {dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 64]}, dnn.kernel} {
  return
}
func.func @weight_n_by_k(%a: memref<8x16xbf16> {dnn.name = "a"}, %w: memref<16x32xbf16> {dnn.name = "w", dnn.strides = array<i64: 1, 16>}, %y: memref<8x32xbf16> {bufferize.result, dnn.name = "y"}) attributes {dnn.graph} {
  call @tc(%a, %w, %y) : (memref<8x16xbf16>, memref<16x32xbf16>, memref<8x32xbf16>) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @also_read_by_simt(
//  CHECK-NEXT:   %[[WB:.*]] = memref.alloc() : memref<16x32xbf16>
//  CHECK-NEXT:   call @also_read_by_simt_load_w(
//  CHECK-NEXT:   call @tc2(%{{.*}}, %[[WB]], %{{.*}})
//  CHECK-NEXT:   call @simt(%[[WB]])
func.func private @tc2(%a: memref<8x16xbf16>, %w: memref<16x32xbf16>, %y: memref<8x32xbf16>) attributes {dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 64]}, dnn.kernel} {
  return
}
func.func private @simt(%w: memref<16x32xbf16>) attributes {dnn.config = {block = [256, 1, 1], strategy = "simt-generic"}, dnn.kernel} {
  return
}
func.func @also_read_by_simt(%a: memref<8x16xbf16> {dnn.name = "a"}, %w: memref<16x32xbf16> {dnn.name = "w", dnn.strides = array<i64: 1, 16>}, %y: memref<8x32xbf16> {bufferize.result, dnn.name = "y"}) attributes {dnn.graph} {
  call @tc2(%a, %w, %y) : (memref<8x16xbf16>, memref<16x32xbf16>, memref<8x32xbf16>) -> ()
  call @simt(%w) : (memref<16x32xbf16>) -> ()
  return
}

// -----

// A channels-last input and output of a simt-window kernel (a pooling) are
// not copied: the kernel reads and writes each at its own strides. An output
// of a tc-sm90 GEMM kernel still is (its stores assume the row-major
// layout); a tc-sm90 convolution's is not (below).

// CHECK-LABEL: func.func private @pool(
//  CHECK-SAME:     memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>, %{{.*}}: memref<2x16x4x4xbf16, strided<[256, 1, 64, 16]>>)
// CHECK-LABEL: func.func @pool_channels_last(
//  CHECK-SAME:     %[[X:.*]]: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>> {dnn.name = "x"
//  CHECK-SAME:     %[[Y:.*]]: memref<2x16x4x4xbf16, strided<[256, 1, 64, 16]>> {bufferize.result
//  CHECK-NEXT:   call @pool(%[[X]], %[[Y]])
//  CHECK-NEXT:   return
func.func private @pool(%x: memref<2x16x8x8xbf16>, %y: memref<2x16x4x4xbf16>) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-window", vector = 8 : i64}, dnn.kernel} {
  return
}
func.func @pool_channels_last(%x: memref<2x16x8x8xbf16> {dnn.name = "x", dnn.strides = array<i64: 1024, 1, 128, 16>}, %y: memref<2x16x4x4xbf16> {bufferize.result, dnn.name = "y", dnn.strides = array<i64: 256, 1, 64, 16>}) attributes {dnn.graph} {
  call @pool(%x, %y) : (memref<2x16x8x8xbf16>, memref<2x16x4x4xbf16>) -> ()
  return
}

// -----

// Likewise a simt-transpose kernel's input and output (its tiles read and
// write any strides): a channels-last x read where it lies, the result
// written where its declared strides put it, no copies.

// CHECK-LABEL: func.func private @to_nhwc(
//  CHECK-SAME:     memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>, %{{.*}}: memref<2x8x8x16xbf16, strided<[1024, 8, 1, 64]>>)
// CHECK-LABEL: func.func @transpose_strided(
//  CHECK-NEXT:   call @to_nhwc(
//  CHECK-NEXT:   return
func.func private @to_nhwc(%x: memref<2x16x8x8xbf16>, %y: memref<2x8x8x16xbf16>) attributes {dnn.config = {block = [256, 1, 1], strategy = "simt-transpose"}, dnn.kernel} {
  return
}
func.func @transpose_strided(%x: memref<2x16x8x8xbf16> {dnn.name = "x", dnn.strides = array<i64: 1024, 1, 128, 16>}, %y: memref<2x8x8x16xbf16> {bufferize.result, dnn.name = "y", dnn.strides = array<i64: 1024, 8, 1, 64>}) attributes {dnn.graph} {
  call @to_nhwc(%x, %y) : (memref<2x16x8x8xbf16>, memref<2x8x8x16xbf16>) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @tc_output_copied(
//       CHECK:   call @tc3(
//  CHECK-NEXT:   call @tc_output_copied_store_y(
func.func private @tc3(%a: memref<8x16xbf16>, %w: memref<16x32xbf16>, %y: memref<8x32xbf16>) attributes {dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 64]}, dnn.kernel} {
  return
}
func.func @tc_output_copied(%a: memref<8x16xbf16> {dnn.name = "a"}, %w: memref<16x32xbf16> {dnn.name = "w"}, %y: memref<8x32xbf16> {bufferize.result, dnn.name = "y", dnn.strides = array<i64: 1, 8>}) attributes {dnn.graph} {
  call @tc3(%a, %w, %y) : (memref<8x16xbf16>, memref<16x32xbf16>, memref<8x32xbf16>) -> ()
  return
}

// -----

// A tc-sm90 convolution kernel (it carries dnn.conv) reads channels-last x
// and a KRSC filter where they lie (its TMA descriptors describe them) and
// its epilogue writes channels-last rows of y: all three are passed strided,
// with no copy kernel. The filter's expand_shape into groups is retyped
// with the layout the filter now has (the group dim steps over all of it),
// and the generic that reads x sees x's new type.

// CHECK-LABEL: func.func private @conv(
//  CHECK-SAME:     %[[X:[^:]*]]: memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>>, %[[W:[^:]*]]: memref<16x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %[[Y:[^:]*]]: memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>> {bufferize.result})
//       CHECK:   linalg.generic {{.*}} ins(%[[X]] : memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>>)
//       CHECK:   memref.expand_shape %[[W]] {{\[}}[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3] : memref<16x16x3x3xbf16, strided<[144, 1, 48, 16]>> into memref<1x16x16x3x3xbf16, strided<[2304, 144, 1, 48, 16]>>
//       CHECK:   linalg.copy {{.*}} outs(%[[Y]] : memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>>)
//   CHECK-NOT:   func.func
// CHECK-LABEL: func.func @conv_channels_last(
//  CHECK-SAME:     %[[GX:[^:]*]]: memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>> {dnn.name = "x"
//  CHECK-SAME:     %[[GW:[^:]*]]: memref<16x16x3x3xbf16, strided<[144, 1, 48, 16]>> {dnn.name = "w"
//  CHECK-SAME:     %[[GY:[^:]*]]: memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>> {bufferize.result, dnn.name = "y"
//  CHECK-NEXT:   call @conv(%[[GX]], %[[GW]], %[[GY]])
//  CHECK-NEXT:   return
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func private @conv(%x: memref<1x16x6x6xbf16>, %w: memref<16x16x3x3xbf16>, %y: memref<1x16x6x6xbf16> {bufferize.result}) attributes {dnn.anchor = "conv_fprop", dnn.config = {block = [256, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.conv = {dilation = array<i64: 1, 1>, direction = "fprop", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
  %xf = memref.alloc() {alignment = 64 : i64} : memref<1x16x6x6xf32>
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<1x16x6x6xbf16>) outs(%xf : memref<1x16x6x6xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  }
  %wg = memref.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3] : memref<16x16x3x3xbf16> into memref<1x16x16x3x3xbf16>
  %yb = memref.alloc() {alignment = 64 : i64} : memref<1x1x16x6x6xbf16>
  %yc = memref.collapse_shape %yb [[0], [1, 2], [3], [4]] : memref<1x1x16x6x6xbf16> into memref<1x16x6x6xbf16>
  linalg.copy ins(%yc : memref<1x16x6x6xbf16>) outs(%y : memref<1x16x6x6xbf16>)
  return
}
func.func @conv_channels_last(%x: memref<1x16x6x6xbf16> {dnn.name = "x", dnn.strides = array<i64: 576, 1, 96, 16>}, %w: memref<16x16x3x3xbf16> {dnn.name = "w", dnn.strides = array<i64: 144, 1, 48, 16>}, %y: memref<1x16x6x6xbf16> {bufferize.result, dnn.name = "y", dnn.strides = array<i64: 576, 1, 96, 16>}) attributes {dnn.graph} {
  call @conv(%x, %w, %y) : (memref<1x16x6x6xbf16>, memref<16x16x3x3xbf16>, memref<1x16x6x6xbf16>) -> ()
  return
}

// -----

// A tc-sm90 attention kernel (it carries dnn.attention) reads q, k and v
// laid out [B, S, H, D] where they lie and writes o at its strides: all four
// are passed strided, with no copy kernel.

// CHECK-LABEL: func.func private @attention(
//  CHECK-SAME:     %{{[^:]*}}: memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>, %{{[^:]*}}: memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>, %{{[^:]*}}: memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>, %[[O:[^:]*]]: memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>> {bufferize.result})
//       CHECK:   linalg.copy {{.*}} outs(%[[O]] : memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>)
//   CHECK-NOT:   func.func
// CHECK-LABEL: func.func @attention_bshd(
//       CHECK:   call @attention(
//  CHECK-NEXT:   return
func.func private @attention(%q: memref<1x2x8x16xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>, %o: memref<1x2x8x16xbf16> {bufferize.result}) attributes {dnn.anchor = "sdpa", dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa", operands = array<i64: 0, 1, 2, -1>, results = array<i64: 0, -1>, returned = 1 : i64, scale = 2.500000e-01 : f64, window = 0 : i64}, dnn.config = {block = [256, 1, 1], stages = 3 : i64, strategy = "tc-sm90", tile = [64, 128]}, dnn.kernel} {
  linalg.copy ins(%q : memref<1x2x8x16xbf16>) outs(%o : memref<1x2x8x16xbf16>)
  return
}
func.func @attention_bshd(%q: memref<1x2x8x16xbf16> {dnn.name = "q", dnn.strides = array<i64: 256, 16, 32, 1>}, %k: memref<1x2x8x16xbf16> {dnn.name = "k", dnn.strides = array<i64: 256, 16, 32, 1>}, %v: memref<1x2x8x16xbf16> {dnn.name = "v", dnn.strides = array<i64: 256, 16, 32, 1>}, %o: memref<1x2x8x16xbf16> {bufferize.result, dnn.name = "o", dnn.strides = array<i64: 256, 16, 32, 1>}) attributes {dnn.graph} {
  call @attention(%q, %k, %v, %o) : (memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>) -> ()
  return
}

// -----

// So does a tc-sm90 attention backward kernel for its gradients: dq and dk
// laid out [B, S, H, D] are passed strided and written where they lie, no
// copy kernel; dv, row-major, keeps its type.

// CHECK-LABEL: func.func private @attention_backward(
//  CHECK-SAME:     %{{[^:]*}}: memref<1x2x8x1xf32>, %[[DQ:[^:]*]]: memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>> {bufferize.result}, %[[DK:[^:]*]]: memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>> {bufferize.result}, %[[DV:[^:]*]]: memref<1x2x8x16xbf16> {bufferize.result})
//       CHECK:   linalg.copy {{.*}} outs(%[[DQ]] : memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>)
//       CHECK:   linalg.copy {{.*}} outs(%[[DK]] : memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>>)
//       CHECK:   linalg.copy {{.*}} outs(%[[DV]] : memref<1x2x8x16xbf16>)
//   CHECK-NOT:   func.func
// CHECK-LABEL: func.func @attention_backward_bshd(
//  CHECK-SAME:     %[[GDQ:[^:]*]]: memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>> {bufferize.result, dnn.name = "dq"
//  CHECK-SAME:     %[[GDK:[^:]*]]: memref<1x2x8x16xbf16, strided<[256, 16, 32, 1]>> {bufferize.result, dnn.name = "dk"
//  CHECK-SAME:     %[[GDV:[^:]*]]: memref<1x2x8x16xbf16> {bufferize.result, dnn.name = "dv"
//  CHECK-NEXT:   call @attention_backward({{.*}}, %[[GDQ]], %[[GDK]], %[[GDV]])
//  CHECK-NEXT:   return
func.func private @attention_backward(%q: memref<1x2x8x16xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>, %o: memref<1x2x8x16xbf16>, %do: memref<1x2x8x16xbf16>, %stats: memref<1x2x8x1xf32>, %dq: memref<1x2x8x16xbf16> {bufferize.result}, %dk: memref<1x2x8x16xbf16> {bufferize.result}, %dv: memref<1x2x8x16xbf16> {bufferize.result}) attributes {dnn.anchor = "sdpa_backward", dnn.attention = {causal = true, diagonal = "bottom_right", op = "sdpa_backward", operands = array<i64: 0, 1, 2, 3, 4, 5, -1>, results = array<i64: 0, 1, 2, -1>, returned = 3 : i64, scale = 2.500000e-01 : f64, window = 4 : i64}, dnn.config = {block = [384, 1, 1], strategy = "tc-sm90"}, dnn.kernel} {
  linalg.copy ins(%q : memref<1x2x8x16xbf16>) outs(%dq : memref<1x2x8x16xbf16>)
  linalg.copy ins(%k : memref<1x2x8x16xbf16>) outs(%dk : memref<1x2x8x16xbf16>)
  linalg.copy ins(%v : memref<1x2x8x16xbf16>) outs(%dv : memref<1x2x8x16xbf16>)
  return
}
func.func @attention_backward_bshd(%q: memref<1x2x8x16xbf16> {dnn.name = "q"}, %k: memref<1x2x8x16xbf16> {dnn.name = "k"}, %v: memref<1x2x8x16xbf16> {dnn.name = "v"}, %o: memref<1x2x8x16xbf16> {dnn.name = "o"}, %do: memref<1x2x8x16xbf16> {dnn.name = "do"}, %stats: memref<1x2x8x1xf32> {dnn.name = "stats"}, %dq: memref<1x2x8x16xbf16> {bufferize.result, dnn.name = "dq", dnn.strides = array<i64: 256, 16, 32, 1>}, %dk: memref<1x2x8x16xbf16> {bufferize.result, dnn.name = "dk", dnn.strides = array<i64: 256, 16, 32, 1>}, %dv: memref<1x2x8x16xbf16> {bufferize.result, dnn.name = "dv"}) attributes {dnn.graph} {
  call @attention_backward(%q, %k, %v, %o, %do, %stats, %dq, %dk, %dv) : (memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x1xf32>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>) -> ()
  return
}

// -----

// q, k and v of an attention backward that are slices of one [B, S, 3 x H x D]
// projection (the forward handed them to torch as views of it): strides
// that are no permutation of a dense layout, read by the tc-sm90 kernel's
// TMA where they lie (rows of 96 elements, 192 bytes): passed strided, no
// copy kernel.

// CHECK-LABEL: func.func private @attention_backward(
//  CHECK-SAME:     %{{[^:]*}}: memref<1x2x8x16xbf16, strided<[768, 16, 96, 1]>>, %{{[^:]*}}: memref<1x2x8x16xbf16, strided<[768, 16, 96, 1]>>, %{{[^:]*}}: memref<1x2x8x16xbf16, strided<[768, 16, 96, 1]>>, %{{[^:]*}}: memref<1x2x8x16xbf16>,
//   CHECK-NOT:   func.func
// CHECK-LABEL: func.func @attention_backward_qkv_slices(
//  CHECK-SAME:     %[[Q:[^:]*]]: memref<1x2x8x16xbf16, strided<[768, 16, 96, 1]>> {dnn.name = "q"
//  CHECK-NEXT:   call @attention_backward(%[[Q]],
//  CHECK-NEXT:   return
func.func private @attention_backward(%q: memref<1x2x8x16xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>, %o: memref<1x2x8x16xbf16>, %do: memref<1x2x8x16xbf16>, %stats: memref<1x2x8x1xf32>, %dq: memref<1x2x8x16xbf16> {bufferize.result}, %dk: memref<1x2x8x16xbf16> {bufferize.result}, %dv: memref<1x2x8x16xbf16> {bufferize.result}) attributes {dnn.anchor = "sdpa_backward", dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa_backward", operands = array<i64: 0, 1, 2, 3, 4, 5, -1>, results = array<i64: 0, 1, 2, -1>, returned = 3 : i64, scale = 2.500000e-01 : f64, window = 0 : i64}, dnn.config = {block = [384, 1, 1], strategy = "tc-sm90"}, dnn.kernel} {
  linalg.copy ins(%q : memref<1x2x8x16xbf16>) outs(%dq : memref<1x2x8x16xbf16>)
  linalg.copy ins(%k : memref<1x2x8x16xbf16>) outs(%dk : memref<1x2x8x16xbf16>)
  linalg.copy ins(%v : memref<1x2x8x16xbf16>) outs(%dv : memref<1x2x8x16xbf16>)
  return
}
func.func @attention_backward_qkv_slices(%q: memref<1x2x8x16xbf16> {dnn.name = "q", dnn.strides = array<i64: 768, 16, 96, 1>}, %k: memref<1x2x8x16xbf16> {dnn.name = "k", dnn.strides = array<i64: 768, 16, 96, 1>}, %v: memref<1x2x8x16xbf16> {dnn.name = "v", dnn.strides = array<i64: 768, 16, 96, 1>}, %o: memref<1x2x8x16xbf16> {dnn.name = "o"}, %do: memref<1x2x8x16xbf16> {dnn.name = "do"}, %stats: memref<1x2x8x1xf32> {dnn.name = "stats"}, %dq: memref<1x2x8x16xbf16> {bufferize.result, dnn.name = "dq"}, %dk: memref<1x2x8x16xbf16> {bufferize.result, dnn.name = "dk"}, %dv: memref<1x2x8x16xbf16> {bufferize.result, dnn.name = "dv"}) attributes {dnn.graph} {
  call @attention_backward(%q, %k, %v, %o, %do, %stats, %dq, %dk, %dv) : (memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x1xf32>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>) -> ()
  return
}

// -----

// Rows TMA cannot step (100 elements, 200 bytes: not a multiple of 16) keep
// the load copy into a row-major buffer, which the kernel reads.

// CHECK-LABEL: func.func private @attention_backward_unaligned_rows_load_q(
//  CHECK-SAME:     memref<1x2x8x16xbf16, strided<[800, 16, 100, 1]>>, %{{.*}}: memref<1x2x8x16xbf16>)
// CHECK-LABEL: func.func @attention_backward_unaligned_rows(
//  CHECK-SAME:     %[[Q:[^:]*]]: memref<1x2x8x16xbf16, strided<[800, 16, 100, 1]>> {dnn.name = "q"
//       CHECK:   %[[BUF:.*]] = memref.alloc() : memref<1x2x8x16xbf16>
//       CHECK:   call @attention_backward_unaligned_rows_load_q(%[[Q]], %[[BUF]])
//       CHECK:   call @attention_backward(%[[BUF]],
func.func private @attention_backward(%q: memref<1x2x8x16xbf16>, %k: memref<1x2x8x16xbf16>, %v: memref<1x2x8x16xbf16>, %o: memref<1x2x8x16xbf16>, %do: memref<1x2x8x16xbf16>, %stats: memref<1x2x8x1xf32>, %dq: memref<1x2x8x16xbf16> {bufferize.result}, %dk: memref<1x2x8x16xbf16> {bufferize.result}, %dv: memref<1x2x8x16xbf16> {bufferize.result}) attributes {dnn.anchor = "sdpa_backward", dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa_backward", operands = array<i64: 0, 1, 2, 3, 4, 5, -1>, results = array<i64: 0, 1, 2, -1>, returned = 3 : i64, scale = 2.500000e-01 : f64, window = 0 : i64}, dnn.config = {block = [384, 1, 1], strategy = "tc-sm90"}, dnn.kernel} {
  linalg.copy ins(%q : memref<1x2x8x16xbf16>) outs(%dq : memref<1x2x8x16xbf16>)
  linalg.copy ins(%k : memref<1x2x8x16xbf16>) outs(%dk : memref<1x2x8x16xbf16>)
  linalg.copy ins(%v : memref<1x2x8x16xbf16>) outs(%dv : memref<1x2x8x16xbf16>)
  return
}
func.func @attention_backward_unaligned_rows(%q: memref<1x2x8x16xbf16> {dnn.name = "q", dnn.strides = array<i64: 800, 16, 100, 1>}, %k: memref<1x2x8x16xbf16> {dnn.name = "k"}, %v: memref<1x2x8x16xbf16> {dnn.name = "v"}, %o: memref<1x2x8x16xbf16> {dnn.name = "o"}, %do: memref<1x2x8x16xbf16> {dnn.name = "do"}, %stats: memref<1x2x8x1xf32> {dnn.name = "stats"}, %dq: memref<1x2x8x16xbf16> {bufferize.result, dnn.name = "dq"}, %dk: memref<1x2x8x16xbf16> {bufferize.result, dnn.name = "dk"}, %dv: memref<1x2x8x16xbf16> {bufferize.result, dnn.name = "dv"}) attributes {dnn.graph} {
  call @attention_backward(%q, %k, %v, %o, %do, %stats, %dq, %dk, %dv) : (memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x1xf32>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>, memref<1x2x8x16xbf16>) -> ()
  return
}

// -----

// Strides that are no permutation of a dense layout (rows padded to 8
// elements) keep an element-by-element copy into the strided argument.

// CHECK-LABEL: func.func private @padded_rows_store_y(
//  CHECK-SAME:     memref<4x5xf32>, %{{.*}}: memref<4x5xf32, strided<[8, 1]>>) attributes {dnn.anchor = "copy", dnn.kernel}
//  CHECK-NEXT:   linalg.copy
// CHECK-LABEL: func.func @padded_rows(
//       CHECK:   call @padded_rows_store_y(%{{.*}}, %{{.*}}) : (memref<4x5xf32>, memref<4x5xf32, strided<[8, 1]>>)
func.func private @k2(%y: memref<4x5xf32>) attributes {dnn.kernel} {
  return
}
func.func @padded_rows(%y: memref<4x5xf32> {bufferize.result, dnn.name = "y", dnn.strides = array<i64: 8, 1>}) attributes {dnn.graph} {
  call @k2(%y) : (memref<4x5xf32>) -> ()
  return
}
