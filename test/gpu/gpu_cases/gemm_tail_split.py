"""tc-sm90's tail split (config ``tail_split``: sm90/tail_split.py): the
tiles of the persistent grid's last, partial wave (of 132 blocks) split
along K over the blocks it leaves idle, each part's f32 accumulator stored
in a compact workspace and the parts summed in split order by the warp
that arrives last, which runs the epilogue; the whole tiles run as
without. The runtime's test calls each package twice: the arrival counters
must be back at zero after a call, and the two calls must write the same
bits.

* ``gemm_tail_split_*``: matmuls forced into 64x64 tiles (160 tiles: 132
  whole, the last 28 split 4 ways) with ragged M and N, bias + gelu; a B
  stored N x K with bias + residual + relu and 5 K steps (parts of 2, 2
  and 1); a batch of 4 (160 tiles, 6 steps in parts of 2); 64x256 tiles
  (128 accumulators a thread, as 128x256's) with gelu (133 tiles: the
  last split over K's 2 steps; with a bias too they would spill, and run
  whole). bf16, f16, and f32 multiplied in tf32
  (B stored K x N: the transposed product).
* ``conv_tail_split_*``: forward convolutions: 3x3 padded, bias + relu, in
  64x64 tiles (196 tiles: the last 64 split 2 ways, 9 K steps as 5 and 4);
  3x3 with bias + residual + relu in 64x128 tiles (144 tiles: the last 12
  split 3 ways); a 1x1 read as pixel rows with scale * y + shift (147
  tiles: the last 15 split 4 ways). bf16 and f16.
"""

import dnnc

from .case import BF16, F16, F32, Case, contracted, outputs
from .conv_random import ConvConfig, add_conv

SEED = 20261128


def gemms(dtype, compute=F32):
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)

        def mm(x, y):
            return g.matmul(x, y, compute_data_type=compute)

        a = g.tensor(name="a", dim=[1000, 512])
        b = g.tensor(name="b", dim=[512, 600])
        bias = g.tensor(name="bias", dim=[1, 600])
        x = g.tensor(name="x", dim=[1000, 320])
        w_t = g.tensor(name="w_t", dim=[320, 616], stride=[1, 320])
        bias2 = g.tensor(name="bias2", dim=[1, 616])
        res = g.tensor(name="res", dim=[1000, 616])
        c = g.tensor(name="c", dim=[4, 500, 384])
        d = g.tensor(name="d", dim=[4, 384, 264])
        p = g.tensor(name="p", dim=[8512, 128])
        q = g.tensor(name="q", dim=[128, 256])
        outputs(contracted(g.gelu(g.add(mm(a, b), bias)).set_name("bias_gelu"), a, b, 512),
                contracted(g.relu(g.add(g.add(mm(x, w_t), bias2), res))
                           .set_name("bias_residual_relu"), x, w_t, 320),
                contracted(mm(c, d).set_name("batched"), c, d, 384),
                contracted(g.gelu(mm(p, q)).set_name("wide_tile_gelu"), p, q, 128))
        return g
    return build


def gemm_config(k_step):
    """Each kernel's tile and tail split (``k_step``: 64 bf16 / f16, 32 tf32)."""
    narrow = f"tile:64x64x{k_step},tail_split:4"
    return ";".join([f"main_k0_matmul={narrow}", f"main_k1_matmul={narrow}",
                     f"main_k2_matmul={narrow}",
                     f"main_k3_matmul=tile:64x256x{k_step},stages:4,tail_split:4"])


CONVS = [
    ConvConfig(4, 64, 64, (56, 56), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1),
               epilogue="bias_relu"),
    ConvConfig(2, 64, 256, (48, 48), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1),
               epilogue="bias_residual_relu"),
    ConvConfig(4, 256, 192, (28, 28), (1, 1), (1, 1), (1, 1), (0, 0), (0, 0),
               epilogue="scale_shift"),
]
CONV_CONFIG = ("main_k0_conv_fprop=tile:64x64x64,tail_split:2;"
               "main_k1_conv_fprop=tile:64x128x64,tail_split:3;"
               "main_k2_conv_fprop=tile:64x64x64,tail_split:4")
POSITIVE = tuple(f"s{i}" for i, c in enumerate(CONVS) if c.epilogue == "scale_shift")


def convs(dtype):
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        for i, conv in enumerate(CONVS):
            add_conv(g, i, conv)
        return g
    return build


CASES = [
    *(Case(f"gemm_tail_split_{d.mlir}", gemms(d), seed=SEED + j, config=gemm_config(64))
      for j, d in enumerate((BF16, F16))),
    # The tensor cores read a tf32 operand's top 19 bits (toward zero).
    Case("gemm_tail_split_tf32", gemms(F32, "tf32"), seed=SEED + 2, rtol=2e-3,
         config=gemm_config(32)),
    *(Case(f"conv_tail_split_{d.mlir}", convs(d), positive=POSITIVE, seed=SEED + 3 + j,
           config=CONV_CONFIG)
      for j, d in enumerate((BF16, F16))),
]
