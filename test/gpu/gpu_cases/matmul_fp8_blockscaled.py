"""Block-scaled fp8 matmuls (dnn.matmul_block_scaled) on tc-sm90: A's scales
one per row and 128-wide K block (1 x 128), B's one per 128 x 128 block, as
DeepSeek-V3 quantizes, applied in the mainloop (sm90/block_scales.py).

Shapes: M, N, K of 128, 256 and 4096, and ones that are multiples of
nothing (200 x 392 x 320: the last K block of 64, a last column block of
8); B stored N x K (K-major, read in place) and K x N (copied K-major
first); a skinny product whose K is split; bf16 and f32 outputs, and an
e4m3 one. Each product is computed twice over the same operands (an fp8
output only with the first scales):

* with scales drawn from [0.5, 2) (``positive``), held to the contraction's
  tight tolerance (gain 4): a scale read at the wrong row, K block or
  column block moves an output by a good part of a block's sum;
* with scales of 2^-8 .. 2^8 (``fixed``: the powers laid out cyclically,
  so that neighbouring rows and blocks differ), held to the tolerance of the
  largest scale product (gain 2^16): the dynamic range DeepSeek's scales
  span, exact in f32 (powers of two).
"""

import numpy as np

import dnnc

from .case import BF16, E4M3, E5M2, F32, Case, contracted, outputs

BLOCK = 128
NARROW = ("sa", "sb")                            # drawn from [0.5, 2)
WIDE = {"wa": 2.0 ** np.arange(-8, 9), "wb": 2.0 ** np.arange(8, -9, -1)}
NARROW_GAIN, WIDE_GAIN = 4.0, 2.0 ** 16


def _blocks(n):
    return -(-n // BLOCK)


def blockscaled(ta, tb, shapes):
    """The outputs of block-scaled GEMMs of ``ta`` x ``tb`` operands, one per
    (M, N, K, B stored N x K, output type) of ``shapes``."""
    def build():
        g = dnnc.Graph(io_data_type=F32, compute_data_type=F32)
        for i, (m, n, k, weight, out) in enumerate(shapes):
            a = g.tensor(name=f"a{i}", dim=[m, k], data_type=ta)
            b = g.tensor(name=f"b{i}", dim=[k, n], data_type=tb,
                         stride=[1, k] if weight else None)
            # An fp8 output takes the narrow scales alone: the wide ones
            # reach past e4m3's largest value (448).
            wide = () if out in (E4M3, E5M2) else ((tuple(WIDE), WIDE_GAIN),)
            for scales, gain in ((NARROW, NARROW_GAIN),) + wide:
                sa = g.tensor(name=f"{scales[0]}{i}", dim=[m, _blocks(k)])
                sb = g.tensor(name=f"{scales[1]}{i}", dim=[_blocks(k), _blocks(n)])
                c = g.matmul_block_scaled(a, b, sa, sb)
                y = c if out is F32 else g.cast(c, out)
                label = "narrow" if gain == NARROW_GAIN else "wide"
                outputs(contracted(y.set_name(f"c{i}_{m}x{n}x{k}_{label}"), a, b, k, gain))
        return g
    return build


# (M, N, K, B stored N x K, output type)
SQUARE = [(128, 128, 128, True, BF16), (256, 256, 256, True, F32),
          (200, 392, 320, True, BF16), (200, 392, 320, False, F32),
          (256, 4096, 128, True, BF16), (4096, 128, 256, True, F32),
          (128, 256, 4096, True, F32), (256, 384, 512, True, E4M3)]
LARGE = [(4096, 4096, 4096, True, BF16)]
SKINNY = [(64, 256, 8192, True, F32)]


def _case(name, ta, tb, shapes):
    count = range(len(shapes))
    positive = tuple(f"{s}{i}" for i in count for s in NARROW)
    fixed = {f"{s}{i}": values for i in count for s, values in WIDE.items()}
    return Case(name, blockscaled(ta, tb, shapes), positive=positive, fixed=fixed)


CASES = [
    _case("matmul_fp8_blockscaled_e4m3", E4M3, E4M3, SQUARE),
    _case("matmul_fp8_blockscaled_e4m3_e5m2", E4M3, E5M2, SQUARE[:4]),
    _case("matmul_fp8_blockscaled_4096", E4M3, E4M3, LARGE),
    _case("matmul_fp8_blockscaled_split_k", E4M3, E4M3, SKINNY),
]
