"""The simt-reduce-columns strategy (dnnc/codegen/gpu/reduce/colwise.py,
dnn-reduce-columns) without a GPU.

* Numerics: a column program's launches are run on the CPU. Each
  ``gpu.launch`` becomes loops over its blocks and, between barriers, over
  its threads (``emulate_launches``: every thread of a block runs up to a
  barrier before any runs past it, as on the GPU; a value that crossed a
  barrier in a register would not verify); the kernel is then lowered like
  test_cuda_compile's emulation and run by MLIR's ExecutionEngine against
  the CPU back end: configs that split the rows (a second launch),
  that do not (one), ragged last blocks and ragged column blocks, one row
  lane per block (no shared memory) and several, 2-D and 3-D inputs.
* A hand-written dgamma / dbeta kernel (pointwise statements over the rows
  with per-row scalars, two reductions folded in one pass) against NumPy.
* The heuristics' config for the bias-gradient benchmark, the plan and the
  PTX of that kernel (16-byte loads, a whole step's loads issued together),
  ptxas's registers and spills where ptxas is found.
"""

import numpy as np
import pytest

import dnnc
import dnnc.targets.cpu
import dnnc.graph_mlir
from dnnc import compiler, heuristics, pipelines
from dnnc.codegen.gpu import irutil, ptxas, sass
from dnnc.dialect.types import data_type as dt
from dnnc.heuristics import Problem, TensorSpec
from dnnc.passes import run_pipeline
from refutil import typed
from test_cuda_compile import EMULATION_TAIL

F32, F16, BF16 = dt.FLOAT, dt.HALF, dt.BFLOAT16
STRATEGY = "simt-reduce-columns"
# test_cuda_compile's CPU tail, with the 16-byte loads and stores lowered too.
TAIL = list(EMULATION_TAIL)
TAIL.insert(TAIL.index("finalize-memref-to-llvm"), "convert-vector-to-llvm")
PTXAS = ptxas.find()


# ----------------------------------------------------------------------------
# Running launches on the CPU


def _launch_loops(launch):
    """Replace ``launch`` (a gpu.launch with constant sizes) by scf.for loops:
    blocks outside, then per barrier-separated segment a loop nest over the
    threads. Workgroup buffers become one allocation per block."""
    from mlir import ir
    from mlir.dialects import memref, scf

    body = launch.regions[0].blocks[0]
    args = list(body.arguments)
    view = launch.opview
    grid = [irutil.constant_int(v) for v in (view.gridSizeX, view.gridSizeY, view.gridSizeZ)]
    block = [irutil.constant_int(v) for v in (view.blockSizeX, view.blockSizeY, view.blockSizeZ)]
    for op in list(body.operations):  # constants first: every segment reads them
        if op.operation.name == "arith.constant":
            op.operation.move_before(launch)
    segments, current = [], []
    for op in list(body.operations):
        name = op.operation.name
        if name in ("gpu.barrier", "gpu.terminator"):
            segments.append(current)
            current = []
            if name == "gpu.barrier":
                op.operation.erase()
        else:
            current.append(op.operation)

    def nest(extents, ivs_out):
        """Nested loops z, y, x over ``extents`` (x, y, z); returns the
        innermost yield; the ivs come out x, y, z."""
        ip, ivs = None, []
        for n in reversed(extents):
            with ip or ir.InsertionPoint(launch):
                loop = scf.ForOp(irutil.index(0), irutil.index(n), irutil.index(1))
            with ir.InsertionPoint(loop.body):
                end = scf.YieldOp([])
            ip = ir.InsertionPoint(end)
            ivs.append(loop.induction_variable)
        ivs_out.extend(reversed(ivs))
        return end

    with launch.location:
        block_ivs = []
        inner = nest(grid, block_ivs)
        for arg, iv in zip(args[:3], block_ivs):
            arg.replace_all_uses_with(iv)
        with ir.InsertionPoint(inner):
            for arg, n in zip(args[6:12], grid + block):
                arg.replace_all_uses_with(irutil.index(n))
            for arg in args[12:]:
                t = ir.MemRefType(arg.type)
                arg.replace_all_uses_with(memref.alloc(ir.MemRefType.get(t.shape, t.element_type),
                                                       [], []))
        for ops in segments:
            with ir.InsertionPoint(inner):
                ivs = []
                loop = scf.ForOp(irutil.index(0), irutil.index(block[2]), irutil.index(1))
                with ir.InsertionPoint(loop.body):
                    y = scf.ForOp(irutil.index(0), irutil.index(block[1]), irutil.index(1))
                    with ir.InsertionPoint(y.body):
                        x = scf.ForOp(irutil.index(0), irutil.index(block[0]), irutil.index(1))
                        with ir.InsertionPoint(x.body):
                            end = scf.YieldOp([])
                        scf.YieldOp([])
                    scf.YieldOp([])
                ivs = [x.induction_variable, y.induction_variable, loop.induction_variable]
            for op in ops:
                op.move_before(end)
            for arg, iv in zip(args[3:6], ivs):
                for use in list(arg.uses):
                    owner = use.owner
                    if _inside(owner, x.operation):
                        owner.operands[use.operand_number] = iv
    launch.erase()


def _inside(op, loop):
    op = getattr(op, "operation", op)
    while op is not None:
        if op == loop:
            return True
        op = op.parent
    return False


def _as_on_the_gpu(fn):
    """What the runtime gives a kernel function that the CPU does not: its
    i32 workspace buffers (arrival counts) start at zero."""
    from mlir import ir
    from mlir.dialects import arith, memref, scf

    i32 = ir.IntegerType.get_signless(32)
    ops = [op.operation for op in irutil.body(fn).operations]
    counts = [op for op in ops if op.name == "memref.alloc"
              and ir.MemRefType(op.results[0].type).element_type == i32]
    launch = next((op for op in ops if op.name == "gpu.launch"), None)
    for alloc in counts:
        (n,) = ir.MemRefType(alloc.results[0].type).shape
        with ir.InsertionPoint(launch), alloc.location:
            loop = scf.ForOp(irutil.index(0), irutil.index(n), irutil.index(1))
            with ir.InsertionPoint(loop.body):
                memref.store(arith.constant(i32, 0), alloc.results[0], [loop.induction_variable])
                scf.YieldOp([])


def emulate_launches(module):
    """Every gpu.launch of every kernel function, as loops (see above)."""
    with module.context:
        for fn in irutil.kernel_functions(module):
            _as_on_the_gpu(fn)
            for op in list(irutil.body(fn).operations):
                if op.operation.name == "gpu.launch":
                    _launch_loops(op.operation)


def lower_for_cpu(module):
    """The GPU stage's passes on a bufferized module, column programs run
    as loops, then the CPU tail: an LLVM module to execute."""
    gpu = list(pipelines.GPU.passes)
    at = gpu.index("dnn-reduce-columns") + 1
    run_pipeline(module, "builtin.module(" + ",".join(gpu[:at]) + ")")
    with module.context:
        for fn in irutil.kernel_functions(module):
            config = heuristics.Config.from_attr(fn.attributes["dnn.config"])
            assert config.strategy == STRATEGY, fn.attributes["dnn.config_reason"]
    emulate_launches(module)
    module.operation.verify()
    upto = gpu[at:gpu.index("dnn-distribute-loops") + 1]
    run_pipeline(module, "builtin.module(" + ",".join(upto + TAIL) + ")")
    return module


def emulate(g, config="", through="dnn-reduce-columns"):
    """A CpuExecutable of graph ``g`` through the GPU lowering (with the
    config override ``config``), the launches made by the GPU stage up to
    pass ``through`` (column programs; window programs with
    dnn-pool-windows) run as loops; also the strategies the kernels ended
    with."""
    module = dnnc.graph_mlir.to_module(g)
    signature = dnnc.targets.cpu.signature_of(module)
    for stage in pipelines.get("cuda", "sm_90a", config=config):
        if stage.name == "gpu":
            break
        run_pipeline(module, stage.pipeline)
    with module.context:
        gpu = list(pipelines.GPU.passes)
        at = gpu.index(through) + 1
        run_pipeline(module, "builtin.module(" + ",".join(gpu[:at]) + ")")
        strategies = {irutil.symbol(fn): heuristics.Config.from_attr(
            fn.attributes["dnn.config"]).strategy for fn in irutil.kernel_functions(module)}
        emulate_launches(module)
        module.operation.verify()
        rest = gpu[at:gpu.index("dnn-distribute-loops") + 1]
        run_pipeline(module, "builtin.module(" + ",".join(rest + TAIL) + ")")
    return dnnc.targets.cpu.CpuExecutable(module, signature), strategies


# ----------------------------------------------------------------------------
# Numerics


def columns_graph(dtype, dims, modes, keepdims=True):
    g = dnnc.Graph(io_data_type=dtype)
    x = g.tensor(name="x", dim=dims)
    axes = list(range(len(dims) - 1))
    for mode in modes:
        g.reduction(x, mode, axes, keepdims=keepdims).set_name(mode).set_output(True)
    return g


TOLERANCE = {F32: 1e-4, F16: 2e-3, BF16: 1.6e-2}  # one rounding of the output, at most


@pytest.mark.parametrize("dtype, dims, modes, keepdims, config, split", [
    # Small: one block column of the rows each, no partials.
    (F32, [1000, 7], ["sum", "mean", "max", "min", "norm2", "amax"], True, "", False),
    (BF16, [7, 1000], ["sum", "max", "mean"], True, "", False),
    # Split rows: 1000 = 10 x 96 + 40: the last block has 3 whole steps of
    # 12 rows and a guarded step; 7 columns in 8-thread rows.
    (F32, [1000, 7], ["sum", "max", "prod"], True, "*=block:8x4,tile:96,unroll:3", True),
    # 3-D, reducing [0, 1], keepdims or not.
    (F32, [9, 130, 72], ["sum", "max", "mean"], True, "", True),
    (F32, [9, 130, 72], ["sum", "norm1"], False, "", True),
    # bf16 as the benchmark, 65 vectors over 32-thread rows (ragged).
    (BF16, [2048, 520], ["sum", "mean"], True, "", True),
    # One row lane per block: no shared memory; many steps, pipelined.
    (F16, [3000, 64], ["sum", "min"], True, "*=block:8x1,tile:256,unroll:4", True),
    (F32, [2048, 64], ["sum"], True, "*=block:16x8,tile:512,unroll:4", True),
    # 65 splits over 32 row lanes: 3 partials a lane, the last ragged.
    (F32, [4100, 8], ["sum", "max"], True, "*=block:2x32,tile:64,unroll:2", True),
    # 2050 splits over 2 row lanes: the lanes fold their partials in a loop.
    (F32, [4100, 8], ["sum", "min"], True, "*=block:2x2,tile:2,unroll:1", True),
    # One row lane and 257 splits: one thread folds them all (a loop and a rest).
    (F32, [257, 16], ["sum", "max"], True, "*=block:4x1,tile:1,unroll:1", True),
])
def test_column_programs_match_the_cpu_back_end(dtype, dims, modes, keepdims, config,
                                                split):
    g = columns_graph(dtype, dims, modes, keepdims)
    x = np.random.default_rng(3).standard_normal(dims).astype(np.float32)
    if "prod" in modes:
        x = 1 + x / 100
    x = typed(x, dtype)  # what both executables take
    expected = g.compile(target="cpu")(x=x)
    run, strategies = emulate(g, config)
    got = run(x=x)
    assert set(strategies.values()) == {STRATEGY}, strategies
    for mode in modes:
        e, v = np.asarray(expected[mode], np.float64), np.asarray(got[mode], np.float64)
        assert e.shape == v.shape
        tol = TOLERANCE[dtype] * np.maximum(1.0, np.abs(e))
        assert np.all(np.abs(v - e) <= tol), (mode, np.abs(v - e).max())
    # One launch whether the rows are split or not; split, the partials
    # and the arrival counts are workspace.
    package = compiler.compile_cuda(g, "sm_90a", cache=False, config=config)
    assert [k["strategy"] for k in package.kernels] == [STRATEGY] * len(package.kernels)
    assert len({k["name"] for k in package.kernels}) == len(package.kernels)
    assert (package.manifest["workspace_bytes"] > 0) == split


def test_one_row_is_a_column_program_too():
    g = columns_graph(F16, [1, 129], ["sum", "max"])
    x = typed(np.random.default_rng(4).standard_normal([1, 129]).astype(np.float32), F16)
    expected = g.compile(target="cpu")(x=x)
    run, strategies = emulate(g)
    assert set(strategies.values()) == {STRATEGY}, strategies
    got = run(x=x)
    for mode in ("sum", "max"):
        np.testing.assert_allclose(np.asarray(got[mode], np.float64),
                                   np.asarray(expected[mode], np.float64), rtol=2e-3)


# A norm's weight gradients: dgamma = sum over rows of dy * (x - mean[r]) * inv[r],
# dbeta = sum of dy, both cast to bf16, folded in one pass over dy and x.
DGAMMA = """
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#col = affine_map<(d0, d1) -> (0, d1)>
module {
  func.func private @weight_grads(%x: memref<ROWSxNxbf16>, %dy: memref<ROWSxNxbf16>,
      %mean: memref<ROWSx1xf32>, %inv: memref<ROWSx1xf32>,
      %dgamma: memref<1xNxbf16>, %dbeta: memref<1xNxbf16>)
      attributes {dnn.config = CONFIG, dnn.kernel} {
    %zero = arith.constant 0.000000e+00 : f32
    %xhat = memref.alloc() : memref<ROWSxNxf32>
    %g = memref.alloc() : memref<1xNxf32>
    %b = memref.alloc() : memref<1xNxf32>
    linalg.generic {indexing_maps = [#id, #row, #row, #id], iterator_types = ["parallel", "parallel"]}
        ins(%x, %mean, %inv : memref<ROWSxNxbf16>, memref<ROWSx1xf32>, memref<ROWSx1xf32>)
        outs(%xhat : memref<ROWSxNxf32>) {
    ^bb0(%a: bf16, %m: f32, %s: f32, %o: f32):
      %e = arith.extf %a : bf16 to f32
      %c = arith.subf %e, %m : f32
      %h = arith.mulf %c, %s : f32
      linalg.yield %h : f32
    }
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
        outs(%g : memref<1xNxf32>) {
    ^bb0(%o: f32):
      linalg.yield %zero : f32
    }
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
        outs(%b : memref<1xNxf32>) {
    ^bb0(%o: f32):
      linalg.yield %zero : f32
    }
    linalg.generic {indexing_maps = [#id, #id, #col], iterator_types = ["reduction", "parallel"]}
        ins(%dy, %xhat : memref<ROWSxNxbf16>, memref<ROWSxNxf32>) outs(%g : memref<1xNxf32>) {
    ^bb0(%d: bf16, %h: f32, %acc: f32):
      %e = arith.extf %d : bf16 to f32
      %p = arith.mulf %e, %h : f32
      %t = arith.addf %acc, %p : f32
      linalg.yield %t : f32
    }
    linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
        ins(%dy : memref<ROWSxNxbf16>) outs(%b : memref<1xNxf32>) {
    ^bb0(%d: bf16, %acc: f32):
      %e = arith.extf %d : bf16 to f32
      %t = arith.addf %acc, %e : f32
      linalg.yield %t : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%g : memref<1xNxf32>) outs(%dgamma : memref<1xNxbf16>) {
    ^bb0(%a: f32, %o: bf16):
      %t = arith.truncf %a : f32 to bf16
      linalg.yield %t : bf16
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%b : memref<1xNxf32>) outs(%dbeta : memref<1xNxbf16>) {
    ^bb0(%a: f32, %o: bf16):
      %t = arith.truncf %a : f32 to bf16
      linalg.yield %t : bf16
    }
    return
  }
  func.func @main(%x: memref<ROWSxNxbf16>, %dy: memref<ROWSxNxbf16>, %mean: memref<ROWSx1xf32>,
      %inv: memref<ROWSx1xf32>, %dgamma: memref<1xNxbf16>, %dbeta: memref<1xNxbf16>)
      attributes {dnn.graph, llvm.emit_c_interface} {
    call @weight_grads(%x, %dy, %mean, %inv, %dgamma, %dbeta) : (memref<ROWSxNxbf16>,
        memref<ROWSxNxbf16>, memref<ROWSx1xf32>, memref<ROWSx1xf32>, memref<1xNxbf16>,
        memref<1xNxbf16>) -> ()
    return
  }
}
"""


@pytest.mark.parametrize("rows, n, config", [
    (300, 48, '{block = [8, 8, 1], strategy = "simt-reduce-columns", tile = [64], '
              'unroll = 4 : i64, vector = 8 : i64}'),
    (40, 24, '{block = [4, 16, 1], strategy = "simt-reduce-columns", tile = [48], '
             'vector = 8 : i64}'),
])
def test_weight_gradients_fold_in_one_pass(rows, n, config):
    from mlir import ir

    from dnnc.dialect import context

    text = DGAMMA.replace("ROWS", str(rows)).replace("CONFIG", config).replace("xN", f"x{n}")
    with context():
        module = ir.Module.parse(text)
    lower_for_cpu(module)
    rng = np.random.default_rng(5)
    x, dy = rng.standard_normal((2, rows, n)).astype(np.float32)
    mean, inv = rng.standard_normal((rows, 1)), rng.uniform(0.5, 2, (rows, 1))
    run = dnnc.targets.cpu.CpuExecutable(module, (
        [("x", (rows, n), BF16), ("dy", (rows, n), BF16), ("mean", (rows, 1), F32),
         ("inv", (rows, 1), F32)],
        [("dgamma", (1, n), BF16), ("dbeta", (1, n), BF16)]))
    got = run(x=typed(x, BF16), dy=typed(dy, BF16), mean=typed(mean, F32), inv=typed(inv, F32))

    def bf16(a):
        import ml_dtypes
        return np.asarray(a, np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)

    x64, dy64 = bf16(x), bf16(dy)
    mean32, inv32 = mean.astype(np.float32), inv.astype(np.float32)
    dgamma = (dy64 * ((x64 - mean32) * inv32)).sum(0, keepdims=True)
    dbeta = dy64.sum(0, keepdims=True)
    for name, ref in (("dgamma", dgamma), ("dbeta", dbeta)):
        v = np.asarray(got[name], np.float64)
        assert np.all(np.abs(v - ref) <= 1.6e-2 * np.maximum(1, np.abs(ref))), name


# ----------------------------------------------------------------------------
# Config, plan, PTX


def bias_gradient():
    g = dnnc.Graph(io_data_type=BF16)
    dy = g.tensor(name="dy", dim=[16384, 4096])
    g.reduction(dy, "sum", axes=[0]).set_output(True)
    return g


def test_the_bias_gradient_gets_a_resident_grid_of_16_byte_columns():
    # 512 vectors of 8 across 16 blocks of 32; 2 blocks per SM: 16 splits.
    spec = TensorSpec((16384, 4096), "bf16")
    out = TensorSpec((1, 4096), "bf16")
    p = Problem(kernel="k", anchor="reduction", inputs=(spec,), outputs=(out,),
                anchor_inputs=(spec,), anchor_outputs=(out,), anchor_attrs=(("axes", (0,)),))
    c = heuristics.choose(p)
    assert (c.strategy, c.block, c.vector, c.unroll, c.tile) == \
        (STRATEGY, (32, 8, 1), 8, 8, (1024,))
    assert c.reason == ("reduction: 4096 columns of 16384: 16x16 blocks of 32x8, vectors of 8, "
                        "8 rows in flight per thread, 1024 rows per block; the last block of a "
                        "column sums its partials")
    assert heuristics.rank(p)[1].reason.startswith(
        "for when simt-reduce-columns does not apply (reduction: 4096 columns of 16384)")


def _longest_run(names, wanted):
    best = run = 0
    for name in names:
        run = run + 1 if name == wanted else 0
        best = max(best, run)
    return best


def test_the_bias_gradient_plan_and_ptx():
    package = compiler.compile_cuda(bias_gradient(), "sm_90a", cache=False)
    m = package.manifest
    (rows,) = m["kernels"]
    # 16 partials of 4096 columns, then 16 arrival counts (one per column of blocks).
    assert m["workspace_bytes"] >= 16 * 4096 * 4 + 16 * 4
    assert (rows["strategy"], rows["grid"], rows["block"]) == (STRATEGY, [16, 16, 1], [32, 8, 1])
    entry = package.ptx[package.ptx.index(f".entry {rows['entry']}("):]
    entry = entry[:entry.index("\n}\n")]
    # A step's 8 rows: 8 16-byte loads issued together.
    ops = [line.split()[0] for line in entry.splitlines() if line.startswith("\t")]
    assert _longest_run(ops, "ld.global.v4.b32") == 8
    # A fixed order of sums: the one atomic is the integer arrival count,
    # between two GPU-scope fences.
    atomics = [i for i, op in enumerate(ops) if op.startswith(("atom", "red."))]
    assert [ops[i] for i in atomics] == ["atom.global.add.u32"], atomics
    (at,) = atomics
    assert ops[at - 1] == ops[at + 1] == "fence.acq_rel.gpu;"
    assert ops.count("fence.acq_rel.gpu;") == 2
    # It waits for the kernels ahead, but does not let its successor launch
    # early: its blocks are all resident at once (dnn-grid-dependency).
    assert "griddepcontrol.wait;" in entry and rows["dependent_launch"]
    assert "griddepcontrol.launch_dependents;" not in entry
    if PTXAS is None:
        return
    resources, cubin = ptxas.assemble_cubin(package.ptx, "sm_90a")
    for info in resources.values():
        assert info.spill_stores == 0 and info.spill_loads == 0
    if sass.missing() is None:
        # ptxas keeps them together: the next step's loads are in flight
        # while a step is folded (it would otherwise sink each load to its adds).
        code = sass.functions(sass.disassemble(cubin))[rows["entry"]]
        assert _longest_run([o for o, _ in sass.instructions(code)], "LDG.E.128") == 8
