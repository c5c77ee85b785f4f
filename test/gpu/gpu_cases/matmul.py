"""Matmul cases, most on the tensor cores (tc-sm90: TMA and wgmma; tc-sm80:
cp.async, ldmatrix and mma.sync, forced by a config): f32, f16, bf16,
fp8 and tf32; ragged M, N and K; batched and broadcast operands; A or B
stored transposed; scaled operands; fused prologues and epilogues;
split-K, alone and in thread-block clusters; staged epilogues; epilogues
through views (a linear layer as ATen traces it); rows that TMA cannot step
by. Each output marks the inputs and K it sums over
(``contracted``) for its tolerance.
"""

import dnnc

from .case import BF16, E4M3, F16, F32, Case, contracted, outputs


def matmul(dtype, compute=None):
    def build():
        g = dnnc.Graph(io_data_type=dtype)
        a = g.tensor(name="a", dim=[2, 1, 7, 127])
        b = g.tensor(name="b", dim=[3, 127, 33])
        m = g.tensor(name="m", dim=[1000, 7])
        n = g.tensor(name="n", dim=[7, 1])
        kw = {"compute_data_type": compute} if compute else {}
        outputs(contracted(g.matmul(a, b, **kw).set_name("batched"), a, b, 127),
                contracted(g.matmul(m, n, **kw).set_name("plain"), m, n, 7))
        return g
    return build


def gemm_tc(dtype, compute=F32):
    """Matmuls tc-sm90 takes (K and N multiples of 8 for TMA), with M, N, K
    that are not tile multiples, batched and broadcast operands, B stored
    N x K (a transpose folded into the GEMM), and fused epilogues; for f32
    operands in tf32 mode (``compute`` tf32), B stored K x N is copied
    transposed first."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)

        def mm(x, y):
            return g.matmul(x, y, compute_data_type=compute)

        a = g.tensor(name="a", dim=[129, 1000])
        b = g.tensor(name="b", dim=[1000, 136])
        one = g.tensor(name="one", dim=[1, 4096])
        wide = g.tensor(name="wide", dim=[4096, 264])
        ba = g.tensor(name="ba", dim=[3, 65, 256])
        bb = g.tensor(name="bb", dim=[3, 256, 72])
        shared = g.tensor(name="shared", dim=[256, 200])
        x = g.tensor(name="x", dim=[1000, 64])
        w = g.tensor(name="w", dim=[264, 64])
        bias = g.tensor(name="bias", dim=[1, 264])
        res = g.tensor(name="res", dim=[1000, 264])
        # Graph inputs declared transposed: a weight stored N x K read as
        # K x N, and k stored [batch, N, K] read as [batch, K, N] (q @ k^T).
        w_t = g.tensor(name="w_t", dim=[1000, 264], stride=[1, 1000])
        q = g.tensor(name="q", dim=[3, 65, 64])
        k_t = g.tensor(name="k_t", dim=[3, 64, 200], stride=[200 * 64, 1, 64])
        w_x = g.tensor(name="w_x", dim=[64, 264])
        y = mm(x, g.transpose(w, [1, 0]))
        outputs(contracted(mm(a, w_t).set_name("b_stored_n_by_k"), a, w_t, 1000),
                contracted(mm(q, k_t).set_name("q_k_transposed"), q, k_t, 64),
                contracted(mm(a, b).set_name("ragged"), a, b, 1000),
                contracted(mm(one, wide).set_name("one_row"), one, wide, 4096),
                contracted(mm(ba, bb).set_name("batched"), ba, bb, 256),
                contracted(mm(ba, shared).set_name("broadcast_b"), ba, shared, 256),
                contracted(g.gelu(g.add(y, bias)).set_name("bias_gelu"), x, w, 64),
                contracted(g.relu(g.add(g.add(mm(x, g.transpose(w, [1, 0])), bias), res))
                           .set_name("bias_residual_relu"), x, w, 64))
        # A second output: the pre-activation, returned and fed to silu.
        pre = contracted(g.add(mm(x, w_x), bias).set_name("pre_activation"), x, w_x, 64)
        outputs(pre, contracted(g.silu(pre).set_name("silu_of_pre"), x, w_x, 64))
        return g
    return build


def gemm_a_transposed(dtype, compute=F32):
    """Matmuls whose A is stored K x M (M contiguous), as a linear layer's
    weight gradient x^T @ dy reads x: tc-sm90 reads 16-bit tiles of it
    transposed, and copies a tf32 A transposed first. An input declared
    with transposed strides and a transpose of an input folded into the
    GEMM, ragged M, N and K, a batch, B stored N x K too, bias and gelu, a
    skinny long-K one (split K); operands whose rows TMA cannot step by,
    copied transposed first: M = 7 (A stored K x M), N = 7 and N = 1001 (B
    stored K x N); on 16-bit types, relu and a cast from f32 as A's
    prologue, the relu on a copied A too."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, intermediate_data_type=dtype, compute_data_type=F32)

        def mm(x, y):
            return g.matmul(x, y, compute_data_type=compute)

        x_t = g.tensor(name="x_t", dim=[136, 1000], stride=[1, 136])
        dy = g.tensor(name="dy", dim=[1000, 264])
        x = g.tensor(name="x", dim=[1000, 200])
        ba = g.tensor(name="ba", dim=[3, 72, 256], stride=[72 * 256, 1, 72])
        bb = g.tensor(name="bb", dim=[3, 256, 72])
        w_t = g.tensor(name="w_t", dim=[1000, 264], stride=[1, 1000])
        u_t = g.tensor(name="u_t", dim=[256, 512], stride=[1, 256])
        v = g.tensor(name="v", dim=[512, 264])
        bias = g.tensor(name="bias", dim=[1, 264])
        s_t = g.tensor(name="s_t", dim=[64, 8192], stride=[1, 64])
        s_b = g.tensor(name="s_b", dim=[8192, 128])
        odd = g.tensor(name="odd", dim=[7, 1000], stride=[1, 7])
        n7 = g.tensor(name="n7", dim=[1000, 7])
        vocab = g.tensor(name="vocab", dim=[512, 1001])
        outputs(contracted(mm(x_t, dy).set_name("a_k_by_m"), x_t, dy, 1000),
                contracted(mm(g.transpose(x, [1, 0]), dy).set_name("transposed_input"),
                           x, dy, 1000),
                contracted(mm(ba, bb).set_name("batched"), ba, bb, 256),
                contracted(mm(x_t, w_t).set_name("both_transposed"), x_t, w_t, 1000),
                contracted(g.gelu(g.add(mm(u_t, v), bias)).set_name("bias_gelu"), u_t, v, 512),
                contracted(mm(s_t, s_b).set_name("skinny_long_k"), s_t, s_b, 8192),
                contracted(mm(odd, dy).set_name("m7"), odd, dy, 1000),
                contracted(mm(x_t, n7).set_name("n_7"), x_t, n7, 1000),
                contracted(mm(u_t, vocab).set_name("n_1001"), u_t, vocab, 512))
        if dtype != F32:
            r_t = g.tensor(name="r_t", dim=[200, 1000], stride=[1, 200])
            c_t = g.tensor(name="c_t", dim=[128, 512], stride=[1, 128], data_type=F32)
            o_t = g.tensor(name="o_t", dim=[100, 1000], stride=[1, 100])
            outputs(contracted(mm(g.relu(r_t), dy).set_name("relu_a_k_by_m"), r_t, dy, 1000),
                    contracted(mm(g.cast(c_t, dtype), v).set_name("cast_a_k_by_m"), c_t, v, 512),
                    contracted(mm(g.relu(o_t), dy).set_name("relu_copied_a"), o_t, dy, 1000))
        return g
    return build


def gemm_scaled(dtype):
    """Matmuls of scaled operands (a graph's ``cast(x * s)`` back to x's
    type): a scale per row of A and per column of B, then bias and gelu, and
    a scalar scale of q in q @ k; and x * s left in f32 against a 16-bit B:
    dnn-fold-operand-scales moves the scales into the epilogue, one tc-sm90
    kernel each."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        x = g.tensor(name="x", dim=[200, 256])
        s = g.tensor(name="s", dim=[200, 1], data_type=F32)
        w = g.tensor(name="w", dim=[256, 136])
        c = g.tensor(name="c", dim=[136], data_type=F32)
        bias = g.tensor(name="bias", dim=[1, 136])
        q = g.tensor(name="q", dim=[3, 65, 64])
        k = g.tensor(name="k", dim=[3, 64, 72])
        t = g.tensor(name="t", dim=[], data_type=F32)
        w2 = g.tensor(name="w2", dim=[256, 40])
        y = g.matmul(g.cast(g.mul(x, s), dtype), g.cast(g.div(w, c), dtype))
        # s and 1 / c are in (0.5, 2]: their product's rms is below 2.
        outputs(contracted(g.gelu(g.add(y, bias)).set_name("rows_columns_bias_gelu"), x, w, 256,
                           gain=2.0),
                contracted(g.matmul(g.cast(g.mul(t, q), dtype), k).set_name("scaled_q"),
                           q, k, 64, gain=2.0),
                # x * s left in f32: the f32 matmul becomes a 16-bit one.
                contracted(g.matmul(g.mul(x, s), w2).set_name("f32_scaled_rows"), x, w2, 256,
                           gain=2.0))
        return g
    return build


def gemm_prologue(dtype):
    """Matmuls with a pointwise prologue on an operand (dnn-fuse joins it to
    the GEMM; tc-sm90 loads the operand's tiles as stored and converts them
    in shared memory): relu of A with ragged M, N and K (the prologue of
    TMA's zero fill past K is zeroed); an f32 A cast to the GEMM's type; a B
    stored K x N (N contiguous) through leaky_relu and an f32 one cast; a
    weight stored N x K shifted by a constant; both operands, then bias and
    gelu; a batched A."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, intermediate_data_type=dtype, compute_data_type=F32)
        a = g.tensor(name="a", dim=[129, 1000])
        a32 = g.tensor(name="a32", dim=[129, 1000], data_type=F32)
        b = g.tensor(name="b", dim=[1000, 136])
        x = g.tensor(name="x", dim=[256, 512])
        w = g.tensor(name="w", dim=[512, 264])
        w32 = g.tensor(name="w32", dim=[512, 264], data_type=F32)
        w_t = g.tensor(name="w_t", dim=[512, 264], stride=[1, 512])
        bias = g.tensor(name="bias", dim=[1, 264])
        ba = g.tensor(name="ba", dim=[3, 65, 256])
        bb = g.tensor(name="bb", dim=[3, 256, 72])
        shift = g.constant(0.25, data_type=dtype)
        outputs(contracted(g.matmul(g.relu(a), b).set_name("relu_a"), a, b, 1000),
                contracted(g.matmul(g.cast(a32, dtype), b).set_name("cast_a"), a32, b, 1000),
                contracted(g.matmul(x, g.leaky_relu(w, negative_slope=0.2))
                           .set_name("leaky_b_k_by_n"), x, w, 512),
                contracted(g.matmul(x, g.cast(w32, dtype)).set_name("cast_b"), x, w32, 512),
                contracted(g.matmul(x, g.add(w_t, shift)).set_name("shifted_b_n_by_k"),
                           x, w_t, 512, gain=1.1),
                contracted(g.gelu(g.add(g.matmul(g.abs(x), g.neg(w)), bias))
                           .set_name("both_bias_gelu"), x, w, 512),
                contracted(g.matmul(g.relu(ba), bb).set_name("batched_relu_a"), ba, bb, 256))
        return g
    return build


def gemm_split_k(dtype):
    """Split-K GEMMs (the heuristics split skinny and long-K problems; the
    case's config forces the splits): summed by the last split to arrive in
    the GEMM's own launch (2 and 3 splits: ragged M and N, a bias and gelu,
    a batch, and K = 1000 leaving the last split shorter) and by a second
    launch (8 splits). The runtime's test calls each package twice, so the
    arrival counters must be back at zero after a call."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        a = g.tensor(name="a", dim=[100, 2048])
        b = g.tensor(name="b", dim=[2048, 200])
        bias = g.tensor(name="bias", dim=[1, 200])
        c = g.tensor(name="c", dim=[2, 64, 1000])
        d = g.tensor(name="d", dim=[2, 1000, 136])
        x = g.tensor(name="x", dim=[64, 2048])
        w = g.tensor(name="w", dim=[2048, 128])
        many = g.tensor(name="many", dim=[640, 512])
        wide = g.tensor(name="wide", dim=[512, 512])
        rows = g.tensor(name="rows", dim=[64, 1024])
        w_t = g.tensor(name="w_t", dim=[1024, 7], stride=[1, 1024])
        outputs(contracted(g.gelu(g.add(g.matmul(a, b), bias)).set_name("split2_bias_gelu"),
                           a, b, 2048),
                contracted(g.matmul(c, d).set_name("split3_batched"), c, d, 1000),
                contracted(g.matmul(x, w).set_name("split8"), x, w, 2048),
                # 160 units for 132 blocks: some blocks sum a tile, then go on.
                contracted(g.matmul(many, wide).set_name("split2_units_over_blocks"),
                           many, wide, 512),
                # N = 7: partials stored and read one element at a time.
                contracted(g.matmul(rows, w_t).set_name("split2_odd_n"), rows, w_t, 1024))
        return g
    return build


SPLIT_K_CONFIG = ("main_k0_matmul=tile:128x64x64,split:2;main_k1_matmul=tile:64x64x64,split:3;"
                  "main_k2_matmul=tile:64x64x64,split:8;main_k3_matmul=tile:64x64x64,split:2;"
                  "main_k4_matmul=tile:64x64x64,split:2")


def gemm_split_k_clusters(dtype):
    """Split-K GEMMs whose splits meet in thread-block clusters and sum
    their accumulators through distributed shared memory (the case's config
    forces splits and clusters): 8 splits in one cluster of 8, which runs
    the epilogue itself (ragged M and N, bias and gelu); 32 splits in
    clusters of 8 leaving 4 partials, summed by the last to arrive; a batch
    of 64-row tiles in clusters of 4 (2 partials); 32 splits in clusters of
    2, whose 16 partials a second launch sums; N = 7 (partials element by
    element)."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        a = g.tensor(name="a", dim=[200, 4096])
        b = g.tensor(name="b", dim=[4096, 136])
        bias = g.tensor(name="bias", dim=[1, 136])
        x = g.tensor(name="x", dim=[128, 16384])
        w = g.tensor(name="w", dim=[16384, 256])
        c = g.tensor(name="c", dim=[2, 64, 4096])
        d = g.tensor(name="d", dim=[2, 4096, 136])
        e = g.tensor(name="e", dim=[130, 16384])
        f = g.tensor(name="f", dim=[16384, 64])
        rows = g.tensor(name="rows", dim=[64, 1024])
        w_t = g.tensor(name="w_t", dim=[1024, 7], stride=[1, 1024])
        outputs(contracted(g.gelu(g.add(g.matmul(a, b), bias)).set_name("cluster8_bias_gelu"),
                           a, b, 4096),
                contracted(g.matmul(x, w).set_name("cluster8_four_parts"), x, w, 16384),
                contracted(g.matmul(c, d).set_name("cluster4_batched"), c, d, 4096),
                contracted(g.matmul(e, f).set_name("cluster2_second_launch"), e, f, 16384),
                contracted(g.matmul(rows, w_t).set_name("cluster4_odd_n"), rows, w_t, 1024))
        return g
    return build


SPLIT_K_CLUSTER_CONFIG = (
    "main_k0_matmul=tile:128x128x64,stages:4,split:8,cluster:8;"
    "main_k1_matmul=tile:128x128x64,stages:4,split:32,cluster:8;"
    "main_k2_matmul=tile:64x64x64,split:8,cluster:4;"
    "main_k3_matmul=tile:128x64x64,split:32,cluster:2;"
    "main_k4_matmul=tile:64x64x64,split:8,cluster:4")


def gemm_staged(dtype, compute=F32):
    """Matmuls with enough tiles to run unsplit, whose epilogue stages the
    output tiles in shared memory: stored by TMA where the rows are 16-byte
    multiples (ragged M with bias and gelu, a batch, two outputs: the
    pre-activation and its silu), else read back and stored along the rows
    by each warp (N = 1001 and 1002, a batch with N = 700, two outputs of
    N = 999)."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)

        def mm(x, y):
            return g.matmul(x, y, compute_data_type=compute)

        a = g.tensor(name="a", dim=[1100, 256])
        b = g.tensor(name="b", dim=[256, 1000])
        bias = g.tensor(name="bias", dim=[1, 1000])
        odd = g.tensor(name="odd", dim=[1001, 256])
        even = g.tensor(name="even", dim=[1002, 256])
        ba = g.tensor(name="ba", dim=[4, 260, 128])
        bb = g.tensor(name="bb", dim=[4, 128, 704])
        bc = g.tensor(name="bc", dim=[4, 128, 700])
        w = g.tensor(name="w", dim=[256, 520])
        w_odd = g.tensor(name="w_odd", dim=[999, 256])
        outputs(contracted(g.gelu(g.add(mm(a, b), bias)).set_name("ragged_bias_gelu"), a, b, 256),
                contracted(mm(a, g.transpose(odd, [1, 0])).set_name("rows_1001"), a, odd, 256),
                contracted(mm(a, g.transpose(even, [1, 0])).set_name("rows_1002"), a, even, 256),
                contracted(mm(ba, bb).set_name("batched_704"), ba, bb, 128),
                contracted(mm(ba, bc).set_name("batched_700"), ba, bc, 128))
        pre = contracted(mm(a, w).set_name("pre_520"), a, w, 256)
        pre_odd = contracted(mm(a, g.transpose(w_odd, [1, 0])).set_name("pre_999"), a, w_odd, 256)
        outputs(pre, contracted(g.silu(pre).set_name("silu_520"), a, w, 256),
                pre_odd, contracted(g.silu(pre_odd).set_name("silu_999"), a, w_odd, 256))
        return g
    return build


def gemm_residual(dtype, compute=F32):
    """Matmuls in 128 x 256 tiles (the case's config), ragged M and N, whose
    staged epilogue reads its inputs that vary along the rows a column slice
    at a time: a bias and a residual (one input's slice, read a slice
    ahead), two residuals, and a residual of f32 beside 16-bit operands
    (each read at its slice)."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)

        def mm(x, y):
            return g.matmul(x, y, compute_data_type=compute)

        a = g.tensor(name="a", dim=[1100, 256])
        # Weights stored N x K, as tf32 reads them in shared memory.
        b1, b2, b3 = (g.tensor(name=f"b{i}", dim=[256, 1000], stride=[1, 256]) for i in (1, 2, 3))
        bias = g.tensor(name="bias", dim=[1, 1000])
        r1, r2 = (g.tensor(name=f"r{i}", dim=[1100, 1000]) for i in (1, 2))
        wide = g.tensor(name="wide", dim=[1100, 1000], data_type=F32)
        outputs(contracted(g.relu(g.add(g.add(mm(a, b1), bias), r1))
                           .set_name("bias_residual_relu"), a, b1, 256),
                contracted(g.relu(g.add(g.add(mm(a, b2), r1), r2))
                           .set_name("two_residuals"), a, b2, 256),
                contracted(g.add(mm(a, b3), wide).set_name("f32_residual"), a, b3, 256))
        return g
    return build


def gemm_views(dtype, batch, seq):
    """GPT-2-small's MLP as ATen traces it, over ``batch`` x ``seq`` rows:
    x @ W1^T + b1 viewed [batch, seq, 3072] (addmm, view; the view also
    returned, as a training step saves the pre-activation), gelu (tanh) of
    it, and x + (h @ W2^T + b2) viewed [batch, seq, 768] (the residual
    against the GEMM's rows through the view). dnn-sink-reshapes moves the
    views below the gelu and the add, so each joins its GEMM's epilogue: two
    GEMM kernels, the first storing both the pre-activation and the gelu."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        rows = batch * seq
        x = g.tensor(name="x", dim=[batch, seq, 768])
        # Linear weights stored N x K, as nn.Linear holds them.
        w1 = g.tensor(name="w1", dim=[768, 3072], stride=[1, 768])
        b1 = g.tensor(name="b1", dim=[3072])
        h = g.tensor(name="h", dim=[rows, 3072])
        w2 = g.tensor(name="w2", dim=[3072, 768], stride=[1, 3072])
        b2 = g.tensor(name="b2", dim=[768])
        x2 = g.reshape(x, [rows, 768])
        pre = g.reshape(g.add(g.matmul(x2, w1, compute_data_type=F32), b1), [batch, seq, 3072])
        act = g.gelu(pre, approximate="tanh")
        down = g.reshape(g.add(g.matmul(h, w2, compute_data_type=F32), b2), [batch, seq, 768])
        out = g.add(x, down)
        outputs(contracted(pre.set_name("pre_activation"), x, w1, 768),
                contracted(act.set_name("gelu"), x, w1, 768),
                contracted(out.set_name("residual"), h, w2, 3072))
        return g
    return build


def gemm_narrow_rows(dtype):
    """Matmuls whose rows are not 16-byte multiples, which TMA refuses and
    tc-sm80 copies 8 or 4 bytes at a time: K = 100 (200-byte rows of A),
    N = 36 and K = 42 (72- and 84-byte rows), and an odd N = 7 with B stored
    N x K (element-wise stores), with a bias."""
    def build():
        g = dnnc.Graph(io_data_type=dtype, compute_data_type=F32)
        a = g.tensor(name="a", dim=[77, 100])
        b = g.tensor(name="b", dim=[100, 36])
        bias = g.tensor(name="bias", dim=[1, 36])
        c = g.tensor(name="c", dim=[5, 3, 42])
        d = g.tensor(name="d", dim=[42, 10])
        x = g.tensor(name="x", dim=[33, 64])
        w_t = g.tensor(name="w_t", dim=[64, 7], stride=[1, 64])
        outputs(contracted(g.add(g.matmul(a, b), bias).set_name("k100_bias"), a, b, 100),
                contracted(g.matmul(c, d).set_name("k42_n10"), c, d, 42),
                contracted(g.matmul(x, w_t).set_name("odd_n"), x, w_t, 64))
        return g
    return build


CASES = [
    *(Case(f"matmul_{d.mlir}", matmul(d)) for d in (F32, F16, BF16, E4M3)),
    Case("matmul_tf32", matmul(F32, "tf32")),
    *(Case(f"gemm_tc_{d.mlir}", gemm_tc(d)) for d in (F16, BF16)),
    # The tensor cores read a tf32 operand's top 19 bits (toward zero), the
    # reference rounds to nearest: both keep tf32's 10 mantissa bits.
    Case("gemm_tc_tf32", gemm_tc(F32, "tf32"), rtol=2e-3),
    *(Case(f"gemm_a_transposed_{d.mlir}", gemm_a_transposed(d)) for d in (F16, BF16)),
    Case("gemm_a_transposed_tf32", gemm_a_transposed(F32, "tf32"), rtol=2e-3),
    *(Case(f"gemm_scaled_{d.mlir}", gemm_scaled(d), positive=("s", "c", "t")) for d in (F16, BF16)),
    *(Case(f"gemm_staged_{d.mlir}", gemm_staged(d)) for d in (F16, BF16)),
    Case("gemm_staged_tf32", gemm_staged(F32, "tf32"), rtol=2e-3),
    *(Case(f"gemm_residual_{d.mlir}", gemm_residual(d), config="*=tile:128x256x64,stages:4")
      for d in (F16, BF16)),
    Case("gemm_residual_tf32", gemm_residual(F32, "tf32"), rtol=2e-3,
         config="*=tile:128x256x32,stages:4"),
    # Epilogues through views (GPT-2's MLP): 8 x 1024 rows, 8 x 197 (ViT's:
    # M = 1576, no tile multiple) and 3 x 333 (M = 999, odd), the last on
    # tc-sm80 too.
    Case("gemm_views_gpt2_bf16", gemm_views(BF16, 8, 1024)),
    Case("gemm_views_vit_bf16", gemm_views(BF16, 8, 197)),
    Case("gemm_views_odd_bf16", gemm_views(BF16, 3, 333)),
    Case("gemm_views_odd_f16", gemm_views(F16, 3, 333)),
    Case("gemm_sm80_views_odd_bf16", gemm_views(BF16, 3, 333), config="*=strategy:tc-sm80"),
    Case("gemm_split_k_bf16", gemm_split_k(BF16), config=SPLIT_K_CONFIG),
    Case("gemm_split_k_clusters_bf16", gemm_split_k_clusters(BF16),
         config=SPLIT_K_CLUSTER_CONFIG),
    *(Case(f"gemm_prologue_{d.mlir}", gemm_prologue(d)) for d in (F16, BF16)),
    Case("gemm_sm80_scaled_bf16", gemm_scaled(BF16), positive=("s", "c", "t"),
         config="*=strategy:tc-sm80"),
    # tc-sm80 (cp.async, ldmatrix, mma.sync) forced on every kernel, so that
    # an sm_90a GPU runs it too; its tf32 fragments are rounded to nearest,
    # as the reference rounds.
    *(Case(f"gemm_sm80_{d.mlir}", gemm_tc(d), config="*=strategy:tc-sm80")
      for d in (F16, BF16)),
    Case("gemm_sm80_tf32", gemm_tc(F32, "tf32"), config="*=strategy:tc-sm80"),
    *(Case(f"gemm_sm80_narrow_{d.mlir}", gemm_narrow_rows(d), config="*=strategy:tc-sm80")
      for d in (F16, BF16)),
]
