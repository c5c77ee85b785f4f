"""The tc-sm90 tensor-core GEMM kernels without a GPU: what ptxas makes of
their PTX for sm_90a, read from ptxas -v and from the SASS (cuobjdump).

Graphs compiled once each (module-scoped fixture): a bf16 matmul
4096x4096x4096 (tile 128x256: wgmma n=256), a bf16 matmul 256x384x128 with a
bias add and gelu in the epilogue, an f16 batched matmul
[3,65,256]@[3,256,72] (their tile width is the heuristics' choice), a
skinny bf16 64x4096x4096 (K split 2 ways, summed by the pair of blocks
as a cluster), a
skinny bf16 64x1024x4096 whose B is stored N x K (a linear layer's weight):
64-row tiles with one consumer warpgroup, B read K-major, K split over
8 blocks; a bf16 256x256x65536 whose 32 K splits are summed in clusters of
2 first; a weight gradient x^T @ dy with x stored 4096 x 1024 (A stored
K x M, which wgmma reads transposed); a bf16 512x1001x768 whose B rows
of 2002 bytes TMA cannot step by (B copied transposed, N x K, by a launch
ahead of the GEMM); an f16 GEMM returned with its silu whose rows of
1998 bytes TMA cannot store; and three f32 matmuls in tf32 mode:
one with B stored N x K (read in place), one with B stored K x N (computed
as Cᵀ = Bᵀ Aᵀ, B the A of that product) and one with A stored K x M, whose
A fragments the consumers read from shared memory into registers (wgmma
reads tf32 from shared memory only K-major). For each:

* the manifest's first kernel is the tc-sm90 GEMM, with the epilogue fused;
  with split-K leaving more than 4 partials a tile (one a split, or one a
  cluster of splits) a second tc-sm90 kernel sums them and runs the
  epilogue (no tensor cores, no shared memory), and nothing else; with 2-4
  the GEMM counts arrivals with a fenced atomic add; splits summed in
  clusters meet at cluster barriers and store to each other's shared
  memory;
* ptxas -v: no spills, no stack, registers within what the block's threads
  may have (65536 / threads, rounded down to a multiple of 8: 168 for 384),
  and the dynamic shared memory (manifest) plus the static (ptxas) within
  sm_90's 232448 bytes per block;
* the SASS of the GEMM: HGMMA of the tile's shape (64 x BN x 16) and input
  type only, TMA loads (UTMALDG), mbarrier operations (SYNCS), and no local
  memory (LDL / STL) in any kernel.
* no instruction touches a wgmma's accumulator registers before the wait
  for every group (``sass.wgmma_hazards``), and no subroutine call;
* the plan says how the epilogue stores (TMA from shared slots, staged rows
  stored by each warp, or from registers and why), and TMA stores
  (UTMASTG) are in the SASS exactly where it says TMA.

Without ptxas (DNNC_PTXAS, the nvidia-cuda-nvcc wheel, PATH) or cuobjdump
and nvdisasm (DNNC_CUOBJDUMP, the nvidia-cuda-cuobjdump and
nvidia-cuda-nvdisasm wheels, PATH) those tests skip and say why.
``dnnc inspect``'s description of the kernels' TMA arguments is checked too.
"""

import json
import re

import pytest

import dnnc
from dnnc import artifact
from dnnc.codegen.gpu import ptxas, sass
from dnnc.codegen.gpu.tensorcore import sm90
from kernel_builds import (PTXAS_MISSING, Builds, assert_fit, assert_no_local_memory, family,
                           needs_ptxas, needs_sass)

ARCH = "sm_90a"
MAX_SHARED = 232448  # sm_90: 227 KiB of shared memory per block at most (opt-in)


def mm4096():
    g = dnnc.Graph(name="mm4096", io_data_type="bf16", compute_data_type="f32")
    a = g.tensor(name="a", dim=[4096, 4096])
    b = g.tensor(name="b", dim=[4096, 4096])
    g.matmul(a, b).set_output(True)
    return g


def mm_bias_gelu():
    g = dnnc.Graph(name="mm_bias_gelu", io_data_type="bf16", compute_data_type="f32")
    a = g.tensor(name="a", dim=[256, 128])
    b = g.tensor(name="b", dim=[128, 384])
    bias = g.tensor(name="bias", dim=[1, 384])
    g.gelu(g.add(g.matmul(a, b), bias)).set_output(True)
    return g


def bmm_f16():
    g = dnnc.Graph(name="bmm_f16", io_data_type="f16", compute_data_type="f32")
    a = g.tensor(name="a", dim=[3, 65, 256])
    b = g.tensor(name="b", dim=[3, 256, 72])
    g.matmul(a, b).set_output(True)
    return g


def linear_tf32():
    """f32 in tf32 mode, B stored N x K (K-major: what wgmma reads for tf32),
    with a bias and relu in the epilogue."""
    g = dnnc.Graph(name="linear_tf32", io_data_type="f32")
    x = g.tensor(name="x", dim=[1000, 512])
    w_t = g.tensor(name="w_t", dim=[512, 768], stride=[1, 512])
    bias = g.tensor(name="bias", dim=[1, 768])
    g.relu(g.add(g.matmul(x, w_t, compute_data_type="tf32"), bias)).set_output(True)
    return g


def mm_tf32():
    """f32 in tf32 mode with B stored K x N: the kernel computes Cᵀ = Bᵀ Aᵀ,
    with B's fragments read into registers; no launch ahead of it."""
    g = dnnc.Graph(name="mm_tf32", io_data_type="f32")
    a = g.tensor(name="a", dim=[2048, 1024])
    b = g.tensor(name="b", dim=[1024, 2048])
    g.matmul(a, b, compute_data_type="tf32").set_output(True)
    return g


def skinny_4096():
    """64 x 4096 x 4096: 64 tiles of 64 x 64, K split 2 ways; the two
    blocks of a tile run as a cluster, sum through distributed shared
    memory and run the epilogue."""
    g = dnnc.Graph(name="skinny_4096", io_data_type="bf16", compute_data_type="f32")
    a = g.tensor(name="a", dim=[64, 4096])
    b = g.tensor(name="b", dim=[4096, 4096])
    g.matmul(a, b).set_output(True)
    return g


def long_k():
    """256 x 256 x 65536: 4 tiles of 128 x 128, K split 32 ways in clusters
    of 2 that sum their accumulators through distributed shared memory; a
    second launch sums the 16 partials."""
    g = dnnc.Graph(name="long_k", io_data_type="bf16", compute_data_type="f32")
    a = g.tensor(name="a", dim=[256, 65536])
    b = g.tensor(name="b", dim=[65536, 256])
    g.matmul(a, b).set_output(True)
    return g


def skinny_cast_weight():
    """64 x 4096 x 4096 with the weight stored f32 K x N and cast to bf16: a
    prologue on B, whose f32 tiles both consumers convert in shared memory."""
    g = dnnc.Graph(name="skinny_cast_weight", io_data_type="bf16", compute_data_type="f32")
    a = g.tensor(name="a", dim=[64, 4096])
    w = g.tensor(name="w", dim=[4096, 4096], data_type="f32")
    g.matmul(a, g.cast(w, "bf16")).set_output(True)
    return g


def relu_a():
    """relu(A) @ B, 2048 x 1024 x 1024: a prologue on A that each consumer
    applies to its 64 rows of the tile."""
    g = dnnc.Graph(name="relu_a", io_data_type="bf16", intermediate_data_type="bf16",
                   compute_data_type="f32")
    a = g.tensor(name="a", dim=[2048, 1024])
    b = g.tensor(name="b", dim=[1024, 1024])
    g.matmul(g.relu(a), b).set_output(True)
    return g


def weight_grad():
    """x^T @ dy, a linear layer's weight gradient over 4096 tokens: A (x^T)
    stored K x M, M contiguous."""
    g = dnnc.Graph(name="weight_grad", io_data_type="bf16", compute_data_type="f32")
    x_t = g.tensor(name="x_t", dim=[1024, 4096], stride=[1, 1024])
    dy = g.tensor(name="dy", dim=[4096, 512])
    g.matmul(x_t, dy).set_output(True)
    return g


def weight_grad_tf32():
    """The same in tf32 mode, dy stored N x K: A's fragments go through
    registers, nothing is copied."""
    g = dnnc.Graph(name="weight_grad_tf32", io_data_type="f32")
    x_t = g.tensor(name="x_t", dim=[1024, 4096], stride=[1, 1024])
    dy_t = g.tensor(name="dy_t", dim=[4096, 512], stride=[1, 4096])
    g.matmul(x_t, dy_t, compute_data_type="tf32").set_output(True)
    return g


def odd_vocab():
    """x @ W with W stored K x N and N = 1001: B is copied transposed first."""
    g = dnnc.Graph(name="odd_vocab", io_data_type="bf16", compute_data_type="f32")
    x = g.tensor(name="x", dim=[512, 768])
    w = g.tensor(name="w", dim=[768, 1001])
    g.matmul(x, w).set_output(True)
    return g


def staged_rows_f16():
    """f16 1100 x 999 x 256 returning the GEMM and its silu: two outputs with
    rows of 1998 bytes, which TMA cannot store; each warp stores its staged
    rows itself. (ptxas once read this kernel's accumulators before the last
    wgmma.wait_group: test_accumulators_read_after_the_last_wait.)"""
    g = dnnc.Graph(name="staged_rows_f16", io_data_type="f16", compute_data_type="f32")
    a = g.tensor(name="a", dim=[1100, 256])
    w = g.tensor(name="w", dim=[999, 256])
    pre = g.matmul(a, g.transpose(w, [1, 0]))
    pre.set_output(True)
    g.silu(pre).set_output(True)
    return g


def mm_residuals(name, bias, residuals):
    """bf16 4096 x 4096 x 512 (+ bias) + ``residuals`` residuals, relu: 128 x
    256 tiles, whose epilogue reads one residual a column slice ahead and
    two at their slice (a whole tile's beside the accumulators spilled)."""
    def build():
        g = dnnc.Graph(name=name, io_data_type="bf16", compute_data_type="f32")
        y = g.matmul(g.tensor(name="a", dim=[4096, 512]), g.tensor(name="b", dim=[512, 4096]))
        if bias:
            y = g.add(y, g.tensor(name="bias", dim=[1, 4096]))
        for i in range(residuals):
            y = g.add(y, g.tensor(name=f"r{i}", dim=[4096, 4096]))
        g.relu(y).set_output(True)
        return g
    return build


def skinny_linear():
    g = dnnc.Graph(name="skinny_linear", io_data_type="bf16", compute_data_type="f32")
    x = g.tensor(name="x", dim=[64, 4096])
    w_t = g.tensor(name="w_t", dim=[4096, 1024], stride=[1, 4096])
    g.matmul(x, w_t).set_output(True)
    return g


# name: (graph, HGMMA's input type, the tile the heuristics must pick or None
# where the choice is theirs, split-K or None, launches ahead of the GEMM).
# f16 is HGMMA's default input type: its opcode names none
# (HGMMA.64x128x16.F32).
CASES = {
    "mm4096": (mm4096, ".BF16", [128, 256, 64], 1, 0),
    "mm_bias_gelu": (mm_bias_gelu, ".BF16", None, 1, 0),
    "mm_bias_residual": (mm_residuals("mm_bias_residual", True, 1), ".BF16", [128, 256, 64],
                         1, 0),
    "mm_two_residuals": (mm_residuals("mm_two_residuals", False, 2), ".BF16", [128, 256, 64],
                         1, 0),
    "bmm_f16": (bmm_f16, "", None, None, 0),
    "skinny_4096": (skinny_4096, ".BF16", [64, 64, 64], 2, 0),
    "skinny_linear": (skinny_linear, ".BF16", [64, 64, 64], 8, 0),
    "long_k": (long_k, ".BF16", [128, 128, 64], 32, 0),
    "linear_tf32": (linear_tf32, ".TF32", None, None, 0),
    "mm_tf32": (mm_tf32, ".TF32", [128, 256, 32], 1, 0),
    "weight_grad": (weight_grad, ".BF16", None, None, 0),
    "weight_grad_tf32": (weight_grad_tf32, ".TF32", None, None, 0),
    "odd_vocab": (odd_vocab, ".BF16", None, None, 1),
    "skinny_cast_weight": (skinny_cast_weight, ".BF16", [64, 64, 64], 2, 0),
    "relu_a": (relu_a, ".BF16", None, 1, 0),
    "staged_rows_f16": (staged_rows_f16, "", [128, 128, 64], 1, 0),
}
# How each case's epilogue stores its output tiles (the note that ends the
# GEMM's reason): by TMA from shared-memory slots, staged and stored along
# rows by each warp (rows TMA cannot store), from registers (why), or, with
# split-K, as its partials and sums do (no note).
EPILOGUES = {
    "mm4096": "the output tiles are stored by TMA from shared memory (2 of 4 column slices "
              "in flight)",
    "mm_bias_gelu": "the output tiles are stored by TMA from shared memory (1 of 1 column "
                    "slices in flight)",
    "mm_tf32": "the epilogue stores from registers, element by element down C's columns",
    "weight_grad_tf32": None,
    "odd_vocab": None,
    "skinny_4096": None,
    "relu_a": "the epilogue stores from registers (its slots need 16384 bytes of shared "
              "memory; the ring leaves 1952)",
    "staged_rows_f16": "the output tiles are staged in shared memory and each warp stores its "
                       "rows (TMA cannot: its rows are 1998 bytes apart: TMA needs a multiple "
                       "of 16 (N a multiple of 8))",
}
# The cases whose GEMM applies a prologue to an operand's tiles: (operand,
# its type as stored).
PROLOGUES = {"skinny_cast_weight": ("B", "f32"), "relu_a": ("A", "bf16")}


def threads_of(kernel):
    """A producer warpgroup and a consumer warpgroup per 64 rows of the tile."""
    return 128 * (1 + kernel["config"]["tile"][0] // 64)


def gemm_kernels(package):
    """The kernels that run the mainloop: those with TMA arguments."""
    return [k for k in package.kernels if any(a["kind"] == "tma" for a in k["args"])]


def expected_hgmma(name, kernel):
    """The one HGMMA opcode of a tc-sm90 kernel: each consumer warpgroup
    issues wgmma m64nBNk16 (k8 for tf32: 32 bytes of K) on its 64 rows of
    the BM x BN tile."""
    k = 8 if CASES[name][1] == ".TF32" else 16
    return f"HGMMA.64x{kernel['config']['tile'][1]}x{k}.F32{CASES[name][1]}"


@pytest.fixture(scope="module")
def built():
    """Each case compiled (with the arch's default tuning database),
    assembled and disassembled at most once, when first asked for."""
    return Builds(lambda name: CASES[name][0](), ARCH, tuning_db=None)


@pytest.mark.parametrize("name", sorted(CASES))
def test_strategy_is_tc_sm90(built, name):
    kernels = built.package(name).kernels
    ahead = CASES[name][4]
    gemm = kernels[ahead]
    assert gemm_kernels(built.package(name)) == [gemm]
    split = gemm["config"].get("split", 1)
    cluster = gemm["config"].get("cluster", 1)
    # The partials a tile leaves: one a cluster of splits; up to
    # LAST_ARRIVAL_SPLITS the last to arrive sums them in the GEMM.
    second = split // cluster > sm90.LAST_ARRIVAL_SPLITS
    assert gemm.get("cluster", [1, 1, 1]) == [cluster, 1, 1], gemm
    assert len(kernels) == ahead + (2 if second else 1), [k["entry"] for k in kernels]
    assert CASES[name][3] in (None, split), gemm["config"]
    for k in kernels:
        assert k["strategy"] == "tc-sm90", (k["entry"], k["strategy"], k.get("reason"))
        m, n, _ = k["config"]["tile"]
        assert m in (64, 128) and n in (64, 128, 256), k["config"]  # 64 rows per consumer
        assert CASES[name][2] in (None, k["config"]["tile"]), k["config"]
    assert gemm["block"] == [threads_of(gemm), 1, 1]
    # Every sm_90a kernel waits for the grids ahead (dnn-grid-dependency):
    # the runtime may launch it before they end.
    assert all(k.get("dependent_launch") for k in kernels), [k["entry"] for k in kernels]
    assert built.package(name).ptx.count("griddepcontrol.wait;") == len(kernels)
    assert [a["kind"] for a in gemm["args"]][:2] == ["tma", "tma"]
    if second:  # the partials' sum: a workspace read, no TMA, no shared memory
        last = kernels[ahead + 1]
        assert last["args"][0]["kind"] == "buffer" and last["shared_bytes"] == 0
        assert all(a["kind"] != "tma" for a in last["args"])
    if ahead:  # an operand copied transposed into the workspace, which the GEMM's TMA reads
        assert [a["kind"] for a in kernels[0]["args"]] == ["buffer", "buffer"], kernels[0]


@needs_ptxas
@pytest.mark.parametrize("name", sorted(CASES))
def test_registers_spills_shared_memory(built, name):
    resources = built.resources(name)[0]
    package = built.package(name)
    assert_fit(package.kernels, resources, MAX_SHARED)
    for k in gemm_kernels(package):
        assert 0 < k["shared_bytes"] <= MAX_SHARED, k["shared_bytes"]


@needs_sass
@pytest.mark.parametrize("name", sorted(CASES))
def test_sass_has_wgmma_tma_mbarriers_no_local_memory(built, name):
    functions = built.sass(name)
    package = built.package(name)
    gemms = gemm_kernels(package)
    assert len(gemms) == 1, [k["entry"] for k in package.kernels]
    assert_no_local_memory(package.kernels, functions)
    for k in package.kernels:
        counts = sass.opcodes(functions[k["entry"]])
        if k is not gemms[0]:
            assert not any(op.startswith("HGMMA") for op in counts), sorted(counts)
            continue
        hgmma = expected_hgmma(name, k)
        assert counts[hgmma] > 0, sorted(counts)
        assert family(counts, "HGMMA.") == {hgmma}, sorted(counts)
        assert counts["UTMALDG"] > 0 and counts["SYNCS"] > 0, sorted(counts)
        if name in PROLOGUES:
            # The converted tiles: a named barrier per K step (BAR.SYNC
            # with an id; the block-wide barrier has none) after the fence
            # that makes them visible to the async proxy.
            assert any(op.startswith("BAR.SYNC") for op in counts), sorted(counts)
            assert any(op.startswith("FENCE.VIEW.ASYNC.S") for op in counts), sorted(counts)
        split = k["config"].get("split", 1)
        cluster = k["config"].get("cluster", 1)
        if cluster > 1:
            # Cluster barriers, and the slices stored to the owner's shared
            # memory (st.shared::cluster: a 16-byte ST through its window).
            assert counts["UCGABAR_ARV"] > 0 and counts["UCGABAR_WAIT"] > 0, sorted(counts)
            assert counts["ST.E.128"] > 0 and counts["LDS.128"] > 0, sorted(counts)
        if 1 < split // cluster <= sm90.LAST_ARRIVAL_SPLITS:
            # The arrival count: a fenced atomic add per warp of a tile.
            assert counts["ATOMG.E.ADD.STRONG.GPU"] > 0 and counts["MEMBAR.SC.GPU"] > 0, \
                sorted(counts)


@needs_sass
@pytest.mark.parametrize("name", sorted(CASES))
def test_accumulators_read_after_the_last_wait(built, name):
    """No instruction touches a wgmma's accumulator registers between the
    HGMMA and the WARPGROUP.DEPBAR that waits for every group, nor the
    registers of an A fragment before the wait that retires its group
    (PTX leaves both undefined). ptxas once hoisted the epilogue's conversions of
    staged_rows_f16 above that wait, past a subroutine call that the tile
    order's division by a runtime value made; the results were a K step
    short."""
    functions = built.sass(name)
    for k in gemm_kernels(built.package(name)):
        assert sass.wgmma_hazards(functions[k["entry"]]) == [], k["entry"]
        assert sass.wgmma_fragment_hazards(functions[k["entry"]]) == [], k["entry"]
        assert sass.opcodes(functions[k["entry"]])["CALL"] == 0, k["entry"]


@pytest.mark.parametrize("name", sorted(EPILOGUES))
def test_epilogue_says_how_it_stores(built, name):
    """The GEMM's reason ends with how the epilogue stores; a kernel whose
    tiles TMA stores takes the output's descriptor (boxes of a warp's 16
    rows by 128 bytes), and its SASS has TMA stores (UTMASTG); the others
    have none."""
    gemm = gemm_kernels(built.package(name))[0]
    note = EPILOGUES[name]
    stores = ("stored by TMA", "each warp stores", "stores from registers")
    if note is None:
        assert not any(s in gemm["reason"] for s in stores), gemm["reason"]
    else:
        assert gemm["reason"].endswith("; " + note), gemm["reason"]
    by_tma = note is not None and "stored by TMA" in note
    outputs = [a for a in gemm["args"] if a["kind"] == "tma"][2:]
    assert [a["box"][-2:] for a in outputs] == \
        ([[16, 128 // element_bytes(outputs[0]["dtype"])]] if by_tma else []), outputs
    if PTXAS_MISSING is None and sass.missing() is None:
        counts = sass.opcodes(built.sass(name)[gemm["entry"]])
        assert (counts["UTMASTG"] > 0) == by_tma, sorted(counts)


def element_bytes(dtype):
    return 4 if dtype == "f32" else 2


@pytest.mark.parametrize("name", sorted(PROLOGUES))
def test_prologue_is_in_the_gemm(built, name):
    """The pointwise ops on the operand run in the GEMM: one kernel, whose
    reason names the prologue, and whose operand is loaded as stored without
    swizzle."""
    package = built.package(name)
    (gemm,) = package.kernels
    operand, stored = PROLOGUES[name]
    assert f"a prologue on {operand} ({stored} tiles converted in shared memory)" in \
        gemm["reason"], gemm["reason"]
    tma = [a for a in gemm["args"] if a["kind"] == "tma"]
    which = tma[0 if operand == "A" else 1]
    assert which["dtype"] == stored and which["swizzle"] == 0, which


@pytest.mark.parametrize("name", ["weight_grad", "weight_grad_tf32"])
def test_a_stored_k_by_m(built, name):
    """A 16-bit A stored K x M is read in place, boxes of 64 K-rows of 64
    columns of M (two a 128-row tile), which wgmma reads transposed (the
    HGMMA's A descriptor carries .tnspA); a tf32 one is read in place too,
    boxes of 32 K-rows of 32 columns of M, and its fragments go from there
    to registers (the HGMMA's A is a register), as the plan says."""
    package = built.package(name)
    gemm = gemm_kernels(package)[0]
    text = package.describe()
    assert "copied transposed" not in gemm["reason"], gemm["reason"]
    if name == "weight_grad":
        assert "args: tma(input 'x_t', bf16 box 64x64, swizzle 128), " in text, text
    else:
        assert "args: tma(input 'x_t', f32 box 32x32, swizzle 128), " in text, text
        assert "A stored K x M is read into registers" in gemm["reason"], gemm["reason"]
    if sass.missing() is None and PTXAS_MISSING is None:
        text = built.sass(name)[gemm["entry"]]
        hgmma = [line for line in text.splitlines() if "HGMMA" in line]
        assert hgmma and all((".tnspA" in line) == (name == "weight_grad") for line in hgmma), \
            hgmma[:2]
        assert all(bool(A_REGISTER.search(line)) == (name != "weight_grad") for line in hgmma), \
            hgmma[:2]


# An HGMMA whose A is a register: "HGMMA.64x256x8.F32.TF32 R24, R152, gdesc[...]".
A_REGISTER = re.compile(r"HGMMA\.\S+\s+R\d+, R\d+, gdesc")


def test_b_stored_k_by_n_in_tf32_computes_the_transpose(built):
    """tf32 with B stored K x N: one launch, which computes Cᵀ = Bᵀ Aᵀ (B
    is its A, boxes of 32 K-rows of 32 columns of N, A its B, K-major) and
    stores C element by element; every HGMMA takes A from registers."""
    package = built.package("mm_tf32")
    assert len(package.kernels) == 1, [k["entry"] for k in package.kernels]
    gemm = package.kernels[0]
    assert "computes C^T = B^T A^T in 128x256 tiles: B stored K x N is its A, read into " \
        "registers" \
        in gemm["reason"], gemm["reason"]
    text = package.describe()
    assert "args: tma(input 'b', f32 box 32x32, swizzle 128), " \
        "tma(input 'a', f32 box 256x32, swizzle 128), output 'matmul0.c'" in text, text
    if sass.missing() is None and PTXAS_MISSING is None:
        hgmma = [line for line in built.sass("mm_tf32")[gemm["entry"]].splitlines()
                 if "HGMMA" in line]
        assert hgmma and all(A_REGISTER.search(line) for line in hgmma), hgmma[:2]


def test_rows_tma_cannot_step_by_are_copied(built):
    """B stored K x N with rows of 2002 bytes: the plan names the copy and
    why; the GEMM reads the copy."""
    package = built.package("odd_vocab")
    assert ("B stored K x N copied transposed first (its rows of 2002 bytes are not a "
            "multiple of 16 for TMA)") in package.kernels[0]["reason"], package.kernels[0]
    text = package.describe()
    assert "tma(input 'x', bf16 box 128x64, swizzle 128), tma(workspace[0:+" in text, text


def test_describe_prints_tma_arguments(built):
    package = built.package("mm_bias_gelu")
    text = package.describe()
    assert ("args: tma(input 'a', bf16 box 128x64, swizzle 128), "
            "tma(input 'b', bf16 box 64x64, swizzle 128), input 'bias', "
            "tma(output 'gelu2.y', bf16 box 16x64, swizzle 128)") in text, text
    manifest = json.loads(json.dumps(package.manifest))
    tma = manifest["kernels"][0]["args"][0]
    tma.update(byte_offset=64, oob_fill="nan")
    artifact.validate(manifest)
    assert "tma(input 'a'+64, bf16 box 128x64, swizzle 128, oob nan)" in \
        artifact.describe(manifest)


@needs_ptxas
def test_describe_with_ptxas_resources(built):
    package = built.package("mm_bias_gelu")
    resources = built.resources("mm_bias_gelu")[0]
    entry = package.kernels[0]["entry"]
    text = package.describe(resources)
    assert f"ptxas: {resources[entry].registers} registers, 0 B spill stores" in text


@needs_ptxas
def test_assemble_returns_what_assemble_cubin_does(built):
    ptx = built.package("mm_bias_gelu").ptx
    resources, cubin = built.resources("mm_bias_gelu")
    assert ptxas.assemble(ptx, ARCH) == resources
    assert cubin[:4] == b"\x7fELF"


SASS = """
\tcode for sm_90a
\t\tFunction : k0
\t.headerflags\t@"EF_CUDA_ACCELERATORS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;            /* 0x00000a00ff017b82 */
                                                                     /* 0x000fe20000000800 */
        /*0010*/               @P1 BRA 0x230 ;                       /* 0x0000000000601947 */
        /*0020*/              @!UP0 UTMALDG.2D [UR12], [UR28] ;       /* 0x0000000c1c0075b4 */
        /*0030*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR28].tnspB, R24, gsb0 ;
        /*0040*/                   NOP;                              /* 0x0000000000007918 */
\t\t..........

\t\tFunction : k1
        /*0000*/                   STL [R1], R2 ;                    /* 0x0000000201007387 */
        /*0010*/                   EXIT ;                            /* 0x000000000000794d */
"""


def test_sass_parsing():
    functions = sass.functions(SASS)
    assert list(functions) == ["k0", "k1"]
    assert sass.instructions(functions["k0"]) == [
        ("LDC", "R1, c[0x0][0x28]"), ("BRA", "0x230"), ("UTMALDG.2D", "[UR12], [UR28]"),
        ("HGMMA.64x128x16.F32.BF16", "R24, gdesc[UR28].tnspB, R24, gsb0"), ("NOP", "")]
    counts = sass.opcodes(functions["k0"])
    assert counts["HGMMA"] == counts["HGMMA.64x128x16.F32.BF16"] == 1
    assert counts["UTMALDG"] == counts["NOP"] == 1 and counts["STL"] == 0
    assert sass.opcodes(SASS)["STL"] == 1 and sum(sass.opcodes(SASS).values()) == 9


HAZARD = """
        /*0000*/                   HGMMA.64x64x16.F32.BF16 R24, gdesc[UR8], R24, gsb0 ;
        /*0010*/                   LDS.128 R12, [R23+UR5] ;
        /*0020*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
        /*0030*/                   F2FP.BF16.F32.PACK_AB R1, R25, R24 ;
        /*0040*/                   STS.64 [R2], R54 ;
        /*0050*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0060*/                   F2FP.BF16.F32.PACK_AB R3, R27, R26 ;
"""


def test_wgmma_hazards():
    """Between an HGMMA (m64n64: accumulators R24 .. R55) and the wait for
    every group: a read of R24/R25 and a 64-bit store of R54/R55 are
    hazards; a load into R12 .. R15 addressed by R23 is not, nor is a read
    after the wait."""
    assert sass.wgmma_hazards(HAZARD) == [("F2FP.BF16.F32.PACK_AB", "R1, R25, R24"),
                                          ("STS.64", "[R2], R54")]


# A K loop whose wgmmas read A from registers (R164 .. R167) that the next
# iteration loads again while its group may still be in flight (the wait
# leaves one): what a loop carrying one set of fragment registers compiles
# to. Unrolled by two, the loop alternates two sets (FRAGMENTS_SAFE).
FRAGMENTS_RELOADED = """
        /*0100*/                   LDS R164, [R4] ;
        /*0110*/                   LDS R165, [R3] ;
        /*0120*/                   WARPGROUP.ARRIVE ;
        /*0130*/                   HGMMA.64x256x8.F32.TF32 R24, R164, gdesc[UR16], R24, gsb0 ;
        /*0140*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
        /*0150*/               @P0 BRA 0x100 ;
        /*0160*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0170*/                   LDS R164, [R4] ;
"""
FRAGMENTS_SAFE = """
        /*0100*/                   LDS R164, [R4] ;
        /*0110*/                   HGMMA.64x256x8.F32.TF32 R24, R164, gdesc[UR16], R24, gsb0 ;
        /*0120*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
        /*0130*/                   LDS R152, [R4+0x400] ;
        /*0140*/                   HGMMA.64x256x8.F32.TF32 R24, R152, gdesc[UR16], R24, gsb0 ;
        /*0150*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
        /*0160*/               @P0 BRA 0x100 ;
        /*0170*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0180*/                   LDS R164, [R4] ;
"""


def test_wgmma_fragment_hazards():
    """The loop's second pass loads R164 and R165 while the first pass's
    group, which reads R164 .. R167, may be in flight: both loads are
    hazards; the load after the wait for every group is not. Alternating
    two sets of registers, each load finds the group that read its set
    retired."""
    assert sass.wgmma_fragment_hazards(FRAGMENTS_RELOADED) == [("LDS", "R164, [R4]"),
                                                               ("LDS", "R165, [R3]")]
    assert sass.wgmma_fragment_hazards(FRAGMENTS_SAFE) == []
