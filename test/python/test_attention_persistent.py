"""tc-sm90's persistent attention forward without a GPU
(sm90/flash_scheduler.py, sm90/flash.py with FlashTile.persistent):

* the scheduler: every query tile of every head exactly once over the
  blocks, causal tiles in pairs of equal work (the longer first), the
  blocks' shares even to within one unit; the index arithmetic the kernel
  emits folds to the same tiles as the Python walk;
* the synchronization (flash_protocol.py): every block's roles run their
  tiles to the end under random interleavings, for units that are not a
  multiple of the blocks, causal pairs of even and odd tile counts, a
  unit a block, tiles with no step, O staged in the last V stage, in the
  Q tile or not at all, one to three consumer warpgroups; the model finds
  the first persistent forward's hang (setmaxnreg asking for more than
  the block holds) and a Q tile given back early;
* the heuristics: persistent where a block a tile takes more than a wave,
  on 128 x 128 tiles of head dims up to 128 and kv sequences up to 1024;
  not for a decode (split or folded), other tiles, head dims or longer
  sequences; the override ``persistent:N`` (0 the
  old grid, N > 1 at most N blocks) and its errors; a split or folded
  kernel that is told to run persistent keeps its grid, saying why;
* the kernels: the grid, the plan, the barriers and stores that carry a
  block from tile to tile (PTX), and ptxas's verdict (no spills, no local
  memory, setmaxnreg kept, HGMMA, TMA) on features the forward takes:
  masks, bias, GQA, padding, ragged and paged, D 40 to 128, O from
  registers.

Numerics run on a GPU (test/gpu, family attention_persistent).
"""

import dataclasses
import re
from types import SimpleNamespace

import pytest
from mlir import ir
from mlir.dialects import arith, func

from dnnc import compiler, graph_mlir, passes
from dnnc.codegen.gpu import sass
from dnnc.codegen.gpu.tensorcore.sm90.flash import (
    SPARE_REGISTERS, FlashTile, accumulator_registers, entry_registers, register_plan, registers,
)
from dnnc.codegen.gpu.tensorcore.sm90.flash_scheduler import FlashScheduler, Ints, Values
from dnnc.codegen.gpu.tensorcore.sm90.scheduler import PERSISTENT_CTAS
from dnnc.errors import PipelineError
from dnnc.heuristics import Config, parse_override, rank
import flash_protocol
from flash_protocol import Barrier, Block, ProtocolError, Shapes, run_blocks
from kernel_builds import (Builds, assert_no_local_memory, assert_no_spills,
                           assert_setmaxnreg_fits)
from test_attention_paged_tensor_cores import paged_graph
from test_attention_ragged_tensor_cores import ragged_graph
from test_attention_tensor_cores import problem, sdpa_graph
from test_cuda_compile import _load_gpu_cases
from test_tc_sass import ARCH, needs_sass


def att(b=2, h=8, hk=2, sq=1000, skv=1000, d=64, causal=False):
    """What FlashScheduler reads of an Attention."""
    return SimpleNamespace(batch=b, heads=h, kv_heads=hk, group=h // hk, sq=sq, skv=skv, d=d,
                           dv=d, causal=causal)


# ----------------------------------------------------------------------------
# The scheduler

SHAPES = [(1, 1, 1), (2, 3, 128), (1, 5, 129), (3, 4, 1000), (4, 16, 1024), (1, 2, 2049)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("b, h, sq", SHAPES)
@pytest.mark.parametrize("ctas", [1, 3, 7, PERSISTENT_CTAS])
def test_every_tile_once(causal, b, h, sq, ctas):
    s = FlashScheduler(att(b, h, 1, sq, sq, causal=causal), 128, ctas)
    tiles = -(-sq // 128)
    assert s.ctas == min(ctas, s.units)
    assert s.units == b * h * (-(-tiles // 2) if causal else tiles)
    got = [t for block in range(s.ctas) for t in s.tiles_for(block)]
    assert sorted(got) == sorted((t, head) for t in range(tiles) for head in range(b * h))


@pytest.mark.parametrize("b, h, sq", SHAPES)
def test_causal_pairs_are_equal_work_longer_first(b, h, sq):
    """A causal unit is tiles t and T - 1 - t of one head (T + 1 kv tiles
    of work; the middle tile of an odd T alone, last of its head), the
    longer first; a block's units are those of b, b + ctas, ..., so the
    blocks' shares differ by one unit at most."""
    s = FlashScheduler(att(b, h, 1, sq, sq, causal=True), 128, 7)
    tiles = -(-sq // 128)
    shares = []
    for block in range(s.ctas):
        items = s.tiles_for(block)
        work = 0
        while items:
            (t, head), items = items[0], items[1:]
            work += t + 1
            if t != tiles - 1 - t:
                (u, other), items = items[0], items[1:]
                assert (u, other) == (tiles - 1 - t, head) and t > u
                work += u + 1
        shares.append(work)
    assert max(shares) - min(shares) <= tiles + 1


def test_not_causal_is_the_old_grids_order():
    """Block b takes tiles b, b + ctas, ... of the head-major order of the
    grid of a block a tile (its tiles in order within a head)."""
    s = FlashScheduler(att(2, 3, 1, 1000, 1000), 128, 5)
    order = [(t, head) for head in range(6) for t in range(8)]
    for block in range(5):
        assert s.tiles_for(block) == order[block::5]


def _folded(s, i, block):
    """What the kernel's index arithmetic for item ``i`` of ``block``
    folds to (canonicalize): (valid, tile, head) as ints."""
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.create()
        index, i64 = ir.IndexType.get(), ir.IntegerType.get_signless(64)
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("f", ([], [i64] * 3))
            with ir.InsertionPoint(fn.add_entry_block()):
                valid, tile, head = s.tiles_of(arith.constant(index, i),
                                               arith.constant(index, block), Values)
                func.ReturnOp([arith.extui(i64, valid)]
                              + [arith.index_cast(i64, x) for x in (tile, head)])
        passes.run_pipeline(module, "builtin.module(canonicalize)")
        text = str(module)
    values = re.search(r"return (.*) :", text).group(1).split(", ")
    consts = dict(re.findall(r"(%[\w]+) = arith.constant (-?\d+) : i64", text))
    return tuple(int(consts[v]) for v in values)


@pytest.mark.parametrize("causal, b, h, sq, ctas", [
    (True, 1, 5, 1000, 3), (True, 2, 3, 129, 4), (False, 2, 3, 1000, 5)])
def test_kernel_arithmetic_matches(causal, b, h, sq, ctas):
    s = FlashScheduler(att(b, h, 1, sq, sq, causal=causal), 128, ctas)
    for block in range(s.ctas):
        for i in range(s.rounds * s.items):
            valid, tile, head = s.tiles_of(i, block, Ints)
            got = _folded(s, i, block)
            assert got[0] == int(valid), (i, block)
            if valid:
                assert got[1:] == (tile, head), (i, block)


@pytest.mark.parametrize("consumers", [1, 2, 3])
@pytest.mark.parametrize("producer", [24, 32, 40])
def test_registers_fit_the_block(consumers, producer):
    """flash.registers: the producer's count and the consumers' (multiples
    of 8, at most 240) within the registers the block's warpgroups hold
    at entry, the most that fits; the forms the kernels take."""
    threads = 128 * (1 + consumers)
    pool = entry_registers(threads) * threads
    p, c = registers(consumers, producer)
    assert p == producer and c % 8 == 0 and c <= 240
    assert 128 * (p + consumers * c) <= pool
    assert c == 240 or 128 * (p + consumers * (c + 8)) > pool
    assert entry_registers(384) == 168 and entry_registers(512) == 128
    assert registers(2) == (24, 240) and registers(3) == (24, 160)
    assert registers(2, 40) == (40, 232) and registers(2, 32) == (32, 232)


# ----------------------------------------------------------------------------
# The synchronization (flash_protocol.py: the roles' waits and arrivals run
# over the blocks' tiles, at random interleavings)


def model_att(b=1, h=3, hk=1, sq=1000, skv=None, d=64, dv=None, causal=False,
              bottom_right=False, window=0):
    """What the model's kernel code reads of an Attention (no padding, not
    ragged)."""
    skv = sq if skv is None else skv
    return SimpleNamespace(batch=b, heads=h, kv_heads=hk, group=h // hk, sq=sq, skv=skv, d=d,
                           dv=dv or d, causal=causal, window=window, padding=False,
                           ragged={}, diagonal="bottom_right" if bottom_right else "top_left",
                           shift=skv - sq if bottom_right else 0)


PROTOCOL = {
    # units % blocks != 0: 24 tiles over 5 blocks.
    "plain": (model_att(), FlashTile(128, 128, 2), 5),
    "plain_3_stages": (model_att(sq=700, skv=1500), FlashTile(128, 128, 3), 4),
    # Causal pairs: 8 tiles (4 pairs a head), 9 (the middle tile alone).
    "causal_even": (model_att(causal=True), FlashTile(128, 128, 2), 4),
    "causal_odd": (model_att(sq=1100, causal=True), FlashTile(128, 128, 2), 7),
    "causal_one_tile": (model_att(b=2, h=2, sq=100, causal=True), FlashTile(128, 128, 2), 3),
    # A block a unit (as many blocks as units).
    "a_unit_each": (model_att(h=2, sq=300, causal=True), FlashTile(128, 128, 2), 132),
    # Bottom-right, Sq > Skv: the first tiles see no column (no step).
    "no_steps": (model_att(h=2, hk=1, sq=700, skv=333, bottom_right=True, window=100),
                 FlashTile(128, 128, 2), 3),
    "causal_bottom_right": (model_att(sq=600, skv=1000, causal=True, bottom_right=True),
                            FlashTile(128, 128, 2), 4),
    # O staged in the Q tile (64 kv rows a step: D 256), from registers
    # (Dv wider than D), three consumer warpgroups, one.
    "d256": (model_att(sq=700, d=256, causal=True), FlashTile(128, 64, 2), 3),
    "o_from_registers": (model_att(sq=520, d=64, dv=128, causal=True),
                         FlashTile(128, 128, 2), 3),
    "three_consumers": (model_att(sq=1000, causal=True), FlashTile(192, 128, 2), 4),
    "three_consumers_o_in_q": (model_att(sq=1000), FlashTile(192, 64, 3), 4),
    "one_consumer": (model_att(sq=300, causal=True), FlashTile(64, 64, 2), 4),
}


def _shapes(name, persistent=True, plan=None):
    att, tile, ctas = PROTOCOL[name]
    tile = dataclasses.replace(tile, persistent=ctas if persistent else 0)
    return Shapes(att, tile, ctas=ctas, plan=plan)


@pytest.mark.parametrize("name", PROTOCOL)
def test_protocol_persistent(name):
    """Every block of the persistent forward runs its tiles to the end
    under random interleavings: no wait left without its arrival, no
    barrier over-arrived or left mid-phase, no stage read after a load or
    O overwrote it nor loaded while a warpgroup still reads it; every tile
    stored once by each consumer warpgroup."""
    shapes = _shapes(name)
    ran = run_blocks(shapes, seeds=range(4))
    s = FlashScheduler(shapes.att, shapes.tile.m, shapes.ctas)
    assert sorted(ran) == sorted((t, h) for t in range(s.tiles) for h in range(s.heads))


@pytest.mark.parametrize("name", ["plain", "causal_odd", "no_steps", "d256",
                                  "three_consumers", "one_consumer"])
def test_protocol_one_block_a_tile(name):
    """The same model over a block a tile (the forward that runs on the
    GPU), as a check of the model itself."""
    run_blocks(_shapes(name, persistent=False), seeds=range(2), blocks=6)


def test_protocol_finds_the_register_hang():
    """With the producer at 32 and the consumers at 240 (the first
    persistent forward), the second consumer's setmaxnreg.inc waits for
    registers the block never holds: the model hangs there."""
    with pytest.raises(ProtocolError, match=r"hang: .*consumer\d at inc"):
        run_blocks(_shapes("plain", plan=(32, 240)), blocks=1)


class _OneQEmptyArrival(Block):
    """The Q tile given back after one consumer warpgroup's arrival."""

    def __init__(self, *args):
        super().__init__(*args)
        self.q_empty = Barrier("q_empty", 1)


def test_protocol_finds_an_early_q_load(monkeypatch):
    """A Q tile given back by one warpgroup of two: the next tile's Q loads
    while the other still reads the last one (the model says so)."""
    monkeypatch.setattr(flash_protocol, "Block", _OneQEmptyArrival)
    with pytest.raises(ProtocolError, match="Q: .* loaded while consumers"):
        run_blocks(_shapes("causal_even"), seeds=range(8), blocks=2)


@pytest.mark.parametrize("m, n, d, bias, plan", [
    (128, 128, 128, False, (40, 232)),
    (128, 128, 64, True, (40, 232)),
    # Three consumers at D 64 need their 160: the producer keeps 32.
    (192, 128, 64, False, (32, 160)),
    (64, 64, 128, False, (40, 240)),
])
def test_register_plan_of_a_persistent_ragged_forward(m, n, d, bias, plan):
    """A persistent producer walking ragged tiles keeps up to 40 registers,
    as many as leave the consumers their accumulators; others keep 24."""
    att = SimpleNamespace(d=d, dv=d, bias=object() if bias else None, ragged={"q": 0})
    tile = FlashTile(m, n, 2, persistent=1)
    assert register_plan(att, tile) == plan
    assert accumulator_registers(att, tile) <= plan[1] - SPARE_REGISTERS
    assert register_plan(SimpleNamespace(**dict(vars(att), ragged={})), tile) \
        == registers(tile.consumers)
    assert register_plan(att, FlashTile(m, n, 2)) == registers(tile.consumers)


# ----------------------------------------------------------------------------
# The heuristics and the override


@pytest.mark.parametrize("sq, d, dv, b, h, persistent", [
    # 8 x 16 = 128 blocks of the old grid: one wave.
    (1024, 64, 64, 2, 8, 0),
    (1024, 64, 64, 4, 16, 1),
    (1000, 128, 128, 4, 16, 1),
    (1024, 128, 128, 16, 16, 1),
    (1024, 96, 96, 2, 16, 1),
    # Longer sequences keep a block a tile (measured at 99-110% of cuDNN).
    (1025, 128, 128, 4, 16, 0),
    (2048, 128, 128, 8, 16, 0),
    (4096, 96, 96, 1, 16, 0),
    # 64 kv rows a step (D 256), 192-row tiles (D 64 over 2048 rows), D 192:
    # a block a tile.
    (1024, 256, 256, 4, 16, 0),
    (4096, 64, 64, 4, 16, 0),
    (1024, 192, 128, 4, 16, 0),
])
def test_heuristics_choose_persistent(sq, d, dv, b, h, persistent):
    first = rank(problem(sq, sq, d, dv, b=b, h=h, hk=h))[0]
    assert first.strategy == "tc-sm90"
    assert first.persistent == persistent, first
    assert ("persistent (more query tiles than SMs" in first.reason) == bool(persistent)


def test_decode_is_not_persistent():
    """A decode's blocks split the kv tiles or fold the group: not
    persistent."""
    first = rank(problem(1, 32768, 128, 128, b=1, h=32, hk=8))[0]
    assert (first.split > 1 or first.fold > 1) and first.persistent == 0, first


def test_override_persistent():
    assert parse_override("*=persistent:0") == {"*": {"persistent": 0}}
    assert parse_override("k=persistent:7") == {"k": {"persistent": 7}}
    for bad in ("x", "-1", "1025"):
        with pytest.raises(PipelineError, match=re.escape(
                f"persistent: expected an integer from 0 to 1024, got '{bad}'")):
            parse_override(f"*=persistent:{bad}")
    with pytest.raises(PipelineError, match="config: persistent: expected >= 0, got -1"):
        Config("tc-sm90", (384, 1, 1), persistent=-1)
    assert Config("tc-sm90", (384, 1, 1), persistent=1).fields()["persistent"] == 1
    assert "persistent" not in Config("tc-sm90", (384, 1, 1)).fields()


# ----------------------------------------------------------------------------
# The kernels

GRAPHS = {
    "causal_d64": sdpa_graph("causal_d64", "bf16", 4, 16, 16, 1024, 1024, 64, causal=True),
    "d128_1000": sdpa_graph("d128_1000", "bf16", 2, 16, 8, 1000, 1000, 128),
    "causal_d80_bias": sdpa_graph("causal_d80_bias", "f16", 1, 4, 4, 333, 333, 80,
                                  causal=True, bias=[1, 4, 333, 333], bias_type="f32"),
    "bottom_right_window": sdpa_graph("bottom_right_window", "bf16", 2, 4, 2, 700, 333, 64,
                                      bottom_right=True, window=100),
    "padding": sdpa_graph("padding", "f16", 3, 4, 2, 500, 600, 128, causal=True,
                          padding=True),
    "dv128": sdpa_graph("dv128", "bf16", 1, 6, 2, 520, 520, 64, dv=128, causal=True),
    "d40_no_stats": sdpa_graph("d40_no_stats", "bf16", 2, 3, 1, 260, 300, 40, causal=True,
                               stats=False),
    "ragged": ragged_graph("ragged", b=3, h=4, hk=2, sq=400, skv=500, d=128,
                           use_causal_mask=True),
    "paged": paged_graph("paged", 64, b=2, h=4, hk=2, sq=300, skv=600, d=128,
                         use_causal_mask=True),
}


@pytest.fixture(scope="module")
def built():
    return Builds(lambda name: GRAPHS[name](), ARCH)


def _attention_kernel(package):
    (k,) = [k for k in package.kernels if k["config"].get("strategy") == "tc-sm90"]
    return k


def test_grid_and_plan(built):
    """The heuristics' persistent grid: a block an SM, the plan saying how
    the tiles are shared; persistent:0 the grid of a block a tile, 0 blocks
    given a few blocks."""
    k = _attention_kernel(built.package("causal_d64"))
    assert k["grid"] == [PERSISTENT_CTAS, 1, 1] and k["config"]["persistent"] == 1
    assert "persistent: 132 blocks take 256 units round robin, pairs of query tiles" \
        in k["reason"], k["reason"]
    assert "O staged in the V stage of the tile's last step" in k["reason"]
    old = _attention_kernel(built.package("causal_d64", config="*=persistent:0"))
    assert old["grid"] == [8, 64, 1] and "persistent" not in old["config"]
    assert "persistent: " not in old["reason"]
    few = _attention_kernel(built.package("causal_d64", config="*=persistent:5"))
    assert few["grid"] == [5, 1, 1]
    assert few["shared_bytes"] == old["shared_bytes"] + 8  # the Q tile's empty barrier


def test_decode_told_to_run_persistent_keeps_its_grid(built):
    """A split decode with persistent:1 runs a block a query tile and says
    so (the config records what runs)."""
    graphs = {"decode": sdpa_graph("decode", "bf16", 1, 32, 8, 1, 32768, 128)}
    builds = Builds(lambda name: graphs[name](), ARCH)
    k = builds.package("decode", config="*=persistent:1").kernels[0]
    assert "persistent" not in k["config"] and k["grid"][0] == 1
    assert "not persistent: the kv tiles split or query heads folded" in k["reason"]


CASES = list(GRAPHS)
# O goes from registers: ragged (a TMA box would write into the next
# entry's rows), Dv's boxes wider than D's.
FROM_REGISTERS = ("ragged", "dv128")


@pytest.mark.parametrize("name", CASES)
def test_ptx_carries_the_block_from_tile_to_tile(built, name):
    """A persistent kernel's PTX: the Q tile's barriers beside the rings';
    O's TMA stores awaited for their reads of shared memory after each
    tile (then for their writes before the block exits), each warpgroup
    meeting on a named barrier of 128 threads before it gives the staging
    back; none of that where O goes from registers."""
    package = built.package(name, config="*=persistent:3")
    k = _attention_kernel(package)
    assert k["grid"] == [3, 1, 1]
    ptx = package.ptx
    stores = "cp.async.bulk.tensor.4d.global.shared::cta" in ptx
    assert stores == (name not in FROM_REGISTERS)
    assert bool(re.search(r"cp\.async\.bulk\.wait_group\.read\s+0;", ptx)) == stores
    assert bool(re.search(r"cp\.async\.bulk\.wait_group\s+0;", ptx)) == stores
    assert bool(re.search(r"bar\.sync %r\d+, 128;", ptx)) == stores
    stages = k["config"]["stages"]
    assert len(re.findall(r"mbarrier\.init\.shared(::cta)?\.b64", ptx)) == 2 + 4 * stages


@needs_sass
@pytest.mark.parametrize("name", CASES)
def test_persistent_sass(built, name):
    """ptxas's verdict on the persistent kernel (forced onto 3 blocks): no
    spills, stack or local memory, setmaxnreg kept and within the block's
    registers (as many at entry as flash.entry_registers says), HGMMA, TMA loads, no
    accumulator or P fragment register touched while its wgmma may run."""
    package = built.package(name, config="*=persistent:3")
    k = _attention_kernel(package)
    resources, functions = built.assembly(name, config="*=persistent:3")
    assert_no_spills([k], resources)
    assert_no_local_memory([k], functions)
    text = functions[k["entry"]]
    counts = sass.opcodes(text)
    assert counts["USETMAXREG"] > 0, "ptxas ignored setmaxnreg"
    # The warpgroups' setmaxnreg within the block's registers: the
    # producer at 32 beside two consumers at 240 asked for 65536 of the
    # 64512 a block of 384 threads holds, and the second consumer waited
    # forever (the hang of the first GPU run).
    assert_setmaxnreg_fits([k], resources, functions)
    assert resources[k["entry"]].registers == entry_registers(k["block"][0])
    assert any(op.startswith("HGMMA.") for op in counts), sorted(counts)
    assert counts["UTMALDG"] > 0 and counts["SYNCS"] > 0, sorted(counts)
    assert sass.wgmma_hazards(text) == []
    assert sass.wgmma_fragment_hazards(text) == []


# ----------------------------------------------------------------------------
# The GPU family


FAMILY = [c for c in _load_gpu_cases().CASES if c.name.startswith("attention_persistent_")]


def test_gpu_family():
    """attention_persistent's packages: each forces its graph's kernels onto
    2 or 3 persistent blocks, or a block an SM (wave)."""
    assert [c.name for c in FAMILY] == [
        "attention_persistent_plain_00_bf16", "attention_persistent_plain_01_f16",
        "attention_persistent_wide_bf16", "attention_persistent_wave_f16",
        "attention_persistent_one_round_bf16", "attention_persistent_padding_bf16", "attention_persistent_ragged_f16",
        "attention_persistent_paged_bf16"]
    for case in FAMILY:
        assert re.fullmatch(r"\*=persistent:[123](,split:1)?", case.config), case.config
        assert (case.config == "*=persistent:1") == \
            case.name.endswith(("wave_f16", "one_round_bf16"))
    one_round, plain = (next(c for c in FAMILY if c.name == f"attention_persistent_{n}")
                        for n in ("one_round_bf16", "plain_00_bf16"))
    assert one_round.seed == plain.seed and \
        one_round.build().to_mlir() == plain.build().to_mlir()


@pytest.mark.parametrize("case", FAMILY, ids=lambda c: c.name)
def test_gpu_family_plans(case):
    """Every kernel of the family's graphs is an sdpa forward on tc-sm90's
    persistent grid of the forced blocks, each block taking several tiles
    (more units than blocks); with a block an SM, as many blocks as SMs
    or units. Between them they take every form: 64 and 128 kv rows a
    step, 128 and 192 query rows, O staged in the V stage, in the Q tile
    and from registers."""
    package = compiler.compile_module(graph_mlir.to_module(case.build()), compiler.Options(
        target="cuda", arch=ARCH, config=case.config, tuning_db="off"), basename=case.name)
    forced = int(case.config.split("persistent:")[1].split(",")[0])
    assert package.kernels
    units = []
    for k in package.kernels:
        assert k["config"]["strategy"] == "tc-sm90" and k["config"]["persistent"] == forced
        m = re.search(r"persistent: (\d+) blocks take (\d+) units", k["reason"])
        assert m, k["reason"]
        blocks, n = int(m.group(1)), int(m.group(2))
        assert blocks == min(n, PERSISTENT_CTAS if forced == 1 else forced), k["reason"]
        assert forced == 1 or n > blocks, k["reason"]
        assert k["grid"] == [blocks, 1, 1]
        units.append(n)
    if case.name.endswith("wave_f16"):
        assert units == [134, 68]
    if case.name.endswith("one_round_bf16"):
        assert max(units) <= PERSISTENT_CTAS
    if case.name.endswith("wide_bf16"):
        tiles = [tuple(k["config"]["tile"]) for k in package.kernels]
        assert tiles == [(128, 64), (128, 64), (192, 128), (128, 128)], tiles
