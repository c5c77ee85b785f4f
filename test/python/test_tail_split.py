"""tc-sm90's tail split without a GPU (dnnc/codegen/gpu/tensorcore/sm90/
scheduler.py, tail_split.py): the last, partial wave's tiles split along K
over the blocks it leaves idle, summed by the last part to arrive.

* The work units on Python ints (``TileScheduler.tail_unit`` with IntOps,
  the arithmetic the kernel emits with IndexOps): every tile's K steps run
  exactly once, the whole tiles as one unit, a tail tile's in its parts'
  order as consecutive units, each block T / P whole tiles and at most one
  part, no more parts than the idle blocks hold.
* Plans: the note the GEMM's reason ends with (the conv 3x3 128x256x14x14
  -> 256 and ViT-Base's MLP matmul of docs/performance.md, a batched f16
  matmul); a tail split that does not apply says why, and leaves the PTX
  byte-identical to tail_split 0's (and to no override), as where it
  would spill; refused beside split-K, with the reason (tc-sm80 then runs
  it).
* The override's text: tail_split 0 or 2 to 64, tc-sm90 only.
* ptxas and the SASS (skipped without them, as test_tc_sass.py): no
  spills, no local memory, no wgmma hazards, the arrival's atomic add, and
  the staged epilogue's TMA stores kept for the whole tiles.
"""

from types import SimpleNamespace

import pytest

import dnnc
from dnnc.codegen.gpu import sass
from dnnc.codegen.gpu.tensorcore.sm90.backward_units import IntOps
from dnnc.codegen.gpu.tensorcore.sm90.scheduler import TileScheduler
from dnnc.codegen.gpu.tensorcore.sm90.support import Tile
from dnnc.errors import PipelineError
from dnnc.heuristics import override
from dnnc.heuristics.config import Config
from kernel_builds import Builds, assert_fit, assert_no_local_memory, family
from test_tc_sass import ARCH, MAX_SHARED, gemm_kernels, needs_ptxas, needs_sass


def units_of(m, n, k, batch, tile, ctas):
    gemm = SimpleNamespace(m=m, n=n, k=k, batch=batch)
    return TileScheduler(gemm, tile, ctas)


def run(units):
    """{block: [(tile, first, end, split, tail, tail tile), ...] in order}."""
    return {b: [(u, *units.tail_unit(u, IntOps)) for u in range(b, units.units, units.ctas)]
            for b in range(units.ctas)}


@pytest.mark.parametrize("m, n, k, batch, bm, bn, asked, ctas", [
    (25088, 256, 2304, 1, 128, 256, 2, 132),   # conv 3x3 128x256x14x14 -> 256
    (25088, 256, 2304, 1, 128, 256, 8, 132),   # as many as the idle blocks take
    (1576, 3072, 768, 1, 128, 256, 3, 132),    # ViT-Base MLP: 24 tail tiles
    (1576, 3072, 768, 1, 128, 256, 64, 132),   # 12 steps: at most 12 parts
    (6272, 256, 1024, 1, 128, 64, 2, 132),     # conv 1x1 in 128x64 tiles
    (1000, 264, 512, 6, 128, 128, 4, 132),     # batched, ragged M and N
    (640, 640, 448, 1, 64, 64, 3, 30),         # 100 tiles over 30 blocks: 3, 3, 1 steps
    (640, 576, 320, 1, 64, 64, 4, 44),         # 5 steps over 4 parts run as 3 of 2
])
def test_every_step_once_whole_tiles_then_parts(m, n, k, batch, bm, bn, asked, ctas):
    units = units_of(m, n, k, batch, Tile(bm, bn, 64, tail_split=asked), ctas)
    tiles, steps = units.total_tiles, units.steps
    assert units.tail_split
    assert units.whole == tiles // ctas * ctas and units.tail_tiles == tiles - units.whole
    assert units.tail_tiles * units.tail_parts <= ctas
    assert 2 <= units.tail_parts <= min(asked, steps)
    assert units.units == units.whole + units.tail_tiles * units.tail_parts
    ran = {}
    for block, done in run(units).items():
        whole = [d for d in done if not d[5]]
        parts = [d for d in done if d[5]]
        # Every block: T / P whole tiles first, then at most one part.
        assert len(whole) == tiles // ctas and len(parts) <= 1, (block, done)
        assert done == whole + parts
        for u, tile, first, end, split, tail, tail_tile in done:
            ran.setdefault(tile, []).append((u, split, first, end))
            if tail:
                assert tile == units.whole + tail_tile
    assert sorted(ran) == list(range(tiles))
    for tile, runs in ran.items():
        runs.sort()
        if tile < units.whole:
            assert [r[1:] for r in runs] == [(0, 0, steps)], (tile, runs)
            continue
        # The parts: consecutive units, in split order, covering K's steps
        # once with none empty.
        assert [r[0] for r in runs] == list(range(runs[0][0], runs[0][0] + units.tail_parts))
        assert [r[1] for r in runs] == list(range(units.tail_parts))
        assert runs[0][2] == 0 and runs[-1][3] == steps
        assert all(a[3] == b[2] for a, b in zip(runs, runs[1:]))
        assert all(r[2] < r[3] for r in runs)


@pytest.mark.parametrize("m, n, k, tile, ctas, why", [
    (4096, 4096, 4096, Tile(128, 256, 64, tail_split=2), 132, "116 tail tiles"),
    (128 * 132, 256, 4096, Tile(128, 256, 64, tail_split=2), 132, "full waves"),
    (4096, 256, 64, Tile(128, 256, 64, tail_split=2), 132, "one K step"),
    (333 * 3, 200, 512, Tile(128, 64, 64, tail_split=4), 132, "fewer tiles than blocks"),
    (64, 4096, 4096, Tile(64, 64, 64, splits=2, tail_split=2), 132, "split-K"),
])
def test_tail_split_that_does_not_apply(m, n, k, tile, ctas, why):
    units = units_of(m, n, k, 1, tile, ctas)
    assert not units.tail_split, why
    assert units.units == units.total_tiles * units.splits


# -- plans and PTX -------------------------------------------------------------


def nhwc(n, c, h, w):
    return [h * w * c, 1, w * c, c]


def conv3x3():
    g = dnnc.Graph(name="conv3x3", io_data_type="bf16", compute_data_type="f32")
    x = g.tensor(name="x", dim=[128, 256, 14, 14], stride=nhwc(128, 256, 14, 14))
    w = g.tensor(name="w", dim=[256, 256, 3, 3], stride=nhwc(256, 256, 3, 3))
    y = g.conv_fprop(x, w, padding=1, stride=1)
    y.set_output(True).set_stride(nhwc(128, 256, 14, 14))
    return g


def vit_mlp():
    g = dnnc.Graph(name="vit_mlp", io_data_type="bf16", compute_data_type="f32")
    x = g.tensor(name="x", dim=[1576, 768])
    w = g.tensor(name="w", dim=[768, 3072])
    bias = g.tensor(name="bias", dim=[1, 3072])
    g.gelu(g.add(g.matmul(x, w), bias)).set_output(True)
    return g


def bmm_f16():
    g = dnnc.Graph(name="bmm_f16", io_data_type="f16", compute_data_type="f32")
    a = g.tensor(name="a", dim=[6, 1000, 512])
    b = g.tensor(name="b", dim=[6, 512, 264])
    bias = g.tensor(name="bias", dim=[1, 1, 264])
    g.add(g.matmul(a, b), bias).set_output(True)
    return g


def mm4096():
    g = dnnc.Graph(name="mm4096", io_data_type="bf16", compute_data_type="f32")
    a = g.tensor(name="a", dim=[4096, 4096])
    b = g.tensor(name="b", dim=[4096, 4096])
    g.matmul(a, b).set_output(True)
    return g


def vit_residual():
    g = dnnc.Graph(name="vit_residual", io_data_type="bf16", compute_data_type="f32")
    x = g.tensor(name="x", dim=[1576, 768])
    w = g.tensor(name="w", dim=[768, 3072])
    bias = g.tensor(name="bias", dim=[1, 3072])
    res = g.tensor(name="res", dim=[1576, 3072])
    g.add(g.add(g.matmul(x, w), bias), res).set_output(True)
    return g


def skinny():
    g = dnnc.Graph(name="skinny", io_data_type="bf16", compute_data_type="f32")
    a = g.tensor(name="a", dim=[64, 4096])
    b = g.tensor(name="b", dim=[4096, 1024])
    g.matmul(a, b).set_output(True)
    return g


GRAPHS = {"conv3x3": conv3x3, "vit_mlp": vit_mlp, "bmm_f16": bmm_f16, "mm4096": mm4096,
          "skinny": skinny, "vit_residual": vit_residual}
# name: (override, (tail tiles, of tiles, parts, steps a part, of steps, blocks), the
# tile, the HGMMA input type).
SPLIT = {
    "conv3x3": ("*=tile:128x256x64,stages:4,tail_split:2", (64, 196, 2, 18, 36, 132),
                [128, 256, 64], ".BF16"),
    "vit_mlp": ("*=tail_split:3", (24, 156, 3, 4, 12, 132), [128, 256, 64], ".BF16"),
    "bmm_f16": ("*=tile:128x128x64,tail_split:4", (12, 144, 4, 2, 8, 132), [128, 128, 64], ""),
}


@pytest.fixture(scope="module")
def built():
    return Builds(lambda name: GRAPHS[name](), ARCH)


def without_tail_split(config):
    """``config`` without its tail_split entry (None where nothing is left)."""
    kept = [item for item in config[2:].split(",") if not item.startswith("tail_split:")]
    return "*=" + ",".join(kept) if kept else None


def gemm_of(package):
    (gemm,) = gemm_kernels(package)
    return gemm


@pytest.mark.parametrize("name", sorted(SPLIT))
def test_plan_says_which_tiles_split(built, name):
    config, (tail, tiles, parts, per, steps, blocks), tile, _ = SPLIT[name]
    package = built.package(name, config=config)
    gemm = gemm_of(package)
    assert gemm["strategy"] == "tc-sm90", gemm.get("reason")
    assert gemm["config"]["tile"] == tile and gemm["config"]["tail_split"] >= parts
    assert gemm["reason"].endswith(
        f"the last wave's {tail} of {tiles} tiles split along K {parts} ways ({per} of "
        f"{steps} K steps each) over {blocks} blocks, summed in split order by the last to "
        "arrive"), gemm["reason"]
    assert gemm["grid"][0] == blocks
    # The whole tiles' epilogue still stages its outputs for TMA.
    assert "stored by TMA from shared memory" in gemm["reason"]
    # The compact partials (parts x tail tiles x BM x BN f32) and a counter
    # per warp of a tail tile: not [parts, M, N].
    partials = parts * tail * tile[0] * tile[1] * 4
    assert package.manifest["workspace_bytes"] >= partials + tail * tile[0] // 16 * 4
    assert package.manifest["workspace_bytes"] < 2 * partials


@pytest.mark.parametrize("name, config, why", [
    ("mm4096", "*=tail_split:2", "the last wave's 116 tiles leave 16 blocks idle, too few "
                                 "for a second part of each"),
    ("conv3x3", "*=tile:128x128x64,tail_split:2", "the last wave's 128 tiles leave 4 blocks "
                                                 "idle, too few for a second part of each"),
    ("skinny", "*=tile:64x64x64,split:1,tail_split:2",
     "16 tiles for 132 blocks, none whole: split-K's case (config split)"),
    # 128x256 tiles with a bias and a residual: their inputs, read before a
    # part's sum beside the accumulators, spilled.
    ("vit_residual", "*=tail_split:2", "in 128x256 tiles with these epilogue inputs, read "
                                       "before a part's sum beside its 128 accumulator "
                                       "registers a thread, ptxas spills"),
])
def test_tail_split_that_does_not_apply_changes_nothing(built, name, config, why):
    package = built.package(name, config=config)
    assert gemm_of(package)["reason"].endswith(
        f"tail_split 2 does not apply ({why}): tiles run whole"), gemm_of(package)["reason"]
    assert package.ptx == built.package(name, config=without_tail_split(config)).ptx
    off = config.replace("tail_split:2", "tail_split:0")
    assert package.ptx == built.package(name, config=off).ptx


def test_tail_split_zero_is_the_default(built):
    default = built.package("vit_mlp")
    off = built.package("vit_mlp", config="*=tail_split:0")
    assert off.ptx == default.ptx
    assert "tail_split" not in gemm_of(off)["config"]
    assert "tail_split" not in gemm_of(default)["config"]


def test_refused_beside_split_k(built):
    package = built.package("skinny", config="*=tile:64x64x64,split:2,tail_split:2")
    kernel = package.kernels[0]   # (tc-sm80's split: a second launch sums)
    assert all(k["strategy"] == "tc-sm80" for k in package.kernels), package.kernels
    assert "tc-sm90 does not apply (tail_split 2 beside split-K (K split 2 ways): expected " \
           "tail_split 0)" in kernel["reason"], kernel["reason"]


# -- the override ----------------------------------------------------------------


def test_override_reads_tail_split():
    assert override.parse("main_k0_matmul=tail_split:3") == {"main_k0_matmul": {"tail_split": 3}}
    config = override.apply(Config("tc-sm90", (384, 1, 1), tile=(128, 256, 64)),
                            {"tail_split": 2})
    assert config.tail_split == 2 and config.fields()["tail_split"] == 2
    assert "tail_split = 2 : i64" in config.to_text()


@pytest.mark.parametrize("text, message", [
    ("*=tail_split:1", "tail_split: expected 0 (off) or an integer from 2 to 64, got '1'"),
    ("*=tail_split:65", "tail_split: expected 0 (off) or an integer from 2 to 64, got '65'"),
    ("*=tail_split:x", "tail_split: expected 0 (off) or an integer from 2 to 64, got 'x'"),
])
def test_override_refuses_bad_tail_splits(text, message):
    with pytest.raises(PipelineError, match="tail_split") as err:
        override.parse(text)
    assert message in str(err.value)


def test_tail_split_is_tc_sm90s():
    with pytest.raises(PipelineError) as err:
        override.apply(Config("tc-sm80", (256, 1, 1)), {"tail_split": 2})
    assert "strategy 'tc-sm80' has no field 'tail_split'" in str(err.value)
    with pytest.raises(PipelineError) as err:
        Config("tc-sm90", tail_split=1)
    assert "tail_split: expected 0 (off) or at least 2, got 1" in str(err.value)


# -- ptxas and the SASS ------------------------------------------------------------


@needs_ptxas
@pytest.mark.parametrize("name", sorted(SPLIT))
def test_no_spills(built, name):
    config = SPLIT[name][0]
    resources = built.resources(name, config=config)[0]
    assert_fit(built.package(name, config=config).kernels, resources, MAX_SHARED)


@needs_sass
@pytest.mark.parametrize("name", sorted(SPLIT))
def test_sass(built, name):
    config, _, tile, kind = SPLIT[name]
    package = built.package(name, config=config)
    functions = built.sass(name, config=config)
    assert_no_local_memory(package.kernels, functions)
    text = functions[gemm_of(package)["entry"]]
    counts = sass.opcodes(text)
    assert family(counts, "HGMMA.") == {f"HGMMA.64x{tile[1]}x16.F32{kind}"}, sorted(counts)
    # One arrival per warp of a part (a fenced atomic add), and the whole
    # tiles' (and the sums') TMA stores from the staged slots.
    assert counts["ATOMG.E.ADD.STRONG.GPU"] == 1 and counts["MEMBAR.SC.GPU"] > 0, sorted(counts)
    assert counts["UTMASTG"] > 0, sorted(counts)
    assert sass.wgmma_hazards(text) == [] and counts["CALL"] == 0
    # The epilogue is emitted once: as many TMA stores as without the tail
    # split.
    plain = built.sass(name, config=without_tail_split(config))
    assert counts["UTMASTG"] == sass.opcodes(plain[gemm_of(package)["entry"]])["UTMASTG"]
