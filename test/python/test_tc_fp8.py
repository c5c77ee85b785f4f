"""fp8 matmuls on tc-sm90 without a GPU: the strategy and plan, the PTX's
wgmma of the fp8 form (k = 32, A's and B's types each named), what ptxas
makes of it for sm_90a (registers, no spills) and the SASS (QGMMA: the
fp8 HGMMA, as cuobjdump names it).

Graphs compiled once each (module-scoped fixture):

* ``e4m3_4096``: e4m3 x e4m3 4096^3 with per-tensor descales after the
  product and a bf16 output, B stored N x K (read in place), as
  cuBLASLt's fp8 GEMM takes it: 128 x 256 tiles, K steps of 128;
* ``e4m3_e5m2_fp8_out``: e4m3 x e5m2, 200 x 136 x 96 (no tile multiple),
  scaled to an e4m3 output;
* ``e5m2_e4m3_prescaled``: e5m2 x e4m3, the descales written on the
  operands ``(a * s) @ (b * t)`` (folded after the product), B stored
  K x N (N contiguous): copied K-major by a launch ahead of the GEMM,
  since wgmma reads fp8 only K-major; an f32 output;
* ``skinny_split``: 64 x 256 x 8192, K split over several blocks;
* ``e4m3_out_staged``: 1000 x 1168 x 256 scaled to e4m3, in 128 x 128
  tiles whose fp8 output goes out through shared memory by TMA;
* ``amax_ragged``: e4m3 x e4m3, 200 x 136 x 96, the amax of the descaled
  output (taken in the GEMM's epilogue, amax.py) beside its e4m3 cast;
* ``amax_skinny``: the same on 64 x 256 x 8192, whose K splits the
  amax keeps to at most 4 partials a tile (summed by the last to arrive,
  which runs the whole epilogue).

Without ptxas or cuobjdump / nvdisasm those tests skip and say why.
"""

import re

import pytest

import dnnc
from dnnc import compiler, graph_mlir
from dnnc.codegen.gpu import sass
from kernel_builds import (PTXAS_MISSING, Builds, assert_fit, assert_no_local_memory, needs_ptxas,
                           needs_sass)

ARCH = "sm_90a"
E4M3, E5M2 = "f8E4M3FN", "f8E5M2"
WGMMA_NAME = {E4M3: "e4m3", E5M2: "e5m2"}


def fp8_graph(name, m, n, k, ta, tb, out, weight=True, prescaled=False, amax=False):
    """An fp8 GEMM with per-tensor descales (after the product, or written
    on the operands) and, for an fp8 output, the output's scale; ``amax``:
    the amax of the descaled output too."""
    g = dnnc.Graph(name=name, io_data_type="f32", compute_data_type="f32")
    a = g.tensor(name="a", dim=[m, k], data_type=ta)
    b = g.tensor(name="b", dim=[k, n], data_type=tb, stride=[1, k] if weight else None)
    sa = g.tensor(name="sa", dim=[1, 1])
    sb = g.tensor(name="sb", dim=[1, 1])
    if prescaled:
        y = g.matmul(g.mul(a, sa), g.mul(b, sb))
    else:
        y = g.mul(g.mul(g.matmul(a, b), sa), sb)
    if amax:
        g.reduction(y, "amax", [0, 1]).set_output(True)
    if out in (E4M3, E5M2):
        y = g.mul(y, g.tensor(name="sy", dim=[1, 1]))
    g.cast(y, out).set_output(True)
    return g


# name: (graph builder, A's type, B's type, the tile the heuristics must
# pick or None, launches ahead of the GEMM).
CASES = {
    "e4m3_4096": (lambda: fp8_graph("e4m3_4096", 4096, 4096, 4096, E4M3, E4M3, "bf16"),
                  E4M3, E4M3, [128, 256, 128], 0),
    "e4m3_e5m2_fp8_out": (lambda: fp8_graph("e4m3_e5m2_fp8_out", 200, 136, 96, E4M3, E5M2,
                                            E4M3),
                          E4M3, E5M2, None, 0),
    "e5m2_e4m3_prescaled": (lambda: fp8_graph("e5m2_e4m3_prescaled", 129, 264, 512, E5M2, E4M3,
                                              "f32", weight=False, prescaled=True),
                            E5M2, E4M3, None, 1),
    "skinny_split": (lambda: fp8_graph("skinny_split", 64, 256, 8192, E4M3, E4M3, "f16"),
                     E4M3, E4M3, [64, 64, 128], 0),
    "e4m3_out_staged": (lambda: fp8_graph("e4m3_out_staged", 1000, 1168, 256, E4M3, E4M3,
                                          E4M3),
                        E4M3, E4M3, [128, 128, 128], 0),
    # The amax's zero is a one-thread launch ahead of the GEMM.
    "amax_ragged": (lambda: fp8_graph("amax_ragged", 200, 136, 96, E4M3, E4M3, E4M3,
                                      amax=True),
                    E4M3, E4M3, None, 1),
    "amax_skinny": (lambda: fp8_graph("amax_skinny", 64, 256, 8192, E4M3, E4M3, "bf16",
                                      amax=True),
                    E4M3, E4M3, [64, 64, 128], 1),
}
AMAX = ("amax_ragged", "amax_skinny")
# How the GEMM's epilogue stores an fp8 output (the end of its reason): by
# TMA from 128-byte slots, or from registers where a tile's row of fp8 is
# narrower than a slot.
EPILOGUES = {
    "e4m3_out_staged": "the output tiles are stored by TMA from shared memory (1 of 1 column "
                       "slices in flight)",
    "e4m3_e5m2_fp8_out": "the epilogue stores from registers (64 columns of 1-byte outputs "
                         "fill less than a 128-byte slot row)",
}


@pytest.fixture(scope="module")
def built():
    """Each case compiled (with the arch's default tuning database),
    assembled and disassembled at most once."""
    return Builds(lambda name: CASES[name][0](), ARCH, tuning_db=None)


def gemm_of(package):
    """The kernel that runs the mainloop: the one with TMA arguments."""
    (gemm,) = [k for k in package.kernels if any(a["kind"] == "tma" for a in k["args"])]
    return gemm


@pytest.mark.parametrize("name", sorted(CASES))
def test_strategy_is_tc_sm90_with_the_fp8_wgmma(built, name):
    """Every kernel is tc-sm90 (the scales in the GEMM's epilogue: no
    pointwise kernel); the PTX's wgmmas are m64nBNk32 of A's and B's fp8
    types; K steps of 128 (128 bytes of fp8 a row)."""
    _, ta, tb, tile, ahead = CASES[name]
    package = built.package(name)
    gemm = gemm_of(package)
    assert package.kernels.index(gemm) == ahead, [k["entry"] for k in package.kernels]
    for k in package.kernels:
        assert k["strategy"] == "tc-sm90", (k["entry"], k["strategy"], k.get("reason"))
    assert len(package.kernels) == ahead + 1 + (gemm["config"].get("split", 1) > 4), \
        [k["entry"] for k in package.kernels]
    assert gemm["config"]["tile"][2] == 128, gemm["config"]
    assert tile in (None, gemm["config"]["tile"]), gemm["config"]
    found = set(re.findall(r"wgmma\.mma_async\.sync\.aligned\.(\S+)", package.ptx))
    want = f"m64n{gemm['config']['tile'][1]}k32.f32.{WGMMA_NAME[ta]}.{WGMMA_NAME[tb]}"
    assert found == {want}, found
    # Both operands' TMA boxes: rows of 128 fp8 bytes of K.
    tma = [a for a in gemm["args"] if a["kind"] == "tma"][:2]
    assert [a["dtype"] for a in tma][0] == ta and all(a["box"][-1] == 128 for a in tma), tma


@pytest.mark.parametrize("name", AMAX)
def test_amax_is_taken_in_the_epilogue(built, name):
    """The amax joins the GEMM (dnn-fuse): its output is zeroed by a tiny
    launch ahead, then raised by one atomic max on its bits a warp and
    unit (the PTX's atom.global.max.s32), and no reduction kernel reads
    the output again. A skinny GEMM keeps at most 4 partials a tile (no
    second launch, whose epilogue would not take the amax), and says so."""
    package = built.package(name)
    zero, gemm = package.kernels
    assert zero["block"] == [1, 1, 1] and zero["shared_bytes"] == 0, zero
    assert "atom.global.max.s32" in package.ptx
    if name == "amax_skinny":
        assert gemm["config"]["split"] == 4, gemm["config"]
        assert "K split 4 ways, not 16 (an amax in the epilogue: at most 4 partials a tile, " \
            "summed by the last to arrive)" in gemm["reason"], gemm["reason"]


@pytest.mark.parametrize("name", sorted(EPILOGUES))
def test_fp8_output_stores(built, name):
    """An fp8 output is staged in shared memory and stored by TMA (boxes of
    16 rows of 128 bytes, UTMASTG in the SASS) where its tile is 128
    columns or more, else stored from registers, and the plan says which."""
    package = built.package(name)
    gemm = gemm_of(package)
    assert gemm["reason"].endswith("; " + EPILOGUES[name]), gemm["reason"]
    by_tma = "by TMA" in EPILOGUES[name]
    outputs = [a for a in gemm["args"] if a["kind"] == "tma"][2:]
    assert [a["box"][-2:] for a in outputs] == ([[16, 128]] if by_tma else []), outputs
    if PTXAS_MISSING is None and sass.missing() is None:
        counts = sass.opcodes(built.sass(name)[gemm["entry"]])
        assert (counts["UTMASTG"] > 0) == by_tma, sorted(counts)


def test_b_stored_k_by_n_is_copied_k_major(built):
    """wgmma reads fp8 only K-major: B stored K x N is copied transposed
    by a launch ahead of the GEMM, and the plan says why."""
    package = built.package("e5m2_e4m3_prescaled")
    gemm = gemm_of(package)
    assert "B stored K x N copied transposed first (wgmma reads 8-bit operands only " \
        "K-major)" in gemm["reason"], gemm["reason"]
    assert [a["kind"] for a in package.kernels[0]["args"]] == ["buffer", "buffer"]


@needs_ptxas
@pytest.mark.parametrize("name", sorted(CASES))
def test_registers_no_spills(built, name):
    assert_fit(built.package(name).kernels, built.resources(name)[0])


@needs_sass
@pytest.mark.parametrize("name", sorted(CASES))
def test_sass_has_qgmma_and_no_local_memory(built, name):
    """The GEMM's SASS runs QGMMA (Hopper's fp8 HGMMA) of the tile's shape
    and the operand types, nothing else of the tensor cores, TMA loads, and
    no local memory in any kernel; no accumulator is touched before the
    wait for its wgmma group."""
    _, ta, tb, _, _ = CASES[name]
    functions = built.sass(name)
    package = built.package(name)
    gemm = gemm_of(package)
    assert_no_local_memory(package.kernels, functions)
    counts = sass.opcodes(functions[gemm["entry"]])
    qgmma = (f"QGMMA.64x{gemm['config']['tile'][1]}x32.F32."
             f"{WGMMA_NAME[ta].upper()}.{WGMMA_NAME[tb].upper()}")
    assert counts[qgmma] > 0, sorted(counts)
    assert {op for op in counts if "GMMA." in op} == {qgmma}, sorted(counts)
    assert counts["UTMALDG"] > 0 and counts["SYNCS"] > 0, sorted(counts)
    if name in AMAX:  # the atomic max on the f32 bits (ptxas may fold a warp's into one)
        assert any(op.startswith(("REDG.E.MAX.S32", "ATOMG.E.MAX.S32")) for op in counts), \
            sorted(counts)
    assert sass.wgmma_hazards(functions[gemm["entry"]]) == [], gemm["entry"]


def test_fp8_k_not_16_byte_rows_says_why():
    """K = 40 with B stored K x N: wgmma needs it K-major, and a K-major copy
    needs rows of a multiple of 16 bytes: simt-generic, and the plan says
    why tc-sm90 (and tc-sm80, which takes no fp8) does not apply."""
    g = fp8_graph("fp8_k40", 100, 72, 40, E4M3, E4M3, "bf16", weight=False)
    package = compiler.compile_module(graph_mlir.to_module(g),
                                      compiler.Options(target="cuda", arch=ARCH),
                                      basename="fp8_k40")
    gemm = [k for k in package.kernels if "matmul" in k["entry"]][0]
    assert gemm["strategy"] == "simt-generic", gemm
    assert ("tc-sm90 does not apply (B is stored MN-major and K is 40: wgmma reads fp8 only "
            "K-major, and a K-major copy needs rows of a multiple of 16 bytes (K a multiple "
            "of 16)), nor does tc-sm80 (f8E4M3FN operands: expected bf16, f16, or f32 as "
            "tf32)") in gemm["reason"], gemm["reason"]
