"""Row programs (simt-reduce, dnnc/codegen/gpu/reduce/rowwise.py) and the fusion that
makes them: what one thread's code does per element, read off the PTX, and
which kernels the softmax family becomes. No GPU needed; the numerics on a GPU
are the softmax_rows and long_rows cases of test/gpu/gpu_cases/row_programs.py.
"""

import re

import numpy as np
import pytest

import dnnc
import dnnc.graph_mlir
from dnnc import compiler, interpreter, passes, pipelines
from dnnc.codegen.gpu import ptxas
from dnnc.dialect.types import data_type as dt
from dnnc.errors import PipelineError
from refutil import typed

F32, BF16 = dt.FLOAT, dt.BFLOAT16
PTXAS = ptxas.find()
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="no ptxas")


def compile_cuda(g, arch="sm_90a"):
    module = dnnc.graph_mlir.to_module(g)
    return compiler.compile_module(module, compiler.Options(target="cuda", arch=arch),
                                   basename=g.name)


def count(ptx, instruction):
    """How many times ``instruction`` (a PTX opcode prefix) is issued."""
    return len(re.findall(rf"^\s+{re.escape(instruction)}\b", ptx, re.M))


def rows_graph(op, dtype, n, rows=64):
    g = dnnc.Graph(name=op, io_data_type=dtype)
    x = g.tensor(name="x", dim=[rows, n])
    if op in ("softmax", "log_softmax"):
        getattr(g, op)(x, axis=1).set_output(True)
    elif op in ("softmax_backward", "log_softmax_backward"):
        dy = g.tensor(name="dy", dim=[rows, n])
        getattr(g, op)(dy, x, axis=1).set_output(True)
    elif op == "layernorm":
        scale = g.tensor(name="scale", dim=[1, n])
        bias = g.tensor(name="bias", dim=[1, n])
        g.layernorm(x, scale, bias, axis=1)[0].set_output(True)
    return g


# ----------------------------------------------------------------------------
# Held in registers: each input read once, each intermediate computed once


def test_softmax_row_held_in_registers():
    # 8192 bf16 in a block of 256: four vectors of 8 a thread. One load and
    # one store per vector, one ex2 per element, no division.
    package = compile_cuda(rows_graph("softmax", BF16, 8192))
    (kernel,) = package.kernels
    assert kernel["block"][0] == 256
    ptx = package.ptx
    assert count(ptx, "ld.global") == 4 and count(ptx, "st.global") == 4
    assert count(ptx, "ex2.approx.ftz.f32") == 32
    # One reciprocal a row; rcp.approx since only bf16 roundings read it
    # (dnn-expand-math).
    assert count(ptx, "div") == 0 and count(ptx, "rcp.") == 1
    assert count(ptx, "bra") <= 2  # the two shared-memory guards: no loop


def test_f32_softmax_stores_its_output_once():
    # Bufferization computes exp(x - max) in the output buffer, which the
    # last statement overwrites: only that last write reaches memory.
    package = compile_cuda(rows_graph("softmax", F32, 8192))
    ptx = package.ptx
    assert count(ptx, "st.global") == count(ptx, "ld.global") == 4
    assert count(ptx, "ex2.approx.ftz.f32") == 16


@pytest.mark.parametrize("op, loads, ex2", [
    ("softmax_backward", 8, 0),       # dy and y, once
    ("log_softmax_backward", 8, 32),  # exp(y) once per element
    ("layernorm", 12, 0),             # x once, scale and bias by the output pass
])
def test_other_rows_held_in_registers(op, loads, ex2):
    package = compile_cuda(rows_graph(op, BF16, 8192))
    (kernel,) = package.kernels
    assert kernel["strategy"] == "simt-reduce"
    assert count(package.ptx, "ld.global") == loads
    assert count(package.ptx, "st.global") == 4
    assert count(package.ptx, "ex2.approx.ftz.f32") == ex2


def test_long_rows_loop_and_recompute():
    # 40000 bf16 in a block of 1024: five vectors of 8 a thread, more than a
    # thread holds: each pass loops over them and reads x again. (sm_80: an
    # sm_90 row this long is split over a cluster instead, below.)
    g = rows_graph("softmax", BF16, 40000, rows=4)
    module = dnnc.graph_mlir.to_module(g)
    compiler.compile_module(module, compiler.Options(target="cuda", arch="sm_80",
                                                     stop_after="gpu"))
    text = str(module)
    assert text.count("scf.for") == 3
    assert text.count("vector.load") == 3
    assert text.count('"llvm.nvvm.ex2.approx.ftz.f"') == 2 * 8


@pytest.mark.parametrize("groups", [32, 8])
def test_groupnorm_row_of_channels_is_held(groups):
    # (sample, group) rows of C/G channels x 256 positions, bf16, 512 or 2048
    # elements: one kernel, x loaded once a vector (16 bytes), the scale and
    # bias once a vector too (the channel of its positions), y stored once.
    g = dnnc.Graph(name="gn", io_data_type=BF16)
    x = g.tensor(name="x", dim=[2, 64, 16, 16])
    scale = g.tensor(name="scale", dim=[1, 64, 1, 1])
    bias = g.tensor(name="bias", dim=[1, 64, 1, 1])
    g.groupnorm(x, groups, scale, bias)[0].set_output(True)
    package = compile_cuda(g)
    (kernel,) = package.kernels
    assert kernel["strategy"] == "simt-reduce"
    vectors = 2 * 64 * 256 // 8 // (kernel["grid"][0] * kernel["block"][0])
    ptx = package.ptx
    assert count(ptx, "ld.global.v4") == vectors  # 8 bf16 a load
    assert count(ptx, "ld.global.b16") == 2 * vectors
    assert count(ptx, "st.global.v4") == vectors


def _feature_norm(kind, dims, residual=False):
    g = dnnc.Graph(name="norm", io_data_type=BF16)
    x = g.tensor(name="x", dim=dims)
    params = [1] + dims[1:]
    scale = g.tensor(name="scale", dim=params, data_type=F32)
    if residual:
        x = g.add(x, g.tensor(name="r", dim=dims))
    if kind == "layernorm":
        bias = g.tensor(name="bias", dim=params, data_type=F32)
        outs = g.layernorm(x, scale, bias, axis=1, norm_forward_phase="training")
    else:
        outs = g.rmsnorm(x, scale, axis=1, norm_forward_phase="training")
    for t in outs:
        t.set_output(True)
    return g


@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm"])
def test_norm_over_trailing_unit_dims_is_the_row_kernel(kind):
    # cudnn-frontend's form, x [rows, hidden, 1, 1] normalized over dims 1-3,
    # after a residual add: the same row program, vectors along hidden, as
    # over [rows, hidden]; the same PTX.
    four = compile_cuda(_feature_norm(kind, [256, 1024, 1, 1], residual=True))
    two = compile_cuda(_feature_norm(kind, [256, 1024], residual=True))
    (kernel,) = four.kernels
    assert kernel["strategy"] == "simt-reduce"
    assert kernel["config"]["vector"] == 4  # 16 bytes of the f32 scale
    assert count(four.ptx, "ld.global.v4") > 0
    assert four.ptx == two.ptx


def test_norm_over_several_dims_vectors_along_the_last_long_one():
    # [rows, 4, 96, 1]: vectors run along the 96 (the dim after it is one
    # element); the scale varies along the whole row, so it is read as
    # vectors too.
    package = compile_cuda(_feature_norm("rmsnorm", [64, 4, 96, 1]))
    (kernel,) = package.kernels
    assert kernel["strategy"] == "simt-reduce"
    assert kernel["config"]["vector"] == 4  # 16 bytes of the f32 scale
    assert count(package.ptx, "ld.global.v4") > 0


def test_long_rows_split_over_a_cluster_are_held():
    # 140000 bf16 on sm_90a: a cluster of 8 blocks of 1024 per row, three
    # vectors of 8 a thread (the last one masked past the row's end), held:
    # x loaded once, one exp per element, no loop; the max and the sum each
    # exchanged once between the 8 blocks (8 remote loads each), then one
    # cluster barrier more that keeps the blocks until all have read.
    g = rows_graph("softmax", BF16, 140000, rows=2)
    module = dnnc.graph_mlir.to_module(g)
    compiler.compile_module(module, compiler.Options(target="cuda", arch="sm_90a",
                                                     stop_after="gpu"))
    text = str(module)
    assert "clusters in (%c8, %c1, %c1) blocks in (%c16, %c1, %c1)" in text
    assert "nvvm.cluster_dim = array<i32: 8, 1, 1>" in text
    assert text.count("scf.for") == 0
    assert text.count("vector.load") == 3
    assert text.count('"llvm.nvvm.ex2.approx.ftz.f"') == 3 * 8
    assert text.count("nvvm.mapa") == 2 * 8
    assert text.count("nvvm.cluster.arrive") == 3


@pytest.mark.parametrize("op, dtype, staged, exchanges", [
    ("softmax", BF16, 0, 2), ("log_softmax", F32, 0, 2), ("layernorm", BF16, 0, 1),
    ("layernorm_training", BF16, 0, 2),
    ("softmax", BF16, 1, 1), ("log_softmax", F32, 1, 1), ("layernorm", BF16, 1, 1),
    ("layernorm_training", BF16, 1, 2)])
def test_split_rows_exchanges(op, dtype, staged, exchanges):
    # 131072 on sm_90a. Held in registers (clusters of 8 blocks of 512): a
    # layernorm's mean and centred squares meet in one exchange (rowmerge.py's
    # centred form); softmax's max and sum are exchanged one after the other
    # (its shifted form is off by default there, see rowsplit.MERGE). Staged
    # (the heuristics' choice), the softmax's meet too. A layernorm that
    # stores its mean (training) computes it from the first reduction before
    # the second: two. Each kernel's blocks meet once more before they leave.
    if op == "layernorm_training":
        g = dnnc.Graph(name=op, io_data_type=dtype)
        x = g.tensor(name="x", dim=[2, 131072])
        for t in g.layernorm(x, g.tensor(name="scale", dim=[1, 131072]),
                             g.tensor(name="bias", dim=[1, 131072]), axis=1,
                             norm_forward_phase="training"):
            t.set_output(True)
    else:
        g = rows_graph(op, dtype, 131072, rows=2)
    config = None if staged else "*=block:512,split:8,staged:0"
    module = dnnc.graph_mlir.to_module(g)
    compiler.compile_module(module, compiler.Options(target="cuda", arch="sm_90a",
                                                     stop_after="gpu", config=config))
    text = str(module)
    assert text.count("nvvm.cp.async.bulk") == (4 if staged else 0)
    assert text.count("nvvm.cluster.arrive") == exchanges + 1


@pytest.mark.parametrize("op, passes, loops, per_pass", [
    # softmax: nothing else read along the row, 16 vectors an iteration: a
    # thread's whole part, so the loops fold away (max, sum, output).
    ("softmax", 3, 0, 16),
    # layernorm: the output pass also loads scale and bias, 8 vectors an
    # iteration (16 such loads in flight): two iterations of each pass. The
    # mean and the centred squares are folded in one pass, then the output.
    ("layernorm", 2, 2, 8),
])
def test_staged_split_rows_read_their_part_from_shared_memory(op, passes, loops, per_pass):
    # 131072 bf16 on sm_90a: 4 blocks of 256 a row, each copying its 64 KB of
    # x into dynamic shared memory (4 bulk copies of 16 KB, a piece on an
    # mbarrier each, for which the first pass waits as it reaches it) and
    # looping over it there. x is never read from global memory by the
    # threads.
    module = dnnc.graph_mlir.to_module(rows_graph(op, BF16, 131072, rows=2))
    compiler.compile_module(module, compiler.Options(target="cuda", arch="sm_90a",
                                                     stop_after="gpu"))
    text = str(module)
    assert "clusters in (%c4, %c1, %c1) blocks in (%c8, %c1, %c1)" in text
    assert "dynamic_shared_memory_size %c65664_i32" in text
    assert text.count("nvvm.cp.async.bulk.shared.cluster.global") == 4
    assert text.count("nvvm.mbarrier.init") == 4
    assert text.count("nvvm.mbarrier.arrive.expect_tx") == 4
    # A piece's wait before each 4 vectors of the first pass: the whole part
    # of 16 unrolled (softmax), or 8 in each of two iterations (layernorm).
    assert text.count("mbarrier.try_wait.parity") == per_pass // 4
    assert text.count("scf.for") == loops
    assert f"{per_pass} an iteration" in text
    x = "memref<32768xbf16, #gpu.address_space<workgroup>>"
    loads = [line for line in text.splitlines() if "vector.load" in line and x in line]
    assert len(loads) == passes * per_pass
    assert not [line for line in text.splitlines()
                if "vector.load" in line and "memref<2x131072xbf16>" in line]


@pytest.mark.parametrize("config, why", [
    ("tile:2", "a staged split row on a persistent cluster"),
    ("split:1,staged:1", "a staged row that is not split"),
    ("split:2", "a staged part of 131072 bytes: expected at most 65536"),
    ("unroll:3", "passes of 3 vectors an iteration over the 16 vectors a thread has in its "
                 "part: expected a divisor of them"),
])
def test_staged_split_rows_that_do_not_fit_are_refused(config, why):
    module = dnnc.graph_mlir.to_module(rows_graph("softmax", BF16, 131072, rows=3))
    compiler.compile_module(module, compiler.Options(
        target="cuda", arch="sm_90a", stop_after="gpu", config=f"softmax_k0_softmax={config}"))
    text = str(module)
    assert 'strategy = "simt-generic"' in text
    assert f"simt-reduce does not apply ({why})" in text


def test_persistent_clusters_carry_the_next_rows_loads():
    # tile = [rows per cluster]: 5 rows on 3 clusters (rows c, c + 3), one
    # row's first vectors loaded up front, the next row's in the loop and
    # yielded to the next iteration; the max and sum exchanged a row, slots
    # by parity. Held in registers: 8 blocks of 512, not staged.
    module = dnnc.graph_mlir.to_module(rows_graph("softmax", BF16, 131072, rows=5))
    compiler.compile_module(module, compiler.Options(
        target="cuda", arch="sm_90a", stop_after="gpu",
        config="softmax_k0_softmax=tile:2,block:512,split:8,staged:0"))
    text = str(module)
    assert "blocks in (%c24, %c1, %c1)" in text
    assert text.count("scf.for") == 1
    assert "memref<4xf32, #gpu.address_space<workgroup>>" in text  # 2 slots x 2 halves
    assert text.count("nvvm.cluster.arrive") == 3


def test_unknown_merge_form_is_a_pipeline_error():
    module = dnnc.graph_mlir.to_module(rows_graph("softmax", BF16, 131072, rows=2))
    with pytest.raises(PipelineError, match="option 'merge'.*got diagonal"):
        passes.run_pipeline(module.operation, "builtin.module(dnn-reduce-rows{merge=centred,diagonal})")


@needs_ptxas
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "softmax_backward",
                                "log_softmax_backward", "layernorm"])
@pytest.mark.parametrize("dtype", [F32, BF16], ids=["f32", "bf16"])
def test_held_rows_do_not_spill(op, dtype):
    package = compile_cuda(rows_graph(op, dtype, 8192))
    for entry, r in ptxas.assemble(package.ptx, "sm_90a").items():
        assert r.spill_stores == 0 and r.spill_loads == 0, (entry, r)
        assert r.registers <= 128, (entry, r)


# ----------------------------------------------------------------------------
# Fusion: a row reduction takes the pointwise ops over its rows


FRONT = "builtin.module(" + ",".join(
    p for s in pipelines.FRONT for p in s.passes) + ")"


def kernels(module):
    """Anchor names of the dnn.kernel functions of ``module``, in order."""
    with module.context:
        return [str(f.attributes["dnn.anchor"]).strip('"') for f in module.body.operations
                if f.operation.name == "func.func" and "dnn.kernel" in f.attributes]


def fuse(g):
    """(kernel anchors after the front pipeline, outputs before, outputs
    after); the CPU back end, which runs the same kernels, checked too."""
    module = dnnc.graph_mlir.to_module(g)
    rng = np.random.default_rng(0)
    arrays = [typed(rng.standard_normal(t.dim), t.get_data_type()) for t in g.inputs]
    before = interpreter.run_module(module, arrays)
    passes.run_pipeline(module, FRONT)
    after = interpreter.run_module(module, arrays)
    cpu = g.compile(target="cpu").run(*arrays)
    for b, c in zip(before, cpu):
        np.testing.assert_allclose(np.asarray(c, np.float64), b, rtol=1e-4, atol=1e-5)
    return kernels(module), before, after


@pytest.mark.parametrize("op", ["softmax_backward", "log_softmax_backward"])
def test_softmax_backwards_are_one_row_kernel(op):
    anchors, before, after = fuse(rows_graph(op, F32, 13, rows=5))
    assert anchors == ["reduction"]
    for b, a in zip(before, after):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_row_reduction_takes_its_epilogue_and_feeding_pointwise_ops():
    g = dnnc.Graph(name="rows", io_data_type=F32)
    x = g.tensor(name="x", dim=[4, 9])
    w = g.tensor(name="w", dim=[4, 9])
    s = g.reduction(g.mul(x, w), "sum", [1])
    g.sub(x, g.mul(s, g.constant(0.5))).set_output(True)
    anchors, before, after = fuse(g)
    assert anchors == ["reduction"]
    np.testing.assert_allclose(after[0], before[0], rtol=1e-6)
