"""The fused attention backward on tc-sm90 without a GPU
(dnnc/codegen/gpu/tensorcore/sm90/flash_backward_fused.py and
flash_backward_dq.py): what the plan holds, what the kernel refuses and
where the problem goes then, the deterministic mode, and what ptxas makes
of it.

* ``FUSED``: bf16 and f16 graphs of one sdpa_backward with D 64 or 128
  (Dv up to 128, grouped heads, the masks, padding lengths, tensors stored
  (B, S, H, D), gradients in f32) compile to three launches of one kernel
  function: delta and the zeroed dQ workspace (128 threads, a quad a
  query row), the fused kernel (384 threads, a block per 128 kv rows of a
  (batch, kv head); k and v by TMA in 128-row boxes, q and do in 64-row
  boxes, the f32 dQ workspace reduced into by TMA in boxes of 64 rows x
  32 columns), then dQ's conversion (a thread per 8 columns). Its shared
  memory is ``smem_bytes``; the workspaces are delta (B x H x Sq f32) and
  dQ's (B x H x Sq x D f32).
* ``use_deterministic_algorithm`` (the op's ``deterministic``) keeps the
  two kernels, the reason saying so; so does a config override of tile
  128x128. A fused tile on a problem the kernel does not take (D 96, a
  bias) goes to the two kernels, the reason saying why.
* ``refusal``: D other than 64 and 128, Dv past 128, a bias, another
  tile, stages shared memory does not hold.
* ptxas and SASS (skipped without ptxas or cuobjdump): no spills, stack or
  local memory; setmaxnreg kept; HGMMA 64 x 64 x 16 (Sᵀ and dPᵀ of a step
  of 64 query rows; dQ's part, both operands transposed), 64 x Dv x 16
  (dV) and 64 x D x 16 (dK) on the input type only; TMA loads and reduce
  adds (UTMAREDG), no global atomics; no accumulator or fragment register
  touched while its wgmma may run.
"""

import types

import pytest

from dnnc import compiler, graph_mlir
from dnnc.codegen.gpu import sass
from dnnc.codegen.gpu.tensorcore.sm90 import flash_backward_dq, flash_backward_fused as fused
from kernel_builds import (Builds, assert_fit, assert_no_local_memory, assert_setmaxnreg_fits,
                           assert_shared_fit, atomics, family)
from test_attention_tensor_cores import (
    attention, backward_graph, box_of, sizes, tensor_of, without_lengths,
)
from test_tc_sass import ARCH, MAX_SHARED, needs_sass

FUSED = {
    "d64_bf16": backward_graph("d64_bf16", "bf16", 2, 8, 2, 300, 333, 64),
    "d64_causal_f16": backward_graph("d64_causal_f16", "f16", 2, 8, 8, 300, 333, 64,
                                     causal=True),
    "d128_bf16": backward_graph("d128_bf16", "bf16", 2, 8, 2, 300, 333, 128),
    "d128_causal_bf16": backward_graph("d128_causal_bf16", "bf16", 1, 4, 4, 1000, 1000, 128,
                                       causal=True),
    "d128_dv40_f16": backward_graph("d128_dv40_f16", "f16", 1, 2, 1, 130, 77, 128, dv=40),
    "d64_dv128_bottom_right_bf16": backward_graph(
        "d64_dv128_bottom_right_bf16", "bf16", 2, 4, 2, 300, 200, 64, dv=128,
        bottom_right=True),
    "d128_window_f16": backward_graph("d128_window_f16", "f16", 1, 4, 2, 333, 300, 128,
                                      window=77),
    "d128_bottom_right_window_f16": backward_graph(
        "d128_bottom_right_window_f16", "f16", 2, 8, 2, 300, 333, 128, bottom_right=True,
        window=100),
    "d64_padding_causal_bf16": backward_graph("d64_padding_causal_bf16", "bf16", 3, 4, 2, 200,
                                              250, 64, causal=True, padding=True),
    "d128_interleaved_f16": backward_graph(
        "d128_interleaved_f16", "f16", 2, 4, 2, 100, 150, 128,
        interleaved=("q", "k", "v", "o", "do", "dq", "dk", "dv"),
        types={"o": "f32", "dq": "f32", "dk": "f32"}),
}
SASS_CASES = ("d64_bf16", "d64_causal_f16", "d128_bf16", "d128_causal_bf16",
              "d64_padding_causal_bf16", "d128_window_f16", "d128_bottom_right_window_f16")


def compile_graph(build, name, config=None):
    return compiler.compile_module(
        graph_mlir.to_module(build()),
        compiler.Options(target="cuda", arch=ARCH, tuning_db="off", config=config),
        basename=name)


@pytest.fixture(scope="module")
def built():
    return Builds(lambda name: FUSED[name](), ARCH)


def expected_parts(b, h, hk, skv):
    """The parts the heuristics split a grouped-query group's heads into:
    1 without grouped heads or with two units (kv tiles of a (batch, kv
    head)) an SM; else the fewest dividing the group that give two."""
    group, units, want = h // hk, -(-skv // 128) * b * hk, 2 * 132
    if group == 1 or units >= want:
        return 1
    return next(p for p in range(1, group + 1) if group % p == 0 and (units * p >= want
                                                                       or p == group))


def check_plan(package, name, persistent=True, parts=None, summed=False):
    """The fused backward's launches, grid, shared memory, reason and
    arguments in ``package`` of graph ``name`` (``summed``: configured
    staged:1, the consumers' dQ parts summed in shared memory for D 64)."""
    manifest = package.manifest
    kernels = package.kernels
    (b, h, hk, sq, skv, d, dv), inputs = sizes(FUSED[name]) if name in FUSED else \
        sizes(EXTRA[name])
    padding = "seq_len_q" in inputs
    if parts is None:
        parts = expected_parts(b, h, hk, skv)
    launches = [("tc-sm90", 128), ("tc-sm90", 384), ("tc-sm90", 128)] + \
        [("tc-sm90", 128)] * (parts > 1)
    assert [(k["strategy"], k["block"][0]) for k in kernels] == launches, \
        [(k["entry"], k["strategy"], k.get("reason")) for k in kernels]
    assert len({k["name"] for k in kernels}) == 1
    pre, main, convert = kernels[:3]
    tile = fused.tile_for(d, dv)
    summed = summed and d == 64
    assert main["config"]["tile"] == [64, 128] and main["config"]["stages"] == tile.stages
    assert main["config"].get("split", 1) == parts, main["config"]
    units = -(-skv // 128) * b * hk * parts
    passes = flash_backward_dq.pre_passes(types.SimpleNamespace(batch=b, heads=h, sq=sq, dv=dv))
    assert pre["grid"] == [-(-sq // (flash_backward_dq.PRE_ROWS * passes)), b * h, 1]
    if persistent:
        assert main["grid"] == [min(units, 132), 1, 1]
        assert main["config"]["persistent"] == 1
    else:
        assert main["grid"] == [-(-skv // 128), b * hk * parts, 1]
    assert convert["grid"] == [-(-sq * d // 8 // 128), b * h, 1]
    assert main["shared_bytes"] == fused.smem_bytes(d, dv, tile.stages, summed) <= MAX_SHARED
    assert pre["shared_bytes"] == convert["shared_bytes"] == 0
    per = "128 kv rows" + (f" and 1/{parts} of the group's query heads" if parts > 1 else "")
    if persistent:
        # A causal mask (either alignment: use_causal_mask_bottom_right)
        # without a window.
        causal = ("causal" in name or "bottom_right" in name) and "window" not in name
        order = "head by head"
        if causal and -(-skv // 128) > 4:
            order = "the longest (most query tiles) first, in bands of 4 kv tiles head by head"
        blocks = (f"{min(units, 132)} persistent blocks over {units} units of {per} ({order}, "
                  "in alternating directions round by round)")
    else:
        blocks = f"a block per {per}"
    total = (f"; then dK and dV summed over the {parts} parts in a fixed order from f32 "
             "workspaces") if parts > 1 else ""
    pair = "the two consumers' parts summed in shared memory, then " if summed else ""
    assert main["reason"].endswith(
        "attention backward, fused: delta = rowsum(dO o O) and a zeroed f32 dQ workspace "
        f"first; then {blocks}, 64 query rows a step through {tile.stages} "
        f"stages, five products on wgmma, dQ {pair}added into the workspace by TMA reduce-adds "
        f"(not deterministic: the order of the adds varies); then dQ converted{total}"), \
        main["reason"]
    # k and v (the block's rows), q and do (a step's) by TMA in the order
    # their dims lie; the dQ workspace by TMA reduce-adds.
    args = without_lengths(manifest, main["args"], padding)
    tma = [a for a in args if a["kind"] == "tma"]
    assert [tensor_of(manifest, a) for a in tma] == ["k", "v", "q", "do", "workspace"], tma
    for arg, (x, rows) in zip(tma, (("k", 128), ("v", 128), ("q", 64), ("do", 64))):
        assert arg["box"] == box_of(inputs, x, rows), (x, arg)
    dq_sum = tma[4]
    assert (dq_sum["dtype"], dq_sum["shape"], dq_sum["box"], dq_sum["swizzle"]) == \
        ("f32", [b, h, sq, d], [1, 1, 64, 32], 128), dq_sum
    rest = sorted(tensor_of(manifest, a) for a in args if a["kind"] == "buffer")
    outputs = ["workspace", "workspace"] if parts > 1 else ["dk", "dv"]
    assert rest == sorted(["stats", "workspace"] + outputs), rest
    # The preprocess reads o and do and writes delta and zeroes the dQ
    # workspace; the conversion reads it and writes dq.
    assert sorted(tensor_of(manifest, a) for a in pre["args"] if a["kind"] == "buffer") == \
        sorted(["o", "do", "workspace", "workspace"])
    assert sorted(tensor_of(manifest, a) for a in convert["args"]
                  if a["kind"] == "buffer") == ["dq", "workspace"]
    workspaces = sorted(manifest["buffers"][a["buffer"]]["bytes"] for a in pre["args"]
                        if a["kind"] == "buffer" and tensor_of(manifest, a) == "workspace")
    assert workspaces == sorted([4 * b * h * sq, 4 * b * h * sq * d])
    if parts > 1:
        # The parts' f32 dK and dV, summed into dk and dv.
        group_sum = kernels[3]
        assert group_sum["grid"] == [-(-skv * max(d, dv) // 8 // 128), 2 * b * hk, 1]
        partials = [a for a in group_sum["args"] if a["kind"] == "buffer"]
        assert sorted(tensor_of(manifest, a) for a in partials) == \
            ["dk", "dv", "workspace", "workspace"]
        sizes_ = sorted(manifest["buffers"][a["buffer"]]["bytes"] for a in partials
                        if tensor_of(manifest, a) == "workspace")
        assert sizes_ == sorted(4 * parts * b * hk * skv * x for x in (d, dv))


@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_plan(built, name):
    check_plan(built.package(name), name)


SUMMED = "*=staged:1"


@pytest.mark.parametrize("name", [n for n in sorted(FUSED) if n.startswith("d64")])
def test_summed_dq_plan(built, name):
    """D 64 configured staged:1: the consumers' dQ parts summed in shared
    memory (one box each of staging, the exchange tiles), the plan saying
    so; persistent or a block a unit."""
    package = built.package(name, config=SUMMED)
    check_plan(package, name, summed=True)
    assert package.kernels[1]["config"]["staged"] == 1
    assert package.kernels[1]["reason"].startswith("user override staged=1; heuristics: ")
    check_plan(built.package(name, config=SUMMED + ",persistent:0"), name, persistent=False,
               summed=True)


@pytest.mark.parametrize("name", ["d128_bf16", "d128_causal_bf16"])
def test_summed_dq_leaves_d128_as_it_is(built, name):
    """D 128 sends one dQ_i a step already: staged:1 builds the same PTX."""
    assert built.package(name, config=SUMMED).ptx == built.package(name).ptx


# Problems for the persistent blocks and the parts of a group.
EXTRA = {
    # 7 kv tiles x 3 heads: 21 units, fewer than the SMs; head by head.
    "uneven_d64_bf16": backward_graph("uneven_d64_bf16", "bf16", 1, 3, 3, 500, 833, 64),
    # 300 units (more than the SMs, a short last round), longest first.
    "rounds_causal_d128_bf16": backward_graph("rounds_causal_d128_bf16", "bf16", 3, 10, 10,
                                              1280, 1280, 128, causal=True),
    # GQA 8:1, S no multiple of 128: 8 units, the group in 8 parts.
    "gqa8_causal_d128_bf16": backward_graph("gqa8_causal_d128_bf16", "bf16", 1, 8, 1, 1000,
                                            1000, 128, causal=True),
}


@pytest.fixture(scope="module")
def extra():
    return Builds(lambda name: EXTRA[name](), ARCH)


@pytest.mark.parametrize("name", sorted(EXTRA))
@pytest.mark.parametrize("override", [None, "*=persistent:0", "*=split:1", "*=split:2"])
def test_persistent_and_parts(extra, name, override):
    """The heuristics' plan (persistent, the group in parts where units are
    few), and each override: a block a unit; one part; two parts (a group
    of 8 only: other groups refuse 2 parts, as the next test says)."""
    (b, h, hk, *_), _ = sizes(EXTRA[name])
    if override == "*=split:2" and (h // hk) % 2:
        pytest.skip("a group of one head: no two parts")
    package = extra.package(name, config=override)
    parts = {"*=split:1": 1, "*=split:2": 2}.get(override)
    check_plan(package, name, persistent=override != "*=persistent:0", parts=parts)


def test_parts_that_do_not_divide_the_group_run_two_kernels():
    build = backward_graph("parts3", "bf16", 1, 4, 2, 100, 120, 64)
    package = compile_graph(build, "parts3", "*=split:3")
    assert [k["block"][0] for k in package.kernels] == [384, 384]
    assert "the fused backward does not apply (3 parts of a group of 2 query heads: expected " \
        "a divisor of the group's size)" in package.kernels[0]["reason"], \
        package.kernels[0]["reason"]


@pytest.mark.parametrize("how", ["deterministic", "override"])
def test_two_kernels_on_request(how):
    """The deterministic mode and a config override of tile 128x128: the
    two kernels, no reduce-adds."""
    name = f"two_{how}"
    build = backward_graph(name, "bf16", 1, 2, 2, 200, 200, 128,
                           deterministic=how == "deterministic")
    package = compile_graph(build, name, "*=tile:128x128" if how == "override" else None)
    kernels = package.kernels
    assert [(k["block"][0], k["config"]["tile"]) for k in kernels] == [(384, [128, 128])] * 2
    reason = kernels[0]["reason"]
    assert "attention backward: a dQ kernel (128 query rows a block" in reason, reason
    if how == "deterministic":
        assert "a dQ kernel and a dK dV kernel, 128 rows a block, no atomics (deterministic); " \
            "the graph asks for a deterministic backward" in reason, reason
    else:
        assert reason.startswith("user override tile=(128, 128)"), reason
    assert "cp.reduce" not in package.ptx


@pytest.mark.parametrize("d, bias, why", [
    (96, None, "the fused backward does not apply (head dim D = 96: the fused backward takes "
               "64 or 128"),
    (64, [1, 2, 100, 120], "the fused backward does not apply (a bias: the fused backward "
                           "takes none"),
])
def test_a_fused_tile_the_kernel_does_not_take_runs_two_kernels(d, bias, why):
    """A config override naming the fused tile where the kernel does not
    take the problem: the two kernels, the reason saying why."""
    build = backward_graph("refused", "bf16", 1, 2, 2, 100, 120, d, bias=bias)
    package = compile_graph(build, "refused", "*=tile:64x128")
    assert [k["block"][0] for k in package.kernels] == [384, 384]
    assert why in package.kernels[0]["reason"], package.kernels[0]["reason"]


@pytest.mark.parametrize("d, dv, biased, tile, why", [
    (64, 64, False, None, None),
    (128, 128, False, None, None),
    (128, 8, False, None, None),
    (96, 96, False, None, "head dim D = 96: the fused backward takes 64 or 128"),
    (32, 32, False, None, "head dim D = 32"),
    (64, 136, False, None, "head dim Dv = 136: the fused backward takes multiples of 8 up to "
                           "128"),
    (64, 64, True, None, "a bias: the fused backward takes none"),
    (64, 64, False, fused.FusedTile(128, 128, 2), "tile 128x128: the fused backward takes 64 "
                                                  "query rows a step and 128 kv rows a block"),
    (128, 128, False, fused.FusedTile(64, 128, 3), "3 ring stages need 232512 bytes of shared "
                                                   "memory"),
])
def test_refusal_says_why(d, dv, biased, tile, why):
    got = fused.refusal(d, dv, biased, tile)
    assert (got is None) == (why is None), got
    assert why is None or why in got, got


def test_check_refuses_the_operands_the_two_kernels_refuse():
    from mlir import ir

    from dnnc.codegen.gpu.tensorcore.sm90 import NotSupported

    with ir.Context(), pytest.raises(NotSupported) as err:
        fused.check(attention(64, 64, "f32", backward=True), fused.tile_for(64, 64))
    assert "f32 q, k, v" in str(err.value)


def test_tiles_fill_shared_memory():
    """Three stages of the Q and dO ring for D 64, two for D 128 (three
    would need 232512 bytes); the register count within the consumers'."""
    assert fused.tile_for(64, 64).stages == 3
    assert fused.tile_for(128, 128).stages == 2
    assert fused.tile_for(128, 64).stages == 3
    assert fused.held_registers(128, 128) == 192
    assert fused.held_registers(64, 64) == 128
    # D 64 with dQ summed: one staging box a consumer (16 KB less), the
    # exchange tiles (32 KB more), still three stages.
    assert fused.smem_bytes(64, 64, 3, True) == fused.smem_bytes(64, 64, 3) + 16384
    assert fused.refusal(64, 64, False, fused.FusedTile(stages=3, summed=True)) is None
    assert fused.refusal(64, 128, False, fused.FusedTile(stages=3, summed=True)) is None


@needs_sass
@pytest.mark.parametrize("override", [None, "*=persistent:0", SUMMED,
                                      SUMMED + ",persistent:0"])
@pytest.mark.parametrize("name", SASS_CASES + tuple(sorted(EXTRA)))
def test_fused_sass(built, extra, name, override):
    """Persistent (the heuristics' form, with the group in parts where they
    choose it) and a block a unit; each with D 64's dQ parts summed in
    shared memory (staged:1: one reduce-add a consumer, of a box of 32
    columns, where each of today's sends two; the exchange by 16-byte
    stores and loads)."""
    builds = extra if name in EXTRA else built
    (_, _, _, _, _, d, dv), _ = sizes((EXTRA if name in EXTRA else FUSED)[name])
    kernels = builds.package(name, config=override).kernels
    main = kernels[1]
    resources, functions = builds.assembly(name, config=override)
    assert_fit(kernels, resources)
    assert_shared_fit([main], resources, MAX_SHARED)
    assert_no_local_memory([main], functions)
    text = functions[main["entry"]]
    counts = sass.opcodes(text)
    assert counts["USETMAXREG"] > 0, "ptxas ignored setmaxnreg"
    assert_setmaxnreg_fits([main], resources, functions)
    suffix = ".BF16" if name.endswith("bf16") else ""
    assert family(counts, "HGMMA.") == \
        {f"HGMMA.64x{n}x16.F32{suffix}" for n in (64, d, dv)}, sorted(counts)
    assert counts["UTMALDG"] > 0 and counts["UTMAREDG"] > 0 and counts["MUFU.EX2"] > 0, \
        sorted(counts)
    assert not atomics(counts)
    summed = override is not None and override.startswith(SUMMED) and d == 64
    # Summed, D 64 causal: a second reduce-add site, the idle step's (its
    # zeros through the exchange; FusedKernel.consumer).
    causal = "causal" in name or "bottom_right" in name
    sites = 2 if summed and causal else 1
    assert counts["UTMAREDG.4D.ADD"] == (sites if summed else 2), sorted(counts)
    assert (counts["STS.128"] > 0 and counts["LDS.128"] > 0) == summed, sorted(counts)
    # dQ's part: both operands read transposed (MN-major) from shared memory.
    assert "tnspA.tnspB" in text
    assert sass.wgmma_hazards(text) == []
    assert sass.wgmma_fragment_hazards(text) == []


def _swizzled(row, chunk, byte):
    """TMA's 128-byte swizzle (tma.swizzled_offset) on ints."""
    return row * 128 + ((chunk ^ row % 8) * 16) + byte


@pytest.mark.parametrize("base", [0, 1024 * 37])
def test_xor_addresses_are_the_swizzled_ones(base):
    """The kernel's stores into its swizzled tiles take the address of a
    thread's chunk and XOR the fragment's chunk into bits 4-6
    (``FusedKernel.swizzled_rows``): the same address as the swizzle's
    formula, for every row, thread column and fragment (a 1024-aligned
    tile). dS: fragment k of 16-bit pairs at chunk k // 2, byte 2 column;
    dQ staging: f32 pair e at box (e // 4) // 4, chunk 2 ((e // 4) % 4) +
    column // 4, byte 4 column % 16."""
    for row in range(128):
        for column in (0, 2, 4, 6):
            ds_row = base + _swizzled(row, 0, 2 * column)
            for k in range(16):
                want = base + _swizzled(row, k // 2, 2 * column)
                assert ds_row ^ ((k // 2) << 4) == want, (row, column, k)
            if row >= 64:
                continue
            dq_row = base + _swizzled(row, column // 4, 4 * column % 16)
            for e in range(0, 64, 2):
                block = e // 4
                col = column + 8 * (block % 4)      # within the box
                want = base + (block // 4) * 64 * 128 + _swizzled(row, col * 4 // 16,
                                                                  col * 4 % 16)
                got = (dq_row ^ ((2 * (block % 4)) << 4)) + (block // 4) * 64 * 128
                assert got == want, (row, column, e)
