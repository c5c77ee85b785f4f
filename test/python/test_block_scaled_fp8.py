"""Block-scaled fp8 matmuls (dnn.matmul_block_scaled) without a GPU: the
Graph API's errors, the NumPy reference against a dequantized matmul, the
CPU back end against the reference, and tc-sm90's kernel as the plan, the
PTX, ptxas and the SASS show it (sm90/block_scales.py): wgmma's fp8 form
into a temporary accumulator, scaled by one FMA per value into the tile's
(the scales' loads in the PTX), 128-wide K steps, no spills, QGMMA not
serialized, in each loop a config override selects (whole steps, groups of
2, 4 and 8 steps with two temporaries, 128x256 tiles in two halves); on
sm_80 simt-generic, saying why.
"""

import re

import ml_dtypes
import numpy as np
import pytest

import dnnc
from dnnc import reference
from dnnc.errors import DnncError
from dnnc.codegen.gpu import sass
from kernel_builds import Builds, family, needs_ptxas, needs_sass

E4M3, E5M2 = "f8E4M3FN", "f8E5M2"
NP = {E4M3: ml_dtypes.float8_e4m3fn, E5M2: ml_dtypes.float8_e5m2}


def blocks(n):
    return -(-n // 128)


def graph(m, n, k, ta=E4M3, tb=E4M3, out="bf16", weight=True, name="bs"):
    """C = block-scaled A @ B, cast to ``out``; B stored N x K (``weight``)."""
    g = dnnc.Graph(name=name, io_data_type="f32", compute_data_type="f32")
    a = g.tensor(name="a", dim=[m, k], data_type=ta)
    b = g.tensor(name="b", dim=[k, n], data_type=tb, stride=[1, k] if weight else None)
    sa = g.tensor(name="sa", dim=[m, blocks(k)])
    sb = g.tensor(name="sb", dim=[blocks(k), blocks(n)])
    c = g.matmul_block_scaled(a, b, sa, sb)
    (c if out == "f32" else g.cast(c, out)).set_output(True)
    return g


def draw(m, n, k, ta=E4M3, tb=E4M3, seed=0):
    """fp8 operands and scales of 2^-8 .. 2^8."""
    g = np.random.default_rng(seed)
    return {"a": g.standard_normal((m, k)).astype(NP[ta]),
            "b": g.standard_normal((k, n)).astype(NP[tb]),
            "sa": np.exp2(g.integers(-8, 9, (m, blocks(k)))).astype(np.float32),
            "sb": np.exp2(g.integers(-8, 9, (blocks(k), blocks(n)))).astype(np.float32)}


def dequantized(x):
    """A @ B of the operands dequantized by an explicit loop over blocks."""
    a, b = x["a"].astype(np.float64), x["b"].astype(np.float64)
    for i in range(a.shape[0]):
        for kb in range(x["sa"].shape[1]):
            a[i, kb * 128:(kb + 1) * 128] *= x["sa"][i, kb]
    for kb in range(x["sb"].shape[0]):
        for nb in range(x["sb"].shape[1]):
            b[kb * 128:(kb + 1) * 128, nb * 128:(nb + 1) * 128] *= x["sb"][kb, nb]
    return a @ b


# -- the graph and the reference ----------------------------------------------


@pytest.mark.parametrize("scale, dims, words", [
    ("a", [200, 3], "operand 'a_scale' dim 1: expected 2 (a_scale is M x ceil(K / 128)"),
    ("b", [2, 392], "operand 'b_scale' dim 1: expected 4 (b_scale is ceil(K / 128) x "
                    "ceil(N / 128)"),
])
def test_scales_of_the_wrong_shape_are_refused(scale, dims, words):
    g = dnnc.Graph(io_data_type="f32")
    a = g.tensor(name="a", dim=[200, 200], data_type=E4M3)
    b = g.tensor(name="b", dim=[200, 392], data_type=E4M3)
    sa = g.tensor(name="sa", dim=dims if scale == "a" else [200, 2])
    sb = g.tensor(name="sb", dim=dims if scale == "b" else [2, 4])
    with pytest.raises(DnncError, match=re.escape(words)):
        g.matmul_block_scaled(a, b, sa, sb)


def test_operands_must_be_fp8():
    g = dnnc.Graph(io_data_type="f32")
    a = g.tensor(name="a", dim=[4, 128], data_type="bf16")
    b = g.tensor(name="b", dim=[128, 8], data_type=E4M3)
    with pytest.raises(DnncError, match=re.escape(
            "operand 'a': expected f8E4M3FN or f8E5M2, got bf16")):
        g.matmul_block_scaled(a, b, g.tensor(name="sa", dim=[4, 1]),
                              g.tensor(name="sb", dim=[1, 1]))


@pytest.mark.parametrize("ta, tb", [(E4M3, E4M3), (E5M2, E4M3)])
def test_reference_is_the_dequantized_matmul(ta, tb):
    """200 x 392 x 320: a last K block of 64 and a last column block of 8."""
    x = draw(200, 392, 320, ta, tb)
    got = reference.block_scaled_matmul(x["a"], x["b"], x["sa"], x["sb"])
    want = dequantized(x)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    g = graph(200, 392, 320, ta, tb, out="f32", weight=False)
    (out,) = g.execute_reference(x).values()
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())


@pytest.mark.parametrize("m, n, k, ta, tb", [(200, 392, 320, E4M3, E4M3),
                                            (7, 130, 129, E4M3, E5M2)])
def test_cpu_back_end_matches_the_reference(m, n, k, ta, tb):
    """The CPU back end sums every scaled product in f32: within f32's
    rounding of the sum of |products| of the float64 reference."""
    x = draw(m, n, k, ta, tb, seed=1)
    g = graph(m, n, k, ta, tb, out="f32", weight=False)
    out = g.compile(target="cpu")(**x)
    got = np.asarray(out if not isinstance(out, dict) else next(iter(out.values())),
                     np.float64)
    want = dequantized(x)
    bound = reference.block_scaled_matmul(np.abs(x["a"].astype(np.float64)),
                                          np.abs(x["b"].astype(np.float64)), x["sa"], x["sb"])
    assert np.all(np.abs(got - want) <= 1e-6 * bound + 1e-30), np.abs(got - want).max()


# -- tc-sm90 --------------------------------------------------------------------


# name: (M, N, K, A's type, B's type, output, B stored N x K, the tile, K
# steps a group)
CASES = {
    "e4m3_4096": (4096, 4096, 4096, E4M3, E4M3, "bf16", True, [128, 128, 128], 8),
    "deepseek": (8192, 7168, 2048, E4M3, E4M3, "bf16", True, [128, 128, 128], 8),
    "odd_e5m2": (200, 392, 320, E4M3, E5M2, "f32", False, [128, 64, 128], 4),
    # 11 K steps: groups of 4 would need a loop for the first 3, and ptxas
    # spills at 128 columns; groups of 2 do not.
    "ragged_steps": (2048, 2048, 1408, E4M3, E4M3, "bf16", True, [128, 128, 128], 2),
}
# The loops a config override selects (block_scales.py), by what the
# override names: (config, K steps a group; 0: whole steps).
VARIANTS = {
    "heuristics": (None, 8),   # what e4m3_4096's 32 steps get
    "whole": ("*=promote_overlap:0", 0),
    "groups_of_2": ("*=promote_overlap:2", 2),
    "groups_of_4": ("*=promote_overlap:4", 4),
    "groups_of_8": ("*=promote_overlap:8", 8),
}
WIDE = "*=tile:128x256x128,stages:4,promote_overlap:0"


def case_graph(name):
    """The graph of CASES[name]."""
    m, n, k, ta, tb, out, weight, _, _ = CASES[name]
    return graph(m, n, k, ta, tb, out, weight, name=name)


@pytest.fixture(scope="module")
def built():
    """Each case compiled (with the arch's default tuning database) and
    assembled at most once."""
    return Builds(case_graph, "sm_90a", tuning_db=None)


def gemm_of(package):
    (gemm,) = [k for k in package.kernels if any(a["kind"] == "tma" for a in k["args"])]
    return gemm


def waits(ptx):
    return set(re.findall(r"wgmma\.wait_group\.sync\.aligned\s+(\d+);", ptx))


@pytest.mark.parametrize("name", sorted(CASES))
def test_tc_sm90_block_scaled_plan_and_ptx(built, name):
    """tc-sm90 with 128-wide K steps and a tile of at most 128 columns, in
    groups of 8 steps where the step count divides into them, else 4 (2 at
    128 columns where the step count is no multiple of 4: the heuristics'
    choice); the plan says so; each K step's k32
    wgmmas start from zero (a temporary), one group stays in flight while
    the step before is promoted, and every accumulator value takes one FMA
    of its promotion."""
    m, n, k, ta, tb, out, weight, tile, group = CASES[name]
    package = built.package(name)
    for kernel in package.kernels:
        assert kernel["strategy"] == "tc-sm90", (kernel["entry"], kernel.get("reason"))
    gemm = gemm_of(package)
    assert gemm["config"]["tile"] == tile, gemm["config"]
    assert gemm["config"]["promote_overlap"] == group, gemm["config"]
    assert "block-scaled (1x128 A, 128x128 B scales applied in the mainloop)" in gemm["reason"]
    assert f"K steps in groups of {group}, each step's promotion overlapping" in gemm["reason"]
    assert "block-scaled: each 128-wide K step summed apart (two temporaries alternating in " \
        f"groups of {group} steps" in gemm["reason"]
    # One extra launch ahead: B stored K x N is copied K-major.
    assert len(package.kernels) == (1 if weight else 2), [k["entry"] for k in package.kernels]
    names = {E4M3: "e4m3", E5M2: "e5m2"}
    found = set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(\S+)", package.ptx))
    assert found == {f"m64n{tile[1]}k32.f32.{names[ta]}.{names[tb]}"}, found
    # 200 x 392 x 320 has 3 K steps, fewer than a group: each runs whole.
    assert waits(package.ptx) == ({"0"} if k < group * 128 else {"0", "1"}), waits(package.ptx)
    # The promotion: tile N / 2 accumulator values, one fma.rn.f32 each.
    assert len(re.findall(r"\bfma\.rn\.f32\b", package.ptx)) >= tile[1] // 2
    assert re.search(r"ld\.global(\.\w+)*\.b32", package.ptx), "no load of the scales"


# Every case in every variant, but groups of 8 or 4 over 11 steps: the loop
# of its first 3 steps beside the groups' spills (why the heuristics take
# groups of 2 there).
NO_SPILLS = [(name, variant) for name in sorted(CASES) for variant in sorted(VARIANTS)
             if (name, variant) not in (("ragged_steps", "groups_of_8"),
                                        ("ragged_steps", "groups_of_4"))]


@needs_ptxas
@pytest.mark.parametrize("name, variant", NO_SPILLS)
def test_ptxas_no_spills(built, name, variant):
    config, _ = VARIANTS[variant]
    resources, _ = built.resources(name, config=config)
    gemm = gemm_of(built.package(name, config=config))["entry"]
    r = resources[gemm]
    assert r.spill_stores == 0 and r.spill_loads == 0 and r.stack_bytes == 0, r
    assert r.registers <= 168, r


def depbars(text):
    """The WARPGROUP.DEPBAR waits of SASS ``text`` by the groups they leave
    in flight."""
    return re.findall(r"WARPGROUP\.DEPBAR\.LE\s+gsb0,\s*0x(\d+)", text)


@needs_sass
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_sass_wgmmas_are_not_serialized(built, variant):
    """QGMMA m64n128k32 e4m3; a step's four wgmmas share one wait (ptxas
    serializes every wgmma, a wait after each, when a temporary in flight
    is copied or read: C7514/C7515), and a group's steps after its first
    wait leaving one in flight; no local memory."""
    config, group = VARIANTS[variant]
    text = built.sass("e4m3_4096", config=config)[
        gemm_of(built.package("e4m3_4096", config=config))["entry"]]
    counts = sass.opcodes(text)
    assert family(counts, "QGMMA.") == {"QGMMA.64x128x32.F32.E4M3.E4M3"}, sorted(counts)
    waited = depbars(text)
    # Per tile: one wait per group (or step) and the mainloop's last.
    assert len(waited) < counts["QGMMA"], (waited, counts["QGMMA"])
    assert waited.count("1") == (group - 1 if group else 0), waited
    assert "LDL" not in text and "STL" not in text


def test_wide_tile_runs_two_halves(built):
    """tile 128x256x128 (override): a step's two halves of 128 columns,
    m64n128k32 each, each waited for and promoted with its own scale of B
    (two B scales read a step); the plan says so."""
    package = built.package("e4m3_4096", config=WIDE)
    gemm = gemm_of(package)
    assert gemm["strategy"] == "tc-sm90", gemm["reason"]
    assert gemm["config"]["tile"] == [128, 256, 128], gemm["config"]
    assert "in 2 parts of 128 columns, one scale of B each" in gemm["reason"]
    found = set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(\S+)", package.ptx))
    assert found == {"m64n128k32.f32.e4m3.e4m3"}, found
    assert waits(package.ptx) == {"0"}, waits(package.ptx)
    assert len(re.findall(r"\bfma\.rn\.f32\b", package.ptx)) >= 128


@needs_sass
def test_wide_tile_is_not_serialized(built):
    """128x256's two halves a step: 8 QGMMAs, 2 waits (and the mainloop's
    last) a tile; ptxas spills some registers of it (why the heuristics do
    not pick it), but serializes no wgmma."""
    text = built.sass("e4m3_4096", config=WIDE)[
        gemm_of(built.package("e4m3_4096", config=WIDE))["entry"]]
    counts = sass.opcodes(text)
    assert family(counts, "QGMMA.") == {"QGMMA.64x128x32.F32.E4M3.E4M3"}, sorted(counts)
    assert len(depbars(text)) < counts["QGMMA"], (depbars(text), counts["QGMMA"])


@pytest.mark.parametrize("config, words", [
    ("*=tile:128x256x128,stages:4,promote_overlap:4",
     "promote_overlap with a tile 256 wide: expected at most 128"),
    ("*=tile:128x192x128,stages:4", "tile N 192 with block scales: expected 64, 128 or 256"),
])
def test_unsupported_variants_fall_back_saying_why(built, config, words):
    gemm = built.package("odd_e5m2", config=config).kernels[-1]
    assert gemm["strategy"] == "simt-generic", gemm
    assert words in gemm["reason"], gemm["reason"]


def test_sm80_runs_simt_generic_and_says_why(built):
    package = built.package("odd_e5m2", arch="sm_80")
    strategies = {k["strategy"] for k in package.kernels}
    assert "tc-sm80" not in strategies and "tc-sm90" not in strategies, strategies
    said = [k for k in package.kernels
            if k["reason"].startswith("tc-sm90 does not apply on sm_80 (matmul_block_scaled")]
    assert said and all(k["strategy"] == "simt-generic" for k in said), \
        [(k["entry"], k["strategy"], k["reason"]) for k in package.kernels]
