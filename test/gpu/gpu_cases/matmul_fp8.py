"""fp8 matmuls on tc-sm90 (wgmma's k = 32 fp8 form): e4m3 x e4m3, e4m3 x
e5m2 and e5m2 x e4m3 operands drawn at random (then rounded to fp8), with
per-tensor scales as cuBLASLt and cuDNN take them (descale A and B, written
``matmul(a, b) * s`` or ``(a * s) @ b``, both folded into the epilogue; the
output's scale), outputs in bf16, f16, f32, e4m3 and e5m2, the amax of the
pre-cast output (Transformer Engine's record for the next scale, taken in
the GEMM's epilogue: with a register epilogue, a staged one, and split-K's
last arrival), shapes
that are not tile multiples, a batch, B stored K x N (copied K-major first:
wgmma reads fp8 only K-major) and N x K (read in place), and a skinny
product whose K is split. Each output marks its inputs and K
(``contracted``, with the scales' largest product as the gain).
"""

import dnnc

from .case import BF16, E4M3, E5M2, F16, F32, Case, contracted, outputs

# The scales are drawn from [0.5, 2) (``positive``): three of them multiply
# an output by at most 8.
SCALES = ("sa", "sb", "sy")
GAIN = 8.0


def _scales(g):
    return [g.tensor(name=n, dim=[1, 1], data_type=F32) for n in SCALES]


def fp8_gemm(ta, tb):
    """The outputs of an fp8 GEMM of ``ta`` x ``tb`` operands."""
    def build():
        g = dnnc.Graph(io_data_type=F32, compute_data_type=F32)
        sa, sb, sy = _scales(g)
        # A linear layer's weight, stored N x K (K-major: read in place).
        a = g.tensor(name="a", dim=[200, 1008], data_type=ta)
        w_t = g.tensor(name="w_t", dim=[1008, 264], stride=[1, 1008], data_type=tb)
        y = g.mul(g.mul(g.matmul(a, w_t), sa), sb)
        # Enough tiles not to split K (72 of 128 x 64): a bf16 output stored
        # through shared memory by TMA beside the amax, rows and columns
        # past M and N in the last tiles.
        x2 = g.tensor(name="x2", dim=[1000, 256], data_type=ta)
        w2_t = g.tensor(name="w2_t", dim=[256, 568], stride=[1, 256], data_type=tb)
        y2 = g.mul(g.mul(g.matmul(x2, w2_t), sb), sa)
        # fp8 outputs staged in shared memory (128 x 128 tiles): stored by
        # TMA (rows of 1168 bytes), and by the warps along rows of 1160
        # bytes, which TMA cannot step by.
        w3_t = g.tensor(name="w3_t", dim=[256, 1168], stride=[1, 256], data_type=tb)
        w4_t = g.tensor(name="w4_t", dim=[256, 1160], stride=[1, 256], data_type=tb)
        y3 = g.mul(g.mul(g.matmul(x2, w3_t), sa), sy)
        y4 = g.mul(g.mul(g.matmul(x2, w4_t), sb), sy)
        # B stored K x N (N contiguous): copied K-major first; the descales
        # written on the operands.
        c = g.tensor(name="c", dim=[129, 256], data_type=ta)
        d = g.tensor(name="d", dim=[256, 136], data_type=tb)
        z = g.matmul(g.mul(c, sa), g.mul(d, sb))
        # A batch, ragged M and N.
        ba = g.tensor(name="ba", dim=[3, 65, 128], data_type=ta)
        bb = g.tensor(name="bb", dim=[3, 128, 72], data_type=tb, stride=[72 * 128, 1, 128])
        bz = g.mul(g.matmul(ba, bb), sa)
        # Skinny: 64 rows, K 8192 (split over several blocks).
        s = g.tensor(name="s", dim=[64, 8192], data_type=ta)
        s_w = g.tensor(name="s_w", dim=[8192, 256], stride=[1, 8192], data_type=tb)
        sz = g.mul(g.matmul(s, s_w), sb)
        # Its amax keeps the K split to 4 partials a tile.
        outputs(contracted(g.reduction(sz, "amax", [0, 1]).set_name("split_k_amax"), s, s_w,
                           8192, GAIN))
        # y's amax and y scaled to e4m3: one kernel (the amax taken in the
        # GEMM's epilogue, beside the chain).
        outputs(contracted(g.reduction(y, "amax", [0, 1]).set_name("amax"), a, w_t, 1008,
                           GAIN),
                contracted(g.cast(g.mul(y, sy), E4M3).set_name("scaled_e4m3"), a, w_t, 1008,
                           GAIN),
                contracted(g.reduction(y2, "amax", [0, 1]).set_name("amax_bf16"), x2, w2_t,
                           256, GAIN),
                contracted(g.cast(y2, BF16).set_name("descaled_bf16"), x2, w2_t, 256, GAIN),
                contracted(g.cast(y3, E4M3).set_name("staged_e4m3"), x2, w3_t, 256, GAIN),
                contracted(g.cast(y4, E5M2).set_name("staged_rows_e5m2"), x2, w4_t, 256,
                           GAIN),
                contracted(z.set_name("prescaled_f32"), c, d, 256, GAIN),
                contracted(g.cast(g.mul(z, sy), E5M2).set_name("prescaled_e5m2"), c, d, 256,
                           GAIN),
                contracted(g.cast(bz, F16).set_name("batched_f16"), ba, bb, 128, GAIN),
                contracted(g.cast(sz, BF16).set_name("split_k_bf16"), s, s_w, 8192, GAIN))
        return g
    return build


CASES = [
    Case(f"matmul_fp8_{ta.mlir}_{tb.mlir}", fp8_gemm(ta, tb), positive=SCALES)
    for ta, tb in ((E4M3, E4M3), (E4M3, E5M2), (E5M2, E4M3))
]
