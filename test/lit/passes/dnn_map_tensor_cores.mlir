// dnn-map-tensor-cores lowers a tc-sm90 kernel that reads as one GEMM plus
// an elementwise epilogue (here: C = A @ B, then relu(C + bias) in bf16) to
// TMA descriptors on the host side and one gpu.launch of 384 threads: a
// producer warpgroup issuing the TMA loads of each K step into a 4-stage
// ring, two consumer warpgroups running wgmma on it and the epilogue on
// their accumulators, in registers; each warp writes its rows of the output
// tile into a shared slot, and one lane stores the slot with TMA. The tile
// loop is persistent: 6 tiles of 128 x 64, 6 blocks. Where the slots do not
// fit beside the ring, the epilogue stores from registers, and the reason
// says why.
// A kernel tc-sm90 does not take goes to tc-sm80, else to simt-generic, with
// the reason. tc-sm80 kernels: cp.async copies into a shared-memory ring,
// ldmatrix, mma.sync, the epilogue on the accumulators in registers; with
// split-K, f32 partials and a second launch that sums them in split order.
// A convolution kernel (marked dnn.conv) becomes the same kernel with other
// operand loaders: the activation read by TMA in im2col mode, the filter as
// [K, taps, C] tiles (an implicit GEMM); one tc-sm90 does not take goes to
// tc-sm80, else to simt-generic, with the reason. A tc-sm80 convolution: x
// gathered by cp.async.
// An attention kernel (marked dnn.attention: one sdpa forward) becomes
// tc-sm90's attention kernel: TMA loads of Q and rings of K and V tiles,
// QK^T on wgmma, the online softmax in registers (an additive bias read at
// the thread's scores), PV on wgmma with P in registers; one the kernel
// does not take (a bias of another type than q's or f32) keeps its
// expansion, on simt-generic, with the reason. An sdpa_backward kernel becomes two
// launches, the dQ kernel and the dK dV kernel, with delta in a buffer
// between them; configured with the fused tile [64, 128], three launches
// (delta and a zeroed f32 dQ buffer, the fused kernel, dQ's conversion);
// configured tc-sm80, two launches of cp.async, ldmatrix and mma.sync; with
// fused = 1, three (the fused kernel adds dQ by red.global.add.f32).

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-map-tensor-cores,canonicalize,cse)' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func.func private @gemm_bias_relu(
//  CHECK-SAME:     %[[A:.*]]: memref<256x512xbf16>, %[[B:.*]]: memref<512x192xbf16>, %[[BIAS:.*]]: memref<1x192xbf16>, %[[Y:.*]]: memref<256x192xbf16> {bufferize.result})
//  CHECK-SAME:     dnn.config_reason = "the output tiles are stored by TMA from shared memory (1 of 1 column slices in flight)"
//   CHECK-NOT:   linalg.generic
//       CHECK:   %[[UA:.*]] = memref.cast %[[A]] : memref<256x512xbf16> to memref<*xbf16>
//       CHECK:   %[[DA:.*]] = nvgpu.tma.create.descriptor %[[UA]] box[%c128, %c64] : memref<*xbf16> -> <tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
//       CHECK:   %[[PA:.*]] = builtin.unrealized_conversion_cast %[[DA]] : {{.*}} to !llvm.ptr
// B is stored K x N: boxes of 64 K-rows of 64 columns (128 bytes).
//       CHECK:   %[[UB:.*]] = memref.cast %[[B]]
//       CHECK:   %[[DB:.*]] = nvgpu.tma.create.descriptor %[[UB]] box[%c64, %c64] : memref<*xbf16> -> <tensor = memref<64x64xbf16, 3>, swizzle = swizzle_128b
//       CHECK:   %[[PB:.*]] = builtin.unrealized_conversion_cast %[[DB]]
// The output's descriptor: boxes of a warp's 16 rows by 128 bytes.
//       CHECK:   %[[UY:.*]] = memref.cast %[[Y]]
//       CHECK:   %[[DY:.*]] = nvgpu.tma.create.descriptor %[[UY]] box[%c16, %c64] : memref<*xbf16> -> <tensor = memref<16x64xbf16, 3>, swizzle = swizzle_128b
//       CHECK:   %[[PY:.*]] = builtin.unrealized_conversion_cast %[[DY]]
// The ring (4 x 24 KiB) and 8 warps' slots of 2 KiB.
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c6, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c384, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c115776_i32 {
//       CHECK:     nvvm.mbarrier.init %{{.*}}, %c1_i32
//       CHECK:     nvvm.mbarrier.init %{{.*}}, %c2_i32
//       CHECK:     gpu.barrier
//       CHECK:     scf.if
//  CHECK-NEXT:       nvvm.setmaxregister  decrease 40
//       CHECK:           scf.for
//       CHECK:             llvm.inline_asm has_side_effects "{{.*}}mbarrier.try_wait.parity
//       CHECK:             nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c24576_i32
//       CHECK:             nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[PA]], %{{.*}}, box[%{{.*}}, %{{.*}}]
//       CHECK:             nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[PB]], %{{.*}}, box[%{{.*}}, %{{.*}}]
//       CHECK:     } else {
//  CHECK-NEXT:       nvvm.setmaxregister  increase 232
//       CHECK:         scf.for
//       CHECK:             llvm.inline_asm has_side_effects "{{.*}}mbarrier.try_wait.parity
//       CHECK:             nvvm.wgmma.fence.aligned
// Four k16 steps of the 64-wide K tile; B is N-major (tnspB: layout row).
//       CHECK-COUNT-4:     nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>, <wrapped>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
//       CHECK:             nvvm.wgmma.commit.group.sync.aligned
//  CHECK-NEXT:             nvvm.wgmma.wait.group.sync.aligned 1
//       CHECK:                 nvvm.mbarrier.arrive
// The epilogue's inputs are read while the last step's wgmmas finish: the
// bias a pair of columns at a time (an aligned 2-element load).
//       CHECK:           vector.load %[[BIAS]][%c0, %{{.*}}] {alignment = 4 : i64} : memref<1x192xbf16>, vector<2xbf16>
//       CHECK:           nvvm.wgmma.wait.group.sync.aligned 0
// The warp's slot is written once TMA has read it.
//       CHECK:           nvvm.cp.async.bulk.wait_group 0 {read}
//       CHECK:           nvvm.bar.warp.sync
// The epilogue, on the accumulator's registers.
//       CHECK:           %[[V0:.*]] = llvm.extractvalue %{{.*}}[0]
//       CHECK:           arith.addf %[[V0]]
//  CHECK-NEXT:           arith.maximumf
//  CHECK-NEXT:           arith.truncf
// The pairs go into the warp's slot, each lane fences them for the async
// proxy, and lane 0 stores the slot.
//       CHECK:           vector.from_elements %{{.*}}, %{{.*}} : vector<2xbf16>
//  CHECK-NEXT:           llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
//  CHECK-NEXT:           llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<3>
//       CHECK:           llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;"
//  CHECK-NEXT:           nvvm.bar.warp.sync
//       CHECK:             nvvm.cp.async.bulk.tensor.global.shared.cta %[[PY]], %{{.*}}, box[%{{.*}}, %{{.*}}]
//  CHECK-NEXT:             nvvm.cp.async.bulk.commit.group
// Before the block ends, its stores are complete.
//       CHECK:         nvvm.cp.async.bulk.wait_group 0{{$}}
func.func private @gemm_bias_relu(%A: memref<256x512xbf16>, %B: memref<512x192xbf16>, %bias: memref<1x192xbf16>, %Y: memref<256x192xbf16> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 64]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %C = memref.alloc() {alignment = 64 : i64} : memref<256x192xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<256x192xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<256x512xbf16>, memref<512x192xbf16>) outs(%C : memref<256x192xf32>) {
  ^bb0(%x: bf16, %w: bf16, %acc: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %w : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%C, %bias : memref<256x192xf32>, memref<1x192xbf16>) outs(%Y : memref<256x192xbf16>) {
  ^bb0(%c: f32, %b: bf16, %out: bf16):
    %0 = arith.extf %b : bf16 to f32
    %1 = arith.addf %c, %0 : f32
    %2 = arith.maximumf %1, %zero : f32
    %3 = arith.truncf %2 : f32 to bf16
    linalg.yield %3 : bf16
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>

// Seven stages of a 128 x 128 tile leave 1936 bytes of shared memory: no
// room for the slots, so the epilogue stores from registers. Four pairs of
// a row are packed to i32, transposed across the quad (four xor shuffles)
// and stored as one aligned 16-byte vector per thread.
// CHECK-LABEL: func.func private @registers_epilogue(
//  CHECK-SAME:     %[[Y:[a-z0-9]+]]: memref<256x256xbf16> {bufferize.result})
//  CHECK-SAME:     dnn.config_reason = "the epilogue stores from registers (its slots need 16384 bytes of shared memory; the ring leaves 1936)"
//       CHECK:   gpu.launch {{.*}} dynamic_shared_memory_size %c230512_i32 {
//   CHECK-NOT:     nvvm.cp.async.bulk.tensor.global.shared.cta
//       CHECK:           vector.from_elements %{{.*}}, %{{.*}} : vector<2xbf16>
//  CHECK-NEXT:           vector.bitcast %{{.*}} : vector<2xbf16> to vector<1xi32>
//       CHECK-COUNT-4:   gpu.shuffle  xor
//       CHECK:           vector.bitcast %{{.*}} : vector<4xi32> to vector<8xbf16>
//       CHECK:           vector.store %{{.*}}, %[[Y]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<256x256xbf16>, vector<8xbf16>
//   CHECK-NOT:     nvvm.cp.async.bulk.wait_group
func.func private @registers_epilogue(%A: memref<256x512xbf16>, %B: memref<512x256xbf16>, %Y: memref<256x256xbf16> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [384, 1, 1], stages = 7 : i64, strategy = "tc-sm90", tile = [128, 128, 64]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %C = memref.alloc() {alignment = 64 : i64} : memref<256x256xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<256x256xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<256x512xbf16>, memref<512x256xbf16>) outs(%C : memref<256x256xf32>) {
  ^bb0(%x: bf16, %w: bf16, %acc: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %w : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%C : memref<256x256xf32>) outs(%Y : memref<256x256xbf16>) {
  ^bb0(%c: f32, %out: bf16):
    %0 = arith.truncf %c : f32 to bf16
    linalg.yield %0 : bf16
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// K = 100: a row of A is 200 bytes, which TMA cannot step by (a multiple of
// 16 bytes); tc-sm80 takes the kernel instead, copying A 8 bytes at a time
// (cp.async.ca) and B, whose rows are 128 bytes, 16 (cp.async.cg); the
// reason says why.
// CHECK-LABEL: func.func private @odd_k(
//  CHECK-SAME:     dnn.config = {block = [128, 1, 1], stages = 4 : i64, strategy = "tc-sm80", tile = [64, 64, 32]}
//  CHECK-SAME:     dnn.config_reason = "tc-sm90 does not apply (A's dim 0 stride is 200 bytes: TMA needs a multiple of 16 (K, A's contiguous dim, a multiple of 8)): tc-sm80 64x64x32 tiles, 4 stages; tc-sm80's unaligned loader: A in 8-byte cp.async copies (its rows are 8-byte aligned: K = 100 bf16), zero past M, N and K in the loader (no padded copy); heuristics: matmul"
//   CHECK-NOT:   linalg.generic
//       CHECK:   gpu.launch
//       CHECK:     nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 8, cache =  ca, %{{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
//       CHECK:     nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache =  cg, %{{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
//       CHECK:     nvvm.mma.sync
func.func private @odd_k(%A: memref<64x100xbf16>, %B: memref<100x64xbf16>, %C: memref<64x64xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 64]}, dnn.config_reason = "matmul", dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<64x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<64x100xbf16>, memref<100x64xbf16>) outs(%C : memref<64x64xf32>) {
  ^bb0(%x: bf16, %w: bf16, %acc: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %w : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// A is stored K x M (strides [1, 256]: M contiguous, the x of x^T @ dy).
// The descriptor describes A as it lies in memory (a reinterpret_cast to
// 512 x 256) with boxes of 64 K-rows of 64 columns of M (128 bytes), two
// a stage for 128 rows; wgmma reads A transposed (layout col).
// CHECK-LABEL: func.func private @a_stored_k_by_m(
//  CHECK-SAME:     %[[A:.*]]: memref<256x512xbf16, strided<[1, 256]>>,
//       CHECK:   %[[V:.*]] = memref.reinterpret_cast %[[A]] to offset: [0], sizes: [512, 256], strides: [256, 1] : memref<256x512xbf16, strided<[1, 256]>> to memref<512x256xbf16, strided<[256, 1]>>
//       CHECK:   %[[UA:.*]] = memref.cast %[[V]]
//       CHECK:   %[[DA:.*]] = nvgpu.tma.create.descriptor %[[UA]] box[%c64, %c64] : memref<*xbf16> -> <tensor = memref<64x64xbf16, 3>, swizzle = swizzle_128b
//       CHECK:   %[[PA:.*]] = builtin.unrealized_conversion_cast %[[DA]]
//       CHECK:   gpu.launch
//       CHECK:             nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
//       CHECK:             nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[PA]], %{{.*}}, box[%{{.*}}, %{{.*}}]
//       CHECK:             nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[PA]], %{{.*}}, box[%{{.*}}, %{{.*}}]
//       CHECK-COUNT-4:     nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <one>, <wrapped>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
func.func private @a_stored_k_by_m(%A: memref<256x512xbf16, strided<[1, 256]>>, %B: memref<512x128xbf16>, %C: memref<256x128xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 128, 64]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<256x128xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<256x512xbf16, strided<[1, 256]>>, memref<512x128xbf16>) outs(%C : memref<256x128xf32>) {
  ^bb0(%x: bf16, %w: bf16, %acc: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %w : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// B stored K x N with rows of 200 bytes, which TMA cannot step by: a launch
// ahead of the GEMM copies it transposed into a 100 x 512 buffer (both
// viewed flat), 64 x 64 tiles through shared memory (rows padded to 66
// elements; 2 x 8 of them, one a block), reading 8-byte
// vectors along N (100 is a multiple of 4, not of 8) and writing 16-byte
// vectors along K; the GEMM's TMA descriptor describes the copy.
// CHECK-LABEL: func.func private @b_rows_misaligned(
//  CHECK-SAME:     %{{.*}}: memref<256x512xbf16>, %[[B:.*]]: memref<512x100xbf16>,
//  CHECK-SAME:     dnn.config_reason = "B stored K x N copied transposed first (its rows of 200 bytes are not a multiple of 16 for TMA); the output tiles are stored by TMA from shared memory (4 of 4 column slices in flight)"
//       CHECK:   %[[COPY:.*]] = memref.alloc() : memref<100x512xbf16>
//       CHECK:   %[[SRC:.*]] = memref.reinterpret_cast %[[B]] to offset: [0], sizes: [51200], strides: [1]
//       CHECK:   %[[DST:.*]] = memref.reinterpret_cast %[[COPY]] to offset: [0], sizes: [51200], strides: [1]
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c16, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1) workgroup(%[[TILE:.*]] : memref<64x66xbf16, #gpu.address_space<workgroup>>)
//       CHECK:     vector.load %[[SRC]][%{{.*}}] {alignment = 8 : i64} : memref<51200xbf16>, vector<4xbf16>
//       CHECK:     memref.store %{{.*}}, %[[TILE]]
//       CHECK:     gpu.barrier
//       CHECK:     memref.load %[[TILE]]
//       CHECK:     scf.if
//       CHECK:       vector.store %{{.*}}, %[[DST]][%{{.*}}] {alignment = 16 : i64} : memref<51200xbf16>, vector<8xbf16>
//       CHECK:   %[[UB:.*]] = memref.cast %[[COPY]]
//       CHECK:   nvgpu.tma.create.descriptor %[[UB]]
func.func private @b_rows_misaligned(%A: memref<256x512xbf16>, %B: memref<512x100xbf16>, %C: memref<256x100xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 128, 64]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<256x100xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<256x512xbf16>, memref<512x100xbf16>) outs(%C : memref<256x100xf32>) {
  ^bb0(%x: bf16, %w: bf16, %acc: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %w : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// B is a weight stored N x K (strides [1, 512]: K contiguous), the tile has
// 64 rows (one consumer warpgroup: 256 threads) and K is split 8 ways. The
// descriptor describes B as it lies in memory (a reinterpret_cast to
// 128 x 512, box 64 x 64); wgmma reads it K-major (layout col). Each split
// stores its f32 partial into an [8, 1, 64, 128] workspace; beyond 4
// splits a second launch sums the eight in order and stores C.
// CHECK-LABEL: func.func private @split_k_b_k_major(
//  CHECK-SAME:     %[[A:.*]]: memref<64x512xbf16>, %[[B:.*]]: memref<512x128xbf16, strided<[1, 512]>>, %[[C:.*]]: memref<64x128xf32> {bufferize.result})
//       CHECK:   %[[V:.*]] = memref.reinterpret_cast %[[B]] to offset: [0], sizes: [128, 512], strides: [512, 1] : memref<512x128xbf16, strided<[1, 512]>> to memref<128x512xbf16, strided<[512, 1]>>
//       CHECK:   %[[UB:.*]] = memref.cast %[[V]]
//       CHECK:   nvgpu.tma.create.descriptor %[[UB]] box[%c64, %c64] : memref<*xbf16> -> <tensor = memref<64x64xbf16, 3>
//       CHECK:   %[[P:.*]] = memref.alloc() : memref<8x1x64x128xf32>
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c16, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1)
//       CHECK-COUNT-4:     nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>, <wrapped>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
//       CHECK:           vector.store %{{.*}}, %[[P]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<8x1x64x128xf32>, vector<2xf32>
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c16, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1)
//       CHECK-COUNT-8:   vector.load %[[P]]
//       CHECK:         vector.store %{{.*}}, %[[C]][%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<64x128xf32>, vector<2xf32>
func.func private @split_k_b_k_major(%A: memref<64x512xbf16>, %B: memref<512x128xbf16, strided<[1, 512]>>, %C: memref<64x128xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [256, 1, 1], split = 8 : i64, stages = 4 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<64x128xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<64x512xbf16>, memref<512x128xbf16, strided<[1, 512]>>) outs(%C : memref<64x128xf32>) {
  ^bb0(%x: bf16, %w: bf16, %acc: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %w : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// The same GEMM split 2 ways: one launch. Each consumer warp stores its
// partial, fences, and lane 0 adds one to the warp's arrival counter (an i32
// per warp of a tile: 2 tiles x 4 warps); the warp that finds the other
// split already arrived resets the counter, reads both partials in split
// order and stores C.
// CHECK-LABEL: func.func private @split_k_last_arrival(
//  CHECK-SAME:     %{{.*}}: memref<64x512xbf16>, %{{.*}}: memref<512x128xbf16, strided<[1, 512]>>, %[[C:.*]]: memref<64x128xf32> {bufferize.result})
//       CHECK:   %[[P:.*]] = memref.alloc() : memref<2x1x64x128xf32>
//       CHECK:   %[[N:.*]] = memref.alloc() : memref<8xi32>
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c4, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1)
//       CHECK:           vector.store %{{.*}}, %[[P]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<2x1x64x128xf32>, vector<2xf32>
//       CHECK:         nvvm.memory.barrier <gpu>
//       CHECK:         nvvm.bar.warp.sync
//       CHECK:           memref.atomic_rmw addi %{{.*}}, %[[N]][%{{.*}}] : (i32, memref<8xi32>) -> i32
//       CHECK:         gpu.shuffle  idx
//       CHECK:           memref.store %{{.*}}, %[[N]][%{{.*}}] : memref<8xi32>
//       CHECK-COUNT-2:   vector.load %[[P]]
//       CHECK:           vector.store %{{.*}}, %[[C]][%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<64x128xf32>, vector<2xf32>
//   CHECK-NOT:   gpu.launch
//       CHECK:   return
func.func private @split_k_last_arrival(%A: memref<64x512xbf16>, %B: memref<512x128xbf16, strided<[1, 512]>>, %C: memref<64x128xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [256, 1, 1], split = 2 : i64, stages = 4 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<64x128xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<64x512xbf16>, memref<512x128xbf16, strided<[1, 512]>>) outs(%C : memref<64x128xf32>) {
  ^bb0(%x: bf16, %w: bf16, %acc: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %w : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// The GEMM split 8 ways in clusters of 4: the launch runs 16 blocks in
// clusters of 4 (consecutive splits of a tile). The producer's threads meet
// the cluster's two barriers too. After its last K step each consumer warp
// meets the cluster (a relaxed arrival: the rings are drained), stores its
// slice (8 vectors of 4 f32 a lane) into the ring of the block that owns
// the slice (mapa to its rank), and meets the cluster again (the arrival
// releases the stores); the owning warp adds the 4 blocks' slices in rank
// order and leaves one partial of 2 ([2, 1, 64, 128]), which the last of
// the two to arrive sums in this launch.
// CHECK-LABEL: func.func private @split_k_cluster(
//  CHECK-SAME:     %{{.*}}: memref<64x512xbf16>, %{{.*}}: memref<512x128xbf16, strided<[1, 512]>>, %[[C:.*]]: memref<64x128xf32> {bufferize.result})
//       CHECK:   %[[P:.*]] = memref.alloc() : memref<2x1x64x128xf32>
//       CHECK:   %[[N:.*]] = memref.alloc() : memref<8xi32>
//       CHECK:   gpu.launch clusters({{.*}}) in ({{.*}} = %c4, {{.*}} = %c1, {{.*}} = %c1) blocks({{.*}}) in ({{.*}} = %c16, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1)
//       CHECK:         nvvm.cp.async.bulk.tensor.shared.cluster.global
//       CHECK:       nvvm.cluster.arrive.relaxed
//  CHECK-NEXT:       nvvm.cluster.wait
//  CHECK-NEXT:       nvvm.cluster.arrive
//  CHECK-NEXT:       nvvm.cluster.wait
//       CHECK:         nvvm.wgmma.mma_async
//       CHECK:         nvvm.cluster.arrive.relaxed {aligned}
//  CHECK-NEXT:         nvvm.cluster.wait {aligned}
//  CHECK-COUNT-8:      nvvm.mapa %{{.*}}, %{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
//       CHECK:         nvvm.cluster.arrive {aligned}
//  CHECK-NEXT:         nvvm.cluster.wait {aligned}
//       CHECK:         scf.if
//  CHECK-COUNT-4:        llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xf32>
//       CHECK:             vector.store %{{.*}}, %[[P]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<2x1x64x128xf32>, vector<2xf32>
//       CHECK:             memref.atomic_rmw addi %{{.*}}, %[[N]][%{{.*}}] : (i32, memref<8xi32>) -> i32
//  CHECK-COUNT-2:          vector.load %[[P]]
//       CHECK:             vector.store %{{.*}}, %[[C]][%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<64x128xf32>, vector<2xf32>
//   CHECK-NOT:   gpu.launch
//       CHECK:   return
func.func private @split_k_cluster(%A: memref<64x512xbf16>, %B: memref<512x128xbf16, strided<[1, 512]>>, %C: memref<64x128xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [256, 1, 1], cluster = 4 : i64, split = 8 : i64, stages = 4 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<64x128xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<64x512xbf16>, memref<512x128xbf16, strided<[1, 512]>>) outs(%C : memref<64x128xf32>) {
  ^bb0(%x: bf16, %w: bf16, %acc: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %w : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// K = 99: A's rows are 198 bytes apart, which no cp.async copy (4 bytes at
// least, aligned) can start every row at: tc-sm80's loader reads A element
// by element through registers (zero past K), B by 16-byte cp.async.
// CHECK-LABEL: func.func private @odd_k_element_wise(
//  CHECK-SAME:     dnn.config = {block = [128, 1, 1], stages = 4 : i64, strategy = "tc-sm80", tile = [64, 64, 32]}
//  CHECK-SAME:     dnn.config_reason = "tc-sm90 does not apply ({{.*}}): tc-sm80 64x64x32 tiles, 4 stages; tc-sm80's unaligned loader: A element by element through registers (its rows start 2 bytes apart: K = 99 bf16), zero past M, N and K in the loader (no padded copy); heuristics: matmul"
//   CHECK-NOT:   linalg.generic
//       CHECK:   gpu.launch
//       CHECK:     llvm.load {{.*}} : !llvm.ptr<1> -> i16
//       CHECK:     nvvm.cp.async.shared.global {{.*}}, 16, cache = cg
//       CHECK:     nvvm.mma.sync
func.func private @odd_k_element_wise(%A: memref<64x99xbf16>, %B: memref<99x64xbf16>, %C: memref<64x64xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 64]}, dnn.config_reason = "matmul", dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<64x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<64x99xbf16>, memref<99x64xbf16>) outs(%C : memref<64x64xf32>) {
  ^bb0(%x: bf16, %w: bf16, %acc: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %w : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>

// tc-sm80: C = A @ B, then relu(C + bias) in f16, M = 100 and N = 72 not
// tile multiples. 2 x 2 blocks of 4 warps (2 x 2 warps of 32 x 32); 3
// stages of A (64 rows of 64 + 16 bytes) and B (32 rows of 128 + 16 bytes).
// The prologue fills 2 stages (a commit group each), waits for the first
// and reads its first 16 of K's fragments: ldmatrix A (row) and B (col:
// .trans, B is stored K x N). The fragments are double-buffered: a mainloop
// step reads the second 16 of K, refills the stage the previous step freed,
// issues 8 mma.sync m16n8k16 on the first; then waits until one group is in
// flight, reads the next stage's first 16 of K and issues the second's 8
// mma.sync. The epilogue reads the bias a pair at a time; each quad
// exchanges 4 fragments' pairs (two butterfly shuffles: xor 2, then xor 1),
// so that a thread stores 8 consecutive columns as one 16-byte vector,
// guarded at M and N.
// CHECK-LABEL: func.func private @sm80_bias_relu(
//  CHECK-SAME:     %[[A:.*]]: memref<100x128xf16>, %[[B:.*]]: memref<128x72xf16>, %[[BIAS:.*]]: memref<1x72xf16>, %[[Y:.*]]: memref<100x72xf16> {bufferize.result})
//   CHECK-NOT:   linalg.generic
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c4, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c128, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c29184_i32 {
//       CHECK:     memref.extract_aligned_pointer_as_index %[[A]]
//       CHECK:     memref.extract_aligned_pointer_as_index %[[B]]
//       CHECK:     nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache =  cg, %{{.*}} : !llvm.ptr<3>, !llvm.ptr<1>, i32
//       CHECK:     nvvm.cp.async.commit.group
//       CHECK:     nvvm.cp.async.commit.group
//  CHECK-NEXT:     nvvm.cp.async.wait.group 1
//  CHECK-NEXT:     gpu.barrier
//       CHECK-COUNT-2: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
//       CHECK-COUNT-2: nvvm.ldmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
//       CHECK:     scf.for
//       CHECK-COUNT-2: nvvm.ldmatrix %{{.*}} {{{.*}}layout = #nvvm.mma_layout<row>
//       CHECK-COUNT-2: nvvm.ldmatrix %{{.*}} {{{.*}}layout = #nvvm.mma_layout<col>
//       CHECK:       scf.if
//       CHECK:         nvvm.cp.async.shared.global
//       CHECK:       nvvm.cp.async.commit.group
// f16 fragments are vector<2xf16> registers (the printer leaves their type implied).
//       CHECK-COUNT-8: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
//  CHECK-NEXT:       nvvm.cp.async.wait.group 1
//  CHECK-NEXT:       gpu.barrier
//       CHECK-COUNT-2: nvvm.ldmatrix %{{.*}} {{{.*}}layout = #nvvm.mma_layout<row>
//       CHECK-COUNT-2: nvvm.ldmatrix %{{.*}} {{{.*}}layout = #nvvm.mma_layout<col>
//       CHECK-COUNT-8: nvvm.mma.sync
//       CHECK:       scf.yield
//       CHECK:     nvvm.cp.async.wait.group 0
//       CHECK:     vector.load %[[BIAS]][%c0, %{{.*}}] {alignment = 4 : i64} : memref<1x72xf16>, vector<2xf16>
//       CHECK:     arith.maximumf
//       CHECK:     gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : i32
//       CHECK:     gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : i32
//       CHECK:     scf.if
//  CHECK-NEXT:       vector.store %{{.*}}, %[[Y]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<100x72xf16>, vector<8xf16>
func.func private @sm80_bias_relu(%A: memref<100x128xf16>, %B: memref<128x72xf16>, %bias: memref<1x72xf16>, %Y: memref<100x72xf16> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [128, 1, 1], stages = 3 : i64, strategy = "tc-sm80", tile = [64, 64, 32]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %C = memref.alloc() {alignment = 64 : i64} : memref<100x72xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<100x72xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<100x128xf16>, memref<128x72xf16>) outs(%C : memref<100x72xf32>) {
  ^bb0(%x: f16, %w: f16, %acc: f32):
    %0 = arith.extf %x : f16 to f32
    %1 = arith.extf %w : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%C, %bias : memref<100x72xf32>, memref<1x72xf16>) outs(%Y : memref<100x72xf16>) {
  ^bb0(%c: f32, %b: f16, %out: f16):
    %0 = arith.extf %b : f16 to f32
    %1 = arith.addf %c, %0 : f32
    %2 = arith.maximumf %1, %zero : f32
    %3 = arith.truncf %2 : f32 to f16
    linalg.yield %3 : f16
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// An f32 matmul multiplied in f32 (no tf32 rounding in the body): mma.sync
// would round it, so tc-sm80 hands it to simt-generic.
// CHECK-LABEL: func.func private @sm80_f32_not_tf32(
//  CHECK-SAME:     dnn.config = {block = [256, 1, 1], strategy = "simt-generic"}
//  CHECK-SAME:     dnn.config_reason = "tc-sm80 does not apply (f32 operands with f32 compute: mma.sync multiplies f32 only as tf32 (compute_data_type='tf32')): simt-generic, one thread per output"
//       CHECK:   linalg.generic
//   CHECK-NOT:   gpu.launch
func.func private @sm80_f32_not_tf32(%A: memref<64x64xf32>, %B: memref<64x64xf32>, %C: memref<64x64xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [128, 1, 1], stages = 3 : i64, strategy = "tc-sm80", tile = [64, 64, 16]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<64x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<64x64xf32>, memref<64x64xf32>) outs(%C : memref<64x64xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %2 = arith.mulf %x, %w : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// A prologue in the contraction's body (an f32 A cast to bf16, as dnn-fuse
// and linalg's elementwise fusion leave it): A is loaded as stored, without
// swizzle (a box of 128 rows x 64 f32, 32 KiB a stage), and each consumer
// converts its 64 rows, 4 elements a thread at a time, into a 128-byte-
// swizzled bf16 tile that wgmma reads; it fences the writes for the async
// proxy and meets its warpgroup at a named barrier first. B is unchanged.
// K = 200 is ragged: elements past K are zeroed.
// CHECK-LABEL: func.func private @cast_prologue_a(
//       CHECK:   nvgpu.tma.create.descriptor %{{.*}} box[%c128, %c64] : memref<*xf32> -> <tensor = memref<128x64xf32, 3>, swizzle = none
//       CHECK:   nvgpu.tma.create.descriptor %{{.*}} box[%c64, %c64] : memref<*xbf16> -> <tensor = memref<64x64xbf16, 3>, swizzle = swizzle_128b
//       CHECK:             nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c40960_i32
//       CHECK:       nvvm.setmaxregister  increase 232
//       CHECK:             llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<4xf32>
//       CHECK:             arith.truncf %{{.*}} : f32 to bf16
//       CHECK:             arith.cmpi ult
//       CHECK:             arith.select
//       CHECK:             llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<4xbf16>, !llvm.ptr<3>
//       CHECK:             llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;"
//       CHECK:             llvm.inline_asm has_side_effects "bar.sync $0, $1;", "r,r"
//       CHECK:             nvvm.wgmma.fence.aligned
//       CHECK-COUNT-4:     nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>, <wrapped>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
func.func private @cast_prologue_a(%A: memref<256x200xf32>, %B: memref<200x64xbf16>, %C: memref<256x64xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 64]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<256x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<256x200xf32>, memref<200x64xbf16>) outs(%C : memref<256x64xf32>) {
  ^bb0(%x: f32, %w: bf16, %acc: f32):
    %t = arith.truncf %x : f32 to bf16
    %0 = arith.extf %t : bf16 to f32
    %1 = arith.extf %w : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// tf32 with B stored K x N, which wgmma reads from shared memory only
// K-major: no copy; the kernel computes Cᵀ = Bᵀ Aᵀ in the 64 x 128 tiles
// that cover C's 128 x 64 (one consumer warpgroup, 256 threads). B is its A:
// boxes of 32 K-rows by 32 columns of N (128 bytes, swizzled), whose
// fragments each consumer thread reads into registers (four 4-byte loads a
// k = 8 slice) for wgmma m64n128k8 with A in registers ($128-$131) and A's
// tile as the shared-memory B; C is stored from registers, element by
// element, at (column, row) of the accumulator.
// CHECK-LABEL: func.func private @tf32_b_k_by_n(
//  CHECK-SAME:     dnn.config_reason = "computes C^T = B^T A^T in 64x128 tiles: B stored K x N is its A, read into registers (wgmma reads tf32 from shared memory only K-major); the epilogue stores from registers, element by element down C's columns"
//   CHECK-NOT:   memref.alloc
//       CHECK:   nvgpu.tma.create.descriptor {{.*}} box[%c32, %c32]
//       CHECK:   nvgpu.tma.create.descriptor {{.*}} box[%c128, %c32]
//       CHECK:   gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c256,
//       CHECK:     llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> i32
//       CHECK:     nvvm.wgmma.fence.aligned
//       CHECK:     llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {{.*}}{$128, $129, $130, $131}, $132, p, 1, 1;
//       CHECK:     memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<256x128xf32>
func.func private @tf32_b_k_by_n(%A: memref<256x64xf32>, %B: memref<64x128xf32>, %C: memref<256x128xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 32]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %c13 = arith.constant 13 : i32
  %c1 = arith.constant 1 : i32
  %c4095 = arith.constant 4095 : i32
  %cmask = arith.constant -8192 : i32
  %cexp = arith.constant 2139095040 : i32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<256x128xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<256x64xf32>, memref<64x128xf32>) outs(%C : memref<256x128xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %xb = arith.bitcast %x : f32 to i32
    %x1 = arith.shrui %xb, %c13 : i32
    %x2 = arith.andi %x1, %c1 : i32
    %x3 = arith.addi %xb, %c4095 : i32
    %x4 = arith.addi %x3, %x2 : i32
    %x5 = arith.andi %x4, %cmask : i32
    %x6 = arith.andi %xb, %cexp : i32
    %x7 = arith.cmpi ne, %x6, %cexp : i32
    %x8 = arith.select %x7, %x5, %xb : i32
    %x9 = arith.bitcast %x8 : i32 to f32
    %wb = arith.bitcast %w : f32 to i32
    %w1 = arith.shrui %wb, %c13 : i32
    %w2 = arith.andi %w1, %c1 : i32
    %w3 = arith.addi %wb, %c4095 : i32
    %w4 = arith.addi %w3, %w2 : i32
    %w5 = arith.andi %w4, %cmask : i32
    %w6 = arith.andi %wb, %cexp : i32
    %w7 = arith.cmpi ne, %w6, %cexp : i32
    %w8 = arith.select %w7, %w5, %wb : i32
    %w9 = arith.bitcast %w8 : i32 to f32
    %p = arith.mulf %x9, %w9 : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#a_t = affine_map<(d0, d1, d2) -> (d2, d0)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// tf32 with A stored K x M and B stored K x N: A's fragments go through
// registers where it lies; B is copied transposed first.
// CHECK-LABEL: func.func private @tf32_a_k_by_m(
//  CHECK-SAME:     dnn.config_reason = "B stored K x N copied transposed first (wgmma reads tf32 from shared memory only K-major); A stored K x M is read into registers (wgmma reads tf32 from shared memory only K-major)
//       CHECK:   memref.alloc() : memref<128x64xf32>
//       CHECK:   gpu.launch
//       CHECK:   gpu.launch
//       CHECK:     llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32
func.func private @tf32_a_k_by_m(%A: memref<64x256xf32>, %B: memref<64x128xf32>, %C: memref<256x128xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 32]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %c13 = arith.constant 13 : i32
  %c1 = arith.constant 1 : i32
  %c4095 = arith.constant 4095 : i32
  %cmask = arith.constant -8192 : i32
  %cexp = arith.constant 2139095040 : i32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<256x128xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a_t, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<64x256xf32>, memref<64x128xf32>) outs(%C : memref<256x128xf32>) {
  ^bb0(%x: f32, %w: f32, %acc: f32):
    %xb = arith.bitcast %x : f32 to i32
    %x1 = arith.shrui %xb, %c13 : i32
    %x2 = arith.andi %x1, %c1 : i32
    %x3 = arith.addi %xb, %c4095 : i32
    %x4 = arith.addi %x3, %x2 : i32
    %x5 = arith.andi %x4, %cmask : i32
    %x6 = arith.andi %xb, %cexp : i32
    %x7 = arith.cmpi ne, %x6, %cexp : i32
    %x8 = arith.select %x7, %x5, %xb : i32
    %x9 = arith.bitcast %x8 : i32 to f32
    %wb = arith.bitcast %w : f32 to i32
    %w1 = arith.shrui %wb, %c13 : i32
    %w2 = arith.andi %w1, %c1 : i32
    %w3 = arith.addi %wb, %c4095 : i32
    %w4 = arith.addi %w3, %w2 : i32
    %w5 = arith.andi %w4, %cmask : i32
    %w6 = arith.andi %wb, %cexp : i32
    %w7 = arith.cmpi ne, %w6, %cexp : i32
    %w8 = arith.select %w7, %w5, %wb : i32
    %w9 = arith.bitcast %w8 : i32 to f32
    %p = arith.mulf %x9, %w9 : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#x = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
#y = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>

// A forward convolution (3x3, padding 1, channels-last x and y, a KRSC
// filter), as convert-dnn-to-linalg and bufferization leave it: x converted
// into a zero-padded f32 buffer, the contraction over (c, r, s), the result
// rounded to bf16 and copied into y. tc-sm90 runs it as an implicit GEMM
// of M = N·P·Q = 36 output pixels, N = K = 16 output channels and 9 K steps
// (taps outer; each tap's 16 channels in one step of 64, zero-filled past
// C). Its descriptors: x as it lies, [N, H, W, C], in im2col mode (a box of
// 64 pixels by 64 channels; the pixel box's corners from the padding and
// the filter's extent: -1 and 1 - 2 = -1); the filter as [K, taps, C] in
// boxes of [64, 1, 64]; y as the 2-D [N·P·Q, K] view the epilogue stores.
// The producer's A load is an im2col-mode copy at the output pixel's
// first-tap position with the tap's (r, s) as im2col offsets; its B load
// reads the same tap and channels of the filter. The mainloop and the
// epilogue are the matmul's: no linalg op is left.
// CHECK-LABEL: func.func private @conv_fprop_im2col(
//  CHECK-SAME:     %[[X:[^:]*]]: memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>>, %[[W:[^:]*]]: memref<16x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %[[Y:[^:]*]]: memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>> {bufferize.result})
//  CHECK-SAME:     dnn.config_reason = "conv_fprop; implicit GEMM (fprop): x read by TMA in im2col mode, 9 filter taps x 16 channels; the output tiles are stored by TMA from shared memory
//   CHECK-NOT:   linalg.
//       CHECK:   %[[YV:.*]] = memref.reinterpret_cast %[[Y]] to offset: [0], sizes: [36, 16], strides: [16, 1]
//       CHECK:   %[[XV:.*]] = memref.reinterpret_cast %[[X]] to offset: [0], sizes: [1, 6, 6, 16], strides: [576, 96, 16, 1]
//       CHECK:   %[[WV:.*]] = memref.reinterpret_cast %[[W]] to offset: [0], sizes: [16, 9, 16], strides: [144, 16, 1]
//       CHECK:   %[[UX:.*]] = memref.cast %[[XV]]
//       CHECK:   %[[DX:.*]] = nvgpu.tma.create.descriptor %[[UX]] box[%c64, %c64] {dnn.im2col = {element_strides = array<i64: 1, 1, 1, 1>, lower = array<i64: -1, -1>, upper = array<i64: -1, -1>}} : memref<*xbf16> -> <tensor = memref<64x64xbf16, 3>, swizzle = swizzle_128b
//       CHECK:   %[[PX:.*]] = builtin.unrealized_conversion_cast %[[DX]]
//       CHECK:   %[[UW:.*]] = memref.cast %[[WV]]
//       CHECK:   %[[DW:.*]] = nvgpu.tma.create.descriptor %[[UW]] box[%c64, %c1, %c64] : memref<*xbf16> -> <tensor = memref<64x1x64xbf16, 3>, swizzle = swizzle_128b
//       CHECK:   %[[PW:.*]] = builtin.unrealized_conversion_cast %[[DW]]
//       CHECK:   %[[UY:.*]] = memref.cast %[[YV]]
//       CHECK:   %[[DY:.*]] = nvgpu.tma.create.descriptor %[[UY]] box[%c16, %c64]
//       CHECK:   %[[PY:.*]] = builtin.unrealized_conversion_cast %[[DY]]
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1)
//       CHECK:     nvvm.setmaxregister  decrease 40
//       CHECK:         scf.for %{{.*}} = %c0 to %c9 step %c1
//       CHECK:           nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c16384_i32
// K step k0 = tap x 64 + c0.
//       CHECK:           %[[TAP:.*]] = arith.divui %[[K0:.*]], %c64_i32 : i32
//  CHECK-NEXT:           %[[C0:.*]] = arith.remui %[[K0]], %c64_i32 : i32
//       CHECK:           nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[PX]], %[[FULL:[^,]*]], box[%[[C0]], %{{.*}}, %{{.*}}, %{{.*}}] im2col[%{{.*}}, %{{.*}}] {mode = #nvvm.tma_load_mode<im2col>}
//       CHECK:           nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[PW]], %[[FULL]], box[%[[C0]], %[[TAP]], %{{.*}}] :
//       CHECK:     } else {
//  CHECK-NEXT:       nvvm.setmaxregister  increase 232
//       CHECK:         scf.for %{{.*}} = %c0 to %c9 step %c1
// Both operands K-major (B: layout col).
// CHECK-COUNT-4:         nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>, <wrapped>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
//       CHECK:           arith.truncf
//       CHECK:             nvvm.cp.async.bulk.tensor.global.shared.cta %[[PY]], %{{.*}}, box[%{{.*}}, %{{.*}}]
//   CHECK-NOT:   linalg.
func.func private @conv_fprop_im2col(%x: memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>>, %w: memref<16x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %y: memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>> {bufferize.result}) attributes {dnn.anchor = "conv_fprop", dnn.config = {block = [256, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.config_reason = "conv_fprop", dnn.conv = {dilation = array<i64: 1, 1>, direction = "fprop", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x16x8x8xf32>
  linalg.generic {indexing_maps = [#id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%padded : memref<1x16x8x8xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  %xf = memref.alloc() {alignment = 64 : i64} : memref<1x16x6x6xf32>
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>>) outs(%xf : memref<1x16x6x6xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  }
  %inner = memref.subview %padded[0, 0, 1, 1] [1, 16, 6, 6] [1, 1, 1, 1] : memref<1x16x8x8xf32> to memref<1x16x6x6xf32, strided<[1024, 64, 8, 1], offset: 9>>
  linalg.copy ins(%xf : memref<1x16x6x6xf32>) outs(%inner : memref<1x16x6x6xf32, strided<[1024, 64, 8, 1], offset: 9>>)
  %xg = memref.expand_shape %padded [[0], [1, 2], [3], [4]] output_shape [1, 1, 16, 8, 8] : memref<1x16x8x8xf32> into memref<1x1x16x8x8xf32>
  %wg = memref.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3] : memref<16x16x3x3xbf16, strided<[144, 1, 48, 16]>> into memref<1x16x16x3x3xbf16, strided<[2304, 144, 1, 48, 16]>>
  %acc = memref.alloc() {alignment = 64 : i64} : memref<1x1x16x6x6xf32>
  linalg.generic {indexing_maps = [#id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%acc : memref<1x1x16x6x6xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%xg, %wg : memref<1x1x16x8x8xf32>, memref<1x16x16x3x3xbf16, strided<[2304, 144, 1, 48, 16]>>) outs(%acc : memref<1x1x16x6x6xf32>) {
  ^bb0(%in: f32, %in_w: bf16, %out: f32):
    %0 = arith.extf %in_w : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %yb = memref.alloc() {alignment = 64 : i64} : memref<1x1x16x6x6xbf16>
  linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%acc : memref<1x1x16x6x6xf32>) outs(%yb : memref<1x1x16x6x6xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  %yc = memref.collapse_shape %yb [[0], [1, 2], [3], [4]] : memref<1x1x16x6x6xbf16> into memref<1x16x6x6xbf16>
  linalg.copy ins(%yc : memref<1x16x6x6xbf16>) outs(%y : memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>>)
  return
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#x = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
#y = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>

// C = 3 (an RGB stem) with pixels 3 channels apart (6 bytes; TMA steps
// pixels by multiples of 16) and a 3 x 3 filter: its columns are folded
// into the channels (tensorcore/fold.py). Two launches ahead of the GEMM
// write x' (the output's 6 columns, 3 x 3 = 9 channels a pixel, padded to
// 16, a thread a pixel in 16-byte stores) and w' ([16, 3 taps, 9
// channels], padded to 16); the implicit GEMM
// then reads x' by im2col with a 3 x 1 filter: 3 K steps instead of 9.
// CHECK-LABEL: func.func private @conv_fprop_c3(
//  CHECK-SAME:     dnn.config_reason = "conv_fprop; implicit GEMM (fprop): x read by TMA in im2col mode, 3 filter taps x 9 channels, the filter's columns folded into its channels first (tensorcore/fold.py)
//       CHECK:   %[[XF:.*]] = memref.alloc() : memref<1x6x6x16xbf16>
//       CHECK:   gpu.launch
//       CHECK:     vector.store %{{.*}}, %[[XF]][{{.*}}, %c0] {alignment = 16 : i64} : memref<1x6x6x16xbf16>, vector<8xbf16>
//       CHECK:     vector.store %{{.*}}, %[[XF]][{{.*}}, %c8] {alignment = 16 : i64} : memref<1x6x6x16xbf16>, vector<8xbf16>
//       CHECK:   memref.reinterpret_cast %[[XF]] to offset: [0], sizes: [1, 6, 6, 9], strides: [576, 96, 16, 1]
//       CHECK:   %[[WF:.*]] = memref.alloc() : memref<16x3x16xbf16>
//       CHECK:   gpu.launch
//       CHECK:     memref.store %{{.*}}, %[[WF]]
//       CHECK:   nvgpu.tma.create.descriptor {{.*}} {dnn.im2col = {element_strides = array<i64: 1, 1, 1, 1>, lower = array<i64: -1, 0>, upper = array<i64: -1, 0>}}
//       CHECK:   gpu.launch {{.*}} dynamic_shared_memory_size
//       CHECK:     nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} im2col[
//   CHECK-NOT:   linalg.generic
func.func private @conv_fprop_c3(%x: memref<1x3x6x6xbf16, strided<[108, 1, 18, 3]>>, %w: memref<16x3x3x3xbf16, strided<[27, 1, 9, 3]>>, %y: memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>> {bufferize.result}) attributes {dnn.anchor = "conv_fprop", dnn.config = {block = [256, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.config_reason = "conv_fprop", dnn.conv = {dilation = array<i64: 1, 1>, direction = "fprop", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x3x8x8xf32>
  linalg.generic {indexing_maps = [#id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%padded : memref<1x3x8x8xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  %xf = memref.alloc() {alignment = 64 : i64} : memref<1x3x6x6xf32>
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<1x3x6x6xbf16, strided<[108, 1, 18, 3]>>) outs(%xf : memref<1x3x6x6xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  }
  %inner = memref.subview %padded[0, 0, 1, 1] [1, 3, 6, 6] [1, 1, 1, 1] : memref<1x3x8x8xf32> to memref<1x3x6x6xf32, strided<[192, 64, 8, 1], offset: 9>>
  linalg.copy ins(%xf : memref<1x3x6x6xf32>) outs(%inner : memref<1x3x6x6xf32, strided<[192, 64, 8, 1], offset: 9>>)
  %xg = memref.expand_shape %padded [[0], [1, 2], [3], [4]] output_shape [1, 1, 3, 8, 8] : memref<1x3x8x8xf32> into memref<1x1x3x8x8xf32>
  %wg = memref.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [1, 16, 3, 3, 3] : memref<16x3x3x3xbf16, strided<[27, 1, 9, 3]>> into memref<1x16x3x3x3xbf16, strided<[432, 27, 1, 9, 3]>>
  %acc = memref.alloc() {alignment = 64 : i64} : memref<1x1x16x6x6xf32>
  linalg.generic {indexing_maps = [#id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%acc : memref<1x1x16x6x6xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%xg, %wg : memref<1x1x3x8x8xf32>, memref<1x16x3x3x3xbf16, strided<[432, 27, 1, 9, 3]>>) outs(%acc : memref<1x1x16x6x6xf32>) {
  ^bb0(%in: f32, %in_w: bf16, %out: f32):
    %0 = arith.extf %in_w : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %yb = memref.alloc() {alignment = 64 : i64} : memref<1x1x16x6x6xbf16>
  linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%acc : memref<1x1x16x6x6xf32>) outs(%yb : memref<1x1x16x6x6xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  %yc = memref.collapse_shape %yb [[0], [1, 2], [3], [4]] : memref<1x1x16x6x6xbf16> into memref<1x16x6x6xbf16>
  linalg.copy ins(%yc : memref<1x16x6x6xbf16>) outs(%y : memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>>)
  return
}

// -----

// The filter gradient of that stem-like convolution (C = 3, a 3 x 3
// filter): its columns folded into the channels too. One launch writes x'
// (no filter to copy); the GEMM's N is the 9 folded channels, its batch
// the 3 outer taps, and its epilogue writes dw where it lies: a [taps, K,
// S x C] view of the KRSC filter, taps 9 elements apart, K 27.
// CHECK-LABEL: func.func private @conv_wgrad_c3(
//  CHECK-SAME:     implicit GEMM (wgrad): x read by TMA in im2col mode, 3 filter taps x 9 channels, the filter's columns folded into its channels first (tensorcore/fold.py) (the taps the GEMM's batch
//       CHECK:   memref.reinterpret_cast %arg2 to offset: [0], sizes: [3, 16, 9], strides: [9, 27, 1]
//       CHECK:   %[[XF:.*]] = memref.alloc() : memref<1x6x6x16xbf16>
//       CHECK:   gpu.launch
//       CHECK:     vector.store %{{.*}}, %[[XF]][{{.*}}, %c0] {alignment = 16 : i64}
//       CHECK:     vector.store %{{.*}}, %[[XF]][{{.*}}, %c8] {alignment = 16 : i64}
//       CHECK:   memref.reinterpret_cast %[[XF]] to offset: [0], sizes: [1, 6, 6, 9], strides: [576, 96, 16, 1]
//   CHECK-NOT:   memref.alloc() : memref<16x
//       CHECK:   nvgpu.tma.create.descriptor {{.*}} {dnn.im2col = {element_strides = array<i64: 1, 1, 1, 1>, lower = array<i64: -1, 0>, upper = array<i64: -1, 0>}}
//       CHECK:   gpu.launch {{.*}} dynamic_shared_memory_size
//       CHECK:     nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} im2col[
//   CHECK-NOT:   linalg.generic
#wg = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#wg1 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#wg2 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d2, d3 + d6, d4 + d7)>
#wg3 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d1, d6, d7)>
#wg4 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>

func.func private @conv_wgrad_c3(%arg0: memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>>, %arg1: memref<1x3x6x6xbf16, strided<[108, 1, 18, 3]>>, %arg2: memref<16x3x3x3xbf16, strided<[27, 1, 9, 3]>> {bufferize.result}) attributes {dnn.anchor = "conv_wgrad", dnn.config = {block = [256, 1, 1], stages = 8 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.config_reason = "conv_wgrad: 16x27x36 (M x N x K) bf16; 64x64 tiles, 3 of them for 132 SMs (too few tiles at any width: the narrowest); 8 stages of 16 KiB fill shared memory; the filter's 3 columns folded into its C = 3 channels (9 columns a tap of x', the 3 outer taps the GEMM's batch)", dnn.conv = {dilation = array<i64: 1, 1>, direction = "wgrad", flip = false, groups = 1 : i64, operands = array<i64: 1, 0>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
  %cst = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x3x8x8xf32>
  linalg.generic {indexing_maps = [#wg], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<1x3x8x8xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<1x3x6x6xf32>
  linalg.generic {indexing_maps = [#wg, #wg], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg1 : memref<1x3x6x6xbf16, strided<[108, 1, 18, 3]>>) outs(%alloc_0 : memref<1x3x6x6xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  }
  %subview = memref.subview %alloc[0, 0, 1, 1] [1, 3, 6, 6] [1, 1, 1, 1] : memref<1x3x8x8xf32> to memref<1x3x6x6xf32, strided<[192, 64, 8, 1], offset: 9>>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_0 : memref<1x3x6x6xf32>) outs(%subview : memref<1x3x6x6xf32, strided<[192, 64, 8, 1], offset: 9>>)
  %expand_shape = memref.expand_shape %alloc [[0], [1, 2], [3], [4]] output_shape [1, 1, 3, 8, 8] : memref<1x3x8x8xf32> into memref<1x1x3x8x8xf32>
  %expand_shape_1 = memref.expand_shape %arg0 [[0], [1, 2], [3], [4]] output_shape [1, 1, 16, 6, 6] : memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>> into memref<1x1x16x6x6xbf16, strided<[576, 16, 1, 96, 16]>>
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<1x16x3x3x3xf32>
  linalg.generic {indexing_maps = [#wg1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_2 : memref<1x16x3x3x3xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  linalg.generic {indexing_maps = [#wg2, #wg3, #wg4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%expand_shape, %expand_shape_1 : memref<1x1x3x8x8xf32>, memref<1x1x16x6x6xbf16, strided<[576, 16, 1, 96, 16]>>) outs(%alloc_2 : memref<1x16x3x3x3xf32>) {
  ^bb0(%in: f32, %in_4: bf16, %out: f32):
    %0 = arith.extf %in_4 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %alloc_3 = memref.alloc() {alignment = 64 : i64} : memref<1x16x3x3x3xbf16>
  linalg.generic {indexing_maps = [#wg1, #wg1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_2 : memref<1x16x3x3x3xf32>) outs(%alloc_3 : memref<1x16x3x3x3xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  %collapse_shape = memref.collapse_shape %alloc_3 [[0, 1], [2], [3], [4]] : memref<1x16x3x3x3xbf16> into memref<16x3x3x3xbf16>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<16x3x3x3xbf16>) outs(%arg2 : memref<16x3x3x3xbf16, strided<[27, 1, 9, 3]>>)
  return
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#dy = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 - d6 + 2, d4 - d7 + 2)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d2, d6, d7)>
#dx = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>

// The data gradient of a stride-1 3x3 convolution without padding: dy
// 4 x 4, dx 6 x 6. It is the forward convolution of dy padded by
// (R - 1) x dilation - pad = 2 (the im2col box's corners -2 and 2 - 2 = 0),
// each K step reading filter tap 8 - t for tap t (flipped) with K and C
// exchanged: the filter's tile is read C-contiguous, so B is MN-major (wgmma
// layout row).
// CHECK-LABEL: func.func private @conv_dgrad_as_fprop(
//  CHECK-SAME:     %[[DY:[^:]*]]: memref<1x16x4x4xbf16, strided<[256, 1, 64, 16]>>, %[[W:[^:]*]]: memref<16x16x3x3xbf16, strided<[144, 1, 48, 16]>>
//  CHECK-SAME:     dnn.config_reason = "conv_dgrad; implicit GEMM (dgrad): dy read by TMA in im2col mode, 9 filter taps x 16 channels
//       CHECK:   %[[DYV:.*]] = memref.reinterpret_cast %[[DY]] to offset: [0], sizes: [1, 4, 4, 16], strides: [256, 64, 16, 1]
//       CHECK:   %[[WV:.*]] = memref.reinterpret_cast %[[W]] to offset: [0], sizes: [16, 9, 16], strides: [144, 16, 1]
//       CHECK:   %[[UDY:.*]] = memref.cast %[[DYV]]
//       CHECK:   nvgpu.tma.create.descriptor %[[UDY]] box[%c64, %c64] {dnn.im2col = {element_strides = array<i64: 1, 1, 1, 1>, lower = array<i64: -2, -2>, upper = array<i64: 0, 0>}}
//       CHECK:   %[[UW:.*]] = memref.cast %[[WV]]
//       CHECK:   %[[DW:.*]] = nvgpu.tma.create.descriptor %[[UW]] box[%c64, %c1, %c64] : memref<*xbf16> -> <tensor = memref<64x1x64xbf16, 3>
//       CHECK:   %[[PW:.*]] = builtin.unrealized_conversion_cast %[[DW]]
//       CHECK:   gpu.launch
//       CHECK:           %[[TAP:.*]] = arith.divui %[[K0:.*]], %c64_i32 : i32
//  CHECK-NEXT:           %[[C0:.*]] = arith.remui %[[K0]], %c64_i32 : i32
// The output pixel's first-tap position: p - 2.
//       CHECK:           arith.subi %{{.*}}, %c2_i32 : i32
//       CHECK:           nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} im2col[%{{.*}}, %{{.*}}] {mode = #nvvm.tma_load_mode<im2col>}
//       CHECK:           %[[FLIPPED:.*]] = arith.subi %c8_i32, %[[TAP]] : i32
//       CHECK:           nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[PW]], %{{.*}}, box[%{{.*}}, %[[FLIPPED]], %[[C0]]] :
// CHECK-COUNT-4:         nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>, <wrapped>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
//   CHECK-NOT:   linalg.
func.func private @conv_dgrad_as_fprop(%dy: memref<1x16x4x4xbf16, strided<[256, 1, 64, 16]>>, %w: memref<16x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %dx: memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>> {bufferize.result}) attributes {dnn.anchor = "conv_dgrad", dnn.config = {block = [256, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.config_reason = "conv_dgrad", dnn.conv = {dilation = array<i64: 1, 1>, direction = "dgrad", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 0, 0>, pre = array<i64: 0, 0>, stride = array<i64: 1, 1>}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %placed = memref.alloc() {alignment = 64 : i64} : memref<1x16x8x8xf32>
  linalg.generic {indexing_maps = [#id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%placed : memref<1x16x8x8xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  %dyf = memref.alloc() {alignment = 64 : i64} : memref<1x16x4x4xf32>
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dy : memref<1x16x4x4xbf16, strided<[256, 1, 64, 16]>>) outs(%dyf : memref<1x16x4x4xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  }
  %inner = memref.subview %placed[0, 0, 2, 2] [1, 16, 4, 4] [1, 1, 1, 1] : memref<1x16x8x8xf32> to memref<1x16x4x4xf32, strided<[1024, 64, 8, 1], offset: 18>>
  linalg.copy ins(%dyf : memref<1x16x4x4xf32>) outs(%inner : memref<1x16x4x4xf32, strided<[1024, 64, 8, 1], offset: 18>>)
  %dyg = memref.expand_shape %placed [[0], [1, 2], [3], [4]] output_shape [1, 1, 16, 8, 8] : memref<1x16x8x8xf32> into memref<1x1x16x8x8xf32>
  %wg = memref.expand_shape %w [[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3] : memref<16x16x3x3xbf16, strided<[144, 1, 48, 16]>> into memref<1x16x16x3x3xbf16, strided<[2304, 144, 1, 48, 16]>>
  %acc = memref.alloc() {alignment = 64 : i64} : memref<1x1x16x6x6xf32>
  linalg.generic {indexing_maps = [#id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%acc : memref<1x1x16x6x6xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#dy, #w, #dx], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%dyg, %wg : memref<1x1x16x8x8xf32>, memref<1x16x16x3x3xbf16, strided<[2304, 144, 1, 48, 16]>>) outs(%acc : memref<1x1x16x6x6xf32>) {
  ^bb0(%in: f32, %in_w: bf16, %out: f32):
    %0 = arith.extf %in_w : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %dxb = memref.alloc() {alignment = 64 : i64} : memref<1x1x16x6x6xbf16>
  linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%acc : memref<1x1x16x6x6xf32>) outs(%dxb : memref<1x1x16x6x6xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  %dxc = memref.collapse_shape %dxb [[0], [1, 2], [3], [4]] : memref<1x1x16x6x6xbf16> into memref<1x16x6x6xbf16>
  linalg.copy ins(%dxc : memref<1x16x6x6xbf16>) outs(%dx : memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>>)
  return
}

// -----

// A data gradient of stride 2 (3x3, padding 1, dx 6 x 6, dy 3 x 3) split by
// stride phase: phases (0, 0), (0, 1), (1, 0), (1, 1) of dx's rows and
// columns take 1, 2, 2 and 4 of the filter's taps. One launch copies each
// phase's taps into a [16, 9, 16] buffer (the last, tap 0 of phase (1, 1),
// from filter tap 0); then one stride-1 implicit GEMM per phase over dy as
// it lies (im2col boxes from 0 to 0: no padding left in a phase), reading
// its slice of the buffer and storing its 3 x 3 pixels through a view of dx
// at its first pixel (offsets 0, 16, 96, 112), its rows 2 pixels apart
// (strides 192 and 32): from registers, as TMA stores consecutive rows.
// CHECK-LABEL: func.func private @conv_dgrad_by_stride_phase(
//  CHECK-SAME:     %[[DY:[^:]*]]: memref<1x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %[[W:[^:]*]]: memref<16x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %[[DX:[^:]*]]: memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>>
//  CHECK-SAME:     dnn.config_reason = "conv_dgrad; implicit GEMM (dgrad): dy read by TMA in im2col mode, stride [2, 2]: 4 stride phases (tensorcore/phases.py), a stride-1 GEMM each of 1/2/2/4 filter taps x 16 channels; the epilogue stores from registers (its rows are the pixels of a stride phase)"
//   CHECK-DAG:   %[[P11:.*]] = memref.reinterpret_cast %[[DX]] to offset: [112], sizes: [1, 3, 3, 16], strides: [576, 192, 32, 1]
//   CHECK-DAG:   %[[P10:.*]] = memref.reinterpret_cast %[[DX]] to offset: [96], sizes: [1, 3, 3, 16], strides: [576, 192, 32, 1]
//   CHECK-DAG:   %[[P01:.*]] = memref.reinterpret_cast %[[DX]] to offset: [16], sizes: [1, 3, 3, 16], strides: [576, 192, 32, 1]
//   CHECK-DAG:   %[[P00:.*]] = memref.reinterpret_cast %[[DX]] to offset: [0], sizes: [1, 3, 3, 16], strides: [576, 192, 32, 1]
//   CHECK-DAG:   %[[WV:.*]] = memref.reinterpret_cast %[[W]] to offset: [0], sizes: [16, 9, 16], strides: [144, 16, 1]
//       CHECK:   %[[SUB:.*]] = memref.alloc() : memref<16x9x16xbf16>
//       CHECK:   gpu.launch
//       CHECK:       %[[LAST:.*]] = arith.cmpi eq, %[[TAP:.*]], %c8 : index
//  CHECK-NEXT:       %[[SOURCE:.*]] = arith.select %[[LAST]], %c0, %{{.*}} : index
//  CHECK-NEXT:       %[[V:.*]] = memref.load %[[WV]][%[[K:[0-9a-z_]+]], %[[SOURCE]], %[[C:[0-9a-z_]+]]]
//  CHECK-NEXT:       memref.store %[[V]], %[[SUB]][%[[K]], %[[TAP]], %[[C]]]
//       CHECK:   tma.create.descriptor {{.*}}lower = array<i64: 0, 0>, upper = array<i64: 0, 0>
//       CHECK:   gpu.launch
//       CHECK:             vector.store %{{.*}}, %[[P00]][
//       CHECK:   tma.create.descriptor {{.*}}lower = array<i64: 0, 0>, upper = array<i64: 0, 0>
//       CHECK:   gpu.launch
//       CHECK:             vector.store %{{.*}}, %[[P01]][
//       CHECK:   tma.create.descriptor {{.*}}lower = array<i64: 0, 0>, upper = array<i64: 0, 0>
//       CHECK:   gpu.launch
//       CHECK:             vector.store %{{.*}}, %[[P10]][
//       CHECK:   tma.create.descriptor {{.*}}lower = array<i64: 0, 0>, upper = array<i64: 0, 0>
//       CHECK:   gpu.launch
//       CHECK:             vector.store %{{.*}}, %[[P11]][
//   CHECK-NOT:   gpu.launch
//   CHECK-NOT:   linalg.
func.func private @conv_dgrad_by_stride_phase(%arg0: memref<1x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %arg1: memref<16x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %arg2: memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>> {bufferize.result}) attributes {dnn.anchor = "conv_dgrad", dnn.config = {block = [256, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.config_reason = "conv_dgrad", dnn.conv = {dilation = array<i64: 1, 1>, direction = "dgrad", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 2, 2>}, dnn.kernel} {
  %cst = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x16x8x8xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<1x16x8x8xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<1x16x3x3xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : memref<1x16x3x3xbf16, strided<[144, 1, 48, 16]>>) outs(%alloc_0 : memref<1x16x3x3xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  }
  %subview = memref.subview %alloc[0, 0, 1, 1] [1, 16, 3, 3] [1, 1, 2, 2] : memref<1x16x8x8xf32> to memref<1x16x3x3xf32, strided<[1024, 64, 16, 2], offset: 9>>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_0 : memref<1x16x3x3xf32>) outs(%subview : memref<1x16x3x3xf32, strided<[1024, 64, 16, 2], offset: 9>>)
  %expand_shape = memref.expand_shape %alloc [[0], [1, 2], [3], [4]] output_shape [1, 1, 16, 8, 8] : memref<1x16x8x8xf32> into memref<1x1x16x8x8xf32>
  %expand_shape_1 = memref.expand_shape %arg1 [[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3] : memref<16x16x3x3xbf16, strided<[144, 1, 48, 16]>> into memref<1x16x16x3x3xbf16, strided<[2304, 144, 1, 48, 16]>>
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<1x1x16x6x6xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_2 : memref<1x1x16x6x6xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + -d6 + 2, d4 + -d7 + 2)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d5, d2, d6, d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%expand_shape, %expand_shape_1 : memref<1x1x16x8x8xf32>, memref<1x16x16x3x3xbf16, strided<[2304, 144, 1, 48, 16]>>) outs(%alloc_2 : memref<1x1x16x6x6xf32>) {
  ^bb0(%in: f32, %in_4: bf16, %out: f32):
    %0 = arith.extf %in_4 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %alloc_3 = memref.alloc() {alignment = 64 : i64} : memref<1x1x16x6x6xbf16>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_2 : memref<1x1x16x6x6xf32>) outs(%alloc_3 : memref<1x1x16x6x6xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  %collapse_shape = memref.collapse_shape %alloc_3 [[0], [1, 2], [3], [4]] : memref<1x1x16x6x6xbf16> into memref<1x16x6x6xbf16>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<1x16x6x6xbf16>) outs(%arg2 : memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>>)
  return
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#id5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#x = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
#y = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>

// A convolution configured tc-sm80 (a 3x3 filter, padding 1, then relu;
// x, w and y channels-last): its implicit GEMM, M = 20 output pixels, N = 16
// output channels, K = 9 taps x 16 channels rounded up to 32 a tap. x is
// gathered by cp.async from the kernel argument as it lies (an [N, H, W, C]
// view), the filter read as [K, taps, C]; the epilogue stores y through an
// [N·P·Q, K] view.
// CHECK-LABEL: func.func private @sm80_conv_relu(
//  CHECK-SAME:     dnn.config_reason = "conv_fprop: 20x16x144 (M x N x K) bf16; implicit GEMM (fprop): x gathered by cp.async, 9 filter taps x 16 channels"
//   CHECK-DAG:   memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [1, 4, 5, 16], strides: [320, 80, 16, 1]
//   CHECK-DAG:   memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [16, 9, 16], strides: [144, 16, 1]
//   CHECK-DAG:   memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [20, 16], strides: [16, 1]
//       CHECK:   gpu.launch
//       CHECK:     nvvm.cp.async.shared.global {{.*}}, 16, cache = cg
//       CHECK:     scf.for
//       CHECK:       nvvm.ldmatrix
//       CHECK:       nvvm.mma.sync
//       CHECK:     arith.maximumf
//   CHECK-NOT:   linalg.generic
func.func private @sm80_conv_relu(%arg0: memref<1x16x4x5xbf16, strided<[320, 1, 80, 16]>>, %arg1: memref<16x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %arg2: memref<1x16x4x5xbf16, strided<[320, 1, 80, 16]>> {bufferize.result}) attributes {dnn.anchor = "conv_fprop", dnn.config = {block = [128, 1, 1], stages = 4 : i64, strategy = "tc-sm80", tile = [64, 64, 32]}, dnn.config_reason = "conv_fprop: 20x16x144 (M x N x K) bf16", dnn.conv = {dilation = array<i64: 1, 1>, direction = "fprop", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
  %cst = arith.constant 0.000000e+00 : f32
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x16x6x7xf32>
  linalg.generic {indexing_maps = [#id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%padded : memref<1x16x6x7xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  %xf = memref.alloc() {alignment = 64 : i64} : memref<1x16x4x5xf32>
  linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : memref<1x16x4x5xbf16, strided<[320, 1, 80, 16]>>) outs(%xf : memref<1x16x4x5xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  }
  %inner = memref.subview %padded[0, 0, 1, 1] [1, 16, 4, 5] [1, 1, 1, 1] : memref<1x16x6x7xf32> to memref<1x16x4x5xf32, strided<[672, 42, 7, 1], offset: 8>>
  linalg.copy ins(%xf : memref<1x16x4x5xf32>) outs(%inner : memref<1x16x4x5xf32, strided<[672, 42, 7, 1], offset: 8>>)
  %xg = memref.expand_shape %padded [[0], [1, 2], [3], [4]] output_shape [1, 1, 16, 6, 7] : memref<1x16x6x7xf32> into memref<1x1x16x6x7xf32>
  %wg = memref.expand_shape %arg1 [[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3] : memref<16x16x3x3xbf16, strided<[144, 1, 48, 16]>> into memref<1x16x16x3x3xbf16, strided<[2304, 144, 1, 48, 16]>>
  %acc = memref.alloc() {alignment = 64 : i64} : memref<1x1x16x4x5xf32>
  linalg.generic {indexing_maps = [#id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%acc : memref<1x1x16x4x5xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%xg, %wg : memref<1x1x16x6x7xf32>, memref<1x16x16x3x3xbf16, strided<[2304, 144, 1, 48, 16]>>) outs(%acc : memref<1x1x16x4x5xf32>) {
  ^bb0(%in: f32, %in_4: bf16, %out: f32):
    %0 = arith.extf %in_4 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %yb = memref.alloc() {alignment = 64 : i64} : memref<1x1x16x4x5xbf16>
  linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%acc : memref<1x1x16x4x5xf32>) outs(%yb : memref<1x1x16x4x5xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.maximumf %in, %cst : f32
    %1 = arith.truncf %0 : f32 to bf16
    linalg.yield %1 : bf16
  }
  %y = memref.collapse_shape %yb [[0], [1, 2], [3], [4]] : memref<1x1x16x4x5xbf16> into memref<1x16x4x5xbf16>
  linalg.copy ins(%y : memref<1x16x4x5xbf16>) outs(%arg2 : memref<1x16x4x5xbf16, strided<[320, 1, 80, 16]>>)
  return
}

// -----

// A residual broadcast over the batch ([1, K, P, Q], channels-last) added to
// a tc-sm80 convolution: its pixel dims do not flatten to one stride (0 over
// the images, 16 over the pixels), so the epilogue reads it through a split
// view [N, P, Q, K] with stride 0 along N (conv_views.Views._split), the
// GEMM's row split into (image, p, q) by at(); pairs of channels are
// adjacent there, one 4-byte load each. It ran on simt-generic before.
// CHECK-LABEL: func.func private @sm80_conv_residual_over_batch(
//   CHECK-DAG:   %[[R:.*]] = memref.reinterpret_cast %arg2 to offset: [0], sizes: [2, 4, 5, 16], strides: [0, 80, 16, 1]
//   CHECK-DAG:   memref.reinterpret_cast %arg3 to offset: [0], sizes: [40, 16], strides: [16, 1]
//       CHECK:   gpu.launch
//       CHECK:       nvvm.mma.sync
//       CHECK:     arith.remui %{{.*}}, %c5
//       CHECK:     vector.load %[[R]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<2x4x5x16xbf16, strided<[0, 80, 16, 1]>>, vector<2xbf16>
//   CHECK-NOT:   linalg.generic
func.func private @sm80_conv_residual_over_batch(%arg0: memref<2x16x4x5xbf16, strided<[320, 1, 80, 16]>>, %arg1: memref<16x16x3x3xbf16, strided<[144, 1, 48, 16]>>, %arg2: memref<1x16x4x5xbf16, strided<[320, 1, 80, 16]>>, %arg3: memref<2x16x4x5xbf16, strided<[320, 1, 80, 16]>> {bufferize.result}) attributes {dnn.anchor = "conv_fprop", dnn.config = {block = [128, 1, 1], stages = 4 : i64, strategy = "tc-sm80", tile = [64, 64, 32]}, dnn.config_reason = "conv_fprop: 40x16x144 (M x N x K) bf16", dnn.conv = {dilation = array<i64: 1, 1>, direction = "fprop", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
  %cst = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<2x16x6x7xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<2x16x6x7xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<2x16x4x5xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0 : memref<2x16x4x5xbf16, strided<[320, 1, 80, 16]>>) outs(%alloc_0 : memref<2x16x4x5xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  }
  %subview = memref.subview %alloc[0, 0, 1, 1] [2, 16, 4, 5] [1, 1, 1, 1] : memref<2x16x6x7xf32> to memref<2x16x4x5xf32, strided<[672, 42, 7, 1], offset: 8>>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_0 : memref<2x16x4x5xf32>) outs(%subview : memref<2x16x4x5xf32, strided<[672, 42, 7, 1], offset: 8>>)
  %expand_shape = memref.expand_shape %alloc [[0], [1, 2], [3], [4]] output_shape [2, 1, 16, 6, 7] : memref<2x16x6x7xf32> into memref<2x1x16x6x7xf32>
  %expand_shape_1 = memref.expand_shape %arg1 [[0, 1], [2], [3], [4]] output_shape [1, 16, 16, 3, 3] : memref<16x16x3x3xbf16, strided<[144, 1, 48, 16]>> into memref<1x16x16x3x3xbf16, strided<[2304, 144, 1, 48, 16]>>
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<2x1x16x4x5xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_2 : memref<2x1x16x4x5xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>, affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%expand_shape, %expand_shape_1 : memref<2x1x16x6x7xf32>, memref<1x16x16x3x3xbf16, strided<[2304, 144, 1, 48, 16]>>) outs(%alloc_2 : memref<2x1x16x4x5xf32>) {
  ^bb0(%in: f32, %in_4: bf16, %out: f32):
    %0 = arith.extf %in_4 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %alloc_3 = memref.alloc() {alignment = 64 : i64} : memref<2x1x16x4x5xbf16>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_2 : memref<2x1x16x4x5xf32>) outs(%alloc_3 : memref<2x1x16x4x5xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  %collapse_shape = memref.collapse_shape %alloc_3 [[0], [1, 2], [3], [4]] : memref<2x1x16x4x5xbf16> into memref<2x16x4x5xbf16>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%collapse_shape, %arg2 : memref<2x16x4x5xbf16>, memref<1x16x4x5xbf16, strided<[320, 1, 80, 16]>>) outs(%arg3 : memref<2x16x4x5xbf16, strided<[320, 1, 80, 16]>>) {
  ^bb0(%in: bf16, %in_4: bf16, %out: bf16):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_4 : bf16 to f32
    %2 = arith.addf %0, %1 : f32
    %3 = arith.truncf %2 : f32 to bf16
    linalg.yield %3 : bf16
  }
  return
}

// -----

#id = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#qk_q = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>
#qk_k = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, 0, d5)>
#qk_s = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
#row = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, 0)>
#pv_v = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, 0, d5, d4)>

// An sdpa forward (causal, grouped-query: 4 query heads over 2 kv heads,
// Sq = Skv = 128, D = 64, bf16, with its statistics; q stored (B, S, H, D)),
// as convert-dnn-to-linalg and bufferization leave it: the kernel function
// carries dnn.attention, its body the expansion (QK^T, the mask, the row
// max, exp, the row sum, PV, the division, the log-sum-exp). tc-sm90
// replaces the body by the attention kernel (sm90/flash.py): q, k and v
// read through TMA descriptors in boxes of 128 rows by 64 columns (q's
// through a view in the order its dims lie, [B, S, H, D]), o's in boxes of
// a warp's 16 rows; one gpu.launch of 384 threads a block (a
// producer warpgroup and two consumers of 64 query rows each), a block per
// (query tile, batch x head), the Q tile and 3-stage rings of K tiles and
// of V tiles in 115768 bytes of shared memory. The producer loads Q once,
// then each K and each V tile when its stage is empty. The consumers take
// turns at the tensor cores (named barriers of 256 threads); in its turn a
// consumer issues S_j = Q K_j^T on wgmma from shared memory (four k16 steps
// of D, K read K-major) and O += P_{j-1} V_{j-1} with P's fragments in
// registers (inline PTX: eight k16 steps of the 128 kv rows, V read
// MN-major), hands the turn on, and runs the online softmax of S_j (quad
// shuffles for the row max, ex2) while P V runs; each stage is released
// once its product is done. The epilogue sums the row's quad, writes O / l
// into the warpgroup's rows of the Q tile and stores them by TMA, and
// stores the statistics from registers.
// CHECK-LABEL: func.func private @sdpa_causal_gqa(
//  CHECK-SAME:     %[[Q:[^:]*]]: memref<1x4x128x64xbf16, strided<[32768, 64, 256, 1]>>, %[[K:[^:]*]]: memref<1x2x128x64xbf16>, %[[V:[^:]*]]: memref<1x2x128x64xbf16>, %[[O:[^:]*]]: memref<1x4x128x64xbf16> {bufferize.result}, %[[STATS:[^:]*]]: memref<1x4x128x1xf32> {bufferize.result})
//  CHECK-SAME:     dnn.config_reason = "sdpa; attention forward: 128 query rows a block (2 consumer warpgroups), 128 kv rows a step, K and V in rings of 3 stages; S = QK^T and O += PV on wgmma, the online softmax in registers"
//   CHECK-NOT:   linalg.
//       CHECK:   %[[QL:.*]] = memref.reinterpret_cast %[[Q]] to offset: [0], sizes: [1, 128, 4, 64], strides: [32768, 256, 64, 1]
//       CHECK:   %[[UQ:.*]] = memref.cast %[[QL]]
//       CHECK:   %[[DQ:.*]] = nvgpu.tma.create.descriptor %[[UQ]] box[%c1, %c128, %c1, %c64] : memref<*xbf16> -> <tensor = memref<1x128x1x64xbf16, 3>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
//       CHECK:   %[[PQ:.*]] = builtin.unrealized_conversion_cast %[[DQ]]
//       CHECK:   %[[UK:.*]] = memref.cast %[[K]]
//       CHECK:   %[[DK:.*]] = nvgpu.tma.create.descriptor %[[UK]] box[%c1, %c1, %c128, %c64] : memref<*xbf16> -> <tensor = memref<1x1x128x64xbf16, 3>, swizzle = swizzle_128b
//       CHECK:   %[[PK:.*]] = builtin.unrealized_conversion_cast %[[DK]]
//       CHECK:   %[[UV:.*]] = memref.cast %[[V]]
//       CHECK:   %[[DV:.*]] = nvgpu.tma.create.descriptor %[[UV]] box[%c1, %c1, %c128, %c64] : memref<*xbf16> -> <tensor = memref<1x1x128x64xbf16, 3>, swizzle = swizzle_128b
//       CHECK:   %[[PV:.*]] = builtin.unrealized_conversion_cast %[[DV]]
//       CHECK:   %[[UO:.*]] = memref.cast %[[O]]
//       CHECK:   %[[DO:.*]] = nvgpu.tma.create.descriptor %[[UO]] box[%c1, %c1, %c16, %c64] : memref<*xbf16> -> <tensor = memref<1x1x16x64xbf16, 3>, swizzle = swizzle_128b
//       CHECK:   %[[PO:.*]] = builtin.unrealized_conversion_cast %[[DO]]
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c4, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c384, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c115816_i32 {
// Q's barrier expects one arrival, each stage's full barrier one (the
// producer's), its empty barrier two (the consumers').
//       CHECK:     nvvm.mbarrier.init %[[QFULL:.*]], %c1_i32
//       CHECK:     nvvm.mbarrier.init %{{.*}}, %c2_i32
//       CHECK:     gpu.barrier
//       CHECK:     scf.if
//  CHECK-NEXT:       nvvm.setmaxregister  decrease 24
// The Q tile (128 x 64 x 2 bytes) at [b, q0, h, 0] of q as it lies.
//       CHECK:         nvvm.mbarrier.arrive.expect_tx %[[QFULL]], %c16384_i32
//  CHECK-NEXT:         %[[Q0:.*]] = arith.index_cast
//       CHECK:         nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[PQ]], %[[QFULL]], box[%c0_i32, %{{.*}}, %[[Q0]], %{{.*}}]
//       CHECK:         scf.for
// A K tile into K's ring, a V tile into V's, 16384 bytes each, each when
// its stage is empty.
//       CHECK:           llvm.inline_asm has_side_effects "{{.*}}mbarrier.try_wait.parity
//       CHECK:           nvvm.mbarrier.arrive.expect_tx %[[KFULL:.*]], %c16384_i32
//       CHECK:           nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[PK]], %[[KFULL]], box[%c0_i32, %[[KV0:.*]], %[[HK:.*]], %[[B:.*]]] :
//       CHECK:           llvm.inline_asm has_side_effects "{{.*}}mbarrier.try_wait.parity
//       CHECK:           nvvm.mbarrier.arrive.expect_tx %[[VFULL:.*]], %c16384_i32
//       CHECK:           nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[PV]], %[[VFULL]], box[%c0_i32, %[[KV0]], %[[HK]], %[[B]]] :
//       CHECK:     } else {
//  CHECK-NEXT:       nvvm.setmaxregister  increase 240
//       CHECK:         llvm.inline_asm has_side_effects "{{.*}}mbarrier.try_wait.parity{{.*}}", "r,r" %[[QFULL]], %c0_i32
// The first turn is the first consumer's: the last arrives on its barrier.
//       CHECK:         scf.if
//  CHECK-NEXT:           llvm.inline_asm has_side_effects "bar.arrive $0, 256;"
//       CHECK:         llvm.inline_asm has_side_effects "bar.sync $0, 256;"
//       CHECK:         llvm.inline_asm has_side_effects "{{.*}}mbarrier.try_wait.parity
//       CHECK:         nvvm.wgmma.fence.aligned
// S_0 = Q K_0^T: 64 x 128 a consumer, D in four k16 steps.
// CHECK-COUNT-4:       nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <{{zero|one}}>, <wrapped>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
//       CHECK:         nvvm.wgmma.commit.group.sync.aligned
// Step j: in its turn, S_j, then O += P_{j-1} V_{j-1}: P rounded to bf16
// pairs, four 32-bit A registers a k16 step ($64-$67), V's descriptor
// ($68), B transposed (MN-major).
//       CHECK:         scf.for
//       CHECK:           llvm.inline_asm has_side_effects "bar.sync $0, 256;"
//       CHECK:           nvvm.wgmma.fence.aligned
// CHECK-COUNT-4:         nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>
//       CHECK:           nvvm.wgmma.commit.group.sync.aligned
//       CHECK:           llvm.inline_asm has_side_effects "{{.*}}mbarrier.try_wait.parity
//       CHECK:           nvvm.wgmma.fence.aligned
// CHECK-COUNT-8:         llvm.inline_asm has_side_effects "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;{{.*}}", "=f,{{.*}},r,r,r,r,l"
//       CHECK:           nvvm.wgmma.commit.group.sync.aligned
//       CHECK:           llvm.inline_asm has_side_effects "bar.arrive $0, 256;"
// S_j done (the older group): K_j's stage goes back.
//       CHECK:           nvvm.wgmma.wait.group.sync.aligned 1
//       CHECK:             nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// The row max across the quad that holds a row, and the exponentials.
//       CHECK:           gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
//       CHECK:           gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
//       CHECK:           llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// P V done: V_{j-1}'s stage goes back; P_j rounded for the next step.
//       CHECK:           nvvm.wgmma.wait.group.sync.aligned 0
//       CHECK:             nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
//       CHECK:           arith.truncf %{{.*}} : vector<2xf32> to vector<2xbf16>
//       CHECK:           scf.yield
// The last P V.
//       CHECK:         nvvm.wgmma.fence.aligned
// CHECK-COUNT-8:       llvm.inline_asm has_side_effects "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
//       CHECK:         nvvm.wgmma.wait.group.sync.aligned 0
// The epilogue: l summed over the quad; O / l rounded, each thread's pairs
// written into the Q tile (16 of them: 2 rows x 8 column blocks), a warp's
// 16 rows stored by one TMA store; no store of o from registers; the
// statistics (m + log2 l) ln 2 by one thread of the quad.
//       CHECK:         gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
//       CHECK:         gpu.shuffle  xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK-COUNT-16:      llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<3>
//       CHECK:         llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;"
//  CHECK-NEXT:         nvvm.bar.warp.sync
//       CHECK:           nvvm.cp.async.bulk.tensor.global.shared.cta %[[PO]], %{{.*}}, box[%c0_i32, %{{.*}}, %{{.*}}, %{{.*}}]
//  CHECK-NEXT:           nvvm.cp.async.bulk.commit.group
//  CHECK-NEXT:           nvvm.cp.async.bulk.wait_group 0
//   CHECK-NOT:         vector.store
//       CHECK:             math.log2
//       CHECK:             memref.store %{{.*}}, %[[STATS]][%{{.*}}, %{{.*}}, %{{.*}}, %c0] : memref<1x4x128x1xf32>
//   CHECK-NOT:   linalg.
func.func private @sdpa_causal_gqa(%q: memref<1x4x128x64xbf16, strided<[32768, 64, 256, 1]>>, %k: memref<1x2x128x64xbf16>, %v: memref<1x2x128x64xbf16>, %o: memref<1x4x128x64xbf16> {bufferize.result}, %stats: memref<1x4x128x1xf32> {bufferize.result}) attributes {dnn.anchor = "sdpa", dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa", operands = array<i64: 0, 1, 2, -1, -1, -1, -1, -1>, padding = false, results = array<i64: 0, 1>, returned = 2 : i64, scale = 1.250000e-01 : f64, window = 0 : i64}, dnn.config = {block = [384, 1, 1], stages = 3 : i64, strategy = "tc-sm90", tile = [128, 128]}, dnn.config_reason = "sdpa", dnn.kernel} {
  %cst = arith.constant 1.000000e+00 : f32
  %cst_0 = arith.constant 1.250000e-01 : f32
  %cst_1 = arith.constant 0xFF800000 : f32
  %cst_2 = arith.constant 0.000000e+00 : f32
  %q_groups = memref.expand_shape %q [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 128, 64] : memref<1x4x128x64xbf16, strided<[32768, 64, 256, 1]>> into memref<1x2x2x128x64xbf16, strided<[32768, 128, 64, 256, 1]>>
  %k_groups = memref.expand_shape %k [[0], [1], [2], [3, 4]] output_shape [1, 2, 128, 1, 64] : memref<1x2x128x64xbf16> into memref<1x2x128x1x64xbf16>
  %s = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x128x128xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%s : memref<1x2x2x128x128xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  }
  linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q_groups, %k_groups : memref<1x2x2x128x64xbf16, strided<[32768, 128, 64, 256, 1]>>, memref<1x2x128x1x64xbf16>) outs(%s : memref<1x2x2x128x128xf32>) {
  ^bb0(%in: bf16, %in_10: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_10 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%s : memref<1x2x2x128x128xf32>) outs(%s : memref<1x2x2x128x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %cst_0 : f32
    %1 = linalg.index 3 : index
    %2 = linalg.index 4 : index
    %3 = arith.index_cast %1 : index to i64
    %4 = arith.uitofp %3 : i64 to f32
    %5 = arith.index_cast %2 : index to i64
    %6 = arith.uitofp %5 : i64 to f32
    %7 = arith.cmpf ogt, %6, %4 : f32
    %8 = arith.select %7, %cst_1, %0 : f32
    linalg.yield %8 : f32
  }
  %m = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x128x1xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%m : memref<1x2x2x128x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%s : memref<1x2x2x128x128xf32>) outs(%m : memref<1x2x2x128x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %shift = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x128x1xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%m : memref<1x2x2x128x1xf32>) outs(%shift : memref<1x2x2x128x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.cmpf oeq, %in, %cst_1 : f32
    %1 = arith.select %0, %cst_2, %in : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%s, %shift : memref<1x2x2x128x128xf32>, memref<1x2x2x128x1xf32>) outs(%s : memref<1x2x2x128x128xf32>) {
  ^bb0(%in: f32, %in_10: f32, %out: f32):
    %0 = arith.subf %in, %in_10 : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%m : memref<1x2x2x128x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%s : memref<1x2x2x128x128xf32>) outs(%m : memref<1x2x2x128x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  %v_groups = memref.expand_shape %v [[0], [1], [2, 3], [4]] output_shape [1, 2, 1, 128, 64] : memref<1x2x128x64xbf16> into memref<1x2x1x128x64xbf16>
  %pv = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x128x64xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%pv : memref<1x2x2x128x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  }
  linalg.generic {indexing_maps = [#qk_q, #pv_v, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%s, %v_groups : memref<1x2x2x128x128xf32>, memref<1x2x1x128x64xbf16>) outs(%pv : memref<1x2x2x128x64xf32>) {
  ^bb0(%in: f32, %in_10: bf16, %out: f32):
    %0 = arith.extf %in_10 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %o_groups = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x128x64xbf16>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%pv, %m : memref<1x2x2x128x64xf32>, memref<1x2x2x128x1xf32>) outs(%o_groups : memref<1x2x2x128x64xbf16>) {
  ^bb0(%in: f32, %in_10: f32, %out: bf16):
    %0 = arith.cmpf oeq, %in_10, %cst_2 : f32
    %1 = arith.select %0, %cst, %in_10 : f32
    %2 = arith.divf %in, %1 : f32
    %3 = arith.truncf %2 : f32 to bf16
    linalg.yield %3 : bf16
  }
  %o_heads = memref.collapse_shape %o_groups [[0], [1, 2], [3], [4]] : memref<1x2x2x128x64xbf16> into memref<1x4x128x64xbf16>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%shift, %m : memref<1x2x2x128x1xf32>, memref<1x2x2x128x1xf32>) outs(%m : memref<1x2x2x128x1xf32>) {
  ^bb0(%in: f32, %in_10: f32, %out: f32):
    %0 = math.log %in_10 : f32
    %1 = arith.addf %in, %0 : f32
    linalg.yield %1 : f32
  }
  %stats_heads = memref.collapse_shape %m [[0], [1, 2], [3], [4]] : memref<1x2x2x128x1xf32> into memref<1x4x128x1xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%o_heads : memref<1x4x128x64xbf16>) outs(%o : memref<1x4x128x64xbf16>)
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%stats_heads : memref<1x4x128x1xf32>) outs(%stats : memref<1x4x128x1xf32>)
  return
}

// -----

#id = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#qk_q = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>
#qk_k = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, 0, d5)>
#qk_s = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
#row = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, 0)>
#pv_v = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, 0, d5, d4)>

// The sdpa forward above on a persistent grid (dnn.config persistent = 2:
// at most 2 blocks; sm90/flash_scheduler.py): 4 units (one tile pair a
// head, the pair's second tile absent: one tile of 128 rows) over 2
// blocks, each running a loop over its tiles (2 rounds of 2 items) in both
// roles. The Q tile gets an empty barrier beside its full one (two
// arrivals: the consumers), 8 more bytes of shared memory; the producer
// keeps 24 registers (24 + 2 x 240 a thread: what 384 threads hold at 168)
// and waits for the Q tile to be empty before each Q load; K and V steps count through the rings across tiles. The consumers
// give the Q tile back once the tile's last S is done, then stage O in the
// V stage of the last step once every consumer's last P V is done (a
// named barrier of 256 threads), store it by TMA awaiting only the reads,
// meet as a warpgroup (128 threads) and give the V stage back; all stores
// are awaited before the block exits.
// CHECK-LABEL: func.func private @sdpa_persistent(
//  CHECK-SAME:     dnn.config_reason = "sdpa; attention forward: 128 query rows a block (2 consumer warpgroups), 128 kv rows a step, K and V in rings of 3 stages; S = QK^T and O += PV on wgmma, the online softmax in registers; persistent: 2 blocks take 4 units round robin, pairs of query tiles (the last and the first left of a head: equal work under the causal mask, the longer first), head by head, O staged in the V stage of the tile's last step (the next Q loads under the epilogue)"
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c384, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c115824_i32 {
//       CHECK:     nvvm.mbarrier.init %[[QFULL:.*]], %c1_i32
//  CHECK-NEXT:     nvvm.mbarrier.init %[[QEMPTY:.*]], %c2_i32
//       CHECK:     nvvm.setmaxregister  decrease 24
//       CHECK:       gpu.block_id  x
//  CHECK-NEXT:       scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args(%{{.*}} = %c0, %{{.*}} = %c0) -> (index, index) {
//       CHECK:             llvm.inline_asm has_side_effects "{{.*}}mbarrier.try_wait.parity{{.*}}", "r,r" %[[QEMPTY]], %{{.*}}
//  CHECK-NEXT:             nvvm.mbarrier.arrive.expect_tx %[[QFULL]], %c16384_i32
//       CHECK:     nvvm.setmaxregister  increase 240
//       CHECK:       scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args(%{{.*}} = %c0, %{{.*}} = %c0) -> (index, index) {
//       CHECK:           llvm.inline_asm has_side_effects "{{.*}}mbarrier.try_wait.parity{{.*}}", "r,r" %[[QFULL]], %{{.*}}
//       CHECK:             nvvm.mbarrier.arrive %[[QEMPTY]] : !llvm.ptr<3>
//       CHECK:           llvm.inline_asm has_side_effects "bar.sync $0, 256;", "r" %c4_i32
//       CHECK:           llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;"
//       CHECK:             nvvm.cp.async.bulk.tensor.global.shared.cta
//  CHECK-NEXT:             nvvm.cp.async.bulk.commit.group
//  CHECK-NEXT:             nvvm.cp.async.bulk.wait_group 0 {read}
//       CHECK:           llvm.inline_asm has_side_effects "bar.sync $0, 128;"
//  CHECK-NEXT:           scf.if
//       CHECK:             nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
//       CHECK:       nvvm.cp.async.bulk.wait_group 0
//  CHECK-NEXT:     }
func.func private @sdpa_persistent(%q: memref<1x4x128x64xbf16, strided<[32768, 64, 256, 1]>>, %k: memref<1x2x128x64xbf16>, %v: memref<1x2x128x64xbf16>, %o: memref<1x4x128x64xbf16> {bufferize.result}, %stats: memref<1x4x128x1xf32> {bufferize.result}) attributes {dnn.anchor = "sdpa", dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa", operands = array<i64: 0, 1, 2, -1, -1, -1, -1, -1>, padding = false, results = array<i64: 0, 1>, returned = 2 : i64, scale = 1.250000e-01 : f64, window = 0 : i64}, dnn.config = {block = [384, 1, 1], persistent = 2 : i64, stages = 3 : i64, strategy = "tc-sm90", tile = [128, 128]}, dnn.config_reason = "sdpa", dnn.kernel} {
  %cst = arith.constant 1.000000e+00 : f32
  %cst_0 = arith.constant 1.250000e-01 : f32
  %cst_1 = arith.constant 0xFF800000 : f32
  %cst_2 = arith.constant 0.000000e+00 : f32
  %q_groups = memref.expand_shape %q [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 128, 64] : memref<1x4x128x64xbf16, strided<[32768, 64, 256, 1]>> into memref<1x2x2x128x64xbf16, strided<[32768, 128, 64, 256, 1]>>
  %k_groups = memref.expand_shape %k [[0], [1], [2], [3, 4]] output_shape [1, 2, 128, 1, 64] : memref<1x2x128x64xbf16> into memref<1x2x128x1x64xbf16>
  %s = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x128x128xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%s : memref<1x2x2x128x128xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  }
  linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q_groups, %k_groups : memref<1x2x2x128x64xbf16, strided<[32768, 128, 64, 256, 1]>>, memref<1x2x128x1x64xbf16>) outs(%s : memref<1x2x2x128x128xf32>) {
  ^bb0(%in: bf16, %in_10: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_10 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%s : memref<1x2x2x128x128xf32>) outs(%s : memref<1x2x2x128x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %cst_0 : f32
    %1 = linalg.index 3 : index
    %2 = linalg.index 4 : index
    %3 = arith.index_cast %1 : index to i64
    %4 = arith.uitofp %3 : i64 to f32
    %5 = arith.index_cast %2 : index to i64
    %6 = arith.uitofp %5 : i64 to f32
    %7 = arith.cmpf ogt, %6, %4 : f32
    %8 = arith.select %7, %cst_1, %0 : f32
    linalg.yield %8 : f32
  }
  %m = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x128x1xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%m : memref<1x2x2x128x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%s : memref<1x2x2x128x128xf32>) outs(%m : memref<1x2x2x128x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %shift = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x128x1xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%m : memref<1x2x2x128x1xf32>) outs(%shift : memref<1x2x2x128x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.cmpf oeq, %in, %cst_1 : f32
    %1 = arith.select %0, %cst_2, %in : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%s, %shift : memref<1x2x2x128x128xf32>, memref<1x2x2x128x1xf32>) outs(%s : memref<1x2x2x128x128xf32>) {
  ^bb0(%in: f32, %in_10: f32, %out: f32):
    %0 = arith.subf %in, %in_10 : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%m : memref<1x2x2x128x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%s : memref<1x2x2x128x128xf32>) outs(%m : memref<1x2x2x128x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  %v_groups = memref.expand_shape %v [[0], [1], [2, 3], [4]] output_shape [1, 2, 1, 128, 64] : memref<1x2x128x64xbf16> into memref<1x2x1x128x64xbf16>
  %pv = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x128x64xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%pv : memref<1x2x2x128x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  }
  linalg.generic {indexing_maps = [#qk_q, #pv_v, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%s, %v_groups : memref<1x2x2x128x128xf32>, memref<1x2x1x128x64xbf16>) outs(%pv : memref<1x2x2x128x64xf32>) {
  ^bb0(%in: f32, %in_10: bf16, %out: f32):
    %0 = arith.extf %in_10 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %o_groups = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x128x64xbf16>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%pv, %m : memref<1x2x2x128x64xf32>, memref<1x2x2x128x1xf32>) outs(%o_groups : memref<1x2x2x128x64xbf16>) {
  ^bb0(%in: f32, %in_10: f32, %out: bf16):
    %0 = arith.cmpf oeq, %in_10, %cst_2 : f32
    %1 = arith.select %0, %cst, %in_10 : f32
    %2 = arith.divf %in, %1 : f32
    %3 = arith.truncf %2 : f32 to bf16
    linalg.yield %3 : bf16
  }
  %o_heads = memref.collapse_shape %o_groups [[0], [1, 2], [3], [4]] : memref<1x2x2x128x64xbf16> into memref<1x4x128x64xbf16>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%shift, %m : memref<1x2x2x128x1xf32>, memref<1x2x2x128x1xf32>) outs(%m : memref<1x2x2x128x1xf32>) {
  ^bb0(%in: f32, %in_10: f32, %out: f32):
    %0 = math.log %in_10 : f32
    %1 = arith.addf %in, %0 : f32
    linalg.yield %1 : f32
  }
  %stats_heads = memref.collapse_shape %m [[0], [1, 2], [3], [4]] : memref<1x2x2x128x1xf32> into memref<1x4x128x1xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%o_heads : memref<1x4x128x64xbf16>) outs(%o : memref<1x4x128x64xbf16>)
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%stats_heads : memref<1x4x128x1xf32>) outs(%stats : memref<1x4x128x1xf32>)
  return
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#qk_q = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#qk_k = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
#qk_s = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
#bias = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#pv_v = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>

// An sdpa with an additive bias (f16 as q, broadcast over the heads; no
// statistics): tc-sm90's attention kernel reads it. Ahead of a step's turn
// each thread loads the bias at its scores (its 2 rows by 32 of the step's
// 128 columns, clamped into the bias: the scores past it are masked or not
// stored) times log2 e, and folds it into the base-2 scores with one FMA
// (s scale log2 e + bias log2 e).
// CHECK-LABEL: func.func private @sdpa_bias(
//  CHECK-SAME:     %[[BIAS:[^:]*]]: memref<1x1x16x32xf16>, %{{[^:]*}}: memref<1x2x16x64xf16> {bufferize.result})
//  CHECK-SAME:     dnn.config_reason = "sdpa; attention forward: 64 query rows a block (1 consumer warpgroup), 128 kv rows a step, K and V in rings of 3 stages; S = QK^T and O += PV on wgmma, the online softmax in registers"
//   CHECK-NOT:   linalg.
//       CHECK:   %[[SCALE:.*]] = arith.constant 0.180336878 : f32
//       CHECK:   %[[LOG2E:.*]] = arith.constant 1.44269502 : f32
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c2, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1)
//       CHECK:       nvvm.setmaxregister  increase 240
//       CHECK:         %[[B0:.*]] = memref.load %[[BIAS]][%c0, %c0, %{{.*}}, %{{.*}}] : memref<1x1x16x32xf16>
//  CHECK-NEXT:         %[[E0:.*]] = arith.extf %[[B0]] : f16 to f32
//  CHECK-NEXT:         %[[L0:.*]] = arith.mulf %[[E0]], %[[LOG2E]] : f32
// CHECK-COUNT-63:      memref.load %[[BIAS]][%c0, %c0, %{{.*}}, %{{.*}}] : memref<1x1x16x32xf16>
//   CHECK-NOT:         memref.load %[[BIAS]]
//       CHECK:         nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <zero>, <wrapped>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
//       CHECK:         llvm.call_intrinsic "llvm.fma.f32"(%{{.*}}, %[[SCALE]], %[[L0]]) : (f32, f32, f32) -> f32
// CHECK-COUNT-63:      llvm.call_intrinsic "llvm.fma.f32"(%{{.*}}, %[[SCALE]], %{{.*}}) : (f32, f32, f32) -> f32
//       CHECK:         llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
//   CHECK-NOT:   linalg.
//       CHECK:   return
func.func private @sdpa_bias(%q: memref<1x2x16x64xf16>, %k: memref<1x2x32x64xf16>, %v: memref<1x2x32x64xf16>, %bias: memref<1x1x16x32xf16>, %o: memref<1x2x16x64xf16> {bufferize.result}) attributes {dnn.anchor = "sdpa", dnn.attention = {causal = false, diagonal = "top_left", op = "sdpa", operands = array<i64: 0, 1, 2, 3, -1, -1, -1, -1>, padding = false, results = array<i64: 0, -1>, returned = 1 : i64, scale = 1.250000e-01 : f64, window = 0 : i64}, dnn.config = {block = [256, 1, 1], stages = 3 : i64, strategy = "tc-sm90", tile = [64, 128]}, dnn.config_reason = "sdpa", dnn.kernel} {
  %cst = arith.constant 1.000000e+00 : f32
  %cst_0 = arith.constant 1.250000e-01 : f32
  %cst_1 = arith.constant 0xFF800000 : f32
  %cst_2 = arith.constant 0.000000e+00 : f32
  %s = memref.alloc() {alignment = 64 : i64} : memref<1x2x16x32xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%s : memref<1x2x16x32xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  }
  linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : memref<1x2x16x64xf16>, memref<1x2x32x64xf16>) outs(%s : memref<1x2x16x32xf32>) {
  ^bb0(%in: f16, %in_5: f16, %out: f32):
    %0 = arith.extf %in : f16 to f32
    %1 = arith.extf %in_5 : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : memref<1x2x16x32xf32>, memref<1x1x16x32xf16>) outs(%s : memref<1x2x16x32xf32>) {
  ^bb0(%in: f32, %in_5: f16, %out: f32):
    %0 = arith.mulf %in, %cst_0 : f32
    %1 = arith.extf %in_5 : f16 to f32
    %2 = arith.addf %0, %1 : f32
    linalg.yield %2 : f32
  }
  %m = memref.alloc() {alignment = 64 : i64} : memref<1x2x16x1xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%m : memref<1x2x16x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%s : memref<1x2x16x32xf32>) outs(%m : memref<1x2x16x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %m : memref<1x2x16x32xf32>, memref<1x2x16x1xf32>) outs(%s : memref<1x2x16x32xf32>) {
  ^bb0(%in: f32, %in_5: f32, %out: f32):
    %0 = arith.cmpf oeq, %in_5, %cst_1 : f32
    %1 = arith.select %0, %cst_2, %in_5 : f32
    %2 = arith.subf %in, %1 : f32
    %3 = math.exp %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%m : memref<1x2x16x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%s : memref<1x2x16x32xf32>) outs(%m : memref<1x2x16x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  %pv = memref.alloc() {alignment = 64 : i64} : memref<1x2x16x64xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%pv : memref<1x2x16x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  }
  linalg.generic {indexing_maps = [#qk_q, #pv_v, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%s, %v : memref<1x2x16x32xf32>, memref<1x2x32x64xf16>) outs(%pv : memref<1x2x16x64xf32>) {
  ^bb0(%in: f32, %in_5: f16, %out: f32):
    %0 = arith.extf %in_5 : f16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%pv, %m : memref<1x2x16x64xf32>, memref<1x2x16x1xf32>) outs(%o : memref<1x2x16x64xf16>) {
  ^bb0(%in: f32, %in_5: f32, %out: f16):
    %0 = arith.cmpf oeq, %in_5, %cst_2 : f32
    %1 = arith.select %0, %cst, %in_5 : f32
    %2 = arith.divf %in, %1 : f32
    %3 = arith.truncf %2 : f32 to f16
    linalg.yield %3 : f16
  }
  return
}

// -----


#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#qk_q = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
#qk_k = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
#qk_s = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
#bias = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
#row = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#pv_v = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>

// A bias of another type than q's (bf16 with f16 q, k and v) or f32: the
// kernel does not take it, so the kernel keeps its expansion and runs on
// simt-generic; the reason says why.
// CHECK-LABEL: func.func private @sdpa_bias_of_another_type(
//  CHECK-SAME:     dnn.config = {block = [256, 1, 1], strategy = "simt-generic"}
//  CHECK-SAME:     dnn.config_reason = "tc-sm90 does not apply (a bf16 bias with f16 q, k, v: expected f16 or f32): simt-generic, one thread per output; heuristics: sdpa"
//   CHECK-NOT:   gpu.launch
//       CHECK:   linalg.generic
//   CHECK-NOT:   gpu.launch
func.func private @sdpa_bias_of_another_type(%q: memref<1x2x16x64xf16>, %k: memref<1x2x32x64xf16>, %v: memref<1x2x32x64xf16>, %bias: memref<1x1x16x32xbf16>, %o: memref<1x2x16x64xf16> {bufferize.result}) attributes {dnn.anchor = "sdpa", dnn.attention = {causal = false, diagonal = "top_left", op = "sdpa", operands = array<i64: 0, 1, 2, 3, -1, -1, -1, -1>, padding = false, results = array<i64: 0, -1>, returned = 1 : i64, scale = 1.250000e-01 : f64, window = 0 : i64}, dnn.config = {block = [256, 1, 1], stages = 3 : i64, strategy = "tc-sm90", tile = [64, 128]}, dnn.config_reason = "sdpa", dnn.kernel} {
  %cst = arith.constant 1.000000e+00 : f32
  %cst_0 = arith.constant 1.250000e-01 : f32
  %cst_1 = arith.constant 0xFF800000 : f32
  %cst_2 = arith.constant 0.000000e+00 : f32
  %s = memref.alloc() {alignment = 64 : i64} : memref<1x2x16x32xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%s : memref<1x2x16x32xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  }
  linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : memref<1x2x16x64xf16>, memref<1x2x32x64xf16>) outs(%s : memref<1x2x16x32xf32>) {
  ^bb0(%in: f16, %in_5: f16, %out: f32):
    %0 = arith.extf %in : f16 to f32
    %1 = arith.extf %in_5 : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : memref<1x2x16x32xf32>, memref<1x1x16x32xbf16>) outs(%s : memref<1x2x16x32xf32>) {
  ^bb0(%in: f32, %in_5: bf16, %out: f32):
    %0 = arith.mulf %in, %cst_0 : f32
    %1 = arith.extf %in_5 : bf16 to f32
    %2 = arith.addf %0, %1 : f32
    linalg.yield %2 : f32
  }
  %m = memref.alloc() {alignment = 64 : i64} : memref<1x2x16x1xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%m : memref<1x2x16x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%s : memref<1x2x16x32xf32>) outs(%m : memref<1x2x16x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %m : memref<1x2x16x32xf32>, memref<1x2x16x1xf32>) outs(%s : memref<1x2x16x32xf32>) {
  ^bb0(%in: f32, %in_5: f32, %out: f32):
    %0 = arith.cmpf oeq, %in_5, %cst_1 : f32
    %1 = arith.select %0, %cst_2, %in_5 : f32
    %2 = arith.subf %in, %1 : f32
    %3 = math.exp %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%m : memref<1x2x16x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%s : memref<1x2x16x32xf32>) outs(%m : memref<1x2x16x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  %pv = memref.alloc() {alignment = 64 : i64} : memref<1x2x16x64xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%pv : memref<1x2x16x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  }
  linalg.generic {indexing_maps = [#qk_q, #pv_v, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%s, %v : memref<1x2x16x32xf32>, memref<1x2x32x64xf16>) outs(%pv : memref<1x2x16x64xf32>) {
  ^bb0(%in: f32, %in_5: f16, %out: f32):
    %0 = arith.extf %in_5 : f16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%pv, %m : memref<1x2x16x64xf32>, memref<1x2x16x1xf32>) outs(%o : memref<1x2x16x64xf16>) {
  ^bb0(%in: f32, %in_5: f32, %out: f16):
    %0 = arith.cmpf oeq, %in_5, %cst_2 : f32
    %1 = arith.select %0, %cst, %in_5 : f32
    %2 = arith.divf %in, %1 : f32
    %3 = arith.truncf %2 : f32 to f16
    linalg.yield %3 : f16
  }
  return
}

// -----

#map = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#map1 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>
#map2 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, 0, d5)>
#map3 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
#map4 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, 0)>
#map5 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map6 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#map7 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, 0, d5, d4)>
#map8 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5, d3)>
#map9 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5, d4)>
#map10 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>

// An sdpa backward (causal, grouped-query: 4 query heads over 2 kv heads,
// Sq = 64, Skv = 96, D = Dv = 64, bf16) as convert-dnn-to-linalg and
// bufferization leave it: the kernel function carries dnn.attention (op =
// "sdpa_backward"), its body the expansion (P recomputed from the
// statistics, delta = rowsum(dO o O), dP = dO V^T, dS = P (dP - delta), dQ
// = scale dS K, dK = scale dS^T Q and dV = P^T dO, the group's heads
// summed). tc-sm90 replaces the body by two launches of 384 threads (a
// producer warpgroup, two consumers of 64 rows that take turns at the
// tensor cores) with delta in a buffer between them (sm90/flash_backward.py):
// the dQ kernel, a block per (query tile, batch x head), Q and dO resident
// (TMA boxes of 128 rows), K and V tiles of 64 kv rows through a 4-stage
// ring; then the dK dV kernel, a block per (kv tile, batch x kv head), K and
// V resident, Q and dO tiles of 64 query rows through a 4-stage ring, each
// step in two turns. S and dP (their transposes in the second) run on
// wgmma from shared memory, the products with P or dS on the register-A
// wgmma (inline PTX); the gradients are written from registers.
// CHECK-LABEL: func.func private @sdpa_backward_causal_gqa(
//  CHECK-SAME:     %[[Q:[^:]*]]: memref<1x4x64x64xbf16>, %[[K:[^:]*]]: memref<1x2x96x64xbf16>, %[[V:[^:]*]]: memref<1x2x96x64xbf16>, %[[O:[^:]*]]: memref<1x4x64x64xbf16>, %[[DO:[^:]*]]: memref<1x4x64x64xbf16>, %[[STATS:[^:]*]]: memref<1x4x64x1xf32>, %[[DQ:[^:]*]]: memref<1x4x64x64xbf16> {bufferize.result}, %[[DK:[^:]*]]: memref<1x2x96x64xbf16> {bufferize.result}, %[[DV:[^:]*]]: memref<1x2x96x64xbf16> {bufferize.result})
//  CHECK-SAME:     dnn.config_reason = "sdpa_backward; attention backward: a dQ kernel (128 query rows a block, 64 kv rows a step, 4 stages; delta = rowsum(dO o O) into a workspace) and a dK dV kernel (128 kv rows a block, 64 query rows a step, 4 stages), products on wgmma, no atomics"
//   CHECK-NOT:   linalg.
// delta: one f32 for each (batch, head, query row).
//       CHECK:   %[[DELTA:.*]] = memref.alloc() : memref<1x4x64xf32>
// The dQ kernel's descriptors: Q and dO in boxes of 128 rows, K and V of 64.
//       CHECK:   %[[UQ:.*]] = memref.cast %[[Q]]
//       CHECK:   nvgpu.tma.create.descriptor %[[UQ]] box[%c1, %c1, %c128, %c64] : memref<*xbf16> -> <tensor = memref<1x1x128x64xbf16, 3>, swizzle = swizzle_128b
//       CHECK:   %[[UDO:.*]] = memref.cast %[[DO]]
//       CHECK:   nvgpu.tma.create.descriptor %[[UDO]] box[%c1, %c1, %c128, %c64] : memref<*xbf16> -> <tensor = memref<1x1x128x64xbf16, 3>, swizzle = swizzle_128b
//       CHECK:   %[[UK:.*]] = memref.cast %[[K]]
//       CHECK:   nvgpu.tma.create.descriptor %[[UK]] box[%c1, %c1, %c64, %c64] : memref<*xbf16> -> <tensor = memref<1x1x64x64xbf16, 3>, swizzle = swizzle_128b
//       CHECK:   %[[UV:.*]] = memref.cast %[[V]]
//       CHECK:   nvgpu.tma.create.descriptor %[[UV]] box[%c1, %c1, %c64, %c64] : memref<*xbf16> -> <tensor = memref<1x1x64x64xbf16, 3>, swizzle = swizzle_128b
// The dQ kernel: the resident tiles (2 x 16 KiB) and 4 stages of a K and a
// V tile (2 x 8 KiB) in 99400 bytes.
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c4, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c384, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c99400_i32 {
//       CHECK:       nvvm.setmaxregister  decrease 24
//       CHECK:         nvvm.mbarrier.arrive.expect_tx %[[RESIDENT:.*]], %c32768_i32
//       CHECK:         nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[RESIDENT]], box
//       CHECK:         nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[RESIDENT]], box
//       CHECK:         scf.for
//       CHECK:           nvvm.mbarrier.arrive.expect_tx %[[FULL:.*]], %c16384_i32
//       CHECK:           nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[FULL]], box
//       CHECK:           nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %[[FULL]], box
//       CHECK:     } else {
//  CHECK-NEXT:       nvvm.setmaxregister  increase 240
// delta of the consumer's rows: o and do read in vectors of 8, the products
// summed over the row's quad, stored by one thread.
//       CHECK:         vector.load %[[O]]{{.*}} : memref<1x4x64x64xbf16>, vector<8xbf16>
//       CHECK:         vector.load %[[DO]]{{.*}} : memref<1x4x64x64xbf16>, vector<8xbf16>
//       CHECK:         gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
//       CHECK:           memref.store %{{.*}}, %[[DELTA]][
// In its turn, S = Q K^T and dP = dO V^T: 64 x 64 each, four k16 steps of D.
//       CHECK:         llvm.inline_asm has_side_effects "bar.sync $0, 256;"
// CHECK-COUNT-8:       nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <{{zero|one}}>, <wrapped>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// Step j: S_j and dP_j, then dQ += dS_{j-1} K_{j-1} with dS's fragments in
// registers (four k16 steps of the 64 kv rows, K read MN-major).
//       CHECK:         scf.for
//       CHECK:           llvm.inline_asm has_side_effects "bar.sync $0, 256;"
// CHECK-COUNT-8:         nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>
//       CHECK:           nvvm.wgmma.commit.group.sync.aligned
// CHECK-COUNT-4:         llvm.inline_asm has_side_effects "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;{{.*}}", "=f,{{.*}},r,r,r,r,l"
//       CHECK:           nvvm.wgmma.commit.group.sync.aligned
//       CHECK:           llvm.inline_asm has_side_effects "bar.arrive $0, 256;"
// The last step's dQ += dS K; dQ scaled and written from registers.
// CHECK-COUNT-4:       llvm.inline_asm has_side_effects "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
//       CHECK:           vector.store %{{.*}}, %[[DQ]][{{.*}}] {alignment = 4 : i64} : memref<1x4x64x64xbf16>, vector<2xbf16>
//       CHECK:       gpu.terminator
// The dK dV kernel's descriptors: K and V in boxes of 128 rows, Q and dO of
// 64 (a step's query rows for head dims up to 64).
//       CHECK:   nvgpu.tma.create.descriptor %[[UK]] box[%c1, %c1, %c128, %c64]
//       CHECK:   nvgpu.tma.create.descriptor %[[UV]] box[%c1, %c1, %c128, %c64]
//       CHECK:   nvgpu.tma.create.descriptor %[[UQ]] box[%c1, %c1, %c64, %c64]
//       CHECK:   nvgpu.tma.create.descriptor %[[UDO]] box[%c1, %c1, %c64, %c64]
// The resident tiles (2 x 16 KiB), 4 stages of a Q and a dO tile (2 x 8
// KiB) and each consumer's two buffers (a step's parity) of 64 log-sum-exp
// and 64 delta values (2 x 2 x 512 bytes) in 101448 bytes.
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c2, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c384, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c101448_i32 {
//       CHECK:       nvvm.setmaxregister  decrease 24
//       CHECK:         nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
//       CHECK:         scf.for
//       CHECK:           nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c16384_i32
//       CHECK:     } else {
//  CHECK-NEXT:       nvvm.setmaxregister  increase 240
// A step in two turns. First a thread reads one value of the step's query
// rows: the log-sum-exp (the warpgroup's first 64 threads) or delta (the
// next 64).
//       CHECK:         scf.for
//       CHECK:           memref.load %[[STATS]]
//       CHECK:           memref.load %[[DELTA]]
// Turn one: S^T = K Q^T and dP^T = V dO^T, 64 x 64 each (four k16 steps of
// D).
//       CHECK:           llvm.inline_asm has_side_effects "bar.sync $0, 256;"
// CHECK-COUNT-8:         nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <{{zero|one}}>, <wrapped>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
//       CHECK:           nvvm.wgmma.commit.group.sync.aligned
//       CHECK:             llvm.inline_asm has_side_effects "bar.arrive $0, 256;"
// While they run, the values go into the warpgroup's buffer of the step's
// parity (a barrier of its 128 threads); then each thread reads the
// log-sum-exp and delta of its 16 columns of S^T.
//       CHECK:             llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<3>
//       CHECK:           llvm.inline_asm has_side_effects "bar.sync $0, 128;"
//       CHECK:           nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-COUNT-32:        llvm.load %{{.*}} : !llvm.ptr<3> -> f32
//   CHECK-NOT:           llvm.load
// Turn two: dV += P^T dO and dK += dS^T Q, from registers (four k16 steps
// of the 64 query rows each); the stage goes back once both are done.
//       CHECK:           llvm.inline_asm has_side_effects "bar.sync $0, 256;"
// CHECK-COUNT-8:         llvm.inline_asm has_side_effects "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;{{.*}}", "=f,{{.*}},r,r,r,r,l"
//       CHECK:           nvvm.wgmma.commit.group.sync.aligned
//       CHECK:             llvm.inline_asm has_side_effects "bar.arrive $0, 256;"
//       CHECK:           nvvm.wgmma.wait.group.sync.aligned 0
//       CHECK:             nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
//       CHECK:           scf.yield
// dK (scaled) and dV written from registers.
//       CHECK:           vector.store %{{.*}}, %[[DK]][{{.*}}] {alignment = 4 : i64} : memref<1x2x96x64xbf16>, vector<2xbf16>
//       CHECK:           vector.store %{{.*}}, %[[DV]][{{.*}}] {alignment = 4 : i64} : memref<1x2x96x64xbf16>, vector<2xbf16>
//       CHECK:       gpu.terminator
//   CHECK-NOT:   gpu.launch
//   CHECK-NOT:   linalg.
//       CHECK:   return
func.func private @sdpa_backward_causal_gqa(%q: memref<1x4x64x64xbf16>, %k: memref<1x2x96x64xbf16>, %v: memref<1x2x96x64xbf16>, %o: memref<1x4x64x64xbf16>, %do: memref<1x4x64x64xbf16>, %stats: memref<1x4x64x1xf32>, %dq: memref<1x4x64x64xbf16> {bufferize.result}, %dk: memref<1x2x96x64xbf16> {bufferize.result}, %dv: memref<1x2x96x64xbf16> {bufferize.result}) attributes {dnn.anchor = "sdpa_backward", dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa_backward", operands = array<i64: 0, 1, 2, 3, 4, 5, -1, -1, -1>, padding = false, results = array<i64: 0, 1, 2, -1>, returned = 3 : i64, scale = 1.250000e-01 : f64, window = 0 : i64}, dnn.config = {block = [384, 1, 1], strategy = "tc-sm90"}, dnn.config_reason = "sdpa_backward", dnn.kernel} {
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 1.250000e-01 : f32
  %cst_1 = arith.constant 0.000000e+00 : f32
  %expand_shape = memref.expand_shape %q [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 64] : memref<1x4x64x64xbf16> into memref<1x2x2x64x64xbf16>
  %expand_shape_2 = memref.expand_shape %k [[0], [1], [2, 3], [4]] output_shape [1, 2, 1, 96, 64] : memref<1x2x96x64xbf16> into memref<1x2x1x96x64xbf16>
  %expand_shape_3 = memref.expand_shape %do [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 64] : memref<1x4x64x64xbf16> into memref<1x2x2x64x64xbf16>
  %expand_shape_4 = memref.expand_shape %stats [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 1] : memref<1x4x64x1xf32> into memref<1x2x2x64x1xf32>
  %expand_shape_5 = memref.expand_shape %k [[0], [1], [2], [3, 4]] output_shape [1, 2, 96, 1, 64] : memref<1x2x96x64xbf16> into memref<1x2x96x1x64xbf16>
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x96xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<1x2x2x64x96xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  %alloc_6 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x96xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc : memref<1x2x2x64x96xf32>) outs(%alloc_6 : memref<1x2x2x64x96xf32>)
  linalg.generic {indexing_maps = [#map1, #map2, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expand_shape, %expand_shape_5 : memref<1x2x2x64x64xbf16>, memref<1x2x96x1x64xbf16>) outs(%alloc_6 : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: bf16, %in_17: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_17 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  %alloc_7 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x96xf32>
  linalg.generic {indexing_maps = [#map4, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%expand_shape_4, %alloc_6 : memref<1x2x2x64x1xf32>, memref<1x2x2x64x96xf32>) outs(%alloc_7 : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: f32, %in_17: f32, %out: f32):
    %0 = linalg.index 3 : index
    %1 = linalg.index 4 : index
    %2 = arith.mulf %in_17, %cst_0 : f32
    %3 = arith.index_cast %0 : index to i64
    %4 = arith.uitofp %3 : i64 to f32
    %5 = arith.index_cast %1 : index to i64
    %6 = arith.uitofp %5 : i64 to f32
    %7 = arith.cmpf ogt, %6, %4 : f32
    %8 = arith.select %7, %cst, %2 : f32
    %9 = arith.subf %8, %in : f32
    %10 = math.exp %9 : f32
    %11 = arith.cmpf oeq, %in, %cst : f32
    %12 = arith.select %11, %cst_1, %10 : f32
    linalg.yield %12 : f32
  }
  %alloc_8 = memref.alloc() {alignment = 64 : i64} : memref<1x4x64x1xf32>
  linalg.generic {indexing_maps = [#map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc_8 : memref<1x4x64x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#map5, #map5, #map6], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%do, %o : memref<1x4x64x64xbf16>, memref<1x4x64x64xbf16>) outs(%alloc_8 : memref<1x4x64x1xf32>) {
  ^bb0(%in: bf16, %in_17: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_17 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  %expand_shape_9 = memref.expand_shape %alloc_8 [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 1] : memref<1x4x64x1xf32> into memref<1x2x2x64x1xf32>
  %expand_shape_10 = memref.expand_shape %v [[0], [1], [2], [3, 4]] output_shape [1, 2, 96, 1, 64] : memref<1x2x96x64xbf16> into memref<1x2x96x1x64xbf16>
  linalg.generic {indexing_maps = [#map1, #map2, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expand_shape_3, %expand_shape_10 : memref<1x2x2x64x64xbf16>, memref<1x2x96x1x64xbf16>) outs(%alloc : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: bf16, %in_17: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_17 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#map, #map, #map4, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_7, %alloc, %expand_shape_9 : memref<1x2x2x64x96xf32>, memref<1x2x2x64x96xf32>, memref<1x2x2x64x1xf32>) outs(%alloc : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: f32, %in_17: f32, %in_18: f32, %out: f32):
    %0 = arith.subf %in_17, %in_18 : f32
    %1 = arith.mulf %in, %0 : f32
    linalg.yield %1 : f32
  }
  %alloc_11 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x64xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_11 : memref<1x2x2x64x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#map1, #map7, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc, %expand_shape_2 : memref<1x2x2x64x96xf32>, memref<1x2x1x96x64xbf16>) outs(%alloc_11 : memref<1x2x2x64x64xf32>) {
  ^bb0(%in: f32, %in_17: bf16, %out: f32):
    %0 = arith.extf %in_17 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %alloc_12 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x64xbf16>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_11 : memref<1x2x2x64x64xf32>) outs(%alloc_12 : memref<1x2x2x64x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.mulf %in, %cst_0 : f32
    %1 = arith.truncf %0 : f32 to bf16
    linalg.yield %1 : bf16
  }
  %alloc_13 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x96x64xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_13 : memref<1x2x2x96x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  %alloc_14 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x96x64xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_13 : memref<1x2x2x96x64xf32>) outs(%alloc_14 : memref<1x2x2x96x64xf32>)
  linalg.generic {indexing_maps = [#map8, #map9, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc, %expand_shape : memref<1x2x2x64x96xf32>, memref<1x2x2x64x64xbf16>) outs(%alloc_14 : memref<1x2x2x96x64xf32>) {
  ^bb0(%in: f32, %in_17: bf16, %out: f32):
    %0 = arith.extf %in_17 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %alloc_15 = memref.alloc() {alignment = 64 : i64} : memref<1x2x96x64xf32>
  linalg.generic {indexing_maps = [#map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc_15 : memref<1x2x96x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  %alloc_16 = memref.alloc() {alignment = 64 : i64} : memref<1x2x96x64xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_15 : memref<1x2x96x64xf32>) outs(%alloc_16 : memref<1x2x96x64xf32>)
  linalg.generic {indexing_maps = [#map, #map10], iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel"]} ins(%alloc_14 : memref<1x2x2x96x64xf32>) outs(%alloc_16 : memref<1x2x96x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%alloc_16 : memref<1x2x96x64xf32>) outs(%dk : memref<1x2x96x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.mulf %in, %cst_0 : f32
    %1 = arith.truncf %0 : f32 to bf16
    linalg.yield %1 : bf16
  }
  linalg.generic {indexing_maps = [#map8, #map9, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc_7, %expand_shape_3 : memref<1x2x2x64x96xf32>, memref<1x2x2x64x64xbf16>) outs(%alloc_13 : memref<1x2x2x96x64xf32>) {
  ^bb0(%in: f32, %in_17: bf16, %out: f32):
    %0 = arith.extf %in_17 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [#map, #map10], iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel"]} ins(%alloc_13 : memref<1x2x2x96x64xf32>) outs(%alloc_15 : memref<1x2x96x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%alloc_15 : memref<1x2x96x64xf32>) outs(%dv : memref<1x2x96x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  %collapse_shape = memref.collapse_shape %alloc_12 [[0], [1, 2], [3], [4]] : memref<1x2x2x64x64xbf16> into memref<1x4x64x64xbf16>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<1x4x64x64xbf16>) outs(%dq : memref<1x4x64x64xbf16>)
  return
}

// -----

// A GQA decode step folded (dnn.config fold = 2: the 2 query heads of a kv
// head in one block): q [1, 4, 3, 64] over k and v [1, 2, 64, 64], bf16,
// bottom-right causal, with its statistics. A block per (batch, kv head):
// grid (1, B x Hkv = 2, 1); Q's 2 heads x 3 rows in one TMA box [1, 2, 3,
// 64] (768 bytes on its barrier), loaded at (b, kv head x 2, 0); tile row r
// is query r % 3 of head kv head x 2 + r / 3 ([B, H, S, D]: the heads
// outside the rows); o and the statistics from registers at each row's own
// (b, head, query), only for the rows below 2 x 3 (no TMA store).
// CHECK-LABEL: func.func private @sdpa_gqa_fold(
//  CHECK-SAME:     %[[Q:[^:]*]]: memref<1x4x3x64xbf16>, %[[K:[^:]*]]: memref<1x2x64x64xbf16>, %[[V:[^:]*]]: memref<1x2x64x64xbf16>, %[[O:[^:]*]]: memref<1x4x3x64xbf16> {bufferize.result}, %[[STATS:[^:]*]]: memref<1x4x3x1xf32> {bufferize.result})
//  CHECK-SAME:     dnn.config_reason = "sdpa; attention forward: 64 query rows a block (1 consumer warpgroup), 128 kv rows a step, K and V in rings of 3 stages; S = QK^T and O += PV on wgmma, the online softmax in registers; the 2 query heads g of each kv head in one block's rows (row g x Sq + s for query s), each K and V tile read once for the group"
//       CHECK:   nvgpu.tma.create.descriptor %{{.*}} box[%c1, %c2, %c3, %c64] : memref<*xbf16> -> <tensor = memref<1x2x3x64xbf16, 3>
//       CHECK:   nvgpu.tma.create.descriptor %{{.*}} box[%c1, %c1, %c128, %c64] : memref<*xbf16> -> <tensor = memref<1x1x128x64xbf16, 3>
//       CHECK:   gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c1, %{{.*}} = %c2, %{{.*}} = %c1) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1, %{{.*}} = %c1)
//       CHECK:     %[[BY:.*]] = gpu.block_id  y
//  CHECK-NEXT:     %[[B:.*]] = arith.divui %[[BY]], %c2 : index
//  CHECK-NEXT:     %[[HK:.*]] = arith.remui %[[BY]], %c2 : index
//  CHECK-NEXT:     %[[H0:.*]] = arith.muli %[[HK]], %c2 : index
//       CHECK:       %[[B32:.*]] = arith.index_cast %[[B]] : index to i32
//  CHECK-NEXT:       %[[H32:.*]] = arith.index_cast %[[H0]] : index to i32
//       CHECK:       nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c768_i32
//       CHECK:       nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, box[%c0_i32, %c0_i32, %[[H32]], %[[B32]]]
//       CHECK:       nvvm.setmaxregister  increase 240
//       CHECK:       %[[ROW8:.*]] = arith.addi %[[ROW:.*]], %c8 : index
//       CHECK:       %[[G:.*]] = arith.divui %[[ROW]], %c3 : index
//  CHECK-NEXT:       %[[S:.*]] = arith.remui %[[ROW]], %c3 : index
//       CHECK:       %[[HEAD:.*]] = arith.addi %[[H0]], %[[G]] : index
//       CHECK:       %[[VALID:.*]] = arith.cmpi ult, %[[ROW]], %c6 : index
//  CHECK-NEXT:       scf.if %[[VALID]] {
//  CHECK-NEXT:         vector.store %{{.*}}, %[[O]][%[[B]], %[[HEAD]], %[[S]], %{{.*}}]
//       CHECK:         memref.store %{{.*}}, %[[STATS]][%[[B]], %[[HEAD]], %[[S]], %c0]
//       CHECK:       arith.cmpi ult, %[[ROW8]], %c6 : index
//   CHECK-NOT:       nvvm.cp.async.bulk.tensor.global.shared.cta
//       CHECK:   return
func.func private @sdpa_gqa_fold(%arg0: memref<1x4x3x64xbf16>, %arg1: memref<1x2x64x64xbf16>, %arg2: memref<1x2x64x64xbf16>, %arg3: memref<1x4x3x64xbf16> {bufferize.result}, %arg4: memref<1x4x3x1xf32> {bufferize.result}) attributes {dnn.anchor = "sdpa", dnn.attention = {causal = true, diagonal = "bottom_right", op = "sdpa", operands = array<i64: 0, 1, 2, -1, -1, -1, -1, -1>, padding = false, results = array<i64: 0, 1>, returned = 2 : i64, scale = 1.250000e-01 : f64, window = 0 : i64}, dnn.config = {block = [256, 1, 1], fold = 2 : i64, stages = 3 : i64, strategy = "tc-sm90", tile = [64, 128]}, dnn.config_reason = "sdpa", dnn.kernel} {
  %cst = arith.constant 1.000000e+00 : f32
  %cst_0 = arith.constant 6.100000e+01 : f32
  %cst_1 = arith.constant 1.250000e-01 : f32
  %cst_2 = arith.constant 0xFF800000 : f32
  %cst_3 = arith.constant 0.000000e+00 : f32
  %expand_shape = memref.expand_shape %arg0 [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 3, 64] : memref<1x4x3x64xbf16> into memref<1x2x2x3x64xbf16>
  %expand_shape_4 = memref.expand_shape %arg1 [[0], [1], [2], [3, 4]] output_shape [1, 2, 64, 1, 64] : memref<1x2x64x64xbf16> into memref<1x2x64x1x64xbf16>
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x3x64xf32>
  %alloc_5 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x3x64xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_5 : memref<1x2x2x3x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_3 : f32
  }
  %alloc_6 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x3x64xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_5 : memref<1x2x2x3x64xf32>) outs(%alloc_6 : memref<1x2x2x3x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, 0, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expand_shape, %expand_shape_4 : memref<1x2x2x3x64xbf16>, memref<1x2x64x1x64xbf16>) outs(%alloc_6 : memref<1x2x2x3x64xf32>) {
  ^bb0(%in: bf16, %in_12: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_12 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_6 : memref<1x2x2x3x64xf32>) outs(%alloc : memref<1x2x2x3x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %in, %cst_1 : f32
    %1 = linalg.index 3 : index
    %2 = linalg.index 4 : index
    %3 = arith.index_cast %1 : index to i64
    %4 = arith.uitofp %3 : i64 to f32
    %5 = arith.addf %4, %cst_0 : f32
    %6 = arith.index_cast %2 : index to i64
    %7 = arith.uitofp %6 : i64 to f32
    %8 = arith.cmpf ogt, %7, %5 : f32
    %9 = arith.select %8, %cst_2, %0 : f32
    linalg.yield %9 : f32
  }
  %alloc_7 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x3x1xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_7 : memref<1x2x2x3x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_2 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, 0)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc : memref<1x2x2x3x64xf32>) outs(%alloc_7 : memref<1x2x2x3x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %out, %in : f32
    linalg.yield %0 : f32
  }
  %alloc_8 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x3x1xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_7 : memref<1x2x2x3x1xf32>) outs(%alloc_8 : memref<1x2x2x3x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.cmpf oeq, %in, %cst_2 : f32
    %1 = arith.select %0, %cst_3, %in : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, 0)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc, %alloc_8 : memref<1x2x2x3x64xf32>, memref<1x2x2x3x1xf32>) outs(%alloc : memref<1x2x2x3x64xf32>) {
  ^bb0(%in: f32, %in_12: f32, %out: f32):
    %0 = arith.subf %in, %in_12 : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_7 : memref<1x2x2x3x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_3 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, 0)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc : memref<1x2x2x3x64xf32>) outs(%alloc_7 : memref<1x2x2x3x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  %expand_shape_9 = memref.expand_shape %arg2 [[0], [1], [2, 3], [4]] output_shape [1, 2, 1, 64, 64] : memref<1x2x64x64xbf16> into memref<1x2x1x64x64xbf16>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, 0, d5, d4)>, affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc, %expand_shape_9 : memref<1x2x2x3x64xf32>, memref<1x2x1x64x64xbf16>) outs(%alloc_5 : memref<1x2x2x3x64xf32>) {
  ^bb0(%in: f32, %in_12: bf16, %out: f32):
    %0 = arith.extf %in_12 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %alloc_10 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x3x64xbf16>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, 0)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_5, %alloc_7 : memref<1x2x2x3x64xf32>, memref<1x2x2x3x1xf32>) outs(%alloc_10 : memref<1x2x2x3x64xbf16>) {
  ^bb0(%in: f32, %in_12: f32, %out: bf16):
    %0 = arith.cmpf oeq, %in_12, %cst_3 : f32
    %1 = arith.select %0, %cst, %in_12 : f32
    %2 = arith.divf %in, %1 : f32
    %3 = arith.truncf %2 : f32 to bf16
    linalg.yield %3 : bf16
  }
  %collapse_shape = memref.collapse_shape %alloc_10 [[0], [1, 2], [3], [4]] : memref<1x2x2x3x64xbf16> into memref<1x4x3x64xbf16>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_8, %alloc_7 : memref<1x2x2x3x1xf32>, memref<1x2x2x3x1xf32>) outs(%alloc_7 : memref<1x2x2x3x1xf32>) {
  ^bb0(%in: f32, %in_12: f32, %out: f32):
    %0 = math.log %in_12 : f32
    %1 = arith.addf %in, %0 : f32
    linalg.yield %1 : f32
  }
  %collapse_shape_11 = memref.collapse_shape %alloc_7 [[0], [1, 2], [3], [4]] : memref<1x2x2x3x1xf32> into memref<1x4x3x1xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<1x4x3x64xbf16>) outs(%arg3 : memref<1x4x3x64xbf16>)
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape_11 : memref<1x4x3x1xf32>) outs(%arg4 : memref<1x4x3x1xf32>)
  return
}

// -----

#map = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#map1 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>
#map2 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, 0, d5)>
#map3 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
#map4 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, 0)>
#map5 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map6 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#map7 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, 0, d5, d4)>
#map8 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5, d3)>
#map9 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5, d4)>
#map10 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>

// The sdpa backward above, configured for the fused kernel (tile [64,
// 128]: 64 query rows a step, 128 kv rows a block; 3 stages; no
// persistent: a block a unit; sm90/flash_backward_fused.py): three
// launches. First delta and the f32 dQ buffer zeroed, a quad of 128
// threads a query row; then a block per
// (kv tile, batch x kv head), K and V resident (boxes of 128 rows), Q and
// dO tiles of 64 rows through the ring, S^T and dP^T on wgmma, dS^T into
// shared memory, dQ's part (D 64: the consumer's 64 kv rows, dS and K both
// read MN-major) into a staging tile and added into the buffer by TMA
// reduce-adds (boxes of 64 rows x 32 f32), dV and dK from registers; then
// dQ = scale x the buffer, rounded, 8 columns a thread.
// CHECK-LABEL: func.func private @sdpa_backward_fused(
//  CHECK-SAME:     %[[O:[^:]*]]: memref<1x4x64x64xbf16>, %[[DO:[^:]*]]: memref<1x4x64x64xbf16>, %[[STATS:[^:]*]]: memref<1x4x64x1xf32>, %[[DQ:[^:]*]]: memref<1x4x64x64xbf16> {bufferize.result}, %[[DK:[^:]*]]: memref<1x2x96x64xbf16> {bufferize.result}, %[[DV:[^:]*]]: memref<1x2x96x64xbf16> {bufferize.result})
//  CHECK-SAME:     dnn.config_reason = "sdpa_backward; attention backward, fused: delta = rowsum(dO o O) and a zeroed f32 dQ workspace first; then a block per 128 kv rows, 64 query rows a step through 3 stages, five products on wgmma, dQ added into the workspace by TMA reduce-adds (not deterministic: the order of the adds varies); then dQ converted"
//   CHECK-NOT:   linalg.
//       CHECK:   %[[DELTA:.*]] = memref.alloc() : memref<1x4x64xf32>
//       CHECK:   %[[DQSUM:.*]] = memref.alloc() : memref<1x4x64x64xf32>
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c2, {{.*}} = %c4, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c128, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c0_i32 {
//       CHECK:       vector.load %[[O]]{{.*}} {alignment = 16 : i64} : memref<1x4x64x64xbf16>, vector<8xbf16>
//       CHECK:       vector.load %[[DO]]{{.*}} {alignment = 16 : i64} : memref<1x4x64x64xbf16>, vector<8xbf16>
//       CHECK:       gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32 : f32
//       CHECK:         memref.store %{{.*}}, %[[DELTA]][
// CHECK-COUNT-4:       vector.store %{{.*}}, %[[DQSUM]][{{.*}}] {alignment = 16 : i64} : memref<1x4x64x64xf32>, vector<4xf32>
//       CHECK:     gpu.terminator
//       CHECK:   %[[UDQSUM:.*]] = memref.cast %[[DQSUM]]
//       CHECK:   nvgpu.tma.create.descriptor %[[UDQSUM]] box[%c1, %c1, %c64, %c32] : memref<*xf32> -> <tensor = memref<1x1x64x32xf32, 3>, swizzle = swizzle_128b
//       CHECK:   nvgpu.tma.create.descriptor %{{.*}} box[%c1, %c1, %c128, %c64] : memref<*xbf16>
//       CHECK:   nvgpu.tma.create.descriptor %{{.*}} box[%c1, %c1, %c128, %c64] : memref<*xbf16>
//       CHECK:   nvgpu.tma.create.descriptor %{{.*}} box[%c1, %c1, %c64, %c64] : memref<*xbf16>
//       CHECK:   nvgpu.tma.create.descriptor %{{.*}} box[%c1, %c1, %c64, %c64] : memref<*xbf16>
// K and V (2 x 16 KiB), 3 stages of a Q and a dO tile (2 x 8 KiB), two dS
// tiles (2 x 16 KiB), the consumers' dQ staging (2 x 16 KiB), their
// log-sum-exp and delta buffers (2 KiB): 150584 bytes.
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c2, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c384, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c150592_i32 {
//       CHECK:       nvvm.setmaxregister  decrease 24
//       CHECK:         nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
//       CHECK:         scf.for
//       CHECK:           nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c16384_i32
//       CHECK:     } else {
//  CHECK-NEXT:       nvvm.setmaxregister  increase 240
//       CHECK:         scf.for
//       CHECK:           memref.load %[[STATS]]
//       CHECK:           memref.load %[[DELTA]]
// S^T = K Q^T and dP^T = V dO^T, 64 x 64 each (four k16 steps of D).
// CHECK-COUNT-8:         nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <{{zero|one}}>, <wrapped>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
//       CHECK:           nvvm.wgmma.commit.group.sync.aligned
//       CHECK:           llvm.inline_asm has_side_effects "bar.sync $0, 128;"
//       CHECK:           nvvm.wgmma.wait.group.sync.aligned 0
// dV += P^T dO from registers (four k16 steps of the 64 query rows), a
// group of its own; while it runs, dS^T into the step's dS tile, a 4-byte
// pair a store; then the consumer's part of dQ_i, both operands MN-major
// (four k16 steps of its 64 kv rows), and dK += dS^T Q, a group each.
// CHECK-COUNT-4:         llvm.inline_asm has_side_effects "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;{{.*}}", "=f,{{.*}},r,r,r,r,l"
//       CHECK:           nvvm.wgmma.commit.group.sync.aligned
// CHECK-COUNT-16:        llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<3>
//       CHECK:           llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;"
//       CHECK:           llvm.inline_asm has_side_effects "bar.sync $0, 128;"
// CHECK-COUNT-4:         nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <{{zero|one}}>, <wrapped>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
//       CHECK:           nvvm.wgmma.commit.group.sync.aligned
// CHECK-COUNT-4:         llvm.inline_asm has_side_effects "{{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;{{.*}}", "=f,{{.*}},r,r,r,r,l"
//       CHECK:           nvvm.wgmma.commit.group.sync.aligned
//       CHECK:           nvvm.wgmma.wait.group.sync.aligned 1
// dQ_i's part into the staging tile once the last reduce has read it, then
// two TMA reduce-adds of 32 columns each, while dK runs.
//       CHECK:             nvvm.cp.async.bulk.wait_group 0 {read}
//       CHECK:           llvm.inline_asm has_side_effects "bar.sync $0, 128;"
// CHECK-COUNT-16:        llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<3>
//       CHECK:           llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;"
//       CHECK:           llvm.inline_asm has_side_effects "bar.sync $0, 128;"
//       CHECK:             nvvm.cp.async.bulk.tensor.reduce %{{.*}}, %{{.*}}, box[%c0_i32, {{.*}}] {redKind = #nvvm.tma_redux_kind<add>}
//       CHECK:             nvvm.cp.async.bulk.tensor.reduce %{{.*}}, %{{.*}}, box[%c32_i32, {{.*}}] {redKind = #nvvm.tma_redux_kind<add>}
//       CHECK:             nvvm.cp.async.bulk.commit.group
//       CHECK:           nvvm.wgmma.wait.group.sync.aligned 0
//       CHECK:             nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
//       CHECK:           scf.yield
// K and V released to the producer (the unit's products done), then dK and
// dV stored; the last reduce waited for once the block's units are done.
//       CHECK:             nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
//       CHECK:           vector.store %{{.*}}, %[[DK]][{{.*}}] {alignment = 4 : i64} : memref<1x2x96x64xbf16>, vector<2xbf16>
//       CHECK:           vector.store %{{.*}}, %[[DV]][{{.*}}] {alignment = 4 : i64} : memref<1x2x96x64xbf16>, vector<2xbf16>
//       CHECK:           nvvm.cp.async.bulk.wait_group 0
//       CHECK:     gpu.terminator
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c4, {{.*}} = %c4, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c128, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c0_i32 {
//       CHECK:       vector.load %[[DQSUM]]{{.*}} {alignment = 16 : i64} : memref<1x4x64x64xf32>, vector<8xf32>
//       CHECK:       arith.mulf
//       CHECK:       arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
//       CHECK:       vector.store %{{.*}}, %[[DQ]][{{.*}}] {alignment = 16 : i64} : memref<1x4x64x64xbf16>, vector<8xbf16>
//   CHECK-NOT:   gpu.launch
//   CHECK-NOT:   linalg.
//       CHECK:   return
func.func private @sdpa_backward_fused(%q: memref<1x4x64x64xbf16>, %k: memref<1x2x96x64xbf16>, %v: memref<1x2x96x64xbf16>, %o: memref<1x4x64x64xbf16>, %do: memref<1x4x64x64xbf16>, %stats: memref<1x4x64x1xf32>, %dq: memref<1x4x64x64xbf16> {bufferize.result}, %dk: memref<1x2x96x64xbf16> {bufferize.result}, %dv: memref<1x2x96x64xbf16> {bufferize.result}) attributes {dnn.anchor = "sdpa_backward", dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa_backward", operands = array<i64: 0, 1, 2, 3, 4, 5, -1, -1, -1>, padding = false, results = array<i64: 0, 1, 2, -1>, returned = 3 : i64, scale = 1.250000e-01 : f64, window = 0 : i64}, dnn.config = {block = [384, 1, 1], stages = 3 : i64, strategy = "tc-sm90", tile = [64, 128]}, dnn.config_reason = "sdpa_backward", dnn.kernel} {
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 1.250000e-01 : f32
  %cst_1 = arith.constant 0.000000e+00 : f32
  %expand_shape = memref.expand_shape %q [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 64] : memref<1x4x64x64xbf16> into memref<1x2x2x64x64xbf16>
  %expand_shape_2 = memref.expand_shape %k [[0], [1], [2, 3], [4]] output_shape [1, 2, 1, 96, 64] : memref<1x2x96x64xbf16> into memref<1x2x1x96x64xbf16>
  %expand_shape_3 = memref.expand_shape %do [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 64] : memref<1x4x64x64xbf16> into memref<1x2x2x64x64xbf16>
  %expand_shape_4 = memref.expand_shape %stats [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 1] : memref<1x4x64x1xf32> into memref<1x2x2x64x1xf32>
  %expand_shape_5 = memref.expand_shape %k [[0], [1], [2], [3, 4]] output_shape [1, 2, 96, 1, 64] : memref<1x2x96x64xbf16> into memref<1x2x96x1x64xbf16>
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x96xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<1x2x2x64x96xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  %alloc_6 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x96xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc : memref<1x2x2x64x96xf32>) outs(%alloc_6 : memref<1x2x2x64x96xf32>)
  linalg.generic {indexing_maps = [#map1, #map2, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expand_shape, %expand_shape_5 : memref<1x2x2x64x64xbf16>, memref<1x2x96x1x64xbf16>) outs(%alloc_6 : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: bf16, %in_17: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_17 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  %alloc_7 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x96xf32>
  linalg.generic {indexing_maps = [#map4, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%expand_shape_4, %alloc_6 : memref<1x2x2x64x1xf32>, memref<1x2x2x64x96xf32>) outs(%alloc_7 : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: f32, %in_17: f32, %out: f32):
    %0 = linalg.index 3 : index
    %1 = linalg.index 4 : index
    %2 = arith.mulf %in_17, %cst_0 : f32
    %3 = arith.index_cast %0 : index to i64
    %4 = arith.uitofp %3 : i64 to f32
    %5 = arith.index_cast %1 : index to i64
    %6 = arith.uitofp %5 : i64 to f32
    %7 = arith.cmpf ogt, %6, %4 : f32
    %8 = arith.select %7, %cst, %2 : f32
    %9 = arith.subf %8, %in : f32
    %10 = math.exp %9 : f32
    %11 = arith.cmpf oeq, %in, %cst : f32
    %12 = arith.select %11, %cst_1, %10 : f32
    linalg.yield %12 : f32
  }
  %alloc_8 = memref.alloc() {alignment = 64 : i64} : memref<1x4x64x1xf32>
  linalg.generic {indexing_maps = [#map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc_8 : memref<1x4x64x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#map5, #map5, #map6], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%do, %o : memref<1x4x64x64xbf16>, memref<1x4x64x64xbf16>) outs(%alloc_8 : memref<1x4x64x1xf32>) {
  ^bb0(%in: bf16, %in_17: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_17 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  %expand_shape_9 = memref.expand_shape %alloc_8 [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 1] : memref<1x4x64x1xf32> into memref<1x2x2x64x1xf32>
  %expand_shape_10 = memref.expand_shape %v [[0], [1], [2], [3, 4]] output_shape [1, 2, 96, 1, 64] : memref<1x2x96x64xbf16> into memref<1x2x96x1x64xbf16>
  linalg.generic {indexing_maps = [#map1, #map2, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expand_shape_3, %expand_shape_10 : memref<1x2x2x64x64xbf16>, memref<1x2x96x1x64xbf16>) outs(%alloc : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: bf16, %in_17: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_17 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#map, #map, #map4, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_7, %alloc, %expand_shape_9 : memref<1x2x2x64x96xf32>, memref<1x2x2x64x96xf32>, memref<1x2x2x64x1xf32>) outs(%alloc : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: f32, %in_17: f32, %in_18: f32, %out: f32):
    %0 = arith.subf %in_17, %in_18 : f32
    %1 = arith.mulf %in, %0 : f32
    linalg.yield %1 : f32
  }
  %alloc_11 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x64xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_11 : memref<1x2x2x64x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#map1, #map7, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc, %expand_shape_2 : memref<1x2x2x64x96xf32>, memref<1x2x1x96x64xbf16>) outs(%alloc_11 : memref<1x2x2x64x64xf32>) {
  ^bb0(%in: f32, %in_17: bf16, %out: f32):
    %0 = arith.extf %in_17 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %alloc_12 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x64xbf16>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_11 : memref<1x2x2x64x64xf32>) outs(%alloc_12 : memref<1x2x2x64x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.mulf %in, %cst_0 : f32
    %1 = arith.truncf %0 : f32 to bf16
    linalg.yield %1 : bf16
  }
  %alloc_13 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x96x64xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_13 : memref<1x2x2x96x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  %alloc_14 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x96x64xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_13 : memref<1x2x2x96x64xf32>) outs(%alloc_14 : memref<1x2x2x96x64xf32>)
  linalg.generic {indexing_maps = [#map8, #map9, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc, %expand_shape : memref<1x2x2x64x96xf32>, memref<1x2x2x64x64xbf16>) outs(%alloc_14 : memref<1x2x2x96x64xf32>) {
  ^bb0(%in: f32, %in_17: bf16, %out: f32):
    %0 = arith.extf %in_17 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %alloc_15 = memref.alloc() {alignment = 64 : i64} : memref<1x2x96x64xf32>
  linalg.generic {indexing_maps = [#map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc_15 : memref<1x2x96x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  %alloc_16 = memref.alloc() {alignment = 64 : i64} : memref<1x2x96x64xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_15 : memref<1x2x96x64xf32>) outs(%alloc_16 : memref<1x2x96x64xf32>)
  linalg.generic {indexing_maps = [#map, #map10], iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel"]} ins(%alloc_14 : memref<1x2x2x96x64xf32>) outs(%alloc_16 : memref<1x2x96x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%alloc_16 : memref<1x2x96x64xf32>) outs(%dk : memref<1x2x96x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.mulf %in, %cst_0 : f32
    %1 = arith.truncf %0 : f32 to bf16
    linalg.yield %1 : bf16
  }
  linalg.generic {indexing_maps = [#map8, #map9, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc_7, %expand_shape_3 : memref<1x2x2x64x96xf32>, memref<1x2x2x64x64xbf16>) outs(%alloc_13 : memref<1x2x2x96x64xf32>) {
  ^bb0(%in: f32, %in_17: bf16, %out: f32):
    %0 = arith.extf %in_17 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [#map, #map10], iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel"]} ins(%alloc_13 : memref<1x2x2x96x64xf32>) outs(%alloc_15 : memref<1x2x96x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%alloc_15 : memref<1x2x96x64xf32>) outs(%dv : memref<1x2x96x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  %collapse_shape = memref.collapse_shape %alloc_12 [[0], [1, 2], [3], [4]] : memref<1x2x2x64x64xbf16> into memref<1x4x64x64xbf16>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<1x4x64x64xbf16>) outs(%dq : memref<1x4x64x64xbf16>)
  return
}

// -----

// The same, persistent and the group's two query heads in two parts
// (config persistent = 1, split = 2): the fused kernel's blocks loop over
// rounds of units (one round here, 1 kv tile x 2 kv heads x 2 parts over 4
// blocks: the loop folds away), the producer loading K and V once both
// consumers have released the last unit's (a wait on that barrier, which
// passes at once in round 0, before the expect_tx of K and V), each
// consumer's step placing its unit from an opaque i32; the units write f32
// partial dK and dV, which a fourth launch sums in a fixed order (part 0,
// then 1) into dk (times the scale) and dv.
// CHECK-LABEL: func.func private @sdpa_backward_fused_persistent(
//  CHECK-SAME:     %[[DK:[^:]*]]: memref<1x2x96x64xbf16> {bufferize.result}, %[[DV:[^:]*]]: memref<1x2x96x64xbf16> {bufferize.result})
//  CHECK-SAME:     dnn.config_reason = "sdpa_backward; attention backward, fused: delta = rowsum(dO o O) and a zeroed f32 dQ workspace first; then 4 persistent blocks over 4 units of 128 kv rows and 1/2 of the group's query heads (head by head, in alternating directions round by round), 64 query rows a step through 3 stages, five products on wgmma, dQ added into the workspace by TMA reduce-adds (not deterministic: the order of the adds varies); then dQ converted; then dK and dV summed over the 2 parts in a fixed order from f32 workspaces"
//       CHECK:   %[[DKP:.*]] = memref.alloc() : memref<2x2x96x64xf32>
//       CHECK:   %[[DVP:.*]] = memref.alloc() : memref<2x2x96x64xf32>
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c4, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c384, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c150592_i32 {
//       CHECK:       nvvm.setmaxregister  decrease 24
//       CHECK:         mbarrier.try_wait.parity{{.*}} %c1_i32
//       CHECK:         nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c32768_i32
//       CHECK:         scf.for
//       CHECK:           nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c16384_i32
//       CHECK:     } else {
//  CHECK-NEXT:       nvvm.setmaxregister  increase 240
//       CHECK:         mbarrier.try_wait.parity{{.*}} %c0_i32
//       CHECK:         scf.for
//       CHECK:           llvm.inline_asm has_side_effects "mov.b32 $0, $1;"
//       CHECK:           nvvm.wgmma.mma_async
//       CHECK:         nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
//       CHECK:         vector.store %{{.*}}, %[[DKP]][{{.*}}] {alignment = 8 : i64} : memref<2x2x96x64xf32>, vector<2xf32>
//       CHECK:         vector.store %{{.*}}, %[[DVP]][{{.*}}] {alignment = 8 : i64} : memref<2x2x96x64xf32>, vector<2xf32>
//       CHECK:       nvvm.cp.async.bulk.wait_group 0
//       CHECK:     gpu.terminator
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c4, {{.*}} = %c4, {{.*}} = %c1)
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c6, {{.*}} = %c4, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c128, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c0_i32 {
//       CHECK:       vector.load %[[DVP]]{{.*}} {alignment = 16 : i64} : memref<2x2x96x64xf32>, vector<8xf32>
//       CHECK:       vector.load %[[DVP]]{{.*}} {alignment = 16 : i64} : memref<2x2x96x64xf32>, vector<8xf32>
//       CHECK:       arith.addf
//       CHECK:       vector.store %{{.*}}, %[[DV]][{{.*}}] {alignment = 16 : i64} : memref<1x2x96x64xbf16>, vector<8xbf16>
//       CHECK:       vector.load %[[DKP]]{{.*}} {alignment = 16 : i64} : memref<2x2x96x64xf32>, vector<8xf32>
//       CHECK:       vector.load %[[DKP]]{{.*}} {alignment = 16 : i64} : memref<2x2x96x64xf32>, vector<8xf32>
//       CHECK:       arith.addf
//       CHECK:       arith.mulf
//       CHECK:       vector.store %{{.*}}, %[[DK]][{{.*}}] {alignment = 16 : i64} : memref<1x2x96x64xbf16>, vector<8xbf16>
//   CHECK-NOT:   gpu.launch
//       CHECK:   return
#map = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#map1 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>
#map2 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, 0, d5)>
#map3 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
#map4 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, 0)>
#map5 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map6 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#map7 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, 0, d5, d4)>
#map8 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5, d3)>
#map9 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5, d4)>
#map10 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>

func.func private @sdpa_backward_fused_persistent(%q: memref<1x4x64x64xbf16>, %k: memref<1x2x96x64xbf16>, %v: memref<1x2x96x64xbf16>, %o: memref<1x4x64x64xbf16>, %do: memref<1x4x64x64xbf16>, %stats: memref<1x4x64x1xf32>, %dq: memref<1x4x64x64xbf16> {bufferize.result}, %dk: memref<1x2x96x64xbf16> {bufferize.result}, %dv: memref<1x2x96x64xbf16> {bufferize.result}) attributes {dnn.anchor = "sdpa_backward", dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa_backward", operands = array<i64: 0, 1, 2, 3, 4, 5, -1, -1, -1>, padding = false, results = array<i64: 0, 1, 2, -1>, returned = 3 : i64, scale = 1.250000e-01 : f64, window = 0 : i64}, dnn.config = {block = [384, 1, 1], persistent = 1 : i64, split = 2 : i64, stages = 3 : i64, strategy = "tc-sm90", tile = [64, 128]}, dnn.config_reason = "sdpa_backward", dnn.kernel} {
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 1.250000e-01 : f32
  %cst_1 = arith.constant 0.000000e+00 : f32
  %expand_shape = memref.expand_shape %q [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 64] : memref<1x4x64x64xbf16> into memref<1x2x2x64x64xbf16>
  %expand_shape_2 = memref.expand_shape %k [[0], [1], [2, 3], [4]] output_shape [1, 2, 1, 96, 64] : memref<1x2x96x64xbf16> into memref<1x2x1x96x64xbf16>
  %expand_shape_3 = memref.expand_shape %do [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 64] : memref<1x4x64x64xbf16> into memref<1x2x2x64x64xbf16>
  %expand_shape_4 = memref.expand_shape %stats [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 1] : memref<1x4x64x1xf32> into memref<1x2x2x64x1xf32>
  %expand_shape_5 = memref.expand_shape %k [[0], [1], [2], [3, 4]] output_shape [1, 2, 96, 1, 64] : memref<1x2x96x64xbf16> into memref<1x2x96x1x64xbf16>
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x96xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<1x2x2x64x96xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  %alloc_6 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x96xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc : memref<1x2x2x64x96xf32>) outs(%alloc_6 : memref<1x2x2x64x96xf32>)
  linalg.generic {indexing_maps = [#map1, #map2, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expand_shape, %expand_shape_5 : memref<1x2x2x64x64xbf16>, memref<1x2x96x1x64xbf16>) outs(%alloc_6 : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: bf16, %in_17: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_17 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  %alloc_7 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x96xf32>
  linalg.generic {indexing_maps = [#map4, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%expand_shape_4, %alloc_6 : memref<1x2x2x64x1xf32>, memref<1x2x2x64x96xf32>) outs(%alloc_7 : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: f32, %in_17: f32, %out: f32):
    %0 = linalg.index 3 : index
    %1 = linalg.index 4 : index
    %2 = arith.mulf %in_17, %cst_0 : f32
    %3 = arith.index_cast %0 : index to i64
    %4 = arith.uitofp %3 : i64 to f32
    %5 = arith.index_cast %1 : index to i64
    %6 = arith.uitofp %5 : i64 to f32
    %7 = arith.cmpf ogt, %6, %4 : f32
    %8 = arith.select %7, %cst, %2 : f32
    %9 = arith.subf %8, %in : f32
    %10 = math.exp %9 : f32
    %11 = arith.cmpf oeq, %in, %cst : f32
    %12 = arith.select %11, %cst_1, %10 : f32
    linalg.yield %12 : f32
  }
  %alloc_8 = memref.alloc() {alignment = 64 : i64} : memref<1x4x64x1xf32>
  linalg.generic {indexing_maps = [#map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc_8 : memref<1x4x64x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#map5, #map5, #map6], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%do, %o : memref<1x4x64x64xbf16>, memref<1x4x64x64xbf16>) outs(%alloc_8 : memref<1x4x64x1xf32>) {
  ^bb0(%in: bf16, %in_17: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_17 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  %expand_shape_9 = memref.expand_shape %alloc_8 [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 1] : memref<1x4x64x1xf32> into memref<1x2x2x64x1xf32>
  %expand_shape_10 = memref.expand_shape %v [[0], [1], [2], [3, 4]] output_shape [1, 2, 96, 1, 64] : memref<1x2x96x64xbf16> into memref<1x2x96x1x64xbf16>
  linalg.generic {indexing_maps = [#map1, #map2, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expand_shape_3, %expand_shape_10 : memref<1x2x2x64x64xbf16>, memref<1x2x96x1x64xbf16>) outs(%alloc : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: bf16, %in_17: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_17 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#map, #map, #map4, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_7, %alloc, %expand_shape_9 : memref<1x2x2x64x96xf32>, memref<1x2x2x64x96xf32>, memref<1x2x2x64x1xf32>) outs(%alloc : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: f32, %in_17: f32, %in_18: f32, %out: f32):
    %0 = arith.subf %in_17, %in_18 : f32
    %1 = arith.mulf %in, %0 : f32
    linalg.yield %1 : f32
  }
  %alloc_11 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x64xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_11 : memref<1x2x2x64x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#map1, #map7, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc, %expand_shape_2 : memref<1x2x2x64x96xf32>, memref<1x2x1x96x64xbf16>) outs(%alloc_11 : memref<1x2x2x64x64xf32>) {
  ^bb0(%in: f32, %in_17: bf16, %out: f32):
    %0 = arith.extf %in_17 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %alloc_12 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x64xbf16>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_11 : memref<1x2x2x64x64xf32>) outs(%alloc_12 : memref<1x2x2x64x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.mulf %in, %cst_0 : f32
    %1 = arith.truncf %0 : f32 to bf16
    linalg.yield %1 : bf16
  }
  %alloc_13 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x96x64xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_13 : memref<1x2x2x96x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  %alloc_14 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x96x64xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_13 : memref<1x2x2x96x64xf32>) outs(%alloc_14 : memref<1x2x2x96x64xf32>)
  linalg.generic {indexing_maps = [#map8, #map9, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc, %expand_shape : memref<1x2x2x64x96xf32>, memref<1x2x2x64x64xbf16>) outs(%alloc_14 : memref<1x2x2x96x64xf32>) {
  ^bb0(%in: f32, %in_17: bf16, %out: f32):
    %0 = arith.extf %in_17 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %alloc_15 = memref.alloc() {alignment = 64 : i64} : memref<1x2x96x64xf32>
  linalg.generic {indexing_maps = [#map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc_15 : memref<1x2x96x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  %alloc_16 = memref.alloc() {alignment = 64 : i64} : memref<1x2x96x64xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_15 : memref<1x2x96x64xf32>) outs(%alloc_16 : memref<1x2x96x64xf32>)
  linalg.generic {indexing_maps = [#map, #map10], iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel"]} ins(%alloc_14 : memref<1x2x2x96x64xf32>) outs(%alloc_16 : memref<1x2x96x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%alloc_16 : memref<1x2x96x64xf32>) outs(%dk : memref<1x2x96x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.mulf %in, %cst_0 : f32
    %1 = arith.truncf %0 : f32 to bf16
    linalg.yield %1 : bf16
  }
  linalg.generic {indexing_maps = [#map8, #map9, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc_7, %expand_shape_3 : memref<1x2x2x64x96xf32>, memref<1x2x2x64x64xbf16>) outs(%alloc_13 : memref<1x2x2x96x64xf32>) {
  ^bb0(%in: f32, %in_17: bf16, %out: f32):
    %0 = arith.extf %in_17 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [#map, #map10], iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel"]} ins(%alloc_13 : memref<1x2x2x96x64xf32>) outs(%alloc_15 : memref<1x2x96x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%alloc_15 : memref<1x2x96x64xf32>) outs(%dv : memref<1x2x96x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  %collapse_shape = memref.collapse_shape %alloc_12 [[0], [1, 2], [3], [4]] : memref<1x2x2x64x64xbf16> into memref<1x4x64x64xbf16>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<1x4x64x64xbf16>) outs(%dq : memref<1x4x64x64xbf16>)
  return
}

// -----

// A filter gradient of C = 24 over 3 x 3 taps (dw [16, 24, 3, 3], KRSC):
// no tile of 64 columns lies in one tap, so the taps are the GEMM's batch
// (tensorcore/wgrad_taps.py): dw viewed as [taps, K, C] (taps C apart, rows
// taps x C apart), x read at the batch's tap by TMA in im2col mode, 9
// units (one 64 x 64 tile a tap), each output column stored where it is
// below C.
// CHECK-LABEL: func.func private @conv_wgrad_taps_batched(
//  CHECK-SAME:     %[[DY:[^:]*]]: memref<1x16x6x6xbf16, {{.*}}>, %[[X:[^:]*]]: memref<1x24x6x6xbf16, {{.*}}>, %[[DW:[^:]*]]: memref<16x24x3x3xbf16
//  CHECK-SAME:     dnn.config_reason = "conv_wgrad; implicit GEMM (wgrad): x read by TMA in im2col mode, 9 filter taps x 24 channels (the taps the GEMM's batch: 64 columns a tap, those past C zero-filled and not stored)
//   CHECK-DAG:   %[[TAPS:.*]] = memref.reinterpret_cast %[[DW]] to offset: [0], sizes: [9, 16, 24], strides: [24, 216, 1]
//   CHECK-DAG:   memref.reinterpret_cast %[[X]] to offset: [0], sizes: [1, 6, 6, 24], strides: [864, 144, 24, 1]
//       CHECK:   nvgpu.tma.create.descriptor {{.*}}dnn.im2col
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c9,
//       CHECK:     nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}}im2col[
//       CHECK:     %[[OK:.*]] = arith.cmpi ult, %[[COL:.*]], %c24 : index
//       CHECK:     memref.store %{{.*}}, %[[TAPS]][%{{.*}}, %{{.*}}, %[[COL]]]
#wg = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#wg1 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#wg2 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d2, d3 + d6, d4 + d7)>
#wg3 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d1, d6, d7)>
#wg4 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
func.func private @conv_wgrad_taps_batched(%dy: memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>>, %x: memref<1x24x6x6xbf16, strided<[864, 1, 144, 24]>>, %dw: memref<16x24x3x3xbf16, strided<[216, 1, 72, 24]>> {bufferize.result}) attributes {dnn.anchor = "conv_wgrad", dnn.config = {block = [256, 1, 1], stages = 8 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.config_reason = "conv_wgrad", dnn.conv = {dilation = array<i64: 1, 1>, direction = "wgrad", flip = false, groups = 1 : i64, operands = array<i64: 1, 0>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
  %cst = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x24x8x8xf32>
  linalg.generic {indexing_maps = [#wg], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<1x24x8x8xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<1x24x6x6xf32>
  linalg.generic {indexing_maps = [#wg, #wg], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<1x24x6x6xbf16, strided<[864, 1, 144, 24]>>) outs(%alloc_0 : memref<1x24x6x6xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  }
  %subview = memref.subview %alloc[0, 0, 1, 1] [1, 24, 6, 6] [1, 1, 1, 1] : memref<1x24x8x8xf32> to memref<1x24x6x6xf32, strided<[1536, 64, 8, 1], offset: 9>>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_0 : memref<1x24x6x6xf32>) outs(%subview : memref<1x24x6x6xf32, strided<[1536, 64, 8, 1], offset: 9>>)
  %expand_shape = memref.expand_shape %alloc [[0], [1, 2], [3], [4]] output_shape [1, 1, 24, 8, 8] : memref<1x24x8x8xf32> into memref<1x1x24x8x8xf32>
  %expand_shape_1 = memref.expand_shape %dy [[0], [1, 2], [3], [4]] output_shape [1, 1, 16, 6, 6] : memref<1x16x6x6xbf16, strided<[576, 1, 96, 16]>> into memref<1x1x16x6x6xbf16, strided<[576, 16, 1, 96, 16]>>
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<1x16x24x3x3xf32>
  linalg.generic {indexing_maps = [#wg1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_2 : memref<1x16x24x3x3xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  linalg.generic {indexing_maps = [#wg2, #wg3, #wg4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%expand_shape, %expand_shape_1 : memref<1x1x24x8x8xf32>, memref<1x1x16x6x6xbf16, strided<[576, 16, 1, 96, 16]>>) outs(%alloc_2 : memref<1x16x24x3x3xf32>) {
  ^bb0(%in: f32, %in_4: bf16, %out: f32):
    %0 = arith.extf %in_4 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %alloc_3 = memref.alloc() {alignment = 64 : i64} : memref<1x16x24x3x3xbf16>
  linalg.generic {indexing_maps = [#wg1, #wg1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_2 : memref<1x16x24x3x3xf32>) outs(%alloc_3 : memref<1x16x24x3x3xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  %collapse_shape = memref.collapse_shape %alloc_3 [[0, 1], [2], [3], [4]] : memref<1x16x24x3x3xbf16> into memref<16x24x3x3xbf16>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<16x24x3x3xbf16>) outs(%dw : memref<16x24x3x3xbf16, strided<[216, 1, 72, 24]>>)
  return
}

// -----

#a5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d2, d4)>
#b5 = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4, d3)>
#c5 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// Two batch dims broadcast against each other ([2, 1, 7, 127] @ [3, 127,
// 33]): tc-sm90's tiles address one batch dim; tc-sm80 unravels the flat
// batch (its index divided by 3 for A's dim 0, remainder for B's dim 0).
// CHECK-LABEL: func.func private @two_batch_dims(
//  CHECK-SAME:     strategy = "tc-sm80"
//  CHECK-SAME:     dnn.config_reason = "tc-sm90 does not apply (2 batch dims [2, 3]: tc-sm90's tiles address one): tc-sm80 64x64x32 tiles, 4 stages; tc-sm80's unaligned loader: A element by element through registers (its rows start 2 bytes apart: K = 127 f16), B element by element through registers (its rows start 2 bytes apart: N = 33 f16), zero past M, N and K in the loader (no padded copy); heuristics: matmul"
//   CHECK-NOT:   linalg.generic
//       CHECK:   gpu.launch
//       CHECK:     arith.divui %{{.*}}, %c3
//       CHECK:     arith.remui %{{.*}}, %c3
//       CHECK:     nvvm.mma.sync
func.func private @two_batch_dims(%A: memref<2x1x7x127xf16>, %B: memref<3x127x33xf16>, %C: memref<2x3x7x33xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [256, 1, 1], stages = 8 : i64, strategy = "tc-sm90", tile = [64, 64, 64]}, dnn.config_reason = "matmul", dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%C : memref<2x3x7x33xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a5, #b5, #c5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%A, %B : memref<2x1x7x127xf16>, memref<3x127x33xf16>) outs(%C : memref<2x3x7x33xf32>) {
  ^bb0(%x: f16, %w: f16, %acc: f32):
    %0 = arith.extf %x : f16 to f32
    %1 = arith.extf %w : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// K = 4095 in a GEMM large enough for a copy to pay: tc-sm90, A copied into
// rows of 4096 elements first (a launch of its own), TMA reading its first
// 4095 columns.
// CHECK-LABEL: func.func private @large_odd_k_padded(
//  CHECK-SAME:     strategy = "tc-sm90"
//  CHECK-SAME:     A copied into rows of 4096 elements first (A's dim 0 stride is 8190 bytes
//       CHECK:   memref.alloc() : memref<4096x4096xf16>
//       CHECK:   gpu.launch
//       CHECK:     vector.store {{.*}} {alignment = 16 : i64} : memref<4096x4096xf16>, vector<8xf16>
//       CHECK:   memref.reinterpret_cast {{.*}} to offset: [0], sizes: [4096, 4095], strides: [4096, 1]
//       CHECK:   nvgpu.tma.create.descriptor
//       CHECK:   gpu.launch
//       CHECK:     nvvm.wgmma.mma_async
func.func private @large_odd_k_padded(%A: memref<4096x4095xf16>, %B: memref<4095x4096xf16>, %C: memref<4096x4096xf32> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 256, 64]}, dnn.config_reason = "matmul", dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<4096x4096xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<4096x4095xf16>, memref<4095x4096xf16>) outs(%C : memref<4096x4096xf32>) {
  ^bb0(%x: f16, %w: f16, %acc: f32):
    %0 = arith.extf %x : f16 to f32
    %1 = arith.extf %w : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (0, d1)>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>

// tc-sm80 split-K (sm80/splitk.py): the 16 K steps of each of the 4 tiles of
// 64 x 64 split 3 ways, 12 blocks; block b runs split b / 4 of tile b % 4,
// K steps 6 (b / 4) up to min(6, 16 - 6 (b / 4)) of them (the last split
// runs 4), and stores its f32 accumulator pairs, unscaled, into its split's
// slice of a [3, 1, 100, 72] workspace, guarded at M and N. A second launch
// of one thread per pair of columns (100 x 36 of them) adds the three
// partials in split order, then runs relu(C + bias) and stores the pair.
// CHECK-LABEL: func.func private @sm80_split_k(
//  CHECK-SAME:     %[[A:.*]]: memref<100x512xf16>, %[[B:.*]]: memref<512x72xf16>, %[[BIAS:.*]]: memref<1x72xf16>, %[[Y:.*]]: memref<100x72xf16> {bufferize.result})
//  CHECK-SAME:     dnn.config_reason = "K split 3 ways (6 K steps of 32 a split), the f32 partials summed in split order by a second launch that runs the epilogue"
//   CHECK-NOT:   linalg.generic
//       CHECK:   %[[WS:.*]] = memref.alloc() : memref<3x1x100x72xf32>
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c12, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c128, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c29184_i32 {
//       CHECK:     %[[BLOCK:.*]] = gpu.block_id  x
//       CHECK:     %[[SPLIT:.*]] = arith.divui %[[BLOCK]], %c4 : index
//       CHECK:     %[[FIRST:.*]] = arith.muli %[[SPLIT]], %c6 : index
//       CHECK:     %[[LEFT:.*]] = arith.subi %c16, %[[FIRST]] : index
//       CHECK:     %[[COUNT:.*]] = arith.minui %[[LEFT]], %c6 : index
//       CHECK:     scf.for %{{.*}} = %c0 to %[[COUNT]] step %c1
//       CHECK:       nvvm.mma.sync
//       CHECK:     nvvm.cp.async.wait.group 0
//   CHECK-NOT:     vector.store %{{.*}}, %[[Y]]
//       CHECK:     scf.if
//  CHECK-NEXT:       vector.store %{{.*}}, %[[WS]][%[[SPLIT]], %c0, %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<3x1x100x72xf32>, vector<2xf32>
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c15, {{.*}} = %c1, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1)
//       CHECK:     %[[P0:.*]] = vector.load %[[WS]][%c0, %c0, %[[ROW:.*]], %[[COL:.*]]] {alignment = 8 : i64} : memref<3x1x100x72xf32>, vector<2xf32>
//  CHECK-NEXT:     %[[P1:.*]] = vector.load %[[WS]][%c1, %c0, %[[ROW]], %[[COL]]]
//  CHECK-NEXT:     %[[S01:.*]] = arith.addf %[[P0]], %[[P1]] : vector<2xf32>
//  CHECK-NEXT:     %[[P2:.*]] = vector.load %[[WS]][%c2, %c0, %[[ROW]], %[[COL]]]
//  CHECK-NEXT:     arith.addf %[[S01]], %[[P2]] : vector<2xf32>
//       CHECK:     vector.load %[[BIAS]][%c0, %[[COL]]]
//       CHECK:     arith.maximumf
//       CHECK:     vector.store %{{.*}}, %[[Y]][%[[ROW]], %[[COL]]] {alignment = 4 : i64} : memref<100x72xf16>, vector<2xf16>
func.func private @sm80_split_k(%A: memref<100x512xf16>, %B: memref<512x72xf16>, %bias: memref<1x72xf16>, %Y: memref<100x72xf16> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [128, 1, 1], split = 3 : i64, stages = 3 : i64, strategy = "tc-sm80", tile = [64, 64, 32]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %C = memref.alloc() {alignment = 64 : i64} : memref<100x72xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<100x72xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<100x512xf16>, memref<512x72xf16>) outs(%C : memref<100x72xf32>) {
  ^bb0(%x: f16, %w: f16, %acc: f32):
    %0 = arith.extf %x : f16 to f32
    %1 = arith.extf %w : f16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %acc, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%C, %bias : memref<100x72xf32>, memref<1x72xf16>) outs(%Y : memref<100x72xf16>) {
  ^bb0(%c: f32, %b: f16, %out: f16):
    %0 = arith.extf %b : f16 to f32
    %1 = arith.addf %c, %0 : f32
    %2 = arith.maximumf %1, %zero : f32
    %3 = arith.truncf %2 : f32 to f16
    linalg.yield %3 : f16
  }
  return
}

// -----

#map = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#map1 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>
#map2 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, 0, d5)>
#map3 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
#map4 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, 0)>
#map5 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map6 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#map7 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, 0, d5, d4)>
#map8 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5, d3)>
#map9 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5, d4)>
#map10 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>

// The sdpa backward above configured tc-sm80 (sm80/flash_backward.py): two
// launches of 8 warps with delta in a buffer between them, no TMA
// descriptors. The dQ kernel, a block per (query tile, batch x head): Q and
// dO (128 rows each) and 2 stages of a K and a V tile of 64 rows in 73728
// bytes, cp.async copies, delta into the buffer, S and dP by ldmatrix and
// mma.sync m16n8k16, dQ += dS K with K read transposed. Then the dK dV
// kernel, a block per (kv tile, batch x kv head), K and V resident, Q and
// dO tiles of 64 query rows through the ring; delta read back.
// CHECK-LABEL: func.func private @sdpa_backward_sm80(
//  CHECK-SAME:     %[[Q:[^:]*]]: memref<1x4x64x64xbf16>, %[[K:[^:]*]]: memref<1x2x96x64xbf16>, %[[V:[^:]*]]: memref<1x2x96x64xbf16>, %[[O:[^:]*]]: memref<1x4x64x64xbf16>, %[[DO:[^:]*]]: memref<1x4x64x64xbf16>, %[[STATS:[^:]*]]: memref<1x4x64x1xf32>, %[[DQ:[^:]*]]: memref<1x4x64x64xbf16> {bufferize.result}, %[[DK:[^:]*]]: memref<1x2x96x64xbf16> {bufferize.result}, %[[DV:[^:]*]]: memref<1x2x96x64xbf16> {bufferize.result})
//  CHECK-SAME:     dnn.config = {block = [256, 1, 1], stages = 2 : i64, strategy = "tc-sm80", tile = [64, 64]}, dnn.config_reason = "sdpa_backward; attention backward on mma.sync: a dQ kernel (128 query rows a block over 8 warps, 64 kv rows a step; delta = rowsum(dO o O) into a workspace) and a dK dV kernel (128 kv rows a block, 64 query rows a step, the group of query heads in turn), K, V and Q, dO through cp.async rings of 2 stages, no atomics (deterministic)"
//   CHECK-NOT:   linalg.
//   CHECK-NOT:   nvgpu.tma
//       CHECK:   %[[DELTA:.*]] = memref.alloc() : memref<1x4x64xf32>
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c4, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c73728_i32 {
//       CHECK:     nvvm.cp.async.shared.global
//       CHECK:     memref.store %{{.*}}, %[[DELTA]]
//       CHECK:     nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<row>
//       CHECK:     nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
//       CHECK:     nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>
//       CHECK:     vector.store {{.*}}, %[[DQ]]
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c2, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c73728_i32 {
//       CHECK:     memref.load %[[DELTA]]
//       CHECK:     nvvm.mma.sync
//       CHECK:     nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>
//       CHECK:     vector.store {{.*}}, %[[DK]]
//       CHECK:     vector.store {{.*}}, %[[DV]]
func.func private @sdpa_backward_sm80(%q: memref<1x4x64x64xbf16>, %k: memref<1x2x96x64xbf16>, %v: memref<1x2x96x64xbf16>, %o: memref<1x4x64x64xbf16>, %do: memref<1x4x64x64xbf16>, %stats: memref<1x4x64x1xf32>, %dq: memref<1x4x64x64xbf16> {bufferize.result}, %dk: memref<1x2x96x64xbf16> {bufferize.result}, %dv: memref<1x2x96x64xbf16> {bufferize.result}) attributes {dnn.anchor = "sdpa_backward", dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa_backward", operands = array<i64: 0, 1, 2, 3, 4, 5, -1, -1, -1>, padding = false, results = array<i64: 0, 1, 2, -1>, returned = 3 : i64, scale = 1.250000e-01 : f64, window = 0 : i64}, dnn.config = {block = [256, 1, 1], stages = 2 : i64, strategy = "tc-sm80", tile = [64, 64]}, dnn.config_reason = "sdpa_backward", dnn.kernel} {
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 1.250000e-01 : f32
  %cst_1 = arith.constant 0.000000e+00 : f32
  %expand_shape = memref.expand_shape %q [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 64] : memref<1x4x64x64xbf16> into memref<1x2x2x64x64xbf16>
  %expand_shape_2 = memref.expand_shape %k [[0], [1], [2, 3], [4]] output_shape [1, 2, 1, 96, 64] : memref<1x2x96x64xbf16> into memref<1x2x1x96x64xbf16>
  %expand_shape_3 = memref.expand_shape %do [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 64] : memref<1x4x64x64xbf16> into memref<1x2x2x64x64xbf16>
  %expand_shape_4 = memref.expand_shape %stats [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 1] : memref<1x4x64x1xf32> into memref<1x2x2x64x1xf32>
  %expand_shape_5 = memref.expand_shape %k [[0], [1], [2], [3, 4]] output_shape [1, 2, 96, 1, 64] : memref<1x2x96x64xbf16> into memref<1x2x96x1x64xbf16>
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x96xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<1x2x2x64x96xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  %alloc_6 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x96xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc : memref<1x2x2x64x96xf32>) outs(%alloc_6 : memref<1x2x2x64x96xf32>)
  linalg.generic {indexing_maps = [#map1, #map2, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expand_shape, %expand_shape_5 : memref<1x2x2x64x64xbf16>, memref<1x2x96x1x64xbf16>) outs(%alloc_6 : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: bf16, %in_17: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_17 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  %alloc_7 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x96xf32>
  linalg.generic {indexing_maps = [#map4, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%expand_shape_4, %alloc_6 : memref<1x2x2x64x1xf32>, memref<1x2x2x64x96xf32>) outs(%alloc_7 : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: f32, %in_17: f32, %out: f32):
    %0 = linalg.index 3 : index
    %1 = linalg.index 4 : index
    %2 = arith.mulf %in_17, %cst_0 : f32
    %3 = arith.index_cast %0 : index to i64
    %4 = arith.uitofp %3 : i64 to f32
    %5 = arith.index_cast %1 : index to i64
    %6 = arith.uitofp %5 : i64 to f32
    %7 = arith.cmpf ogt, %6, %4 : f32
    %8 = arith.select %7, %cst, %2 : f32
    %9 = arith.subf %8, %in : f32
    %10 = math.exp %9 : f32
    %11 = arith.cmpf oeq, %in, %cst : f32
    %12 = arith.select %11, %cst_1, %10 : f32
    linalg.yield %12 : f32
  }
  %alloc_8 = memref.alloc() {alignment = 64 : i64} : memref<1x4x64x1xf32>
  linalg.generic {indexing_maps = [#map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc_8 : memref<1x4x64x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#map5, #map5, #map6], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%do, %o : memref<1x4x64x64xbf16>, memref<1x4x64x64xbf16>) outs(%alloc_8 : memref<1x4x64x1xf32>) {
  ^bb0(%in: bf16, %in_17: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_17 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  %expand_shape_9 = memref.expand_shape %alloc_8 [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 1] : memref<1x4x64x1xf32> into memref<1x2x2x64x1xf32>
  %expand_shape_10 = memref.expand_shape %v [[0], [1], [2], [3, 4]] output_shape [1, 2, 96, 1, 64] : memref<1x2x96x64xbf16> into memref<1x2x96x1x64xbf16>
  linalg.generic {indexing_maps = [#map1, #map2, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expand_shape_3, %expand_shape_10 : memref<1x2x2x64x64xbf16>, memref<1x2x96x1x64xbf16>) outs(%alloc : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: bf16, %in_17: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_17 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#map, #map, #map4, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_7, %alloc, %expand_shape_9 : memref<1x2x2x64x96xf32>, memref<1x2x2x64x96xf32>, memref<1x2x2x64x1xf32>) outs(%alloc : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: f32, %in_17: f32, %in_18: f32, %out: f32):
    %0 = arith.subf %in_17, %in_18 : f32
    %1 = arith.mulf %in, %0 : f32
    linalg.yield %1 : f32
  }
  %alloc_11 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x64xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_11 : memref<1x2x2x64x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#map1, #map7, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc, %expand_shape_2 : memref<1x2x2x64x96xf32>, memref<1x2x1x96x64xbf16>) outs(%alloc_11 : memref<1x2x2x64x64xf32>) {
  ^bb0(%in: f32, %in_17: bf16, %out: f32):
    %0 = arith.extf %in_17 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %alloc_12 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x64xbf16>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_11 : memref<1x2x2x64x64xf32>) outs(%alloc_12 : memref<1x2x2x64x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.mulf %in, %cst_0 : f32
    %1 = arith.truncf %0 : f32 to bf16
    linalg.yield %1 : bf16
  }
  %alloc_13 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x96x64xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_13 : memref<1x2x2x96x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  %alloc_14 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x96x64xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_13 : memref<1x2x2x96x64xf32>) outs(%alloc_14 : memref<1x2x2x96x64xf32>)
  linalg.generic {indexing_maps = [#map8, #map9, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc, %expand_shape : memref<1x2x2x64x96xf32>, memref<1x2x2x64x64xbf16>) outs(%alloc_14 : memref<1x2x2x96x64xf32>) {
  ^bb0(%in: f32, %in_17: bf16, %out: f32):
    %0 = arith.extf %in_17 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %alloc_15 = memref.alloc() {alignment = 64 : i64} : memref<1x2x96x64xf32>
  linalg.generic {indexing_maps = [#map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc_15 : memref<1x2x96x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  %alloc_16 = memref.alloc() {alignment = 64 : i64} : memref<1x2x96x64xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_15 : memref<1x2x96x64xf32>) outs(%alloc_16 : memref<1x2x96x64xf32>)
  linalg.generic {indexing_maps = [#map, #map10], iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel"]} ins(%alloc_14 : memref<1x2x2x96x64xf32>) outs(%alloc_16 : memref<1x2x96x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%alloc_16 : memref<1x2x96x64xf32>) outs(%dk : memref<1x2x96x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.mulf %in, %cst_0 : f32
    %1 = arith.truncf %0 : f32 to bf16
    linalg.yield %1 : bf16
  }
  linalg.generic {indexing_maps = [#map8, #map9, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc_7, %expand_shape_3 : memref<1x2x2x64x96xf32>, memref<1x2x2x64x64xbf16>) outs(%alloc_13 : memref<1x2x2x96x64xf32>) {
  ^bb0(%in: f32, %in_17: bf16, %out: f32):
    %0 = arith.extf %in_17 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [#map, #map10], iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel"]} ins(%alloc_13 : memref<1x2x2x96x64xf32>) outs(%alloc_15 : memref<1x2x96x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%alloc_15 : memref<1x2x96x64xf32>) outs(%dv : memref<1x2x96x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  %collapse_shape = memref.collapse_shape %alloc_12 [[0], [1, 2], [3], [4]] : memref<1x2x2x64x64xbf16> into memref<1x4x64x64xbf16>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<1x4x64x64xbf16>) outs(%dq : memref<1x4x64x64xbf16>)
  return
}

// -----

#map = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#map1 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>
#map2 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, 0, d5)>
#map3 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
#map4 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, 0)>
#map5 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map6 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
#map7 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, 0, d5, d4)>
#map8 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5, d3)>
#map9 = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5, d4)>
#map10 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>


// The same backward configured tc-sm80 with fused = 1
// (sm80/flash_backward_fused.py): three launches. The preprocess writes
// delta and zeroes the f32 dQ workspace; the fused kernel (the dK dV
// kernel's block, 92160 bytes: K, V, the ring and a dSᵀ tile of 128 rows
// of 144 bytes) stores each step's dSᵀ pairs to shared memory, meets at a
// barrier, multiplies dS by K (both by ldmatrix.trans) and adds dQ_i into
// the workspace by red.global.add.f32; the conversion writes dq.
// CHECK-LABEL: func.func private @sdpa_backward_sm80_fused(
//  CHECK-SAME:     %[[Q:[^:]*]]: memref<1x4x64x64xbf16>, %[[K:[^:]*]]: memref<1x2x96x64xbf16>, %[[V:[^:]*]]: memref<1x2x96x64xbf16>, %[[O:[^:]*]]: memref<1x4x64x64xbf16>, %[[DO:[^:]*]]: memref<1x4x64x64xbf16>, %[[STATS:[^:]*]]: memref<1x4x64x1xf32>, %[[DQ:[^:]*]]: memref<1x4x64x64xbf16> {bufferize.result}, %[[DK:[^:]*]]: memref<1x2x96x64xbf16> {bufferize.result}, %[[DV:[^:]*]]: memref<1x2x96x64xbf16> {bufferize.result})
//  CHECK-SAME:     dnn.config = {block = [256, 1, 1], fused = 1 : i64, stages = 2 : i64, strategy = "tc-sm80", tile = [64, 64]}, dnn.config_reason = "sdpa_backward; attention backward on mma.sync, fused: delta = rowsum(dO o O) and a zeroed f32 dQ workspace first; then one kernel (128 kv rows a block over 8 warps, 64 query rows a step, the group of query heads in turn, Q and dO through a cp.async ring of 2 stages, five products a step), dQ added into the workspace by red.global.add.f32 (not deterministic: the order of the adds varies); then dQ converted"
//   CHECK-NOT:   linalg.
//       CHECK:   %[[DELTA:.*]] = memref.alloc() : memref<1x4x64xf32>
//       CHECK:   %[[SUM:.*]] = memref.alloc() : memref<1x4x64x64xf32>
//       CHECK:   gpu.launch {{.*}} threads({{.*}}) in ({{.*}} = %c128, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c0_i32 {
//       CHECK:     memref.store %{{.*}}, %[[DELTA]]
//       CHECK:     vector.store %{{.*}}, %[[SUM]]
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c2, {{.*}} = %c1) threads({{.*}}) in ({{.*}} = %c256, {{.*}} = %c1, {{.*}} = %c1) dynamic_shared_memory_size %c92160_i32 {
//       CHECK:     memref.load %[[DELTA]]
//       CHECK:     nvvm.mma.sync
//       CHECK:     llvm.store {{.*}} : i32, !llvm.ptr<3>
//       CHECK:     gpu.barrier
//       CHECK:     nvvm.ldmatrix {{.*}}layout = #nvvm.mma_layout<col>
//       CHECK:     llvm.inline_asm has_side_effects "red.global.add.f32 [$0], $1;", "l,f"
//       CHECK:     vector.store {{.*}}, %[[DK]]
//       CHECK:     vector.store {{.*}}, %[[DV]]
//       CHECK:   gpu.launch
//       CHECK:     vector.load %[[SUM]]
//       CHECK:     vector.store {{.*}}, %[[DQ]]
func.func private @sdpa_backward_sm80_fused(%q: memref<1x4x64x64xbf16>, %k: memref<1x2x96x64xbf16>, %v: memref<1x2x96x64xbf16>, %o: memref<1x4x64x64xbf16>, %do: memref<1x4x64x64xbf16>, %stats: memref<1x4x64x1xf32>, %dq: memref<1x4x64x64xbf16> {bufferize.result}, %dk: memref<1x2x96x64xbf16> {bufferize.result}, %dv: memref<1x2x96x64xbf16> {bufferize.result}) attributes {dnn.anchor = "sdpa_backward", dnn.attention = {causal = true, diagonal = "top_left", op = "sdpa_backward", operands = array<i64: 0, 1, 2, 3, 4, 5, -1, -1, -1>, padding = false, results = array<i64: 0, 1, 2, -1>, returned = 3 : i64, scale = 1.250000e-01 : f64, window = 0 : i64}, dnn.config = {block = [256, 1, 1], fused = 1 : i64, stages = 2 : i64, strategy = "tc-sm80", tile = [64, 64]}, dnn.config_reason = "sdpa_backward", dnn.kernel} {
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 1.250000e-01 : f32
  %cst_1 = arith.constant 0.000000e+00 : f32
  %expand_shape = memref.expand_shape %q [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 64] : memref<1x4x64x64xbf16> into memref<1x2x2x64x64xbf16>
  %expand_shape_2 = memref.expand_shape %k [[0], [1], [2, 3], [4]] output_shape [1, 2, 1, 96, 64] : memref<1x2x96x64xbf16> into memref<1x2x1x96x64xbf16>
  %expand_shape_3 = memref.expand_shape %do [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 64] : memref<1x4x64x64xbf16> into memref<1x2x2x64x64xbf16>
  %expand_shape_4 = memref.expand_shape %stats [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 1] : memref<1x4x64x1xf32> into memref<1x2x2x64x1xf32>
  %expand_shape_5 = memref.expand_shape %k [[0], [1], [2], [3, 4]] output_shape [1, 2, 96, 1, 64] : memref<1x2x96x64xbf16> into memref<1x2x96x1x64xbf16>
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x96xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<1x2x2x64x96xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  %alloc_6 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x96xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc : memref<1x2x2x64x96xf32>) outs(%alloc_6 : memref<1x2x2x64x96xf32>)
  linalg.generic {indexing_maps = [#map1, #map2, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expand_shape, %expand_shape_5 : memref<1x2x2x64x64xbf16>, memref<1x2x96x1x64xbf16>) outs(%alloc_6 : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: bf16, %in_17: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_17 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  %alloc_7 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x96xf32>
  linalg.generic {indexing_maps = [#map4, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%expand_shape_4, %alloc_6 : memref<1x2x2x64x1xf32>, memref<1x2x2x64x96xf32>) outs(%alloc_7 : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: f32, %in_17: f32, %out: f32):
    %0 = linalg.index 3 : index
    %1 = linalg.index 4 : index
    %2 = arith.mulf %in_17, %cst_0 : f32
    %3 = arith.index_cast %0 : index to i64
    %4 = arith.uitofp %3 : i64 to f32
    %5 = arith.index_cast %1 : index to i64
    %6 = arith.uitofp %5 : i64 to f32
    %7 = arith.cmpf ogt, %6, %4 : f32
    %8 = arith.select %7, %cst, %2 : f32
    %9 = arith.subf %8, %in : f32
    %10 = math.exp %9 : f32
    %11 = arith.cmpf oeq, %in, %cst : f32
    %12 = arith.select %11, %cst_1, %10 : f32
    linalg.yield %12 : f32
  }
  %alloc_8 = memref.alloc() {alignment = 64 : i64} : memref<1x4x64x1xf32>
  linalg.generic {indexing_maps = [#map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc_8 : memref<1x4x64x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#map5, #map5, #map6], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%do, %o : memref<1x4x64x64xbf16>, memref<1x4x64x64xbf16>) outs(%alloc_8 : memref<1x4x64x1xf32>) {
  ^bb0(%in: bf16, %in_17: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_17 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  %expand_shape_9 = memref.expand_shape %alloc_8 [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 64, 1] : memref<1x4x64x1xf32> into memref<1x2x2x64x1xf32>
  %expand_shape_10 = memref.expand_shape %v [[0], [1], [2], [3, 4]] output_shape [1, 2, 96, 1, 64] : memref<1x2x96x64xbf16> into memref<1x2x96x1x64xbf16>
  linalg.generic {indexing_maps = [#map1, #map2, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%expand_shape_3, %expand_shape_10 : memref<1x2x2x64x64xbf16>, memref<1x2x96x1x64xbf16>) outs(%alloc : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: bf16, %in_17: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.extf %in_17 : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#map, #map, #map4, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_7, %alloc, %expand_shape_9 : memref<1x2x2x64x96xf32>, memref<1x2x2x64x96xf32>, memref<1x2x2x64x1xf32>) outs(%alloc : memref<1x2x2x64x96xf32>) {
  ^bb0(%in: f32, %in_17: f32, %in_18: f32, %out: f32):
    %0 = arith.subf %in_17, %in_18 : f32
    %1 = arith.mulf %in, %0 : f32
    linalg.yield %1 : f32
  }
  %alloc_11 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x64xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_11 : memref<1x2x2x64x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  linalg.generic {indexing_maps = [#map1, #map7, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc, %expand_shape_2 : memref<1x2x2x64x96xf32>, memref<1x2x1x96x64xbf16>) outs(%alloc_11 : memref<1x2x2x64x64xf32>) {
  ^bb0(%in: f32, %in_17: bf16, %out: f32):
    %0 = arith.extf %in_17 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %alloc_12 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x64x64xbf16>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_11 : memref<1x2x2x64x64xf32>) outs(%alloc_12 : memref<1x2x2x64x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.mulf %in, %cst_0 : f32
    %1 = arith.truncf %0 : f32 to bf16
    linalg.yield %1 : bf16
  }
  %alloc_13 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x96x64xf32>
  linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_13 : memref<1x2x2x96x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  %alloc_14 = memref.alloc() {alignment = 64 : i64} : memref<1x2x2x96x64xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_13 : memref<1x2x2x96x64xf32>) outs(%alloc_14 : memref<1x2x2x96x64xf32>)
  linalg.generic {indexing_maps = [#map8, #map9, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc, %expand_shape : memref<1x2x2x64x96xf32>, memref<1x2x2x64x64xbf16>) outs(%alloc_14 : memref<1x2x2x96x64xf32>) {
  ^bb0(%in: f32, %in_17: bf16, %out: f32):
    %0 = arith.extf %in_17 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %alloc_15 = memref.alloc() {alignment = 64 : i64} : memref<1x2x96x64xf32>
  linalg.generic {indexing_maps = [#map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc_15 : memref<1x2x96x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst_1 : f32
  }
  %alloc_16 = memref.alloc() {alignment = 64 : i64} : memref<1x2x96x64xf32>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_15 : memref<1x2x96x64xf32>) outs(%alloc_16 : memref<1x2x96x64xf32>)
  linalg.generic {indexing_maps = [#map, #map10], iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel"]} ins(%alloc_14 : memref<1x2x2x96x64xf32>) outs(%alloc_16 : memref<1x2x96x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%alloc_16 : memref<1x2x96x64xf32>) outs(%dk : memref<1x2x96x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.mulf %in, %cst_0 : f32
    %1 = arith.truncf %0 : f32 to bf16
    linalg.yield %1 : bf16
  }
  linalg.generic {indexing_maps = [#map8, #map9, #map3], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%alloc_7, %expand_shape_3 : memref<1x2x2x64x96xf32>, memref<1x2x2x64x64xbf16>) outs(%alloc_13 : memref<1x2x2x96x64xf32>) {
  ^bb0(%in: f32, %in_17: bf16, %out: f32):
    %0 = arith.extf %in_17 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [#map, #map10], iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel"]} ins(%alloc_13 : memref<1x2x2x96x64xf32>) outs(%alloc_15 : memref<1x2x96x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#map5, #map5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%alloc_15 : memref<1x2x96x64xf32>) outs(%dv : memref<1x2x96x64xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  %collapse_shape = memref.collapse_shape %alloc_12 [[0], [1, 2], [3], [4]] : memref<1x2x2x64x64xbf16> into memref<1x4x64x64xbf16>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<1x4x64x64xbf16>) outs(%dq : memref<1x4x64x64xbf16>)
  return
}

// -----

// A filter gradient with its bias gradient (dnn-fuse{conv_bias_grad}): the
// sum of dy and its conversion to db's type leave no linalg op behind; the
// consumers load their 16-byte pieces of dy's swizzled stage, add them,
// add the lanes' sums by xor shuffles, and store db (sm90/bias_grad.py).
// CHECK-LABEL: func.func private @conv_wgrad_bias_grad(
//  CHECK-SAME:     memref<128x64x3x3xbf16, strided<[576, 1, 192, 64]>> {bufferize.result}, %[[DB:[^:]*]]: memref<1x128x1x1xbf16>
//  CHECK-SAME:     dnn.config_reason = "conv_wgrad; implicit GEMM (wgrad): x read by TMA in im2col mode, 9 filter taps x 64 channels; {{.*}}; the bias gradient (sum of dy) taken from dy's tiles in shared memory by the first column of tiles"
//   CHECK-NOT:   linalg.generic
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c9,
//       CHECK:     nvvm.wgmma.mma_async
//       CHECK:     nvvm.wgmma.commit.group.sync.aligned
//       CHECK:     llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<8xbf16>
//       CHECK:     arith.extf %{{.*}} : vector<8xbf16> to vector<8xf32>
//       CHECK:     nvvm.wgmma.wait.group.sync.aligned 1
//       CHECK:     gpu.shuffle  xor
//       CHECK:     memref.store %{{.*}}, %[[DB]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<1x128x1x1xbf16>
//   CHECK-NOT:   linalg.generic
#wb = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#wb1 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#wb2 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d2, d3 + d6, d4 + d7)>
#wb3 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d0, d1, d6, d7)>
#wb4 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
#wb5 = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
func.func private @conv_wgrad_bias_grad(%dy: memref<2x128x8x8xbf16, strided<[8192, 1, 1024, 128]>>, %x: memref<2x64x8x8xbf16, strided<[4096, 1, 512, 64]>>, %dw: memref<128x64x3x3xbf16, strided<[576, 1, 192, 64]>> {bufferize.result}, %db: memref<1x128x1x1xbf16> {bufferize.result}) attributes {dnn.anchor = "conv_wgrad", dnn.config = {block = [384, 1, 1], stages = 8 : i64, strategy = "tc-sm90", tile = [128, 64, 64]}, dnn.config_reason = "conv_wgrad", dnn.conv = {dilation = array<i64: 1, 1>, direction = "wgrad", flip = false, groups = 1 : i64, operands = array<i64: 1, 0>, post = array<i64: 1, 1>, pre = array<i64: 1, 1>, stride = array<i64: 1, 1>}, dnn.kernel} {
  %cst = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<2x64x10x10xf32>
  linalg.generic {indexing_maps = [#wb], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<2x64x10x10xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<2x64x8x8xf32>
  linalg.generic {indexing_maps = [#wb, #wb], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<2x64x8x8xbf16, strided<[4096, 1, 512, 64]>>) outs(%alloc_0 : memref<2x64x8x8xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
  }
  %subview = memref.subview %alloc[0, 0, 1, 1] [2, 64, 8, 8] [1, 1, 1, 1] : memref<2x64x10x10xf32> to memref<2x64x8x8xf32, strided<[6400, 100, 10, 1], offset: 11>>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%alloc_0 : memref<2x64x8x8xf32>) outs(%subview : memref<2x64x8x8xf32, strided<[6400, 100, 10, 1], offset: 11>>)
  %expand_shape = memref.expand_shape %alloc [[0], [1, 2], [3], [4]] output_shape [2, 1, 64, 10, 10] : memref<2x64x10x10xf32> into memref<2x1x64x10x10xf32>
  %expand_shape_1 = memref.expand_shape %dy [[0], [1, 2], [3], [4]] output_shape [2, 1, 128, 8, 8] : memref<2x128x8x8xbf16, strided<[8192, 1, 1024, 128]>> into memref<2x1x128x8x8xbf16, strided<[8192, 128, 1, 1024, 128]>>
  %alloc_2 = memref.alloc() {alignment = 64 : i64} : memref<1x128x64x3x3xf32>
  linalg.generic {indexing_maps = [#wb1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc_2 : memref<1x128x64x3x3xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  linalg.generic {indexing_maps = [#wb2, #wb3, #wb4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%expand_shape, %expand_shape_1 : memref<2x1x64x10x10xf32>, memref<2x1x128x8x8xbf16, strided<[8192, 128, 1, 1024, 128]>>) outs(%alloc_2 : memref<1x128x64x3x3xf32>) {
  ^bb0(%in: f32, %in_5: bf16, %out: f32):
    %0 = arith.extf %in_5 : bf16 to f32
    %1 = arith.mulf %in, %0 : f32
    %2 = arith.addf %out, %1 : f32
    linalg.yield %2 : f32
  }
  %alloc_3 = memref.alloc() {alignment = 64 : i64} : memref<1x128x64x3x3xbf16>
  linalg.generic {indexing_maps = [#wb1, #wb1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc_2 : memref<1x128x64x3x3xf32>) outs(%alloc_3 : memref<1x128x64x3x3xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  %collapse_shape = memref.collapse_shape %alloc_3 [[0, 1], [2], [3], [4]] : memref<1x128x64x3x3xbf16> into memref<128x64x3x3xbf16>
  %alloc_4 = memref.alloc() {alignment = 64 : i64} : memref<1x128x1x1xf32>
  linalg.generic {indexing_maps = [#wb], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc_4 : memref<1x128x1x1xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  linalg.generic {indexing_maps = [#wb, #wb5], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} ins(%dy : memref<2x128x8x8xbf16, strided<[8192, 1, 1024, 128]>>) outs(%alloc_4 : memref<1x128x1x1xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#wb, #wb], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%alloc_4 : memref<1x128x1x1xf32>) outs(%db : memref<1x128x1x1xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<128x64x3x3xbf16>) outs(%dw : memref<128x64x3x3xbf16, strided<[576, 1, 192, 64]>>)
  return
}

// -----

// A block-scaled fp8 GEMM (dnn.matmul_block_scaled's contraction: four
// inputs, the scales' maps dividing k and n by 128) on tc-sm90: one launch
// whose consumers read the scales of A and B from their buffers and run
// wgmma's fp8 form; the reason says the scales are applied per K step.

#bs_id = affine_map<(d0, d1) -> (d0, d1)>
#bs_a = affine_map<(d0, d1, d2) -> (d0, d2)>
#bs_b = affine_map<(d0, d1, d2) -> (d2, d1)>
#bs_sa = affine_map<(d0, d1, d2) -> (d0, d2 floordiv 128)>
#bs_sb = affine_map<(d0, d1, d2) -> (d2 floordiv 128, d1 floordiv 128)>
#bs_c = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func.func private @block_scaled(
//  CHECK-SAME:     %[[A:.*]]: memref<256x320xf8E4M3FN>, %[[B:.*]]: memref<320x192xf8E4M3FN, strided<[1, 320]>>, %[[SA:.*]]: memref<256x3xf32>, %[[SB:.*]]: memref<3x2xf32>, %[[Y:.*]]: memref<256x192xbf16> {bufferize.result})
//  CHECK-SAME:     dnn.config_reason = "block-scaled: each 128-wide K step summed apart (waited for and promoted before the next step), then scaled by its 1x128 scale of A and 128x128 scale of B into the accumulator
//       CHECK:   gpu.launch
//       CHECK:     memref.load %[[SB]]
//       CHECK:     memref.load %[[SA]]
// The first of a step's four wgmmas starts the temporary (scale-d zero).
//       CHECK:     nvvm.wgmma.mma_async {{.*}} D[<f32>, <zero>, <wrapped>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
//       CHECK:     nvvm.wgmma.mma_async {{.*}} D[<f32>, <one>, <wrapped>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
//   CHECK-NOT:   linalg.generic
func.func private @block_scaled(%A: memref<256x320xf8E4M3FN>, %B: memref<320x192xf8E4M3FN, strided<[1, 320]>>, %SA: memref<256x3xf32>, %SB: memref<3x2xf32>, %Y: memref<256x192xbf16> {bufferize.result}) attributes {dnn.anchor = "matmul_block_scaled", dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 64, 128]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %C = memref.alloc() {alignment = 64 : i64} : memref<256x192xf32>
  linalg.generic {indexing_maps = [#bs_id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<256x192xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#bs_a, #bs_b, #bs_sa, #bs_sb, #bs_c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B, %SA, %SB : memref<256x320xf8E4M3FN>, memref<320x192xf8E4M3FN, strided<[1, 320]>>, memref<256x3xf32>, memref<3x2xf32>) outs(%C : memref<256x192xf32>) {
  ^bb0(%x: f8E4M3FN, %w: f8E4M3FN, %s: f32, %t: f32, %acc: f32):
    %0 = arith.extf %x : f8E4M3FN to f32
    %1 = arith.extf %w : f8E4M3FN to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.mulf %s, %t : f32
    %4 = arith.mulf %2, %3 : f32
    %5 = arith.addf %acc, %4 : f32
    linalg.yield %5 : f32
  }
  linalg.generic {indexing_maps = [#bs_id, #bs_id], iterator_types = ["parallel", "parallel"]} ins(%C : memref<256x192xf32>) outs(%Y : memref<256x192xbf16>) {
  ^bb0(%c: f32, %out: bf16):
    %0 = arith.truncf %c : f32 to bf16
    linalg.yield %0 : bf16
  }
  return
}

// -----

// K steps in groups of 2 (promote_overlap; K = 320 is 3 steps: the first
// whole, then one group): the group's second step waits for all but its own
// wgmmas (wait_group 1) and promotes the first; the group ends waiting for
// all (wait_group 0).

#bs3_id = affine_map<(d0, d1) -> (d0, d1)>
#bs3_a = affine_map<(d0, d1, d2) -> (d0, d2)>
#bs3_b = affine_map<(d0, d1, d2) -> (d2, d1)>
#bs3_sa = affine_map<(d0, d1, d2) -> (d0, d2 floordiv 128)>
#bs3_sb = affine_map<(d0, d1, d2) -> (d2 floordiv 128, d1 floordiv 128)>
#bs3_c = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func.func private @block_scaled_groups(
//  CHECK-SAME:     dnn.config_reason = "block-scaled: each 128-wide K step summed apart (two temporaries alternating in groups of 2 steps, each step's promoted while the next step's wgmmas run), then scaled
//       CHECK:   gpu.launch
//       CHECK:     nvvm.wgmma.mma_async {{.*}} D[<f32>, <zero>, <wrapped>]
//       CHECK:     nvvm.wgmma.wait.group.sync.aligned 0
//       CHECK:     nvvm.wgmma.wait.group.sync.aligned 1
//       CHECK:     llvm.intr.fma
//       CHECK:     nvvm.wgmma.wait.group.sync.aligned 0
//   CHECK-NOT:   linalg.generic
func.func private @block_scaled_groups(%A: memref<256x320xf8E4M3FN>, %B: memref<320x128xf8E4M3FN, strided<[1, 320]>>, %SA: memref<256x3xf32>, %SB: memref<3x1xf32>, %C: memref<256x128xf32> {bufferize.result}) attributes {dnn.anchor = "matmul_block_scaled", dnn.config = {block = [384, 1, 1], promote_overlap = 2 : i64, stages = 4 : i64, strategy = "tc-sm90", tile = [128, 128, 128]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#bs3_id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<256x128xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#bs3_a, #bs3_b, #bs3_sa, #bs3_sb, #bs3_c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B, %SA, %SB : memref<256x320xf8E4M3FN>, memref<320x128xf8E4M3FN, strided<[1, 320]>>, memref<256x3xf32>, memref<3x1xf32>) outs(%C : memref<256x128xf32>) {
  ^bb0(%x: f8E4M3FN, %w: f8E4M3FN, %s: f32, %t: f32, %acc: f32):
    %0 = arith.extf %x : f8E4M3FN to f32
    %1 = arith.extf %w : f8E4M3FN to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.mulf %s, %t : f32
    %4 = arith.mulf %2, %3 : f32
    %5 = arith.addf %acc, %4 : f32
    linalg.yield %5 : f32
  }
  return
}

// -----

// A tile whose columns span two of B's scale blocks (N 256): each K step
// runs as two halves of 128 columns (m64n128k32), each waited for and
// promoted with its own scale of B.

#bs2_id = affine_map<(d0, d1) -> (d0, d1)>
#bs2_a = affine_map<(d0, d1, d2) -> (d0, d2)>
#bs2_b = affine_map<(d0, d1, d2) -> (d2, d1)>
#bs2_sa = affine_map<(d0, d1, d2) -> (d0, d2 floordiv 128)>
#bs2_sb = affine_map<(d0, d1, d2) -> (d2 floordiv 128, d1 floordiv 128)>
#bs2_c = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func.func private @block_scaled_wide_tile(
//  CHECK-SAME:     dnn.config_reason = "block-scaled: each 128-wide K step summed apart (waited for and promoted before the next step, in 2 parts of 128 columns, one scale of B each), then scaled
//       CHECK:   gpu.launch
// The scales of B of the tile's two column blocks.
//       CHECK:     memref.load %{{.*}}[%{{.*}}, %[[COL0:.*]]] : memref<3x2xf32>
//       CHECK:     memref.load %{{.*}}[%{{.*}}, %[[COL1:.*]]] : memref<3x2xf32>
// Each half's first wgmma starts its temporary.
//       CHECK:     nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 32>, D[<f32>, <zero>, <wrapped>]
//       CHECK:     nvvm.wgmma.wait.group.sync.aligned 0
//       CHECK:     nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 32>, D[<f32>, <zero>, <wrapped>]
//       CHECK:     nvvm.wgmma.wait.group.sync.aligned 0
//   CHECK-NOT:     n = 256
//   CHECK-NOT:   linalg.generic
func.func private @block_scaled_wide_tile(%A: memref<256x320xf8E4M3FN>, %B: memref<320x256xf8E4M3FN, strided<[1, 320]>>, %SA: memref<256x3xf32>, %SB: memref<3x2xf32>, %C: memref<256x256xf32> {bufferize.result}) attributes {dnn.anchor = "matmul_block_scaled", dnn.config = {block = [384, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tile = [128, 256, 128]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#bs2_id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<256x256xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#bs2_a, #bs2_b, #bs2_sa, #bs2_sb, #bs2_c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B, %SA, %SB : memref<256x320xf8E4M3FN>, memref<320x256xf8E4M3FN, strided<[1, 320]>>, memref<256x3xf32>, memref<3x2xf32>) outs(%C : memref<256x256xf32>) {
  ^bb0(%x: f8E4M3FN, %w: f8E4M3FN, %s: f32, %t: f32, %acc: f32):
    %0 = arith.extf %x : f8E4M3FN to f32
    %1 = arith.extf %w : f8E4M3FN to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.mulf %s, %t : f32
    %4 = arith.mulf %2, %3 : f32
    %5 = arith.addf %acc, %4 : f32
    linalg.yield %5 : f32
  }
  return
}

// -----

// Two temporaries beside the sum of a 256-wide tile would need 3 x 128 f32
// a thread: tc-sm90 refuses promote_overlap there, and tc-sm80 applies no
// block scales: simt-generic, with both reasons.

#bs4_id = affine_map<(d0, d1) -> (d0, d1)>
#bs4_a = affine_map<(d0, d1, d2) -> (d0, d2)>
#bs4_b = affine_map<(d0, d1, d2) -> (d2, d1)>
#bs4_sa = affine_map<(d0, d1, d2) -> (d0, d2 floordiv 128)>
#bs4_sb = affine_map<(d0, d1, d2) -> (d2 floordiv 128, d1 floordiv 128)>
#bs4_c = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func.func private @block_scaled_wide_overlap(
//  CHECK-SAME:     dnn.config = {block = [256, 1, 1], strategy = "simt-generic"}
//  CHECK-SAME:     dnn.config_reason = "tc-sm90 does not apply (promote_overlap with a tile 256 wide: expected at most 128 (the sum and two temporaries, 3 x 128 f32 a thread, exceed a consumer's 232 registers)), and tc-sm80 applies no block scales: simt-generic, one thread per output
//   CHECK-NOT:   gpu.launch
//       CHECK:   linalg.generic
func.func private @block_scaled_wide_overlap(%A: memref<256x320xf8E4M3FN>, %B: memref<320x256xf8E4M3FN, strided<[1, 320]>>, %SA: memref<256x3xf32>, %SB: memref<3x2xf32>, %C: memref<256x256xf32> {bufferize.result}) attributes {dnn.anchor = "matmul_block_scaled", dnn.config = {block = [384, 1, 1], promote_overlap = 4 : i64, stages = 4 : i64, strategy = "tc-sm90", tile = [128, 256, 128]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#bs4_id], iterator_types = ["parallel", "parallel"]} outs(%C : memref<256x256xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#bs4_a, #bs4_b, #bs4_sa, #bs4_sb, #bs4_c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B, %SA, %SB : memref<256x320xf8E4M3FN>, memref<320x256xf8E4M3FN, strided<[1, 320]>>, memref<256x3xf32>, memref<3x2xf32>) outs(%C : memref<256x256xf32>) {
  ^bb0(%x: f8E4M3FN, %w: f8E4M3FN, %s: f32, %t: f32, %acc: f32):
    %0 = arith.extf %x : f8E4M3FN to f32
    %1 = arith.extf %w : f8E4M3FN to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.mulf %s, %t : f32
    %4 = arith.mulf %2, %3 : f32
    %5 = arith.addf %acc, %4 : f32
    linalg.yield %5 : f32
  }
  return
}

// -----

#id51 = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
#x1 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
#w1 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
#y1 = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>

// A 1x1 forward convolution of unit stride and no padding whose config
// asks for ``tiled``: x's pixels are the rows of a [N*H*W, C] = [32, 64]
// matrix (channels-last, dense), so A is loaded as a matmul's, by a tiled
// descriptor of that matrix (boxes of 64 rows by 64 channels) and a 2-D
// copy at (c0, m0), not in im2col mode; the filter as [K, taps, C] boxes.
// CHECK-LABEL: func.func private @conv_fprop_1x1_tiled(
//  CHECK-SAME:     dnn.config_reason = "conv_fprop; implicit GEMM (fprop): x read as a matrix of pixels by channels with tiled TMA loads (1x1, unit stride, no padding), 1 filter taps x 64 channels
//   CHECK-NOT:   linalg.
//   CHECK-NOT:   im2col
//       CHECK:   %[[XV:.*]] = memref.reinterpret_cast %arg0 to offset: [0], sizes: [32, 64], strides: [64, 1]
//       CHECK:   %[[UX:.*]] = memref.cast %[[XV]]
//       CHECK:   %[[DX:.*]] = nvgpu.tma.create.descriptor %[[UX]] box[%c64, %c64] : memref<*xbf16> -> <tensor = memref<64x64xbf16, 3>, swizzle = swizzle_128b
//       CHECK:   %[[PX:.*]] = builtin.unrealized_conversion_cast %[[DX]]
//       CHECK:   %[[WV:.*]] = memref.reinterpret_cast %arg1 to offset: [0], sizes: [1, 32, 64], strides: [2048, 64, 1]
//       CHECK:   gpu.launch
//       CHECK:     nvvm.setmaxregister  decrease 40
//       CHECK:           nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[PX]], %[[FULL:[^,]*]], box[%{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
//       CHECK:           nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[FULL]], box[%{{.*}}, %{{.*}}, %{{.*}}] :
// CHECK-COUNT-4:         nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>, <wrapped>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
//   CHECK-NOT:   linalg.
func.func private @conv_fprop_1x1_tiled(%arg0: memref<2x64x4x4xbf16, strided<[1024, 1, 256, 64]>>, %arg1: memref<32x64x1x1xbf16>, %arg2: memref<2x32x4x4xbf16, strided<[512, 1, 128, 32]>> {bufferize.result}) attributes {dnn.anchor = "conv_fprop", dnn.config = {block = [256, 1, 1], stages = 8 : i64, strategy = "tc-sm90", tile = [64, 64, 64], tiled = 1 : i64}, dnn.config_reason = "conv_fprop", dnn.conv = {dilation = array<i64: 1, 1>, direction = "fprop", flip = false, groups = 1 : i64, operands = array<i64: 0, 1>, post = array<i64: 0, 0>, pre = array<i64: 0, 0>, stride = array<i64: 1, 1>}, dnn.kernel} {
  %cst = arith.constant 0.000000e+00 : f32
  %expand_shape = memref.expand_shape %arg0 [[0], [1, 2], [3], [4]] output_shape [2, 1, 64, 4, 4] : memref<2x64x4x4xbf16, strided<[1024, 1, 256, 64]>> into memref<2x1x64x4x4xbf16, strided<[1024, 64, 1, 256, 64]>>
  %expand_shape_0 = memref.expand_shape %arg1 [[0, 1], [2], [3], [4]] output_shape [1, 32, 64, 1, 1] : memref<32x64x1x1xbf16> into memref<1x32x64x1x1xbf16>
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<2x1x32x4x4xf32>
  linalg.generic {indexing_maps = [#id51], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<2x1x32x4x4xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  linalg.generic {indexing_maps = [#x1, #w1, #y1], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%expand_shape, %expand_shape_0 : memref<2x1x64x4x4xbf16, strided<[1024, 64, 1, 256, 64]>>, memref<1x32x64x1x1xbf16>) outs(%alloc : memref<2x1x32x4x4xf32>) {
  ^bb0(%in: bf16, %in_2: bf16, %out: f32):
    %0 = arith.extf %in_2 : bf16 to f32
    %1 = arith.extf %in : bf16 to f32
    %2 = arith.mulf %1, %0 : f32
    %3 = arith.addf %out, %2 : f32
    linalg.yield %3 : f32
  }
  %alloc_1 = memref.alloc() {alignment = 64 : i64} : memref<2x1x32x4x4xbf16>
  linalg.generic {indexing_maps = [#id51, #id51], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%alloc : memref<2x1x32x4x4xf32>) outs(%alloc_1 : memref<2x1x32x4x4xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  %collapse_shape = memref.collapse_shape %alloc_1 [[0], [1, 2], [3], [4]] : memref<2x1x32x4x4xbf16> into memref<2x32x4x4xbf16>
  linalg.copy {cast = #linalg.type_fn<cast_signed>} ins(%collapse_shape : memref<2x32x4x4xbf16>) outs(%arg2 : memref<2x32x4x4xbf16, strided<[512, 1, 128, 32]>>)
  return
}

// -----

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// A tail split (config tail_split = 4): 140 tiles of 64x64 over 132 blocks,
// the last wave's 8 split 4 ways along K's 4 steps (164 units). The
// scheduler's unit is a tail part from unit 132 on; a consumer's finish
// branches on it: a part stores its 8 vectors of 4 f32 a lane into its slot
// of the compact workspace (4 parts x 8 tiles x 4 warps x 1024 f32), fences
// and counts the warp's arrival (an i32 per warp of a tail tile); the last
// resets its counter and adds the 4 parts of each vector in split order (32 loads).
// The epilogue follows the branch once, where it says to run.
// CHECK-LABEL: func.func private @tail_split(
//       CHECK:   %[[P:.*]] = memref.alloc() : memref<131072xf32>
//       CHECK:   %[[N:.*]] = memref.alloc() : memref<32xi32>
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c132, {{.*}} = %c1, {{.*}} = %c1)
//       CHECK:       scf.for %[[U:.*]] = %{{.*}} to %c164 step %c132
//       CHECK:         arith.cmpi uge, %[[U]], %c132
//       CHECK:       %[[FIN:.*]]:2 = scf.if %{{.*}} -> (!llvm.struct<({{.*}})>, i1) {
//       CHECK-COUNT-8:   vector.store %{{.*}}, %[[P]][%{{.*}}] {alignment = 16 : i64} : memref<131072xf32>, vector<4xf32>
//       CHECK:         nvvm.memory.barrier <gpu>
//       CHECK:           memref.atomic_rmw addi %{{.*}}, %[[N]][%{{.*}}] : (i32, memref<32xi32>) -> i32
//       CHECK:         gpu.shuffle  idx
//       CHECK:           memref.store %{{.*}}, %[[N]][%{{.*}}] : memref<32xi32>
//       CHECK-COUNT-32:  vector.load %[[P]][%{{.*}}] {alignment = 16 : i64} : memref<131072xf32>, vector<4xf32>
//       CHECK:       scf.if %[[FIN]]#1 {
//       CHECK:   return
func.func private @tail_split(%A: memref<8960x256xbf16>, %B: memref<256x64xbf16, strided<[1, 256]>>, %C: memref<8960x64xbf16> {bufferize.result}) attributes {dnn.anchor = "matmul", dnn.config = {block = [256, 1, 1], stages = 4 : i64, strategy = "tc-sm90", tail_split = 4 : i64, tile = [64, 64, 64]}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %acc = memref.alloc() : memref<8960x64xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%acc : memref<8960x64xf32>) {
  ^bb0(%out: f32):
    linalg.yield %zero : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%A, %B : memref<8960x256xbf16>, memref<256x64xbf16, strided<[1, 256]>>) outs(%acc : memref<8960x64xf32>) {
  ^bb0(%x: bf16, %w: bf16, %a: f32):
    %0 = arith.extf %x : bf16 to f32
    %1 = arith.extf %w : bf16 to f32
    %2 = arith.mulf %0, %1 : f32
    %3 = arith.addf %a, %2 : f32
    linalg.yield %3 : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%acc : memref<8960x64xf32>) outs(%C : memref<8960x64xbf16>) {
  ^bb0(%v: f32, %out: bf16):
    %r = arith.truncf %v : f32 to bf16
    linalg.yield %r : bf16
  }
  return
}
