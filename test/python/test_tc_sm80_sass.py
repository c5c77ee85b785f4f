"""The tc-sm80 tensor-core GEMM kernels without a GPU: what ptxas makes of
their PTX, read from ptxas -v and from the SASS (cuobjdump).

Compiled for sm_80 (the heuristics choose tc-sm80 and its tile), each graph
once (module-scoped fixture):

* ``bf16_bias_gelu``: 256x384x128 bf16, bias add and gelu fused;
* ``f16_ragged``: 130x200 @ 200x72 f16 with relu (M, N, K multiples of no
  tile), and 96x100 @ 100x64 (K = 100: rows of 200 bytes, 8-byte copies);
* ``bf16_batched_transposed_b``: a batched [3,65,256] @ [3,256,72], B shared
  by every batch ([3,65,256] @ [256,200]) and B stored N x K (a linear
  layer's weight read K-major);
* ``tf32``: f32 matmuls with compute_data_type tf32, batched, with A stored
  K x M (its fragments read with scalar shared loads) and a bias.

And for sm_90a, ``bf16_bias_gelu`` forced to tc-sm80 by a config override
(what the GPU tests run on an H200). For each:

* every matmul kernel is tc-sm80;
* ptxas -v: no spills, no stack, registers within 255 and what the block's
  threads may have, shared memory within sm_80's 166912 bytes per block;
* SASS: HMMA of the operand type only (HMMA.16816.F32.BF16,
  HMMA.16816.F32 for f16, HMMA.1688.F32.TF32), cp.async (LDGSTS), ldmatrix
  (LDSM; scalar LDS for tf32 operands stored MN-major), and no local memory
  (LDL / STL);
* where the outputs allow (``QUAD_STORED``), only 16-byte global stores
  (STG.E.128: PairEpilogue.store_quad).

Without ptxas or cuobjdump / nvdisasm those tests skip and say why.
"""

import pytest

import dnnc
from dnnc.codegen.gpu import sass
from kernel_builds import (Builds, assert_fit, assert_no_local_memory, family, needs_ptxas,
                           needs_sass)

MAX_SHARED = 166912  # sm_80: 163 KiB of shared memory per block at most (opt-in)


def bf16_bias_gelu():
    g = dnnc.Graph(name="bf16_bias_gelu", io_data_type="bf16", compute_data_type="f32")
    a = g.tensor(name="a", dim=[256, 128])
    b = g.tensor(name="b", dim=[128, 384])
    bias = g.tensor(name="bias", dim=[1, 384])
    g.gelu(g.add(g.matmul(a, b), bias)).set_output(True)
    return g


def f16_ragged():
    g = dnnc.Graph(name="f16_ragged", io_data_type="f16", compute_data_type="f32")
    a = g.tensor(name="a", dim=[130, 200])
    b = g.tensor(name="b", dim=[200, 72])
    c = g.tensor(name="c", dim=[96, 100])
    d = g.tensor(name="d", dim=[100, 64])
    g.relu(g.matmul(a, b)).set_output(True)
    g.matmul(c, d).set_output(True)
    return g


def bf16_batched_transposed_b():
    g = dnnc.Graph(name="bf16_batched", io_data_type="bf16", compute_data_type="f32")
    ba = g.tensor(name="ba", dim=[3, 65, 256])
    bb = g.tensor(name="bb", dim=[3, 256, 72])
    shared = g.tensor(name="shared", dim=[256, 200])
    x = g.tensor(name="x", dim=[64, 512])
    w_t = g.tensor(name="w_t", dim=[512, 1024], stride=[1, 512])
    g.matmul(ba, bb).set_output(True)
    g.matmul(ba, shared).set_output(True)
    g.matmul(x, w_t).set_output(True)
    return g


def tf32():
    g = dnnc.Graph(name="tf32", io_data_type="f32", compute_data_type="f32")
    ba = g.tensor(name="ba", dim=[3, 65, 256])
    bb = g.tensor(name="bb", dim=[3, 256, 72])
    a_t = g.tensor(name="a_t", dim=[200, 128], stride=[1, 200])
    b = g.tensor(name="b", dim=[128, 96])
    bias = g.tensor(name="bias", dim=[1, 96])
    g.matmul(ba, bb, compute_data_type="tf32").set_output(True)
    g.add(g.matmul(a_t, b, compute_data_type="tf32"), bias).set_output(True)
    return g


# name: (graph, arch, config override, the HMMA opcode of its type)
CASES = {
    "bf16_bias_gelu": (bf16_bias_gelu, "sm_80", None, "HMMA.16816.F32.BF16"),
    "f16_ragged": (f16_ragged, "sm_80", None, "HMMA.16816.F32"),
    "bf16_batched_transposed_b": (bf16_batched_transposed_b, "sm_80", None,
                                  "HMMA.16816.F32.BF16"),
    "tf32": (tf32, "sm_80", None, "HMMA.1688.F32.TF32"),
    "bf16_sm90a_forced": (bf16_bias_gelu, "sm_90a", "*=strategy:tc-sm80",
                          "HMMA.16816.F32.BF16"),
}


@pytest.fixture(scope="module")
def built():
    """Each case compiled for its arch with its override (and the arch's
    default tuning database), assembled and disassembled at most once."""
    return Builds(lambda name: CASES[name][0](), lambda name: CASES[name][1],
                  config=lambda name, override: override or CASES[name][2], tuning_db=None)


def gemm_kernels(package):
    return [k for k in package.kernels if k["strategy"] == "tc-sm80"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_matmuls_are_tc_sm80(built, name):
    package = built.package(name)
    gemms = gemm_kernels(package)
    expected = {"f16_ragged": 2, "bf16_batched_transposed_b": 3, "tf32": 2}.get(name, 1)
    assert len(gemms) == expected, [(k["entry"], k["strategy"], k.get("reason"))
                                    for k in package.kernels]
    for k in gemms:
        bm, bn, bk = k["config"]["tile"]
        assert k["block"][0] in (128, 256) and k["shared_bytes"] <= MAX_SHARED, k
        assert bk * (4 if name == "tf32" else 2) == 64, k["config"]
    # sm_80 has no griddepcontrol: every kernel is launched plainly.
    if CASES[name][1] == "sm_80":
        assert "griddepcontrol" not in package.ptx
        assert not any(k.get("dependent_launch") for k in package.kernels)
    else:
        assert all(k.get("dependent_launch") for k in package.kernels)


@needs_ptxas
@pytest.mark.parametrize("name", sorted(CASES))
def test_registers_spills_shared_memory(built, name):
    assert_fit(built.package(name).kernels, built.resources(name)[0], MAX_SHARED,
               most_registers=255)


@needs_sass
@pytest.mark.parametrize("name", sorted(CASES))
def test_sass_has_hmma_cp_async_ldmatrix_no_local_memory(built, name):
    functions = built.sass(name)
    package = built.package(name)
    hmma = CASES[name][3]
    assert_no_local_memory(package.kernels, functions)
    for k in gemm_kernels(package):
        counts = sass.opcodes(functions[k["entry"]])
        assert counts[hmma] > 0, sorted(counts)
        assert family(counts, "HMMA.") == {hmma}, sorted(counts)
        # tf32 operands stored MN-major are read with scalar shared loads (LDS).
        assert counts["LDGSTS"] > 0 and counts["LDSM"] + counts["LDS"] > 0, sorted(counts)


# Cases whose outputs store_quad stores: 2-byte outputs, N a multiple of 8,
# warp tiles of a multiple of 32 columns (the f16 and batched cases keep
# narrower warp tiles or N = 200 / 72 in places; tf32's outputs are f32).
QUAD_STORED = ("bf16_bias_gelu", "bf16_sm90a_forced")


@needs_sass
@pytest.mark.parametrize("name", QUAD_STORED)
def test_outputs_stored_16_bytes_a_thread(built, name):
    functions = built.sass(name)
    for k in gemm_kernels(built.package(name)):
        counts = sass.opcodes(functions[k["entry"]])
        stores = {op: n for op, n in counts.items() if op.startswith("STG.")}
        # Every global store (counted by its mnemonic too) is 16 bytes wide.
        assert stores == {"STG.E.128": counts["STG"]} and counts["STG"] > 0, \
            (k["entry"], stores)
