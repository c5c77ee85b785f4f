"""Convolution cases on tensor cores: ResNet-50's layers (bf16, NHWC, KRSC
filters) as the issue's performance table lists them, against PyTorch's
cuDNN in the same process, and the fused patterns (conv + bias + relu,
conv + batchnorm-inference + relu, conv + bias + residual + relu, and
BN-ReLU-conv: relu(x * scale + shift) as the convolution's prologue) against
PyTorch eager and torch.compile; one layer on tc-sm80, forced (``SM80``),
and tf32 layers forced onto it (``SM80_TF32``);
and layers whose channel counts are not multiples of 8 (``ODD_CHANNELS``,
``ODD_GRADS``, and filter gradients split over K on tc-sm80:
``SPLIT_WGRADS``); filter gradients with their bias gradient in one
kernel (``BIAS_GRADS``) against cuDNN's filter gradient and dy.sum.

Imported by cases.py (``RESNET``); a case's graph is built when it runs.
"""


import math

BF16 = 2


def _nhwc(n, c, *spatial):
    """Channels-last strides of a logical [N, C, *spatial] tensor."""
    dims = [n, c] + list(spatial)
    strides = [0] * len(dims)
    step = 1
    for d in [1] + list(range(len(dims) - 1, 1, -1)) + [0]:
        strides[d] = step
        step *= dims[d]
    return strides


def out_size(size, r, stride, pad):
    return (size + 2 * pad - r) // stride + 1


def conv_graph(name, n, c, h, k, r, stride=1, pad=0, epilogue=None, dt="bf16"):
    """A graph of one forward convolution of x [n, c, h, h] by w [k, c, r, r]
    (both channels-last), with ``epilogue``: None, "bias_relu", "bn_relu"
    (per-channel scale and shift: batchnorm inference folded),
    "bias_residual_relu", "film_relu" (a scale and shift per image and
    channel, [n, k, 1, 1]: FiLM, a diffusion UNet's time embedding) or
    "pos_relu" (a table over the pixels and channels, [1, k, p, p], the
    same for every image); the last two the epilogue reads through split
    views (tensorcore/conv_views.py)."""
    import dnnc

    p = out_size(h, r, stride, pad)
    g = dnnc.Graph(name=name, io_data_type=dt)
    x = g.tensor(name="x", dim=[n, c, h, h], stride=_nhwc(n, c, h, h))
    w = g.tensor(name="w", dim=[k, c, r, r], stride=_nhwc(k, c, r, r))
    y = g.conv_fprop(x, w, padding=pad, stride=stride)
    if epilogue in ("bias_relu", "bias_residual_relu"):
        y = g.add(y, g.tensor(name="b", dim=[1, k, 1, 1]))
    if epilogue == "bn_relu":
        y = g.add(g.mul(y, g.tensor(name="scale", dim=[1, k, 1, 1])),
                  g.tensor(name="shift", dim=[1, k, 1, 1]))
    if epilogue == "bias_residual_relu":
        y = g.add(y, g.tensor(name="r", dim=[n, k, p, p], stride=_nhwc(n, k, p, p)))
    if epilogue == "film_relu":
        y = g.add(g.mul(y, g.tensor(name="scale", dim=[n, k, 1, 1])),
                  g.tensor(name="shift", dim=[n, k, 1, 1]))
    if epilogue == "pos_relu":
        y = g.add(y, g.tensor(name="pos", dim=[1, k, p, p], stride=_nhwc(1, k, p, p)))
    if epilogue:
        y = g.relu(y)
    y.set_output(True).set_stride(_nhwc(n, k, p, p))
    return g


def matmul_graph(name, m, n, k, dt="bf16"):
    """A graph of one matmul [m, k] @ [k, n], the second stored n x k (a
    1x1 filter's [K, C] as the GEMM's B)."""
    import dnnc

    g = dnnc.Graph(name=name, io_data_type=dt)
    a = g.tensor(name="x", dim=[m, k])
    b = g.tensor(name="w", dim=[k, n], stride=[1, k])
    g.matmul(a, b).set_output(True)
    return g


def prologue_graph(name, n, c, h, k, r, stride=1, pad=0, dt="bf16"):
    """cuDNN's BN-ReLU-conv: the convolution of relu(x * scale + shift),
    scale and shift per channel of x (a training network's batchnorm
    folded), every tensor of ``dt`` as PyTorch's eager code has them."""
    import dnnc

    p = out_size(h, r, stride, pad)
    g = dnnc.Graph(name=name, io_data_type=dt, intermediate_data_type=dt)
    x = g.tensor(name="x", dim=[n, c, h, h], stride=_nhwc(n, c, h, h))
    w = g.tensor(name="w", dim=[k, c, r, r], stride=_nhwc(k, c, r, r))
    scale = g.tensor(name="scale", dim=[1, c, 1, 1])
    shift = g.tensor(name="shift", dim=[1, c, 1, 1])
    y = g.conv_fprop(g.relu(g.add(g.mul(x, scale), shift)), w, padding=pad, stride=stride)
    y.set_output(True).set_stride(_nhwc(n, k, p, p))
    return g


def _torch_prologue(stride, pad):
    return lambda t, x, w, scale, shift: t.nn.functional.conv2d(
        t.relu(x * scale + shift), w, stride=stride, padding=pad)


def grad_graph(name, direction, n, c, h, k, r, stride=1, pad=0, dt="bf16", groups=1):
    """A graph of one data (``direction`` "dgrad") or filter ("wgrad")
    gradient of the convolution conv_graph makes (of ``groups`` groups: the
    filter [k, c / groups, r, r]), channels-last; ``dt`` "tf32": f32
    tensors, which dnnc's convolutions multiply as tf32 by default
    (dnnc/compute_types.py), as PyTorch's cuDNN ones do."""
    import dnnc

    p = out_size(h, r, stride, pad)
    cg = c // groups
    g = dnnc.Graph(name=name, io_data_type="f32" if dt == "tf32" else dt)
    # The inputs in the order the PyTorch function takes them.
    if direction == "dgrad":
        dy = g.tensor(name="dy", dim=[n, k, p, p], stride=_nhwc(n, k, p, p))
        w = g.tensor(name="w", dim=[k, cg, r, r], stride=_nhwc(k, cg, r, r))
        out = g.conv_dgrad(dy, w, [n, c, h, h], padding=pad, stride=stride)
        out.set_output(True).set_stride(_nhwc(n, c, h, h))
    else:
        x = g.tensor(name="x", dim=[n, c, h, h], stride=_nhwc(n, c, h, h))
        dy = g.tensor(name="dy", dim=[n, k, p, p], stride=_nhwc(n, k, p, p))
        out = g.conv_wgrad(x, dy, [k, cg, r, r], padding=pad, stride=stride)
        out.set_output(True).set_stride(_nhwc(k, cg, r, r))
    return g


def bias_grad_graph(name, n, c, h, k, r, stride=1, pad=0, dt="bf16"):
    """A filter gradient and the bias gradient beside it (db = the sum of dy
    over N, P and Q), channels-last: one tc-sm90 kernel on sm_90a
    (dnnc/codegen/gpu/tensorcore/sm90/bias_grad.py)."""
    g = grad_graph(name, "wgrad", n, c, h, k, r, stride=stride, pad=pad, dt=dt)
    dy = next(t for t in g.inputs if t.name == "dy")
    g.reduction(dy, "sum", [0, 2, 3]).set_output(True)
    return g


def _torch_bias_grad(shape, stride, pad):
    """PyTorch's two: cuDNN's filter gradient and dy.sum over N, H and W."""
    return lambda t, x, dy: (t.nn.grad.conv2d_weight(x, shape, dy, stride=stride, padding=pad),
                             dy.sum(dim=(0, 2, 3), keepdim=True))


def _torch_grad(direction, shape, stride, pad, groups=1):
    if direction == "dgrad":
        return lambda t, dy, w: t.nn.grad.conv2d_input(shape, w, dy, stride=stride, padding=pad,
                                                       groups=groups)
    return lambda t, x, dy: t.nn.grad.conv2d_weight(x, shape, dy, stride=stride, padding=pad,
                                                    groups=groups)


def _allow_tf32(fn):
    """PyTorch's side of a tf32 case: ``fn`` with cuDNN's tf32 convolutions
    allowed (PyTorch's default, set here so that a changed default does not
    turn the comparison into one against exact f32)."""
    def run(t, *args):
        allowed = t.backends.cudnn.allow_tf32
        t.backends.cudnn.allow_tf32 = True
        try:
            return fn(t, *args)
        finally:
            t.backends.cudnn.allow_tf32 = allowed
    return run


def general_graph(name, x_dims, w_dims, stride, pad, groups=1, dt="bf16"):
    """A forward convolution of channels-last x by a KRSC-style filter, any
    rank and groups; ``dt`` "tf32": f32 tensors multiplied as tf32 (what
    PyTorch's cuDNN convolutions do with f32 by default)."""
    import dnnc

    g = dnnc.Graph(name=name, io_data_type="f32" if dt == "tf32" else dt)
    x = g.tensor(name="x", dim=x_dims, stride=_nhwc(*x_dims))
    w = g.tensor(name="w", dim=w_dims, stride=_nhwc(*w_dims))
    y = g.conv_fprop(x, w, stride=stride, padding=pad)
    y_dims = [int(d) for d in y.dim]
    y.set_output(True).set_stride(_nhwc(*y_dims))
    return g


def _torch_general(stride, pad, groups, rank):
    conv = {4: "conv2d", 5: "conv3d"}[rank]
    return _allow_tf32(lambda t, x, w: getattr(t.nn.functional, conv)(
        x, w, stride=stride, padding=pad, groups=groups))


# (label, x dims, w dims, stride, padding, groups, dtype): f16 layers, a 3-D
# convolution, depthwise convolutions (MobileNetV2's 3x3, ConvNeXt's 7x7) and
# grouped ones.
GENERAL = [
    ("3x3 f16", [32, 128, 28, 28], [128, 128, 3, 3], 1, 1, 1, "f16"),
    ("1x1 f16", [32, 256, 56, 56], [64, 256, 1, 1], 1, 0, 1, "f16"),
    ("3x3 tf32", [32, 128, 28, 28], [128, 128, 3, 3], 1, 1, 1, "tf32"),
    ("3x3x3 3-D", [8, 64, 16, 56, 56], [64, 64, 3, 3, 3], 1, 1, 1, "bf16"),
    ("3x3 depthwise", [32, 144, 56, 56], [144, 1, 3, 3], 1, 1, 144, "bf16"),
    ("7x7 depthwise", [32, 96, 56, 56], [96, 1, 7, 7], 1, 3, 96, "bf16"),
    ("3x3 2 groups", [32, 256, 28, 28], [256, 128, 3, 3], 1, 1, 2, "bf16"),
    # ResNeXt-50 32x4d's first stage 3x3: 32 groups of 4 channels.
    ("3x3 32 groups", [32, 128, 56, 56], [128, 4, 3, 3], 1, 1, 32, "bf16"),
]
# Gradients of grouped convolutions, channels-last bf16, memory-bound: the
# depthwise layers above (MobileNetV2's 3x3, ConvNeXt's 7x7) and ResNeXt-50's
# 32-group 3x3. (what, N, C, H, R, pad, groups); K = C.
GROUPED_GRADS = [
    ("3x3 depthwise", 32, 144, 56, 3, 1, 144),
    ("7x7 depthwise", 32, 96, 56, 7, 3, 96),
    ("3x3 32 groups", 32, 128, 56, 3, 1, 32),
]

# More depthwise and small-group layers, every direction (what, N, C, H, R,
# stride, pad, groups; K = C): MobileNetV2's strided 3x3 and a late 3x3 of
# many channels, ConvNeXt's 7x7 at 14 x 14, ResNeXt-50's second stage (32
# groups of 8), and the 3x3 depthwise layer at batch 128.
DEPTHWISE_LAYERS = [
    ("3x3/2 depthwise", 32, 96, 112, 3, 2, 1, 96),
    ("3x3 depthwise", 32, 384, 14, 3, 1, 1, 384),
    ("7x7 depthwise", 32, 384, 14, 7, 1, 3, 384),
    ("3x3 32 groups", 32, 256, 28, 3, 1, 1, 32),
    ("3x3 depthwise", 128, 144, 56, 3, 1, 1, 144),
    # ResNeXt-50's third and fourth stages: 32 groups of 16 and of 32.
    ("3x3 32 groups", 32, 512, 14, 3, 1, 1, 32),
    ("3x3 32 groups", 32, 1024, 7, 3, 1, 1, 32),
]


def _torch_conv(stride, pad, epilogue):
    def fn(t, x, w, *rest):
        y = t.nn.functional.conv2d(x, w, stride=stride, padding=pad)
        if epilogue == "bias_relu":
            y = y + rest[0]
        elif epilogue in ("bn_relu", "film_relu"):
            y = y * rest[0] + rest[1]
        elif epilogue == "pos_relu":
            y = y + rest[0]
        elif epilogue == "bias_residual_relu":
            y = y + rest[0] + rest[1]
        return t.relu(y) if epilogue else y
    return fn


# (what, N, C, H, K, R, stride, pad): ResNet-50's 3x3 layers, its 1x1
# layers and the stem (cases.py's CONV has 3x3 32x64x56x56 and 1x1
# 32x256x56x56 -> 64).
LAYERS = [
    ("3x3", 32, 128, 28, 128, 3, 1, 1),
    ("3x3", 32, 256, 14, 256, 3, 1, 1),
    ("3x3", 32, 512, 7, 512, 3, 1, 1),
    ("3x3", 128, 64, 56, 64, 3, 1, 1),
    ("3x3", 128, 256, 14, 256, 3, 1, 1),
    ("1x1", 32, 64, 56, 256, 1, 1, 0),
    ("1x1", 32, 1024, 14, 256, 1, 1, 0),
    ("1x1", 128, 256, 56, 64, 1, 1, 0),
    ("7x7/2 stem", 32, 3, 224, 64, 7, 2, 3),
]
# The gradients of ResNet-50's layers (cases.py's CONV has the 3x3
# 16x128x28x28 pair).
GRADS = [
    ("3x3", 32, 64, 56, 64, 3, 1, 1),
    ("3x3", 32, 128, 28, 128, 3, 1, 1),
    ("3x3", 32, 256, 14, 256, 3, 1, 1),
    ("3x3", 32, 512, 7, 512, 3, 1, 1),
    ("1x1", 32, 256, 56, 64, 1, 1, 0),
    ("1x1", 32, 64, 56, 256, 1, 1, 0),
    ("1x1", 32, 1024, 14, 256, 1, 1, 0),
    # The strided layers (layer2.0's 3x3 and its 1x1 downsample).
    ("3x3/2", 32, 128, 56, 128, 3, 2, 1),
    ("1x1/2", 32, 256, 56, 512, 1, 2, 0),
]
# The tf32 gradients of ResNet-50's 3x3 layers (f32 tensors; PyTorch with
# cuDNN's tf32 allowed), beside GENERAL's tf32 forward.
# Filter gradients with the bias gradient beside them (ResNet-50's layers at
# batch 32; a conv-with-bias network's backward makes both from one dy).
BIAS_GRADS = [
    ("3x3", 32, 64, 56, 64, 3, 1, 1),
    ("1x1", 32, 256, 56, 64, 1, 1, 0),
    ("3x3", 32, 256, 14, 256, 3, 1, 1),
]
TF32_GRADS = [
    ("3x3", 32, 64, 56, 64, 3, 1, 1),
    ("3x3", 32, 128, 28, 128, 3, 1, 1),
    ("3x3", 32, 256, 14, 256, 3, 1, 1),
    ("3x3", 32, 512, 7, 512, 3, 1, 1),
]
# Filter gradients whose C is no multiple of the tile width (tensorcore/
# wgrad_taps.py): MobileNetV2's 1x1 expansion and projection at 56 x 56
# (C = 24 and 144) and a 3x3 of C = 96 (not depthwise), wgrad only.
WGRAD_CHANNELS = [
    ("1x1", 32, 144, 56, 24, 1, 1, 0),
    ("1x1", 32, 24, 56, 144, 1, 1, 0),
    ("3x3", 32, 96, 28, 96, 3, 1, 1),
    ("3x3", 32, 144, 28, 144, 3, 1, 1),
]
# The strided data gradients again in other tiles: their stride phases run
# in the tile the heuristics choose for the whole gradient (a phase has a
# quarter of its rows), so these say what a tile chosen for a phase gives.
PHASE_TILES = [
    ("3x3/2", 32, 128, 56, 128, 3, 2, 1, "*=strategy:tc-sm90,tile:128x64x64,stages:8"),
    ("1x1/2", 32, 256, 56, 512, 1, 2, 0, "*=strategy:tc-sm90,tile:128x128x64,stages:6"),
]
# Other configs of layers that miss their targets (docs/performance.md, "The
# targets, as they stand"), each a config override timed in the same run as
# the heuristics' choice (LAYERS): (what, N, C, H, K, R, stride, pad, label,
# config). The 1x1 14x14 layer (GEMM 6272x256x1024, 98 tiles of 128x128 for
# 132 SMs): x in TMA's im2col mode (what ran before the heuristics set
# ``tiled``), 64-row tiles (196 of them), and 128x256 tiles with K split over
# a cluster of 2 (98 blocks, each half of K; a quarter fewer operand bytes a
# block than 128x128 unsplit). The 3x3 14x14 layer at batch 32 (the same
# GEMM's M and N, K 2304): the same two tiles.
ALTERNATIVES = [
    ("1x1", 32, 1024, 14, 256, 1, 1, 0, "im2col", "*=tiled:0"),
    ("1x1", 32, 1024, 14, 256, 1, 1, 0, "tile 64x128x64", "*=tile:64x128x64"),
    ("1x1", 32, 1024, 14, 256, 1, 1, 0, "tile 128x256x64 split 2 cluster 2",
     "*=tile:128x256x64,split:2,cluster:2,stages:4"),
    ("3x3", 32, 256, 14, 256, 3, 1, 1, "tile 64x128x64", "*=tile:64x128x64"),
    # The bf16 twin of tf32's half-rows tile (TF32_HALF_ROWS): 392 tiles of
    # 64x128 beside the heuristics' 128x64.
    ("3x3", 32, 128, 28, 128, 3, 1, 1, "tile 64x128x64", "*=tile:64x128x64"),
    ("3x3", 128, 256, 14, 256, 3, 1, 1, "tile 64x256x64", "*=tile:64x256x64,stages:5"),
    ("3x3", 32, 256, 14, 256, 3, 1, 1, "tile 128x256x64 split 2 cluster 2",
     "*=tile:128x256x64,split:2,cluster:2,stages:4"),
    # The tail split (sm90/tail_split.py) beside the same tiles without it:
    # 196 tiles of 128x256 (1.48 waves), the last 64 split 2 ways along K;
    # the 1x1's 196 tiles of 128x64 or 64x128 likewise.
    ("3x3", 128, 256, 14, 256, 3, 1, 1, "tile 128x256x64", "*=tile:128x256x64,stages:4"),
    ("3x3", 128, 256, 14, 256, 3, 1, 1, "tile 128x256x64 tail split 2",
     "*=tile:128x256x64,stages:4,tail_split:2"),
    ("1x1", 32, 1024, 14, 256, 1, 1, 0, "tile 128x64x64", "*=tile:128x64x64"),
    ("1x1", 32, 1024, 14, 256, 1, 1, 0, "tile 128x64x64 tail split 2",
     "*=tile:128x64x64,tail_split:2"),
    ("1x1", 32, 1024, 14, 256, 1, 1, 0, "tile 64x128x64 tail split 2",
     "*=tile:64x128x64,tail_split:2"),
]
# simt-depthwise's configs at W = 14, timed beside the heuristics' choice
# (a tile along W that divides W: 2 for the 3x3, 7 for the 7x7, 8 channels
# a thread): the 3x3's tile of 4 with its last tile's outputs guarded,
# forward and data gradient, the 7x7 with 4 channels a thread (112
# registers instead of 188), in larger blocks and whole rows of 14, and
# the 7x7's filter gradient split further.
# (what, N, C, H, R, pad, direction, label, config)
DEPTHWISE_TILES = [
    ("3x3 depthwise", 32, 384, 14, 3, 1, "fprop", "tile 1x4", "*=tile:1x4"),
    ("3x3 depthwise", 32, 384, 14, 3, 1, "dgrad", "tile 1x4", "*=tile:1x4"),
    ("7x7 depthwise", 32, 384, 14, 7, 3, "fprop", "vector 4", "*=vector:4"),
    ("7x7 depthwise", 32, 384, 14, 7, 3, "fprop", "vector 4 block 256",
     "*=vector:4,block:256"),
    ("7x7 depthwise", 32, 384, 14, 7, 3, "fprop", "vector 4 tile 1x14 block 256",
     "*=vector:4,tile:1x14,block:256"),
    ("7x7 depthwise", 32, 384, 14, 7, 3, "fprop", "block 256", "*=block:256"),
    # The 7x7's filter gradient (80% of cuDNN at 8 splits of the pixels,
    # 192 blocks): more splits, a tile of 7 that divides W.
    ("7x7 depthwise", 32, 384, 14, 7, 3, "wgrad", "split 16", "*=split:16"),
    ("7x7 depthwise", 32, 384, 14, 7, 3, "wgrad", "split 24", "*=split:24"),
    ("7x7 depthwise", 32, 384, 14, 7, 3, "wgrad", "tile 1x7 split 16", "*=tile:1x7,split:16"),
    # The 3x3's filter gradient at 14 x 14 (runs of 8 over W = 14, the
    # last guarded, 43 splits, before WGRAD_SHORT_ROWS took it): runs of 7
    # that divide W, in other splits.
    ("3x3 depthwise", 32, 384, 14, 3, 1, "wgrad", "tile 1x7", "*=tile:1x7"),
    ("3x3 depthwise", 32, 384, 14, 3, 1, "wgrad", "tile 1x7 split 16", "*=tile:1x7,split:16"),
    ("3x3 depthwise", 32, 384, 14, 3, 1, "wgrad", "tile 1x7 split 24", "*=tile:1x7,split:24"),
    ("3x3 depthwise", 32, 384, 14, 3, 1, "wgrad", "tile 1x7 split 43", "*=tile:1x7,split:43"),
    ("3x3 depthwise", 32, 384, 14, 3, 1, "wgrad", "split 16", "*=split:16"),
]
# Other configs of the grouped layers above (what, N, C, H, R, pad, groups,
# direction, label, config), timed beside the heuristics' choice; KERNEL in
# a config names the case's convolution kernel. ResNeXt-50's third and
# fourth stages' filter gradients (32 groups of 16 and 32, widened to 64
# channels a group: dnn-widen-groups): 72 and 144 tiles of 64 x 64 for 132
# SMs, unsplit, beside K split 2 and 3.
GROUPED_TILES = [
    ("3x3 32 groups", 32, 512, 14, 3, 1, 32, "wgrad", "split 2", "KERNEL=split:2"),
    ("3x3 32 groups", 32, 512, 14, 3, 1, 32, "wgrad", "split 3", "KERNEL=split:3"),
    ("3x3 32 groups", 32, 1024, 7, 3, 1, 32, "wgrad", "split 2", "KERNEL=split:2"),
    ("3x3 32 groups", 32, 1024, 7, 3, 1, 32, "wgrad", "tile 128x64x64", "KERNEL=tile:128x64x64"),
]
# The 1x1 14x14 layer's GEMM as a matmul (x as [N*H*W, C], the filter as
# [C, K] stored K x C): what dnnc's matmul path makes of the same product,
# against cuBLAS, beside the convolution's (N, C, H, K).
AS_MATMUL = [(32, 1024, 14, 256)]
FUSED = [("bias_relu", 32, 64, 56, 64, 3, 1, 1), ("bn_relu", 32, 64, 56, 64, 3, 1, 1),
         ("bias_residual_relu", 32, 64, 56, 64, 3, 1, 1),
         # Operands broadcast over some of the output pixel dims (split
         # views; simt-generic before).
         ("film_relu", 32, 64, 56, 64, 3, 1, 1), ("pos_relu", 32, 64, 56, 64, 3, 1, 1)]
# BN-ReLU-conv on ResNet-50's 3x3 layer: the batchnorm and relu of the
# layer before as the convolution's prologue.
PROLOGUES = [("3x3", 32, 64, 56, 64, 3, 1, 1)]
# The Ampere strategy's implicit GEMM (a cp.async gather, mma.sync) on
# whatever GPU runs it: (what, N, C, H, K, R, stride, pad, config). Measured
# on an H200 (do_bench medians; cuDNN 0.021 ms, tc-sm90 0.022): 256x128x64
# tiles in 3 stages 0.029 ms, 128x128x64 in 3 0.035, 128x128x32 in 4 (what
# the heuristics give it) 0.040, 64x128x32 in 4 0.053.
SM80 = [("3x3", 32, 128, 28, 128, 3, 1, 1, "*=strategy:tc-sm80,tile:256x128x64,stages:3")]
# tf32 convolutions (f32 tensors; PyTorch with cuDNN's tf32 allowed) on
# tc-sm80, forced: its implicit GEMM of 4-byte elements (16-byte cp.async
# chunks of 4 channels, mma.sync m16n8k8 tf32), what an A100 runs, timed on
# whatever GPU runs it beside cuDNN (and, on sm_90a, beside tc-sm90's own
# cases: GENERAL's "3x3 tf32" and TF32_GRADS). (direction, what, N, C, H, K,
# R, stride, pad, tile or None): None, the tile dnn-map-tensor-cores gives
# a forced kernel (4 warps of 128 x 128 x 16; a filter gradient's N a
# divisor of C); a tile, 8 warps of it with a K step of 128 bytes (32 tf32),
# 3 stages, to time against the first in the same run.
# tf32 on tc-sm90 in other configs than the heuristics' (the two tf32
# layers that miss 0.9x cuDNN: "The targets, as they stand"), timed beside
# them: (direction, what, N, C, H, K, R, stride, pad, label, config). The
# forward's 392 tiles of 128x64 in 8 stages, beside fewer stages and 196
# tiles of 128x128; the filter gradient's 9 tiles of 64x64, K split 14 in
# clusters of 2, beside other splits and clusters.
TF32_TILES = [
    ("fprop", "3x3", 32, 128, 28, 128, 3, 1, 1, "stages 4", "*=tile:128x64x32,stages:4"),
    ("fprop", "3x3", 32, 128, 28, 128, 3, 1, 1, "tile 128x128x32", "*=tile:128x128x32,stages:5"),
    ("fprop", "3x3", 32, 128, 28, 128, 3, 1, 1, "tile 64x128x32", "*=tile:64x128x32"),
    ("wgrad", "3x3", 32, 64, 56, 64, 3, 1, 1, "split 14 cluster 1", "*=split:14,cluster:1"),
    ("wgrad", "3x3", 32, 64, 56, 64, 3, 1, 1, "split 28 cluster 4", "*=split:28,cluster:4"),
    ("wgrad", "3x3", 32, 64, 56, 64, 3, 1, 1, "split 7 cluster 1", "*=split:7,cluster:1"),
]
SM80_TF32 = [
    ("fprop", "3x3", 32, 128, 28, 128, 3, 1, 1, None),
    ("fprop", "3x3", 32, 128, 28, 128, 3, 1, 1, "256x128x32"),
    ("fprop", "1x1", 32, 256, 56, 64, 1, 1, 0, None),
    ("dgrad", "3x3", 32, 64, 56, 64, 3, 1, 1, None),
    ("dgrad", "3x3", 32, 256, 14, 256, 3, 1, 1, None),
    ("dgrad", "3x3", 32, 256, 14, 256, 3, 1, 1, "256x128x32"),
    ("dgrad", "3x3/2", 32, 128, 56, 128, 3, 2, 1, None),
    ("wgrad", "3x3", 32, 64, 56, 64, 3, 1, 1, None),
    ("wgrad", "3x3", 32, 256, 14, 256, 3, 1, 1, None),
    ("wgrad", "3x3", 32, 256, 14, 256, 3, 1, 1, "128x256x32"),
]
# Channel counts that are not multiples of 8 (what, N, C, H, K, R, stride,
# pad, config): TMA cannot step such pixels, so tc-sm80's implicit GEMM
# reads them where they lie, zero past C in the loader (sm80/loader.py),
# on sm_90a as on sm_80. A 3x3 layer over an RGB image (not the stem) and
# the 7x7/2 stem take tc-sm90 with the filter's columns folded into the
# channels (tensorcore/fold.py) by default; forced onto tc-sm80 they show
# what the loader's padding costs against the fold.
ODD_CHANNELS = [
    ("3x3 C=3", 32, 3, 112, 64, 3, 1, 1, None),
    ("3x3 C=3", 32, 3, 112, 64, 3, 1, 1, "*=strategy:tc-sm80"),
    ("7x7/2 stem", 32, 3, 224, 64, 7, 2, 3, "*=strategy:tc-sm80"),
    ("3x3 C=63", 32, 63, 56, 65, 3, 1, 1, None),
]
# Their gradients: dy of K = 65 channels (dgrad reduces them; wgrad's M).
ODD_GRADS = [("3x3 K=65", "dgrad", 32, 63, 56, 65, 3, 1, 1),
             ("3x3 K=65", "wgrad", 32, 64, 56, 65, 3, 1, 1)]
# Filter gradients of odd channels on tc-sm80 with K split over blocks
# (sm80/splitk.py; their tiles alone leave most SMs idle), and the K = 65
# one forced unsplit (the same tiles), to show what the split gains in the
# same run: (what, N, C, H, K, R, stride, pad, config).
# The two of C = 3 run on tc-sm90 by default, their filter's columns folded
# into the channels (tensorcore/fold.py: FOLDED_WGRADS): here forced onto
# tc-sm80, as they ran before.
SPLIT_WGRADS = [
    ("3x3 C=63 K=65", 32, 63, 56, 65, 3, 1, 1, None),
    ("3x3 C=3", 32, 3, 112, 64, 3, 1, 1, "*=strategy:tc-sm80"),
    ("7x7/2 stem C=3", 32, 3, 224, 64, 7, 2, 3, "*=strategy:tc-sm80"),
    ("3x3 K=7", 32, 64, 56, 7, 3, 1, 1, None),
    ("3x3 K=65 unsplit", 32, 64, 56, 65, 3, 1, 1, "*=strategy:tc-sm80,tile:64x64x32"),
]
# Filter gradients of RGB images, the filter's columns folded into the
# channels on tc-sm90 (tensorcore/fold.py): a 3x3 and the ResNet stem, at
# batch 32 and at the 128 of a training step (what, N, C, H, K, R, stride,
# pad).
FOLDED_WGRADS = [
    ("3x3 C=3", 32, 3, 112, 64, 3, 1, 1),
    ("7x7/2 stem C=3", 32, 3, 224, 64, 7, 2, 3),
    ("7x7/2 stem C=3", 128, 3, 224, 64, 7, 2, 3),
]


def _tf32_case(Case, direction, what, geometry, label, slug, config):
    """A tf32 convolution case (f32 tensors; PyTorch with cuDNN's tf32
    allowed) of ``geometry`` (N, C, H, K, R, stride, pad) in ``direction``,
    named with ``label``, run with ``config``."""
    n, c, h, k, r, s, pad = geometry
    p = out_size(h, r, s, pad)
    name = f"conv {direction} {what} {n}x{c}x{h}x{h} ->{k} NHWC tf32 {label}"
    flops = 2 * n * k * p * p * c * r * r
    nbytes = (n * c * h * h + k * c * r * r + n * k * p * p) * 4
    if direction == "fprop":
        graph = (lambda slug=slug: general_graph(slug, [n, c, h, h], [k, c, r, r], s, pad,
                                                 dt="tf32"))
        torch_fn = _torch_general(s, pad, 1, 4)
    else:
        shape = [n, c, h, h] if direction == "dgrad" else [k, c, r, r]
        graph = (lambda slug=slug: grad_graph(slug, direction, n, c, h, k, r, stride=s,
                                              pad=pad, dt="tf32"))
        torch_fn = _allow_tf32(_torch_grad(direction, shape, s, pad))
    return Case(name, graph, torch_fn, flops, nbytes, False, "conv", config=config)


def cases(Case):
    """The cases, made with cases.py's ``Case``."""
    out = []
    for what, n, c, h, k, r, s, pad in LAYERS + FUSED:
        epilogue = None if what[0].isdigit() else what
        p = out_size(h, r, s, pad)
        label = what if epilogue is None else f"3x3 + {epilogue.replace('_', ' + ')}"
        name = f"conv {label} {n}x{c}x{h}x{h} ->{k} NHWC bf16"
        flops = 2 * n * k * p * p * c * r * r
        nbytes = (n * c * h * h + k * c * r * r + n * k * p * p) * BF16
        slug = "conv_" + "".join(ch if ch.isalnum() else "_" for ch in f"{label}_{n}_{c}_{h}_{k}")
        out.append(Case(name, lambda slug=slug, a=(n, c, h, k, r, s, pad, epilogue):
                        conv_graph(slug, *a[:5], stride=a[5], pad=a[6], epilogue=a[7]),
                        _torch_conv(s, pad, epilogue), flops, nbytes, False, "conv",
                        compiled=epilogue is not None))
    for what, n, c, h, k, r, s, pad in PROLOGUES:
        p = out_size(h, r, s, pad)
        name = f"conv bn + relu + {what} {n}x{c}x{h}x{h} ->{k} NHWC bf16"
        flops = 2 * n * k * p * p * c * r * r
        nbytes = (n * c * h * h + k * c * r * r + n * k * p * p + 2 * c) * BF16
        slug = f"conv_bn_relu_prologue_{what}_{n}_{c}_{h}_{k}"
        out.append(Case(name, lambda slug=slug, a=(n, c, h, k, r, s, pad):
                        prologue_graph(slug, *a[:5], stride=a[5], pad=a[6]),
                        _torch_prologue(s, pad), flops, nbytes, False, "conv", compiled=True))
    for what, x_dims, w_dims, s, pad, groups, dt in GENERAL:
        name = f"conv {what} {'x'.join(map(str, x_dims))} ->{w_dims[0]} NHWC {dt}"
        y_spatial = [out_size(d, r, s, pad) for d, r in zip(x_dims[2:], w_dims[2:])]
        reduced = w_dims[1] * math.prod(w_dims[2:])
        flops = 2 * x_dims[0] * w_dims[0] * math.prod(y_spatial) * reduced
        nbytes = (math.prod(x_dims) + math.prod(w_dims)
                  + x_dims[0] * w_dims[0] * math.prod(y_spatial)) * (4 if dt == "tf32" else 2)
        slug = "conv_" + "".join(ch if ch.isalnum() else "_" for ch in what + "_" + dt)
        out.append(Case(name, lambda slug=slug, a=(x_dims, w_dims, s, pad, groups, dt):
                        general_graph(slug, *a), _torch_general(s, pad, groups, len(x_dims)),
                        flops, nbytes, False, "conv"))
    for what, n, c, h, k, r, s, pad, config in SM80:
        p = out_size(h, r, s, pad)
        name = f"conv {what} {n}x{c}x{h}x{h} ->{k} NHWC bf16 tc-sm80"
        flops = 2 * n * k * p * p * c * r * r
        nbytes = (n * c * h * h + k * c * r * r + n * k * p * p) * BF16
        slug = f"conv_sm80_{what}_{n}_{c}_{h}_{k}"
        out.append(Case(name, lambda slug=slug, a=(n, c, h, k, r, s, pad):
                        conv_graph(slug, *a[:5], stride=a[5], pad=a[6]),
                        _torch_conv(s, pad, None), flops, nbytes, False, "conv",
                        config=config))
    for direction, what, n, c, h, k, r, s, pad, tile in SM80_TF32:
        config = "*=strategy:tc-sm80" + (f",tile:{tile},stages:3,block:256" if tile else "")
        label = "tc-sm80" + (f" tile {tile}" if tile else "")
        slug = "conv_sm80_tf32_" + "".join(ch if ch.isalnum() else "_" for ch in
                                           f"{direction}_{what}_{n}_{c}_{h}_{k}_{tile or ''}")
        out.append(_tf32_case(Case, direction, what, (n, c, h, k, r, s, pad), label, slug,
                              config))
    for direction, what, n, c, h, k, r, s, pad, label, config in TF32_TILES:
        slug = "conv_tf32_alt_" + "".join(ch if ch.isalnum() else "_" for ch in
                                          f"{direction}_{what}_{n}_{c}_{h}_{k}_{label}")
        out.append(_tf32_case(Case, direction, what, (n, c, h, k, r, s, pad), label, slug,
                              config))
    for what, n, c, h, k, r, s, pad, config in ODD_CHANNELS:
        p = out_size(h, r, s, pad)
        forced = " tc-sm80" if config else ""
        name = f"conv {what} {n}x{c}x{h}x{h} ->{k} NHWC bf16{forced}"
        flops = 2 * n * k * p * p * c * r * r
        nbytes = (n * c * h * h + k * c * r * r + n * k * p * p) * BF16
        slug = "conv_odd_" + "".join(ch if ch.isalnum() else "_"
                                     for ch in f"{what}_{n}_{c}_{h}_{k}{forced}")
        out.append(Case(name, lambda slug=slug, a=(n, c, h, k, r, s, pad):
                        conv_graph(slug, *a[:5], stride=a[5], pad=a[6]),
                        _torch_conv(s, pad, None), flops, nbytes, False, "conv",
                        config=config))
    for what, direction, n, c, h, k, r, s, pad in ODD_GRADS:
        p = out_size(h, r, s, pad)
        name = f"conv {direction} {what} {n}x{c}x{h}x{h} ->{k} NHWC bf16"
        flops = 2 * n * k * p * p * c * r * r
        nbytes = (n * c * h * h + k * c * r * r + n * k * p * p) * BF16
        shape = [n, c, h, h] if direction == "dgrad" else [k, c, r, r]
        slug = "conv_odd_" + "".join(ch if ch.isalnum() else "_"
                                     for ch in f"{direction}_{what}_{n}_{c}_{h}_{k}")
        out.append(Case(name, lambda slug=slug, d=direction, a=(n, c, h, k, r, s, pad):
                        grad_graph(slug, d, *a[:5], stride=a[5], pad=a[6]),
                        _torch_grad(direction, shape, s, pad), flops, nbytes, False, "conv"))
    # (cases, their slugs' prefix, their names' suffix)
    wgrads = [(SPLIT_WGRADS, "conv_split_", " tc-sm80"),
              ([(*g, None) for g in FOLDED_WGRADS], "conv_fold_", "")]
    for cases, prefix, suffix in wgrads:
        for what, n, c, h, k, r, s, pad, config in cases:
            p = out_size(h, r, s, pad)
            name = f"conv wgrad {what} {n}x{c}x{h}x{h} ->{k} NHWC bf16{suffix}"
            flops = 2 * n * k * p * p * c * r * r
            nbytes = (n * c * h * h + k * c * r * r + n * k * p * p) * BF16
            slug = prefix + "".join(ch if ch.isalnum() else "_"
                                    for ch in f"wgrad_{what}_{n}_{c}_{h}_{k}")
            out.append(Case(name, lambda slug=slug, a=(n, c, h, k, r, s, pad):
                            grad_graph(slug, "wgrad", *a[:5], stride=a[5], pad=a[6]),
                            _torch_grad("wgrad", [k, c, r, r], s, pad), flops, nbytes, False,
                            "conv", config=config))
    for direction in ("dgrad", "wgrad"):
        for what, n, c, h, k, r, s, pad in GRADS + (WGRAD_CHANNELS if direction == "wgrad"
                                                   else []):
            p = out_size(h, r, s, pad)
            name = f"conv {direction} {what} {n}x{c}x{h}x{h} ->{k} NHWC bf16"
            flops = 2 * n * k * p * p * c * r * r
            nbytes = (n * c * h * h + k * c * r * r + n * k * p * p) * BF16
            shape = [n, c, h, h] if direction == "dgrad" else [k, c, r, r]
            slug = f"conv_{direction}_{what.replace('/', 's')}_{n}_{c}_{h}_{k}"
            out.append(Case(name, lambda slug=slug, d=direction, a=(n, c, h, k, r, s, pad):
                            grad_graph(slug, d, *a[:5], stride=a[5], pad=a[6]),
                            _torch_grad(direction, shape, s, pad), flops, nbytes, False, "conv"))
    for what, n, c, h, k, r, s, pad in BIAS_GRADS:
        p = out_size(h, r, s, pad)
        name = f"conv wgrad + bias grad {what} {n}x{c}x{h}x{h} ->{k} NHWC bf16"
        flops = 2 * n * k * p * p * c * r * r + n * k * p * p
        nbytes = (n * c * h * h + k * c * r * r + n * k * p * p + k) * BF16
        slug = f"conv_wgrad_bias_{what}_{n}_{c}_{h}_{k}"
        out.append(Case(name, lambda slug=slug, a=(n, c, h, k, r, s, pad):
                        bias_grad_graph(slug, *a[:5], stride=a[5], pad=a[6]),
                        _torch_bias_grad([k, c, r, r], s, pad), flops, nbytes, False, "conv"))
    for direction in ("dgrad", "wgrad"):
        for what, n, c, h, k, r, s, pad in TF32_GRADS:
            p = out_size(h, r, s, pad)
            name = f"conv {direction} {what} {n}x{c}x{h}x{h} ->{k} NHWC tf32"
            flops = 2 * n * k * p * p * c * r * r
            nbytes = (n * c * h * h + k * c * r * r + n * k * p * p) * 4
            shape = [n, c, h, h] if direction == "dgrad" else [k, c, r, r]
            slug = f"conv_{direction}_tf32_{what}_{n}_{c}_{h}_{k}"
            out.append(Case(name, lambda slug=slug, d=direction, a=(n, c, h, k, r, s, pad):
                            grad_graph(slug, d, *a[:5], stride=a[5], pad=a[6], dt="tf32"),
                            _allow_tf32(_torch_grad(direction, shape, s, pad)), flops, nbytes,
                            False, "conv"))
        for what, n, c, h, r, pad, groups in GROUPED_GRADS:
            p = out_size(h, r, 1, pad)
            cg = c // groups
            name = f"conv {direction} {what} {n}x{c}x{h}x{h} ->{c} NHWC bf16"
            flops = 2 * n * c * p * p * cg * r * r
            # Memory-bound: the minimal bytes are the two activations read or
            # written once and the filter.
            nbytes = (n * c * h * h + c * cg * r * r + n * c * p * p) * BF16
            shape = [n, c, h, h] if direction == "dgrad" else [c, cg, r, r]
            slug = f"conv_{direction}_{what.replace(' ', '_')}_{n}_{c}_{h}"
            out.append(Case(name, lambda slug=slug, d=direction, a=(n, c, h, c, r, 1, pad),
                            groups=groups: grad_graph(slug, d, *a[:5], stride=a[5], pad=a[6],
                                                      groups=groups),
                            _torch_grad(direction, shape, 1, pad, groups), flops, nbytes, True,
                            "conv"))
    for what, n, c, h, r, s, pad, groups in DEPTHWISE_LAYERS:
        p = out_size(h, r, s, pad)
        cg = c // groups
        # Memory-bound: the minimal bytes are the two activations read or
        # written once and the filter.
        nbytes = (n * c * h * h + c * cg * r * r + n * c * p * p) * BF16
        flops = 2 * n * c * p * p * cg * r * r
        tag = "".join(ch if ch.isalnum() else "_" for ch in f"{what}_{n}_{c}_{h}")
        name = f"conv {what} {n}x{c}x{h}x{h} ->{c} NHWC bf16"
        out.append(Case(name, lambda slug=f"conv_layer_{tag}", a=([n, c, h, h], [c, cg, r, r],
                                                                  s, pad, groups):
                        general_graph(slug, *a), _torch_general(s, pad, groups, 4), flops,
                        nbytes, True, "conv"))
        for direction in ("dgrad", "wgrad"):
            shape = [n, c, h, h] if direction == "dgrad" else [c, cg, r, r]
            name = f"conv {direction} {what} {n}x{c}x{h}x{h} ->{c} NHWC bf16"
            out.append(Case(name, lambda slug=f"conv_{direction}_layer_{tag}", d=direction,
                            a=(n, c, h, c, r, s, pad), groups=groups:
                            grad_graph(slug, d, *a[:5], stride=a[5], pad=a[6], groups=groups),
                            _torch_grad(direction, shape, s, pad, groups), flops, nbytes, True,
                            "conv"))
    for what, n, c, h, k, r, s, pad, label, config in ALTERNATIVES:
        p = out_size(h, r, s, pad)
        name = f"conv {what} {n}x{c}x{h}x{h} ->{k} NHWC bf16 {label}"
        flops = 2 * n * k * p * p * c * r * r
        nbytes = (n * c * h * h + k * c * r * r + n * k * p * p) * BF16
        slug = "conv_alt_" + "".join(ch if ch.isalnum() else "_"
                                     for ch in f"{what}_{n}_{c}_{h}_{k}_{label}")
        out.append(Case(name, lambda slug=slug, a=(n, c, h, k, r, s, pad):
                        conv_graph(slug, *a[:5], stride=a[5], pad=a[6]),
                        _torch_conv(s, pad, None), flops, nbytes, False, "conv",
                        config=config))
    tiles = [(*entry[:6], entry[2], *entry[6:]) for entry in DEPTHWISE_TILES] + GROUPED_TILES
    for what, n, c, h, r, pad, groups, direction, label, config in tiles:
        cg = c // groups
        nbytes = (2 * n * c * h * h + c * cg * r * r) * BF16
        flops = 2 * n * c * h * h * cg * r * r
        tag = "".join(ch if ch.isalnum() else "_" for ch in f"{what}_{n}_{c}_{h}_{label}")
        if direction == "fprop":
            name = f"conv {what} {n}x{c}x{h}x{h} ->{c} NHWC bf16 {label}"
            out.append(Case(name, lambda slug=f"conv_dwalt_{tag}",
                            a=([n, c, h, h], [c, cg, r, r], 1, pad, groups):
                            general_graph(slug, *a),
                            _torch_general(1, pad, groups, 4), flops, nbytes, True, "conv",
                            config=config))
        else:
            name = f"conv {direction} {what} {n}x{c}x{h}x{h} ->{c} NHWC bf16 {label}"
            shape = [n, c, h, h] if direction == "dgrad" else [c, cg, r, r]
            slug = f"conv_{direction}_dwalt_{tag}"
            out.append(Case(name, lambda slug=slug, d=direction,
                            a=(n, c, h, c, r, 1, pad), groups=groups:
                            grad_graph(slug, d, *a[:5], stride=a[5], pad=a[6], groups=groups),
                            _torch_grad(direction, shape, 1, pad, groups), flops, nbytes, True,
                            "conv", config=config.replace("KERNEL",
                                                          f"{slug}_k0_conv_{direction}")))
    for n, c, h, k in AS_MATMUL:
        m = n * h * h
        name = f"conv 1x1 {n}x{c}x{h}x{h} ->{k} as matmul {m}x{k}x{c} bf16"
        out.append(Case(name, lambda slug=f"conv_as_matmul_{m}_{k}_{c}", a=(m, k, c):
                        matmul_graph(slug, *a), lambda t, x, w: x @ w, 2 * m * k * c,
                        (m * c + c * k + m * k) * BF16, False, "conv"))
    for what, n, c, h, k, r, s, pad, config in PHASE_TILES:
        p = out_size(h, r, s, pad)
        tile = config.split("tile:")[1].split(",")[0]
        name = f"conv dgrad {what} {n}x{c}x{h}x{h} ->{k} NHWC bf16 tile {tile}"
        flops = 2 * n * k * p * p * c * r * r
        nbytes = (n * c * h * h + k * c * r * r + n * k * p * p) * BF16
        slug = f"conv_dgrad_{what.replace('/', 's')}_{n}_{c}_{h}_{k}_{tile}"
        out.append(Case(name, lambda slug=slug, a=(n, c, h, k, r, s, pad):
                        grad_graph(slug, "dgrad", *a[:5], stride=a[5], pad=a[6]),
                        _torch_grad("dgrad", [n, c, h, h], s, pad), flops, nbytes, False,
                        "conv", config=config))
    return out
