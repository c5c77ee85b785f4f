"""The GPU test cases: every dnn op at least once, in f32 and (where the op
takes them) f16 / bf16 / fp8, on shapes that are multiples of nothing (1, 7,
127, 1000), with channels-last, padded-row and transposed strides and with
zero-size dims, each with its tolerances.

tools/build-gpu-tests compiles each case of ``CASES`` into a package and
stores its inputs and the NumPy reference's outputs beside it; pytest in
test/gpu runs them with the runtime alone. These modules import dnnc (and
so MLIR): nothing under test/gpu that pytest collects may import them.

    case.py            Case, outputs, contracted; tolerances (RTOL, TAIL, comparison)
    strides.py         channels-last and padded-row strides
    inputs.py          drawing a case's inputs, storing bf16 / fp8 / i1 as bits
    pointwise.py       activations and their backwards, binary, compare, logic, casts
    fp8.py             fp8 conversions at their edges, fp8 pointwise
    data_movement.py   constants, gen_index, reshape, transpose, slice, concat
    matmul.py          matmuls and the tensor-core GEMMs (tc-sm90, tc-sm80)
    matmul_align.py    matmuls of any alignment: odd K, N, M (127, 129, 1000,
                       4095, 50257), operands stored transposed, batch dims
                       broadcast against each other, K = 0, epilogues; on
                       tc-sm80's unaligned loader and tc-sm90
    matmul_f32_exact.py
                       48 random f32 matmuls multiplied exactly (simt-gemm's
                       FFMA kernel), eight to a graph: odd sizes, transposed
                       operands, batches, epilogues; each tile and a K split
                       forced on chosen problems (those with M or N <= 8
                       run on simt-gemv)
    matmul_gemv.py     64 random matmuls with M or N at most 8 (simt-gemv),
                       f32, tf32, f16, bf16, eight to a graph: both layouts
                       of the long operand, batches, epilogues; issue 33's
                       shapes; the kernel's parameters forced
    matmul_fp8.py      fp8 GEMMs on tc-sm90 (e4m3 / e5m2 pairs): per-tensor
                       scales, bf16 / f16 / f32 / fp8 outputs, amax
    matmul_fp8_blockscaled.py
                       block-scaled fp8 GEMMs (1 x 128 A, 128 x 128 B scales)
                       on tc-sm90: tile multiples and odd sizes, B stored
                       both ways, split K, scales of 2^-8 .. 2^8
    gemm_tail_split.py tc-sm90's tail split forced on matmuls (bf16, f16,
                       tf32) and forward convolutions (bf16, f16): the last
                       wave's tiles split along K, summed by the last part
    convolution.py     conv forward and gradients, 2-D and 3-D, channels-last
    conv_random.py     520 random forward convolutions (tc-sm90's implicit GEMM
                       and its fallbacks), ten to a graph; data and filter
                       gradients alike; some of each with tc-sm80 forced
    conv_random_tf32.py
                       520 random forward convolutions, data gradients and
                       filter gradients each of f32 tensors, tf32 by default
    conv_phases.py     strided data gradients split by stride phase, with fused
                       epilogues, on tc-sm90 and tc-sm80
    conv_odd_channels.py
                       360 random convolutions (fprop, dgrad, wgrad) whose
                       channel counts are not multiples of 8, on tc-sm80's
                       loaders that zero-fill past C, ten to a graph
    conv_sm80_split.py
                       convolutions on tc-sm80 with K split: long filter
                       gradients of unaligned channels the heuristics
                       split, and random odd-channel forwards and gradients
                       with the split forced
    conv_sm80_tf32.py  tf32 convolutions (fprop, dgrad, wgrad) on tc-sm80:
                       conv_random_tf32's draws with it forced in each
                       tile, odd channels handed over by tc-sm90, split K
    conv_batchnorm.py  a training step's convolution, batchnorm and relu
                       forward and backward, channels-last (the batchnorm
                       over the convolution's memory order)
    conv_fold_wgrad.py
                       filter gradients of 1-7 channels with the filter's
                       columns folded into them on tc-sm90: 64 random
                       draws, the ResNet stem's and two more fixed ones
    conv_grouped_simt.py
                       576 random depthwise and small-group convolutions
                       (forward, data and filter gradients) on
                       simt-depthwise, eight to a graph, bf16, f16 and f32
    conv_widened_groups.py
                       144 random convolutions of 8, 16 and 32 channels a
                       group (forward, data and filter gradients), which
                       sm_90a runs as 64 channels a group with
                       block-diagonal filters on tc-sm90; ResNeXt's layers
    conv_prologue.py   160 random BN-ReLU-convs (relu(x * scale + shift) as
                       the convolution's prologue), eight to a graph
    conv_bias_grad.py  filter gradients with their bias gradient (the sum of
                       dy) in one tc-sm90 kernel: chosen geometries, K past
                       the tiles, each way split-K partials are summed
    epilogue_reads.py  epilogue operands of every broadcast and layout (bias,
                       residuals NHWC and NCHW, over the batch, over the
                       pixels, pixels only, scalars, one dim) on forward
                       convolutions, data gradients (stride 1 and 2), filter
                       gradients and matmuls: scale and shift, a second
                       output, an f32 output, an f32 operand; tc-sm90 and
                       tc-sm80
    conv_pixel_rows.py 1x1 unit-stride unpadded forwards and data gradients,
                       x (dy) read as a matrix by tiled TMA boxes (tc-sm90's
                       default for them) and again in im2col mode (tiled:0)
    conv_wgrad_channels.py
                       96 random filter gradients whose C is no multiple of
                       the tile width (8 to 200), eight to a graph, on
                       tc-sm90 and some with tc-sm80 forced
    reductions.py      reductions, column reductions
    reduction_middle.py
                       reductions over middle axes: column programs per outer
                       index, and separated axes split into a row and a
                       column program (NCHW statistics)
    pooling.py         pooling forward and backward, row-major and channels-last
    normalization.py   batch, layer, rms, group and instance norms
    norm_channels_last.py
                       instance and group norms of channels-last x (forward,
                       training and inference, and backward) read in place
                       by column programs, [1, C, 1, 1] parameters in either
                       stride order; layernorm / rmsnorm over [rows, hidden,
                       1, 1] in NHWC strides
    row_programs.py    softmax and the norms over the row lengths and strides of
                       the row kernels
    attention.py       sdpa forward and backward
    attention_random.py
                       320 random sdpa forwards (tc-sm90's attention kernel
                       and its fallbacks), eight to a graph
    attention_sm80.py  40 random sdpa forwards on tc-sm80's attention kernel (a
                       config override), five to a graph
    attention_backward_random.py
                       320 random sdpa backwards (tc-sm90's dQ and dK dV
                       kernels and their fallbacks), eight to a graph, o and
                       the statistics their forward's
    attention_backward_fused.py
                       the fused sdpa backward on chosen problems (both
                       splits of dQ, masks, lengths past a tile, layouts),
                       each beside its deterministic twin (the two kernels);
                       its persistent work units (few, several rounds,
                       GQA in parts) with the overrides of its other forms
    attention_backward_wide.py
                       the sdpa backward for head dims over 128 (160, 192,
                       256, 192 / 128; masks, GQA, a bias, lengths past a
                       tile, layouts), each beside its deterministic twin
    attention_backward_sm80.py
                       sdpa backwards on tc-sm80's dQ and dK dV kernels (a
                       config override) on chosen problems: head dims,
                       masks, GQA, a bias, layouts, padding lengths
    attention_backward_sm80_fused.py
                       the same problems on tc-sm80's fused backward (dQ by
                       f32 reductions; override fused:1)
    attention_backward_dbias.py
                       the sdpa backward's bias gradient (compute_dbias) on
                       tc-sm90's two kernels: biases broadcast over B, H or
                       both and whole, masks, GQA, lengths past a tile,
                       head dims to 256, layouts
    attention_decode.py
                       split-KV sdpa forwards: decoding steps over long kv
                       sequences, masks, padding masks
    attention_padding.py
                       96 random sdpa forward and backward pairs with
                       padding masks (per-batch sequence lengths)
    attention_paged.py sdpa forwards over paged KV caches (page tables,
                       page sizes, decode and prefill)
    attention_ragged.py
                       64 random sdpa forwards and 64 backwards on ragged
                       (packed, THD) tensors: offsets, lengths, gaps
    attention_gqa_fold.py
                       GQA decode steps whose query heads fold into one
                       block per kv head (row maps, masks, lengths, paged,
                       split-KV)
    attention_persistent.py
                       sdpa forwards on tc-sm90's persistent grid, forced
                       onto a few blocks: causal tile pairs, tiles with no
                       step, masks, bias, GQA, padding, ragged, paged
    zero_size.py       dims of size 0
    examples.py        the graphs of examples/
    frontend.py        graphs written with dnnc.frontend (cudnn-frontend's API)
    int8.py            int8 / uint8 convolutions and matmuls (exact int32
                       accumulation), casts at the byte types' edges, and
                       cudnn-frontend's int8 test graphs
    layouts.py         the layout rule: inputs broadcast with stride 0 (bias,
                       rows, a matmul's shared operand), outputs with padded
                       rows, column-major and channels-last strides
    repeated_kernels.py
                       graphs that repeat kernels (tc-sm90 convolutions and
                       matmuls), which dnn-dedup-kernels compiles once: one
                       PTX entry launched several times
    scalars.py         runtime scalars (f32 kernel arguments): pointwise, matmul
                       and convolution epilogues, reductions, the epsilon of
                       layernorm and rmsnorm, a frontend graph; each package
                       run again with other values
"""

from . import (attention, attention_backward_dbias, attention_backward_fused,
               attention_backward_random, attention_backward_sm80,
               attention_backward_sm80_fused, attention_backward_wide,
               attention_decode, attention_gqa_fold, attention_padding, attention_paged,
               attention_persistent, attention_ragged, attention_random, attention_sm80,
               conv_batchnorm, conv_bias_grad, conv_fold_wgrad, conv_grouped_simt,
               conv_odd_channels, conv_phases, conv_pixel_rows, conv_prologue, conv_random,
               conv_random_tf32, conv_sm80_split, conv_sm80_tf32, conv_wgrad_channels,
               conv_widened_groups,
               convolution,
               data_movement, epilogue_reads, examples, fp8, frontend, gemm_tail_split, int8,
               layouts, matmul,
               matmul_align,
               matmul_f32_exact, matmul_fp8, matmul_fp8_blockscaled, matmul_gemv,
               norm_channels_last,
               normalization, pointwise, pooling, reduction_middle, reductions,
               repeated_kernels, row_programs, scalars, zero_size)
from .case import Case

# In the order index.json lists them.
CASES = [
    *pointwise.CASES,
    *fp8.CASES,
    *data_movement.CASES,
    *matmul.CASES,
    *matmul_align.CASES,
    *matmul_f32_exact.CASES,
    *matmul_gemv.CASES,
    *matmul_fp8.CASES,
    *matmul_fp8_blockscaled.CASES,
    *gemm_tail_split.CASES,
    *convolution.CASES,
    *conv_random.CASES,
    *conv_random_tf32.CASES,
    *conv_phases.CASES,
    *conv_odd_channels.CASES,
    *conv_sm80_split.CASES,
    *conv_sm80_tf32.CASES,
    *conv_grouped_simt.CASES,
    *conv_widened_groups.CASES,
    *conv_prologue.CASES,
    *conv_bias_grad.CASES,
    *conv_wgrad_channels.CASES,
    *conv_fold_wgrad.CASES,
    *conv_batchnorm.CASES,
    *conv_pixel_rows.CASES,
    *epilogue_reads.CASES,
    *pointwise.NHWC_AND_BIG_CASES,
    *reductions.CASES,
    *reduction_middle.CASES,
    *pooling.CASES,
    *normalization.CASES,
    *norm_channels_last.CASES,
    *row_programs.CASES,
    *attention.CASES,
    *attention_random.CASES,
    *attention_sm80.CASES,
    *attention_backward_random.CASES,
    *attention_backward_fused.CASES,
    *attention_backward_wide.CASES,
    *attention_backward_sm80.CASES,
    *attention_backward_sm80_fused.CASES,
    *attention_backward_dbias.CASES,
    *attention_padding.CASES,
    *attention_paged.CASES,
    *attention_ragged.CASES,
    *attention_decode.CASES,
    *attention_gqa_fold.CASES,
    *attention_persistent.CASES,
    *zero_size.CASES,
    *examples.CASES,
    *frontend.CASES,
    *int8.CASES,
    *layouts.CASES,
    *scalars.CASES,
    *repeated_kernels.CASES,
]

__all__ = ["CASES", "Case"]
