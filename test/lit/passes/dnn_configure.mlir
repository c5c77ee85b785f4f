// dnn-configure: the heuristics attach dnn.config and dnn.config_reason to
// every dnn.kernel function of the fused stage. Pointwise chains get
// simt-pointwise (16-byte vectors; two per thread for very large ones) when
// their innermost dims allow it, softmax / norms / reductions along the
// innermost axis get simt-reduce; everything else gets simt-generic, with a
// reason that names the faster strategy that would apply. Block sizes follow
// the parallelism: 128 for few points, 256 by default, 512/1024 for very
// large short simt-generic pointwise chains.

// RUN: dnnc-opt %s --pass-pipeline='builtin.module(dnn-configure{arch=sm_90a})' | FileCheck %s
// RUN: dnnc-opt %s --pass-pipeline='builtin.module(dnn-configure{arch=sm_80})' | FileCheck %s --check-prefix=SM80
// RUN: dnnc-opt %s --pass-pipeline='builtin.module(dnn-configure{arch=sm_90a override=softmax_few_rows=block:64;keeps_its_config=block:32})' | FileCheck %s --check-prefix=OVERRIDE
// RUN: dnnc-opt %s --pass-pipeline='builtin.module(dnn-configure{override=*=block:512})' | FileCheck %s --check-prefix=ALL
// RUN: not dnnc-opt %s --pass-pipeline='builtin.module(dnn-configure{override=no_such_kernel=block:64})' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not dnnc-opt %s --pass-pipeline='builtin.module(dnn-configure{override=matmul=block:2048})' 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: not dnnc-opt %s --pass-pipeline='builtin.module(dnn-configure{override=matmul=strategy:tc-sm100})' 2>&1 | FileCheck %s --check-prefix=STRATEGY
// RUN: dnnc-opt %s --pass-pipeline='builtin.module(dnn-configure{arch=sm_90a override=matmul=strategy:tc-sm80,tile:128x128x32,stages:4})' | FileCheck %s --check-prefix=TC80
// RUN: not dnnc-opt %s --pass-pipeline='builtin.module(dnn-configure{arch=sm_70})' 2>&1 | FileCheck %s --check-prefix=ARCH

// UNKNOWN: dnn_configure.mlir: error: config override names kernel 'no_such_kernel', which is not in the module: expected one of small_pointwise, medium_pointwise, large_pointwise, huge_short_chain, huge_odd_chain, softmax_few_rows, rmsnorm_short_rows, layernorm_one_wave, matmul, reshape, odd_reshape, keeps_its_config (or '*')
// BLOCK: dnnc-opt: error: config override 'matmul=block:2048': block 2048: expected 1 to 1024 threads per block, got 2048
// STRATEGY: dnnc-opt: error: config override 'matmul=strategy:tc-sm100': unknown strategy 'tc-sm100': expected one of simt-generic, simt-pointwise, simt-reduce, simt-reduce-columns, simt-reduce-rows-columns, simt-window, simt-transpose, tc-sm90, tc-sm80
// TC80-LABEL: func.func private @matmul(
//  TC80-SAME:     dnn.config = {block = [128, 1, 1], stages = 4 : i64, strategy = "tc-sm80", tile = [128, 128, 32]}
//  TC80-SAME:     dnn.config_reason = "user override strategy=tc-sm80 tile=(128, 128, 32) stages=4; heuristics: matmul:
// ARCH: dnnc-opt: error: pass 'dnn-configure' option 'arch': expected one of sm_80, sm_90a, got 'sm_70'

// A small pointwise chain: vectors of 4 f32, 128-thread blocks.
// CHECK-LABEL: func.func private @small_pointwise(
//  CHECK-SAME:     dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 4 : i64}
//  CHECK-SAME:     dnn.config_reason = "1 pointwise op over 32 elements: vectors of 4 (16 bytes), 1 per thread, block 128"
//  CHECK-NEXT:   %[[Y:.*]] = "dnn.relu"(%{{.*}})
//  CHECK-NEXT:   return %[[Y]]
// ALL-LABEL: func.func private @small_pointwise(
//  ALL-SAME:     dnn.config = {block = [512, 1, 1], strategy = "simt-pointwise", vector = 4 : i64}
//  ALL-SAME:     dnn.config_reason = "user override block=512; heuristics: 1 pointwise op
func.func private @small_pointwise(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {dnn.anchor = "pointwise", dnn.kernel} {
  %y = "dnn.relu"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// Enough vectors for every SM: 256-thread blocks.
// CHECK-LABEL: func.func private @medium_pointwise(
//  CHECK-SAME:     dnn.config = {block = [256, 1, 1], strategy = "simt-pointwise", vector = 4 : i64}
//  CHECK-SAME:     dnn.config_reason = "2 pointwise ops over 1048576 elements: vectors of 4 (16 bytes), 1 per thread, block 256"
func.func private @medium_pointwise(%x: tensor<1024x1024xf32>, %b: tensor<1x1024xf32>) -> tensor<1024x1024xf32> attributes {dnn.anchor = "pointwise", dnn.kernel} {
  %0 = "dnn.add"(%x, %b) : (tensor<1024x1024xf32>, tensor<1x1024xf32>) -> tensor<1024x1024xf32>
  %1 = "dnn.relu"(%0) : (tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %1 : tensor<1024x1024xf32>
}

// bf16 vectors are 8 wide.
// CHECK-LABEL: func.func private @large_pointwise(
//  CHECK-SAME:     dnn.config = {block = [256, 1, 1], strategy = "simt-pointwise", vector = 8 : i64}
//  CHECK-SAME:     dnn.config_reason = "1 pointwise op over 16777216 elements: vectors of 8 (16 bytes), 1 per thread, block 256"
func.func private @large_pointwise(%x: tensor<4096x4096xbf16>, %y: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> attributes {dnn.anchor = "pointwise", dnn.kernel} {
  %0 = "dnn.add"(%x, %y) : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
  return %0 : tensor<4096x4096xbf16>
}

// 2^23 vectors, many waves: two per thread.
// CHECK-LABEL: func.func private @huge_short_chain(
//  CHECK-SAME:     dnn.config = {block = [256, 1, 1], strategy = "simt-pointwise", unroll = 2 : i64, vector = 8 : i64}
func.func private @huge_short_chain(%x: tensor<8192x8192xf16>) -> tensor<8192x8192xf16> attributes {dnn.anchor = "pointwise", dnn.kernel} {
  %0 = "dnn.relu"(%x) : (tensor<8192x8192xf16>) -> tensor<8192x8192xf16>
  return %0 : tensor<8192x8192xf16>
}

// An odd innermost dim takes no vector: simt-generic, and 2^26 points of a
// one-op chain get 1024-thread blocks.
// CHECK-LABEL: func.func private @huge_odd_chain(
//  CHECK-SAME:     dnn.config = {block = [1024, 1, 1], strategy = "simt-generic"}
//  CHECK-SAME:     dnn.config_reason = "simt-pointwise needs a vector dim that is a multiple of 2 elements at least, got 4097 (1 pointwise op over 67129345 elements); block 1024: many points (67129345), 1-op chain: fewer, larger blocks"
func.func private @huge_odd_chain(%x: tensor<16385x4097xf16>) -> tensor<16385x4097xf16> attributes {dnn.anchor = "pointwise", dnn.kernel} {
  %0 = "dnn.relu"(%x) : (tensor<16385x4097xf16>) -> tensor<16385x4097xf16>
  return %0 : tensor<16385x4097xf16>
}

// 8 rows of 1024 f32: simt-reduce, a block of 64 threads per row, each
// thread loading 4 vectors of 4.
// CHECK-LABEL: func.func private @softmax_few_rows(
//  CHECK-SAME:     dnn.config = {block = [64, 1, 1], strategy = "simt-reduce", vector = 4 : i64}
//  CHECK-SAME:     dnn.config_reason = "softmax: 8 rows of 1024: a block of 64 per row, vectors of 4, 4 per thread"
// OVERRIDE-LABEL: func.func private @softmax_few_rows(
//  OVERRIDE-SAME:     dnn.config = {block = [64, 1, 1], strategy = "simt-reduce", vector = 4 : i64}
//  OVERRIDE-SAME:     dnn.config_reason = "user override block=64; heuristics: softmax: 8 rows of 1024: {{.*}}"
func.func private @softmax_few_rows(%x: tensor<8x1024xf32>) -> tensor<8x1024xf32> attributes {dnn.anchor = "softmax", dnn.kernel} {
  %y = "dnn.softmax"(%x) {axis = 1 : i64} : (tensor<8x1024xf32>) -> tensor<8x1024xf32>
  return %y : tensor<8x1024xf32>
}

// A norm's row of at most 512 16-byte vectors takes two a thread: 2048 rows
// of 4096 bf16 (512 vectors of 8), a block of 256 per row.
// CHECK-LABEL: func.func private @rmsnorm_short_rows(
//  CHECK-SAME:     dnn.config = {block = [256, 1, 1], strategy = "simt-reduce", vector = 8 : i64}
//  CHECK-SAME:     dnn.config_reason = "rmsnorm: 2048 rows of 4096: a block of 256 per row, vectors of 8, 2 per thread"
func.func private @rmsnorm_short_rows(%x: tensor<2048x4096xbf16>, %s: tensor<1x4096xbf16>) -> tensor<2048x4096xbf16> attributes {dnn.anchor = "rmsnorm", dnn.kernel} {
  %y = "dnn.rmsnorm"(%x, %s) {axis = 1 : i64, epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 0, 0>, training = false} : (tensor<2048x4096xbf16>, tensor<1x4096xbf16>) -> tensor<2048x4096xbf16>
  return %y : tensor<2048x4096xbf16>
}

// A norm's rows of a warp each that fit in one wave of warps (64 an SM) go
// 8 to a block.
// CHECK-LABEL: func.func private @layernorm_one_wave(
//  CHECK-SAME:     dnn.config = {block = [256, 1, 1], strategy = "simt-reduce", tile = [8], vector = 8 : i64}
//  CHECK-SAME:     dnn.config_reason = "layernorm: 2048 rows of 768: a warp per row, 8 rows per block, vectors of 8, 3 per thread"
func.func private @layernorm_one_wave(%x: tensor<2048x768xbf16>, %s: tensor<1x768xbf16>, %b: tensor<1x768xbf16>) -> tensor<2048x768xbf16> attributes {dnn.anchor = "layernorm", dnn.kernel} {
  %y = "dnn.layernorm"(%x, %s, %b) {axis = 1 : i64, epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0>, resultSegmentSizes = array<i32: 1, 0, 0>, training = false} : (tensor<2048x768xbf16>, tensor<1x768xbf16>, tensor<1x768xbf16>) -> tensor<2048x768xbf16>
  return %y : tensor<2048x768xbf16>
}

// On sm_90a a bf16 matmul runs on tensor cores: 128x64 tiles (too few tiles
// for 132 SMs at any width: the narrowest; K, 4 steps of 64, is too short to
// split) and as many stages as shared memory holds. On sm_80 it runs on
// tc-sm80: 64x64 tiles, 4 warps of 32x32 (16 tiles: too few for 108 SMs at
// any width, the narrowest).
// CHECK-LABEL: func.func private @matmul(
//  CHECK-SAME:     dnn.config = {block = [384, 1, 1], stages = 8 : i64, strategy = "tc-sm90", tile = [128, 64, 64]}
//  CHECK-SAME:     dnn.config_reason = "matmul: 128x512x256 (M x N x K) bf16; 128x64 tiles, 8 of them for 132 SMs (too few tiles at any width: the narrowest); 8 stages of 24 KiB fill shared memory"
// SM80-LABEL: func.func private @matmul(
//  SM80-SAME:     dnn.config = {block = [128, 1, 1], stages = 4 : i64, strategy = "tc-sm80", tile = [64, 64, 32]}
//  SM80-SAME:     dnn.config_reason = "matmul: 128x512x256 (M x N x K) bf16; 64x64 tiles, 16 of them for 108 SMs (too few tiles at any width: the narrowest), 4 warps of 32x32; 4 stages of 10 KiB"
func.func private @matmul(%a: tensor<128x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<128x512xf32> attributes {dnn.anchor = "matmul", dnn.kernel} {
  %c = "dnn.matmul"(%a, %b) {compute_type = f32} : (tensor<128x256xbf16>, tensor<256x512xbf16>) -> tensor<128x512xf32>
  return %c : tensor<128x512xf32>
}

// A data-movement kernel is a copy: by 16-byte vectors where every
// innermost dim is a multiple of one (dnn-vectorize-pointwise checks the
// maps), else one thread per element.
// CHECK-LABEL: func.func private @reshape(
//  CHECK-SAME:     dnn.config = {block = [128, 1, 1], strategy = "simt-pointwise", vector = 4 : i64}
//  CHECK-SAME:     dnn.config_reason = "copy by reshape: 24 elements: vectors of 4 (16 bytes), 1 per thread, block 128"
func.func private @reshape(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> attributes {dnn.anchor = "tensor", dnn.kernel} {
  %y = "dnn.reshape"(%x) : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  return %y : tensor<6x4xf32>
}

// CHECK-LABEL: func.func private @odd_reshape(
//  CHECK-SAME:     dnn.config = {block = [128, 1, 1], strategy = "simt-generic"}
//  CHECK-SAME:     dnn.config_reason = "no faster strategy planned (copy by reshape: 30 elements); block 128: few points (30): one block of 128 holds them"
func.func private @odd_reshape(%x: tensor<2x3x5xf32>) -> tensor<6x5xf32> attributes {dnn.anchor = "tensor", dnn.kernel} {
  %y = "dnn.reshape"(%x) : (tensor<2x3x5xf32>) -> tensor<6x5xf32>
  return %y : tensor<6x5xf32>
}

// A config given in the IR is kept, unless the override names the kernel.
// CHECK-LABEL: func.func private @keeps_its_config(
//  CHECK-SAME:     dnn.config = {block = [96, 1, 1], strategy = "simt-generic"}, dnn.config_reason = "config given in the input IR", dnn.kernel
// OVERRIDE-LABEL: func.func private @keeps_its_config(
//  OVERRIDE-SAME:     dnn.config = {block = [32, 1, 1], strategy = "simt-generic"}, dnn.config_reason = "user override block=32; heuristics: config given in the input IR", dnn.kernel
func.func private @keeps_its_config(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dnn.anchor = "pointwise", dnn.config = {block = [96, 1, 1], strategy = "simt-generic"}, dnn.kernel} {
  %y = "dnn.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// The graph function is no kernel: no config.
// CHECK-LABEL: func.func @graph_is_not_a_kernel(
//  CHECK-SAME:     attributes {dnn.graph} {
//  CHECK-NEXT:   %[[R:.*]] = call @small_pointwise(%{{.*}})
func.func @graph_is_not_a_kernel(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {dnn.graph} {
  %0 = call @small_pointwise(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
