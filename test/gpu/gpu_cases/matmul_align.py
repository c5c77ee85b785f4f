"""Matmuls of any alignment (issue 33's first item): K, N or M that break
TMA's 16-byte rule (127, 129, 1000, 4095, 50257; odd K in f16, whose rows
are 2-byte aligned only), operands stored transposed, batch dims that
broadcast against each other, K = 0, with fused epilogues. On sm_90a
tc-sm90 takes what TMA can read (an operand copied transposed first where
its rows of M or N are odd; a large GEMM's operand of odd K copied into
padded rows first), tc-sm80's unaligned loader the rest (cp.async
of 8 or 4 bytes, or element by element through registers, zero past M, N
and K); a K = 0 matmul is the pointwise epilogue of a zero product. Some
graphs are run with tc-sm80 forced, so that an sm_90a GPU checks its
loaders on shapes tc-sm90 would take.
"""

import dnnc

from .case import BF16, F16, F32, Case, contracted, outputs


def odd_sizes(dtype):
    """The issue's odd shapes and their neighbours, each output its own
    kernel: K = 129 and N = 129 (both operands element by element), one row
    a batch with A stored K x M, K = 1000 of N = 127, a long odd K (4095),
    N = 50257 (an LM head's vocabulary), K = 130 (4-byte copies)."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        a = g.tensor(name="a", dim=[1000, 129])
        b = g.tensor(name="b", dim=[129, 129])
        # [3, 1, 127] stored K x M per batch (M = 1: the same bytes).
        q = g.tensor(name="q", dim=[3, 1, 127], stride=[127, 1, 1])
        w = g.tensor(name="w", dim=[3, 127, 1000])
        x = g.tensor(name="x", dim=[100, 1000])
        y = g.tensor(name="y", dim=[1000, 127])
        long_a = g.tensor(name="long_a", dim=[129, 4095])
        long_b = g.tensor(name="long_b", dim=[4095, 200])
        h = g.tensor(name="h", dim=[16, 256])
        vocab = g.tensor(name="vocab", dim=[256, 50257])
        c = g.tensor(name="c", dim=[33, 130])
        d = g.tensor(name="d", dim=[130, 64])
        outputs(contracted(g.matmul(a, b).set_name("k129_n129"), a, b, 129),
                contracted(g.matmul(q, w).set_name("m1_k127_batched"), q, w, 127),
                contracted(g.matmul(x, y).set_name("k1000_n127"), x, y, 1000),
                contracted(g.matmul(long_a, long_b).set_name("k4095"), long_a, long_b, 4095),
                contracted(g.matmul(h, vocab).set_name("n50257"), h, vocab, 256),
                contracted(g.matmul(c, d).set_name("k130"), c, d, 130))
        return g
    return build


def layouts(dtype):
    """Odd sizes with operands stored transposed and batch dims that
    broadcast: B stored N x K of odd K (a linear layer's weight), A stored
    K x M of odd M and of odd K, two batch dims broadcast against each other
    ([2, 1] against [3]), A broadcast over B's batch."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        x = g.tensor(name="x", dim=[77, 99])
        w_t = g.tensor(name="w_t", dim=[99, 45], stride=[1, 99])
        a_t = g.tensor(name="a_t", dim=[37, 48], stride=[1, 37])
        b = g.tensor(name="b", dim=[48, 40])
        a_odd = g.tensor(name="a_odd", dim=[64, 131], stride=[1, 64])
        b_odd = g.tensor(name="b_odd", dim=[131, 72])
        four = g.tensor(name="four", dim=[2, 1, 7, 127])
        three = g.tensor(name="three", dim=[3, 127, 33])
        one = g.tensor(name="one", dim=[1, 9, 131])
        many = g.tensor(name="many", dim=[4, 131, 24])
        outputs(contracted(g.matmul(x, w_t).set_name("b_stored_n_by_k_k99"), x, w_t, 99),
                contracted(g.matmul(a_t, b).set_name("a_stored_k_by_m_m37"), a_t, b, 48),
                contracted(g.matmul(a_odd, b_odd).set_name("a_stored_k_by_m_k131"),
                           a_odd, b_odd, 131),
                contracted(g.matmul(four, three).set_name("two_batch_dims"), four, three, 127),
                contracted(g.matmul(one, many).set_name("broadcast_a"), one, many, 131))
        return g
    return build


def epilogues(dtype):
    """Odd sizes with fused epilogues: bias and relu on N = 127, bias, a
    residual and gelu on K = 515, and K = 0 (C = 0: a bias and relu of it,
    and a bare one)."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        a = g.tensor(name="a", dim=[70, 515])
        b = g.tensor(name="b", dim=[515, 127])
        bias = g.tensor(name="bias", dim=[1, 127])
        x = g.tensor(name="x", dim=[45, 333])
        w = g.tensor(name="w", dim=[333, 96])
        bias96 = g.tensor(name="bias96", dim=[1, 96])
        res = g.tensor(name="res", dim=[45, 96])
        e = g.tensor(name="e", dim=[33, 0])
        f = g.tensor(name="f", dim=[0, 40])
        bias40 = g.tensor(name="bias40", dim=[1, 40])
        outputs(contracted(g.relu(g.add(g.matmul(a, b), bias)).set_name("k515_bias_relu"),
                           a, b, 515),
                contracted(g.gelu(g.add(g.add(g.matmul(x, w), bias96), res))
                           .set_name("k333_bias_residual_gelu"), x, w, 333),
                g.relu(g.add(g.matmul(e, f), bias40)).set_name("k0_bias_relu"),
                g.matmul(e, f).set_name("k0"))
        return g
    return build


def tf32_odd(dtype=F32):
    """f32 operands multiplied as tf32 with odd K and N (4-byte elements:
    cp.async of 4 bytes where rows are not 16-byte multiples)."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        a = g.tensor(name="a", dim=[129, 1000])
        b = g.tensor(name="b", dim=[1000, 1000])
        c = g.tensor(name="c", dim=[2, 1, 129])
        d = g.tensor(name="d", dim=[2, 129, 127])

        def mm(x, y):
            return g.matmul(x, y, compute_data_type="tf32")
        outputs(contracted(mm(a, b).set_name("k1000"), a, b, 1000),
                contracted(mm(c, d).set_name("k129_n127_batched"), c, d, 129))
        return g
    return build


def padded(dtype):
    """GEMMs of odd K large enough that tc-sm90 runs them after copying A
    into rows of a 16-byte multiple (sm90.padded_operands), TMA zero-filling
    past K: 2048 x 8192 x 1023, 1024 x 8192 x 2047 with a bias, and a
    skinny 16 x 4096 x 4095 (K split on tc-sm90, where tc-sm80 would leave
    half the SMs idle)."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        a = g.tensor(name="a", dim=[2048, 1023])
        b = g.tensor(name="b", dim=[1023, 8192])
        c = g.tensor(name="c", dim=[1024, 2047])
        d = g.tensor(name="d", dim=[2047, 8192])
        bias = g.tensor(name="bias", dim=[1, 8192])
        x = g.tensor(name="x", dim=[16, 4095])
        w = g.tensor(name="w", dim=[4095, 4096])
        outputs(contracted(g.matmul(a, b).set_name("k1023"), a, b, 1023),
                contracted(g.add(g.matmul(c, d), bias).set_name("k2047_bias"), c, d, 2047),
                contracted(g.matmul(x, w).set_name("m16_k4095"), x, w, 4095))
        return g
    return build


# tc-sm80 forced on every kernel: its loaders on shapes tc-sm90 would take
# on sm_90a (N = 50257 copied transposed there, A stored K x M of M = 37).
SM80 = "*=strategy:tc-sm80"

CASES = [
    *(Case(f"matmul_align_odd_{d.mlir}", odd_sizes(d)) for d in (F16, BF16)),
    *(Case(f"matmul_align_layouts_{d.mlir}", layouts(d)) for d in (F16, BF16)),
    *(Case(f"matmul_align_epilogues_{d.mlir}", epilogues(d)) for d in (F16, BF16)),
    Case("matmul_align_padded_f16", padded(F16)),
    Case("matmul_align_padded_bf16", padded(BF16)),
    Case("matmul_align_odd_sm80_bf16", odd_sizes(BF16), config=SM80),
    Case("matmul_align_layouts_sm80_f16", layouts(F16), config=SM80),
    # The tensor cores read a tf32 operand's top 19 bits (tc-sm90) or round
    # it to nearest (tc-sm80); the reference rounds to nearest.
    Case("matmul_align_tf32", tf32_odd(), rtol=2e-3),
]
