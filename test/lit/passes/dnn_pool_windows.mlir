// dnn-pool-windows lowers a simt-window kernel, a window reduction (marked
// dnn.window) with its pointwise epilogue, to one gpu.launch: each thread owns
// an output pixel and 8 channels of a channels-last x, and reads each of the
// 9 taps of its 3x3 window as one 16-byte vector (through an identity-layout
// view of x in memory order), without branches: a tap that may fall on
// padding reads a row clamped into x and a select puts -inf in its place;
// the relu and the cast run per channel and the 8 results are stored as one
// vector. A tile of outputs a thread loads the pixels its windows share once.
// A kernel that is not a window program goes to simt-generic, with the reason.

// RUN: dnnc-opt %s --split-input-file --pass-pipeline='builtin.module(dnn-pool-windows,canonicalize,cse)' | FileCheck %s

// CHECK-LABEL: func.func private @max_relu_channels_last(
//  CHECK-SAME:     %[[X:.*]]: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>, %[[Y:.*]]: memref<2x16x4x4xbf16, strided<[256, 1, 64, 16]>>)
//  CHECK-SAME:     strategy = "simt-window"
//       CHECK:   %[[NINF:.*]] = arith.constant dense<0xFF800000> : vector<8xf32>
//       CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %c1, {{.*}} = %c1, {{.*}} = %c1) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %c128, {{.*}} = %c1, {{.*}} = %c1)
//       CHECK:     %[[INSIDE:.*]] = arith.cmpi ult, %[[T]], %c64 : index
//       CHECK:     scf.if %[[INSIDE]] {
//       CHECK:       %[[XV:.*]] = memref.reinterpret_cast %[[X]] to offset: [0], sizes: [2, 8, 8, 16], strides: [1024, 128, 16, 1]
//       CHECK:       %[[H:.*]] = arith.subi %{{.*}}, %c1 : index
//  CHECK-NEXT:       %[[REAL:.*]] = arith.cmpi ult, %[[H]], %c8 : index
//  CHECK-NEXT:       %[[ROW:.*]] = arith.minui %[[H]], %c7 : index
//       CHECK:       %[[V:.*]] = vector.load %[[XV]][%{{.*}}, %[[ROW]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<2x8x8x16xbf16>, vector<8xbf16>
//  CHECK-NEXT:       %[[F:.*]] = arith.extf %[[V]]
//  CHECK-NEXT:       arith.select %{{.*}}, %[[F]], %[[NINF]] : vector<8xf32>
//   CHECK-NOT:       scf.if
// CHECK-COUNT-8:     arith.maximumf %{{.*}}, %{{.*}} : vector<8xf32>
//       CHECK:       vector.extract
//  CHECK-NEXT:       arith.maximumf
//  CHECK-NEXT:       arith.truncf
//       CHECK:       %[[YV:.*]] = memref.reinterpret_cast %[[Y]] to offset: [0], sizes: [2, 4, 4, 16], strides: [256, 64, 16, 1]
//  CHECK-NEXT:       %[[R:.*]] = vector.from_elements {{.*}} : vector<8xbf16>
//  CHECK-NEXT:       vector.store %[[R]], %[[YV]][{{.*}}] {alignment = 16 : i64} : memref<2x4x4x16xbf16>, vector<8xbf16>
//   CHECK-NOT:   linalg.generic

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#win = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>

func.func private @max_relu_channels_last(%x: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>, %y: memref<2x16x4x4xbf16, strided<[256, 1, 64, 16]>>) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-window", vector = 8 : i64}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %c8 = arith.constant 8 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %ninf = arith.constant 0xFF800000 : f32
  %acc = memref.alloc() : memref<2x16x4x4xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%acc : memref<2x16x4x4xf32>) {
  ^bb0(%o: f32):
    linalg.yield %ninf : f32
  }
  %taps = memref.alloc() : memref<3x3xf32>
  linalg.generic {indexing_maps = [#win, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%taps : memref<3x3xf32>) outs(%acc : memref<2x16x4x4xf32>) attrs = {dnn.window = {count_include_pad = false, mode = "max", pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, window = array<i64: 3, 3>}} {
  ^bb0(%t: f32, %m: f32):
    %o0 = linalg.index 2 : index
    %s0 = arith.muli %o0, %c2 : index
    %t0 = linalg.index 4 : index
    %a0 = arith.addi %s0, %t0 : index
    %h = arith.subi %a0, %c1 : index
    %h_lo = arith.cmpi sge, %h, %c0 : index
    %h_hi = arith.cmpi slt, %h, %c8 : index
    %h_ok = arith.andi %h_lo, %h_hi : i1
    %o1 = linalg.index 3 : index
    %s1 = arith.muli %o1, %c2 : index
    %t1 = linalg.index 5 : index
    %a1 = arith.addi %s1, %t1 : index
    %w = arith.subi %a1, %c1 : index
    %w_lo = arith.cmpi sge, %w, %c0 : index
    %w_hi = arith.cmpi slt, %w, %c8 : index
    %w_ok = arith.andi %w_lo, %w_hi : i1
    %ok = arith.andi %h_ok, %w_ok : i1
    %hc = arith.select %ok, %h, %c0 : index
    %wc = arith.select %ok, %w, %c0 : index
    %n = linalg.index 0 : index
    %c = linalg.index 1 : index
    %v = memref.load %x[%n, %c, %hc, %wc] : memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>
    %e = arith.extf %v : bf16 to f32
    %mx = arith.maximumf %m, %e : f32
    %r = arith.select %ok, %mx, %m : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%acc : memref<2x16x4x4xf32>) outs(%y : memref<2x16x4x4xbf16, strided<[256, 1, 64, 16]>>) {
  ^bb0(%a: f32, %o: bf16):
    %relu = arith.maximumf %a, %zero : f32
    %b = arith.truncf %relu : f32 to bf16
    linalg.yield %b : bf16
  }
  return
}

// -----

// A tile of 2 x 2 outputs a thread: the 4 windows' 36 taps read 5 x 5
// pixels, each loaded once (a 16-byte vector), and the 4 outputs are stored
// one vector each; 2 x 2 x 2 x 2 work items (n, channel groups, tiles).

// CHECK-LABEL: func.func private @max_relu_tile_2x2(
//       CHECK:   gpu.launch
//       CHECK:     arith.cmpi ult, %{{.*}}, %c16 : index
// CHECK-COUNT-25:    vector.load
//   CHECK-NOT:       vector.load
// CHECK-COUNT-4:     vector.store
//   CHECK-NOT:       vector.store
//   CHECK-NOT:   linalg.generic

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#win = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>

func.func private @max_relu_tile_2x2(%x: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>, %y: memref<2x16x4x4xbf16, strided<[256, 1, 64, 16]>>) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-window", tile = [2, 2], vector = 8 : i64}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %c8 = arith.constant 8 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %ninf = arith.constant 0xFF800000 : f32
  %acc = memref.alloc() : memref<2x16x4x4xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%acc : memref<2x16x4x4xf32>) {
  ^bb0(%o: f32):
    linalg.yield %ninf : f32
  }
  %taps = memref.alloc() : memref<3x3xf32>
  linalg.generic {indexing_maps = [#win, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%taps : memref<3x3xf32>) outs(%acc : memref<2x16x4x4xf32>) attrs = {dnn.window = {count_include_pad = false, mode = "max", pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, window = array<i64: 3, 3>}} {
  ^bb0(%t: f32, %m: f32):
    %o0 = linalg.index 2 : index
    %s0 = arith.muli %o0, %c2 : index
    %t0 = linalg.index 4 : index
    %a0 = arith.addi %s0, %t0 : index
    %h = arith.subi %a0, %c1 : index
    %h_lo = arith.cmpi sge, %h, %c0 : index
    %h_hi = arith.cmpi slt, %h, %c8 : index
    %h_ok = arith.andi %h_lo, %h_hi : i1
    %o1 = linalg.index 3 : index
    %s1 = arith.muli %o1, %c2 : index
    %t1 = linalg.index 5 : index
    %a1 = arith.addi %s1, %t1 : index
    %w = arith.subi %a1, %c1 : index
    %w_lo = arith.cmpi sge, %w, %c0 : index
    %w_hi = arith.cmpi slt, %w, %c8 : index
    %w_ok = arith.andi %w_lo, %w_hi : i1
    %ok = arith.andi %h_ok, %w_ok : i1
    %hc = arith.select %ok, %h, %c0 : index
    %wc = arith.select %ok, %w, %c0 : index
    %n = linalg.index 0 : index
    %c = linalg.index 1 : index
    %v = memref.load %x[%n, %c, %hc, %wc] : memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>
    %e = arith.extf %v : bf16 to f32
    %mx = arith.maximumf %m, %e : f32
    %r = arith.select %ok, %mx, %m : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%acc : memref<2x16x4x4xf32>) outs(%y : memref<2x16x4x4xbf16, strided<[256, 1, 64, 16]>>) {
  ^bb0(%a: f32, %o: bf16):
    %relu = arith.maximumf %a, %zero : f32
    %b = arith.truncf %relu : f32 to bf16
    linalg.yield %b : bf16
  }
  return
}

// -----

// A tile of 3 along W (a tile names the last dims) does not divide the 4
// outputs: the second tile's last two outputs lie past the end, so their
// epilogue and store sit under a guard; the first output's never do.

// CHECK-LABEL: func.func private @max_relu_tile_ragged(
//       CHECK:   gpu.launch
// CHECK-COUNT-21:    vector.load
//   CHECK-NOT:       vector.load
//       CHECK:       vector.store
//   CHECK-NOT:       scf.if
//       CHECK:       %[[PAST:.*]] = arith.cmpi ult, %{{.*}}, %c4 : index
//       CHECK:       scf.if %[[PAST]] {
//       CHECK:         vector.store
//       CHECK:       scf.if
//       CHECK:         vector.store

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#win = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>

func.func private @max_relu_tile_ragged(%x: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>, %y: memref<2x16x4x4xbf16, strided<[256, 1, 64, 16]>>) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-window", tile = [3], vector = 8 : i64}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %c8 = arith.constant 8 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %ninf = arith.constant 0xFF800000 : f32
  %acc = memref.alloc() : memref<2x16x4x4xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%acc : memref<2x16x4x4xf32>) {
  ^bb0(%o: f32):
    linalg.yield %ninf : f32
  }
  %taps = memref.alloc() : memref<3x3xf32>
  linalg.generic {indexing_maps = [#win, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%taps : memref<3x3xf32>) outs(%acc : memref<2x16x4x4xf32>) attrs = {dnn.window = {count_include_pad = false, mode = "max", pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, window = array<i64: 3, 3>}} {
  ^bb0(%t: f32, %m: f32):
    %o0 = linalg.index 2 : index
    %s0 = arith.muli %o0, %c2 : index
    %t0 = linalg.index 4 : index
    %a0 = arith.addi %s0, %t0 : index
    %h = arith.subi %a0, %c1 : index
    %h_lo = arith.cmpi sge, %h, %c0 : index
    %h_hi = arith.cmpi slt, %h, %c8 : index
    %h_ok = arith.andi %h_lo, %h_hi : i1
    %o1 = linalg.index 3 : index
    %s1 = arith.muli %o1, %c2 : index
    %t1 = linalg.index 5 : index
    %a1 = arith.addi %s1, %t1 : index
    %w = arith.subi %a1, %c1 : index
    %w_lo = arith.cmpi sge, %w, %c0 : index
    %w_hi = arith.cmpi slt, %w, %c8 : index
    %w_ok = arith.andi %w_lo, %w_hi : i1
    %ok = arith.andi %h_ok, %w_ok : i1
    %hc = arith.select %ok, %h, %c0 : index
    %wc = arith.select %ok, %w, %c0 : index
    %n = linalg.index 0 : index
    %c = linalg.index 1 : index
    %v = memref.load %x[%n, %c, %hc, %wc] : memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>
    %e = arith.extf %v : bf16 to f32
    %mx = arith.maximumf %m, %e : f32
    %r = arith.select %ok, %mx, %m : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%acc : memref<2x16x4x4xf32>) outs(%y : memref<2x16x4x4xbf16, strided<[256, 1, 64, 16]>>) {
  ^bb0(%a: f32, %o: bf16):
    %relu = arith.maximumf %a, %zero : f32
    %b = arith.truncf %relu : f32 to bf16
    linalg.yield %b : bf16
  }
  return
}

// -----

// A tile that would load more than 64 pixels a thread is dropped, the
// reason saying so: one output a thread.

// CHECK-LABEL: func.func private @max_relu_tile_too_large(
//  CHECK-SAME:   dnn.config = {block = [128, 1, 1], strategy = "simt-window", vector = 8 : i64}
//  CHECK-SAME:   dnn.config_reason = "tile 4x4 loads 81 x pixels a thread: expected at most 64: one output a thread"
//       CHECK:   gpu.launch
// CHECK-COUNT-9:     vector.load
//   CHECK-NOT:       vector.load

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#win = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>

func.func private @max_relu_tile_too_large(%x: memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>, %y: memref<2x16x4x4xbf16, strided<[256, 1, 64, 16]>>) attributes {dnn.config = {block = [128, 1, 1], strategy = "simt-window", tile = [4, 4], vector = 8 : i64}, dnn.kernel} {
  %zero = arith.constant 0.000000e+00 : f32
  %c8 = arith.constant 8 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %ninf = arith.constant 0xFF800000 : f32
  %acc = memref.alloc() : memref<2x16x4x4xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%acc : memref<2x16x4x4xf32>) {
  ^bb0(%o: f32):
    linalg.yield %ninf : f32
  }
  %taps = memref.alloc() : memref<3x3xf32>
  linalg.generic {indexing_maps = [#win, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%taps : memref<3x3xf32>) outs(%acc : memref<2x16x4x4xf32>) attrs = {dnn.window = {count_include_pad = false, mode = "max", pre_padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, window = array<i64: 3, 3>}} {
  ^bb0(%t: f32, %m: f32):
    %o0 = linalg.index 2 : index
    %s0 = arith.muli %o0, %c2 : index
    %t0 = linalg.index 4 : index
    %a0 = arith.addi %s0, %t0 : index
    %h = arith.subi %a0, %c1 : index
    %h_lo = arith.cmpi sge, %h, %c0 : index
    %h_hi = arith.cmpi slt, %h, %c8 : index
    %h_ok = arith.andi %h_lo, %h_hi : i1
    %o1 = linalg.index 3 : index
    %s1 = arith.muli %o1, %c2 : index
    %t1 = linalg.index 5 : index
    %a1 = arith.addi %s1, %t1 : index
    %w = arith.subi %a1, %c1 : index
    %w_lo = arith.cmpi sge, %w, %c0 : index
    %w_hi = arith.cmpi slt, %w, %c8 : index
    %w_ok = arith.andi %w_lo, %w_hi : i1
    %ok = arith.andi %h_ok, %w_ok : i1
    %hc = arith.select %ok, %h, %c0 : index
    %wc = arith.select %ok, %w, %c0 : index
    %n = linalg.index 0 : index
    %c = linalg.index 1 : index
    %v = memref.load %x[%n, %c, %hc, %wc] : memref<2x16x8x8xbf16, strided<[1024, 1, 128, 16]>>
    %e = arith.extf %v : bf16 to f32
    %mx = arith.maximumf %m, %e : f32
    %r = arith.select %ok, %mx, %m : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%acc : memref<2x16x4x4xf32>) outs(%y : memref<2x16x4x4xbf16, strided<[256, 1, 64, 16]>>) {
  ^bb0(%a: f32, %o: bf16):
    %relu = arith.maximumf %a, %zero : f32
    %b = arith.truncf %relu : f32 to bf16
    linalg.yield %b : bf16
  }
  return
}

// -----

// CHECK-LABEL: func.func private @not_a_window(
//  CHECK-SAME:   dnn.config = {block = [256, 1, 1], strategy = "simt-generic"}
//  CHECK-SAME:   dnn.config_reason = "simt-window does not apply (0 window reductions: expected one): simt-generic, one thread per output"
//       CHECK:   linalg.generic

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

func.func private @not_a_window(%x: memref<1x2x3x4xf32>, %y: memref<1x2x3x4xf32>) attributes {dnn.config = {block = [256, 1, 1], strategy = "simt-window", vector = 4 : i64}, dnn.kernel} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<1x2x3x4xf32>) outs(%y : memref<1x2x3x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// A pooling backward (dnn.window with backward = true) is gathered: a thread
// owns a tile of s x s input pixels (those the same windows cover: here one,
// 2x2 / 2) and 8 channels of dx; it reads the window's dy as one 16-byte
// vector (o clamped into dy, the share zeroed where o is no window), divides
// it by the window's real rows and stores it to the tile's 4 pixels.

// CHECK-LABEL: func.func private @avg_gradient_channels_last(
//  CHECK-SAME:     %[[DY:[^:]*]]: memref<1x16x2x2xbf16, strided<[64, 1, 32, 16]>>, %{{.*}}: memref<1x16x4x4xbf16, strided<[256, 1, 64, 16]>>, %[[DX:[^:]*]]: memref<1x16x4x4xbf16, strided<[256, 1, 64, 16]>> {bufferize.result})
//       CHECK:   gpu.launch
//       CHECK:     arith.cmpi ult, %{{.*}}, %c8 : index
//       CHECK:     %[[DYV:.*]] = memref.reinterpret_cast %[[DY]] to offset: [0], sizes: [1, 2, 2, 16], strides: [64, 32, 16, 1]
//       CHECK:     %[[OKH:.*]] = arith.cmpi ult, %[[QH:.*]], %c2 : index
//  CHECK-NEXT:     %[[OH:.*]] = arith.select %[[OKH]], %[[QH]], %c0 : index
//       CHECK:     %[[OK:.*]] = arith.andi %[[OKH]], %{{.*}} : i1
//       CHECK:     vector.load %[[DYV]][%c0, %[[OH]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<1x2x2x16xbf16>, vector<8xbf16>
//       CHECK:     %[[SHARE:.*]] = arith.divf %{{.*}}, %{{.*}} : vector<8xf32>
//  CHECK-NEXT:     arith.select %[[OK]], %[[SHARE]], %{{.*}} : vector<8xf32>
//   CHECK-NOT:     scf.if
//       CHECK:     %[[DXV:.*]] = memref.reinterpret_cast %[[DX]] to offset: [0], sizes: [1, 4, 4, 16], strides: [256, 64, 16, 1]
// CHECK-COUNT-4:   vector.store %{{.*}}, %[[DXV]][{{.*}}] {alignment = 16 : i64} : memref<1x4x4x16xbf16>, vector<8xbf16>
//   CHECK-NOT:   linalg.generic

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#win = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>

func.func private @avg_gradient_channels_last(%arg0: memref<1x16x2x2xbf16, strided<[64, 1, 32, 16]>>, %arg1: memref<1x16x4x4xbf16, strided<[256, 1, 64, 16]>>, %arg2: memref<1x16x4x4xbf16, strided<[256, 1, 64, 16]>> {bufferize.result}) attributes {dnn.anchor = "pooling_backward", dnn.config = {block = [128, 1, 1], strategy = "simt-window", vector = 8 : i64}, dnn.kernel} {
  %c4 = arith.constant 4 : index
  %c2 = arith.constant 2 : index
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.000000e+00 : f32
  %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x16x4x4xf32>
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%alloc : memref<1x16x4x4xf32>) {
  ^bb0(%out: f32):
    linalg.yield %cst : f32
  }
  %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<2x2xf32>
  linalg.generic {indexing_maps = [#win, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%alloc_0 : memref<2x2xf32>) outs(%alloc : memref<1x16x4x4xf32>) attrs =  {dnn.window = {backward = true, count_include_pad = false, mode = "avg", pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 2>, window = array<i64: 2, 2>}} {
  ^bb0(%in: f32, %out: f32):
    %0 = linalg.index 2 : index
    %1 = linalg.index 4 : index
    %2 = arith.subi %0, %1 : index
    %3 = arith.maxsi %2, %c0 : index
    %4 = arith.divsi %3, %c2 : index
    %5 = arith.cmpi sge, %2, %c0 : index
    %6 = arith.remsi %3, %c2 : index
    %7 = arith.cmpi eq, %6, %c0 : index
    %8 = arith.andi %5, %7 : i1
    %9 = arith.cmpi slt, %4, %c2 : index
    %10 = arith.andi %8, %9 : i1
    %11 = linalg.index 3 : index
    %12 = linalg.index 5 : index
    %13 = arith.subi %11, %12 : index
    %14 = arith.maxsi %13, %c0 : index
    %15 = arith.divsi %14, %c2 : index
    %16 = arith.cmpi sge, %13, %c0 : index
    %17 = arith.remsi %14, %c2 : index
    %18 = arith.cmpi eq, %17, %c0 : index
    %19 = arith.andi %16, %18 : i1
    %20 = arith.cmpi slt, %15, %c2 : index
    %21 = arith.andi %19, %20 : i1
    %22 = arith.andi %10, %21 : i1
    %23 = arith.select %22, %4, %c0 : index
    %24 = arith.select %22, %15, %c0 : index
    %25 = linalg.index 1 : index
    %26 = memref.load %arg0[%c0, %25, %23, %24] : memref<1x16x2x2xbf16, strided<[64, 1, 32, 16]>>
    %27 = arith.extf %26 : bf16 to f32
    %28 = arith.muli %23, %c2 : index
    %29 = arith.addi %28, %c2 : index
    %30 = arith.minsi %29, %c4 : index
    %31 = arith.maxsi %28, %c0 : index
    %32 = arith.subi %30, %31 : index
    %33 = arith.muli %24, %c2 : index
    %34 = arith.addi %33, %c2 : index
    %35 = arith.minsi %34, %c4 : index
    %36 = arith.maxsi %33, %c0 : index
    %37 = arith.subi %35, %36 : index
    %38 = arith.muli %32, %37 : index
    %39 = arith.index_cast %38 : index to i32
    %40 = arith.sitofp %39 : i32 to f32
    %41 = arith.divf %27, %40 : f32
    %42 = arith.select %22, %41, %cst : f32
    %43 = arith.addf %out, %42 : f32
    linalg.yield %43 : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%alloc : memref<1x16x4x4xf32>) outs(%arg2 : memref<1x16x4x4xbf16, strided<[256, 1, 64, 16]>>) {
  ^bb0(%in: f32, %out: bf16):
    %0 = arith.truncf %in : f32 to bf16
    linalg.yield %0 : bf16
  }
  return
}

// -----

// A max gradient recomputes each covering window's first maximum from x,
// starting at its first real tap (tap 0 without padding): a later tap wins
// when it compares unordered-greater while the best so far is ordered
// (greater, or a NaN beating a number); each pixel of the tile takes dy where
// the winner is its tap. NCHW: one element a thread, scalar loads.

// CHECK-LABEL: func.func private @max_gradient_nchw(
//  CHECK-SAME:     %[[DY:[^:]*]]: memref<1x2x2x2xf32>, %[[X:[^:]*]]: memref<1x2x4x4xf32>, %[[DX:[^:]*]]: memref<1x2x4x4xf32> {bufferize.result})
//       CHECK:   gpu.launch
//       CHECK:     %[[G:.*]] = memref.load %[[DY]][
//  CHECK-NEXT:     %[[GV:.*]] = vector.broadcast %[[G]]
//       CHECK:     memref.load %[[X]][
// CHECK-COUNT-3:   arith.cmpf ugt
//       CHECK:     %[[ARG:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<1xi32>
//   CHECK-NOT:     scf.if
//       CHECK:     %[[HIT:.*]] = arith.cmpi eq, %[[ARG]], %{{.*}} : vector<1xi32>
//  CHECK-NEXT:     arith.select %[[HIT]], %[[GV]], %{{.*}}
//       CHECK:     memref.store %{{.*}}, %[[DX]][
// CHECK-COUNT-3:   memref.store %{{.*}}, %[[DX]][
//   CHECK-NOT:   linalg.generic

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#win = affine_map<(d0, d1, d2, d3, d4, d5) -> (d4, d5)>
#out = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>

func.func private @max_gradient_nchw(%arg0: memref<1x2x2x2xf32>, %arg1: memref<1x2x4x4xf32>, %arg2: memref<1x2x4x4xf32> {bufferize.result}) attributes {dnn.anchor = "pooling_backward", dnn.config = {block = [128, 1, 1], strategy = "simt-window", vector = 2 : i64}, dnn.kernel} {
%c3_i32 = arith.constant 3 : i32
%c2_i32 = arith.constant 2 : i32
%c1_i32 = arith.constant 1 : i32
%c1 = arith.constant 1 : index
%c0_i32 = arith.constant 0 : i32
%c4 = arith.constant 4 : index
%c-1_i32 = arith.constant -1 : i32
%cst = arith.constant 0xFF800000 : f32
%c2 = arith.constant 2 : index
%c0 = arith.constant 0 : index
%cst_0 = arith.constant 0.000000e+00 : f32
linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%arg2 : memref<1x2x4x4xf32>) {
^bb0(%out: f32):
  linalg.yield %cst_0 : f32
}
%alloc = memref.alloc() {alignment = 64 : i64} : memref<2x2xf32>
linalg.generic {indexing_maps = [#win, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%alloc : memref<2x2xf32>) outs(%arg2 : memref<1x2x4x4xf32>) attrs =  {dnn.window = {backward = true, count_include_pad = false, mode = "max", pre_padding = array<i64: 0, 0>, stride = array<i64: 2, 2>, window = array<i64: 2, 2>}} {
^bb0(%in: f32, %out: f32):
  %0 = linalg.index 2 : index
  %1 = linalg.index 4 : index
  %2 = arith.subi %0, %1 : index
  %3 = arith.maxsi %2, %c0 : index
  %4 = arith.divsi %3, %c2 : index
  %5 = arith.cmpi sge, %2, %c0 : index
  %6 = arith.remsi %3, %c2 : index
  %7 = arith.cmpi eq, %6, %c0 : index
  %8 = arith.andi %5, %7 : i1
  %9 = arith.cmpi slt, %4, %c2 : index
  %10 = arith.andi %8, %9 : i1
  %11 = linalg.index 3 : index
  %12 = linalg.index 5 : index
  %13 = arith.subi %11, %12 : index
  %14 = arith.maxsi %13, %c0 : index
  %15 = arith.divsi %14, %c2 : index
  %16 = arith.cmpi sge, %13, %c0 : index
  %17 = arith.remsi %14, %c2 : index
  %18 = arith.cmpi eq, %17, %c0 : index
  %19 = arith.andi %16, %18 : i1
  %20 = arith.cmpi slt, %15, %c2 : index
  %21 = arith.andi %19, %20 : i1
  %22 = arith.andi %10, %21 : i1
  %23 = arith.select %22, %4, %c0 : index
  %24 = arith.select %22, %15, %c0 : index
  %25 = linalg.index 1 : index
  %26 = memref.load %arg0[%c0, %25, %23, %24] : memref<1x2x2x2xf32>
  %27 = arith.muli %23, %c2 : index
  %28 = arith.cmpi sge, %27, %c0 : index
  %29 = arith.cmpi slt, %27, %c4 : index
  %30 = arith.andi %28, %29 : i1
  %31 = arith.muli %24, %c2 : index
  %32 = arith.cmpi sge, %31, %c0 : index
  %33 = arith.cmpi slt, %31, %c4 : index
  %34 = arith.andi %32, %33 : i1
  %35 = arith.andi %30, %34 : i1
  %36 = arith.select %35, %27, %c0 : index
  %37 = arith.select %35, %31, %c0 : index
  %38 = memref.load %arg1[%c0, %25, %36, %37] : memref<1x2x4x4xf32>
  %39 = arith.select %35, %38, %cst : f32
  %40 = arith.select %35, %c0_i32, %c-1_i32 : i32
  %41 = arith.addi %31, %c1 : index
  %42 = arith.cmpi sge, %41, %c0 : index
  %43 = arith.cmpi slt, %41, %c4 : index
  %44 = arith.andi %42, %43 : i1
  %45 = arith.andi %30, %44 : i1
  %46 = arith.select %45, %27, %c0 : index
  %47 = arith.select %45, %41, %c0 : index
  %48 = memref.load %arg1[%c0, %25, %46, %47] : memref<1x2x4x4xf32>
  %49 = arith.cmpi slt, %40, %c0_i32 : i32
  %50 = arith.cmpf ogt, %48, %39 : f32
  %51 = arith.cmpf uno, %48, %48 : f32
  %52 = arith.cmpf ord, %39, %39 : f32
  %53 = arith.andi %51, %52 : i1
  %54 = arith.ori %50, %53 : i1
  %55 = arith.ori %49, %54 : i1
  %56 = arith.andi %45, %55 : i1
  %57 = arith.select %56, %48, %39 : f32
  %58 = arith.select %56, %c1_i32, %40 : i32
  %59 = arith.addi %27, %c1 : index
  %60 = arith.cmpi sge, %59, %c0 : index
  %61 = arith.cmpi slt, %59, %c4 : index
  %62 = arith.andi %60, %61 : i1
  %63 = arith.andi %62, %34 : i1
  %64 = arith.select %63, %59, %c0 : index
  %65 = arith.select %63, %31, %c0 : index
  %66 = memref.load %arg1[%c0, %25, %64, %65] : memref<1x2x4x4xf32>
  %67 = arith.cmpi slt, %58, %c0_i32 : i32
  %68 = arith.cmpf ogt, %66, %57 : f32
  %69 = arith.cmpf uno, %66, %66 : f32
  %70 = arith.cmpf ord, %57, %57 : f32
  %71 = arith.andi %69, %70 : i1
  %72 = arith.ori %68, %71 : i1
  %73 = arith.ori %67, %72 : i1
  %74 = arith.andi %63, %73 : i1
  %75 = arith.select %74, %66, %57 : f32
  %76 = arith.select %74, %c2_i32, %58 : i32
  %77 = arith.andi %62, %44 : i1
  %78 = arith.select %77, %59, %c0 : index
  %79 = arith.select %77, %41, %c0 : index
  %80 = memref.load %arg1[%c0, %25, %78, %79] : memref<1x2x4x4xf32>
  %81 = arith.cmpi slt, %76, %c0_i32 : i32
  %82 = arith.cmpf ogt, %80, %75 : f32
  %83 = arith.cmpf uno, %80, %80 : f32
  %84 = arith.cmpf ord, %75, %75 : f32
  %85 = arith.andi %83, %84 : i1
  %86 = arith.ori %82, %85 : i1
  %87 = arith.ori %81, %86 : i1
  %88 = arith.andi %77, %87 : i1
  %89 = arith.select %88, %c3_i32, %76 : i32
  %90 = arith.index_cast %1 : index to i32
  %91 = arith.index_cast %12 : index to i32
  %92 = arith.muli %90, %c2_i32 : i32
  %93 = arith.addi %92, %91 : i32
  %94 = arith.cmpi eq, %89, %93 : i32
  %95 = arith.andi %22, %94 : i1
  %96 = arith.select %95, %26, %cst_0 : f32
  %97 = arith.addf %out, %96 : f32
  linalg.yield %97 : f32
}
return
}
