"""simt-gemm (dnnc/codegen/gpu/simt_gemm/): f32 matmuls multiplied exactly
in f32 on FFMA, without a GPU. The kernels dnn-map-simt-gemm builds are
interpreted on the CPU by kernel_interpreter.py (outputs NaN-poisoned
first) against the NumPy reference in float64, within the f32 error bound
of a K-term sum of products (K u |A| |B|, u = 2^-24, doubled): odd M, N
and K, every tile shape, A and B stored either way (a transpose folded into
the GEMM), batches and a broadcast operand, bias / relu / residual
epilogues, a K split summed by the last block to arrive or by a second
launch; the heuristics (what
takes an exact f32 matmul, tf32 staying on the tensor cores); the PTX
through ptxas (registers within budget, no spills).
"""

import re

import numpy as np
import pytest
from mlir import ir

import dnnc
from dnnc import compiler, graph_mlir, passes, pipelines
from dnnc.codegen.gpu import irutil, ptxas
from dnnc.codegen.gpu.simt_gemm import Tile
from dnnc.heuristics import rank
from dnnc.heuristics.problem import Problem, TensorSpec
from kernel_interpreter import run_kernel

STRATEGY = "simt-gemm"
PTXAS = ptxas.find()


def interpret(g, config=""):
    """(the graph's reference outputs in float64, {output name: what the
    kernel wrote}, the kernel's dnn.config text, its launches, the |A| |B|
    bound of each output) of graph ``g`` (one kernel), lowered up to
    dnn-map-simt-gemm and run by the interpreter on random inputs."""
    module = compiler.compile_module(graph_mlir.to_module(g), compiler.Options(
        target="cuda", arch="sm_90a", tuning_db="off", stop_after="configured",
        config=config))
    gpu = pipelines.GPU.passes
    upto = pipelines.LINALG_GPU.passes + gpu[:gpu.index("dnn-map-simt-gemm") + 1]
    passes.run_pipeline(module, "builtin.module(" + ",".join(upto) + ")")
    rng = np.random.default_rng(5)
    data = {t.name: rng.normal(size=[int(d) for d in t.dim]).astype(np.float32)
            .astype(np.float64) for t in g.inputs}
    expected = g.execute_reference(data)
    bound = g.execute_reference({k: np.abs(v) for k, v in data.items()})
    with module.context:
        top = irutil.graph_function(module)
        names = [ir.StringAttr(ir.DictAttr(a)["dnn.name"]).value
                 for a in ir.ArrayAttr(top.attributes["arg_attrs"])]
        (call,) = list(irutil.ops(top, "func.call"))
        fn = next(f for f in irutil.kernel_functions(module)
                  if irutil.symbol(f) == ir.FlatSymbolRefAttr(call.attributes["callee"]).value)
        config = str(fn.attributes["dnn.config"])
        launches = len(list(irutil.ops(fn, "gpu.launch")))
        arrays, outs = [], {}
        arguments = list(irutil.body(top).arguments)
        for i, value in enumerate(call.operands):
            if value not in arguments:
                # A view of an input (dnn-transpose-views' strided view): its
                # elements as the view reads the input's row-major data.
                source = irutil.defining_op(value).operands[0]
                flat = np.ascontiguousarray(data[names[arguments.index(source)]],
                                            np.float32).reshape(-1)
                shape, strides, offset = irutil.memref_geometry(value.type)
                arrays.append(np.lib.stride_tricks.as_strided(
                    flat[offset:], shape, [4 * st for st in strides]).copy())
                continue
            name = names[arguments.index(value)]
            if name in data:
                arrays.append(np.asarray(data[name], np.float32))
            else:
                arrays.append(np.full(list(ir.MemRefType(value.type).shape), np.nan,
                                      np.float32))
                outs[name] = i
        got = run_kernel(fn, arrays)
    return expected, {name: got[i] for name, i in outs.items()}, config, launches, bound


def check(expected, got, bound, k):
    """No NaN left; within 2 K u of |A| |B| (+ the epilogue's rounding)."""
    assert not np.isnan(got).any(), np.argwhere(np.isnan(got))[:5]
    tol = 2 * k * 2.0 ** -24 * np.abs(bound) + 1e-6 * np.abs(expected) + 1e-30
    err = np.abs(got.astype(np.float64) - expected)
    assert (err <= tol).all(), (err.max(), np.unravel_index((err - tol).argmax(), err.shape))


def _mm(a_dims, b_dims, a_stride=None, b_stride=None, epilogue=None):
    """y = a @ b (f32, exact) with ``epilogue``: None, "bias_relu" or
    "bias_residual"."""
    g = dnnc.Graph(io_data_type="f32")
    a = g.tensor(name="a", dim=a_dims, **({"stride": a_stride} if a_stride else {}))
    b = g.tensor(name="b", dim=b_dims, **({"stride": b_stride} if b_stride else {}))
    y = g.matmul(a, b)
    n = b_dims[-1]
    if epilogue:
        bias = g.tensor(name="bias", dim=[1, n])
        y = g.add(y, bias)
        if epilogue == "bias_relu":
            y = g.relu(y)
        else:
            m = a_dims[-2]
            res = g.tensor(name="res", dim=[m, n])
            y = g.add(y, res)
    y.set_name("y").set_output(True)
    return g


CASES = {
    # name: (a dims, b dims, a stride, b stride, epilogue, config override)
    "odd_70x50x40": ([70, 40], [40, 50], None, None, None, ""),
    "k_21_128x128_tile": ([130, 21], [21, 129], None, None, None,
                          "*=tile:128x128x8,block:256"),
    "a_stored_k_by_m_128x64": ([129, 33], [33, 70], [1, 129], None, None,
                               "*=tile:128x64x8,block:128"),
    "b_stored_n_by_k_64x64": ([65, 37], [37, 7], None, [1, 37], None,
                              "*=tile:64x64x8,block:64"),
    "micro_8x4_64x64_bias_relu": ([70, 30], [30, 66], [1, 70], None, "bias_relu",
                                  "*=tile:64x64x8,block:128"),
    "both_transposed_bias_relu": ([45, 19], [19, 36], [1, 45], [1, 19], "bias_relu", ""),
    "bias_residual_aligned": ([64, 32], [32, 64], None, None, "bias_residual",
                              "*=tile:32x32x8,block:64"),
    # M = 1 and N = 7 run on simt-gemv unless asked (test_simt_gemv.py).
    "batched_1_row": ([2, 1, 29], [2, 29, 27], None, None, None, "*=strategy:simt-gemm"),
    "broadcast_a_b_transposed": ([1, 27, 40], [2, 40, 7], None, [280, 1, 40], None,
                                 "*=strategy:simt-gemm"),
    "split_3_bias_relu": ([40, 100], [100, 24], None, None, "bias_relu",
                          "*=tile:32x32x8,block:64,split:3"),
    "split_4_odd_n_transposed_a": ([33, 77], [77, 9], [1, 33], None, None,
                                   "*=tile:32x32x8,block:64,split:4"),
    # Up to 4 splits are summed by the last block to arrive (one launch);
    # staged:1 asks for the second launch, as more than 4 splits get.
    "split_3_second_launch": ([40, 100], [100, 24], None, None, "bias_relu",
                              "*=tile:32x32x8,block:64,split:3,staged:1"),
    # 25 K steps asked to split 6 ways run as 5 splits of 5 steps.
    "split_5_second_launch_odd_n": ([33, 200], [200, 9], None, None, None,
                                    "*=tile:32x32x8,block:64,split:6"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_simt_gemm_computes_the_matmul(name):
    a_dims, b_dims, a_stride, b_stride, epilogue, override = CASES[name]
    g = _mm(a_dims, b_dims, a_stride, b_stride, epilogue)
    expected, got, config, launches, bound = interpret(g, override)
    assert f'strategy = "{STRATEGY}"' in config, config
    found = re.search(r"split = (\d+)", config)
    split = int(found.group(1)) if found else 1
    # Up to 4 splits summed by the last block to arrive, unless staged:1;
    # more by a second launch.
    assert launches == (2 if split > 4 or (split > 1 and "staged = 1" in config) else 1), config
    check(np.asarray(expected["y"], np.float64), got["y"], bound["y"], a_dims[-1])


def _problem(a, b, compute="f32"):
    out = tuple(a[:-1]) + (b[-1],)
    return Problem(kernel="k", anchor="matmul", arch="sm_90a",
                   anchor_inputs=(TensorSpec(tuple(a), "f32"), TensorSpec(tuple(b), "f32")),
                   anchor_outputs=(TensorSpec(out, "f32"),),
                   anchor_attrs=(("compute_type", compute),))


def test_heuristics_take_exact_f32_and_leave_tf32_to_the_tensor_cores():
    big = rank(_problem([4096, 4096], [4096, 4096]))
    assert (big[0].strategy, big[0].tile, big[0].threads) == (STRATEGY, (128, 128, 8), 256)
    assert big[-1].strategy == "simt-generic"
    # 129 rows: 32 x 32 tiles give the SMs a block each, 320 warps: K split
    # 3 ways brings 960 (the load latency hidden under other warps).
    odd = rank(_problem([129, 1000], [1000, 1000]))[0]
    assert (odd.tile[:2], odd.split) == ((32, 32), 3), odd.reason
    # 1000^3: 64 x 64 tiles (128 threads), 256 blocks, no split.
    square = rank(_problem([1000, 1000], [1000, 1000]))[0]
    assert (square.tile[:2], square.threads, square.split) == ((64, 64), 128, 1), square.reason
    # Few tiles, a long K: split (N = 7: simt-gemv first, simt-gemm next).
    ranked = rank(_problem([2, 127, 4096], [2, 4096, 7]))
    skinny = ranked[1]
    assert ranked[0].strategy == "simt-gemv", ranked[0].reason
    assert skinny.strategy == STRATEGY and skinny.split == 16, skinny.reason
    assert rank(_problem([256, 256], [256, 256], compute="tf32"))[0].strategy == "tc-sm90"
    # An operand stored as another type and converted in the kernel (a
    # prologue): simt-gemm applies none, and the reason says so. K = 0 (the
    # contraction folds to a fill): no GEMM.
    cast = Problem(kernel="k", anchor="matmul", arch="sm_90a",
                   anchor_inputs=(TensorSpec((64, 32), "f32"), TensorSpec((32, 64), "f32")),
                   anchor_outputs=(TensorSpec((64, 64), "f32"),), prologues=((0, "si8"),))
    first = rank(cast)[0]
    assert first.strategy == "simt-generic" and \
        "a prologue on A stored as si8 (it applies none)" in first.reason, first.reason
    assert {c.strategy for c in rank(_problem([7, 0], [0, 33]))} == {"simt-generic"}


def test_tile_micro_tiles():
    assert Tile(128, 128, 8, 256).micro == (8, 8)
    assert Tile(128, 64, 8, 128).micro == (8, 8)
    assert Tile(64, 64, 8, 64).micro == (8, 8)
    assert Tile(64, 64, 8, 128).micro == (8, 4)
    assert Tile(32, 32, 8, 64).micro == (4, 4)
    assert Tile(128, 128, 8, 256).grid == (16, 16)


def test_unsupported_tile_falls_back_with_the_reason():
    g = _mm([40, 16], [16, 24])
    module = compiler.compile_module(graph_mlir.to_module(g), compiler.Options(
        target="cuda", arch="sm_90a", tuning_db="off", stop_after="configured",
        config="*=tile:128x128x8,block:32"))
    gpu = pipelines.GPU.passes
    upto = pipelines.LINALG_GPU.passes + gpu[:gpu.index("dnn-map-simt-gemm") + 1]
    passes.run_pipeline(module, "builtin.module(" + ",".join(upto) + ")")
    with module.context:
        (fn,) = list(irutil.kernel_functions(module))
        config = str(fn.attributes["dnn.config"])
        reason = str(fn.attributes["dnn.config_reason"])
    assert '"simt-generic"' in config
    assert "simt-gemm does not apply (micro-tile 32x16: expected at most 64" in reason, reason


@pytest.mark.skipif(PTXAS is None, reason="ptxas not found")
@pytest.mark.parametrize("shape,override", [
    (([4096, 4096], [4096, 4096]), ""),
    (([129, 1000], [1000, 1000]), ""),
    (([2, 1, 129], [2, 129, 127]), "*=strategy:simt-gemm"),
    (([1, 127, 4096], [2, 4096, 7]), "*=strategy:simt-gemm"),
    (([1000, 264], [264, 1000]), "*=tile:128x64x8,block:128"),
    (([1000, 264], [264, 1000]), "*=tile:64x64x8,block:64"),
    (([1000, 264], [264, 1000]), "*=tile:64x64x8,block:128"),
    # The last-arrival sum of the widest tile: its partials read chunk by
    # chunk as the epilogue stores them (all at once spilled 64 bytes).
    (([1000, 1000], [1000, 1000]), "*=tile:128x128x8,block:256,split:2"),
])
def test_ptx_assembles_without_spills(shape, override):
    g = _mm(*shape, epilogue="bias_relu")
    package = compiler.compile_cuda(g, "sm_90a", cache=False, config=override)
    kernels = package.manifest["kernels"]
    assert kernels[0]["strategy"] == STRATEGY, kernels[0]["reason"]
    resources, _ = ptxas.assemble_cubin(package.ptx, "sm_90a")
    threads = max(k["block"][0] for k in kernels if k["strategy"] == STRATEGY)
    for name, info in resources.items():
        assert info.spill_stores == 0 and info.spill_loads == 0, (name, info)
        # Two blocks an SM (dnn-register-budget's minctasm 2): 128 registers
        # a thread for 256 threads.
        assert info.registers <= min(255, 65536 // (2 * threads)), (name, info)
    # FFMA from shared float4s: 4 x (TM + TN) / 4 of them a K step.
    assert "fma.rn.f32" in package.ptx and "ld.shared.v4" in package.ptx


def test_a_transpose_in_the_graph_is_read_in_place():
    # x @ W^T with W stored (out, in): dnn-transpose-views makes the
    # transpose a strided view, which the kernel reads as it lies (one
    # kernel, no copy); a batch of 3 against a broadcast B.
    g = dnnc.Graph(io_data_type="f32")
    x = g.tensor(name="x", dim=[3, 130, 21])
    w = g.tensor(name="w", dim=[1, 129, 21])
    g.matmul(x, g.transpose(w, [0, 2, 1])).set_name("y").set_output(True)
    expected, got, config, launches, bound = interpret(g)
    assert f'strategy = "{STRATEGY}"' in config and launches == 1
    check(np.asarray(expected["y"], np.float64), got["y"], bound["y"], 21)
