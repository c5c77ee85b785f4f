"""The compile-time helpers: pass timing (``passes.timing``), the walks the
passes use (``walk``, ``irutil.contains``, ``irutil.launches``) and the
pipeline parser's memory of checked elements. No GPU."""

import pytest
from mlir import ir

from dnnc import passes
from dnnc.codegen.gpu import irutil
from dnnc.dialect import context
from dnnc.dialect.walk import walk
from dnnc.errors import PipelineError

MODULE = """
module attributes {gpu.container_module} {
  func.func @host(%x: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    scf.execute_region {
      gpu.launch_func @kernels::@a blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
      scf.yield
    }
    gpu.launch_func @kernels::@b blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
  gpu.module @kernels {
    gpu.func @a(%x: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %f = arith.constant 1.0 : f32
      memref.store %f, %x[%c0] : memref<4xf32>
      gpu.return
    }
    gpu.func @b(%x: memref<4xf32>) kernel {
      gpu.return
    }
  }
}
"""


@pytest.fixture
def module():
    ctx = context()
    with ctx:
        yield ir.Module.parse(MODULE)


def _python_walk(root):
    """The walk as regions, blocks and ops visited from Python."""
    found = []

    def visit(op):
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    found.append(inner.operation)
                    visit(inner.operation)

    visit(root.operation)
    return found


def test_walk_is_pre_order_and_leaves_out_the_root(module):
    ops = walk(module)
    assert [op.name for op in ops] == [op.name for op in _python_walk(module)]
    assert ops[0].name == "func.func" and ops[-1].name == "gpu.return"
    assert all(op.name != "builtin.module" for op in ops)


def test_launches_are_found_in_host_functions_only(module):
    launches = irutil.launches(module)
    assert [irutil.launched_kernel(op) for op in launches] == [("kernels", "a"),
                                                               ("kernels", "b")]


def test_contains_stops_at_the_first_and_skips_the_root(module):
    kernels = {irutil.symbol(f.operation): f.operation
               for f in irutil.body(irutil.ops(module, "gpu.module")[0]).operations}
    assert irutil.contains(kernels["a"], "memref.store")
    assert not irutil.contains(kernels["b"], "memref.store")
    assert not irutil.contains(kernels["a"], "gpu.func")     # the root itself
    assert irutil.contains(module, "gpu.func")


def test_timing_sums_each_pass_and_nests(module):
    with passes.timing() as outer:
        passes.run_pipeline(module, "builtin.module(canonicalize,cse)")
        with passes.timing() as inner:
            passes.run_pipeline(module, "builtin.module(cse,dnn-dedup-kernels)")
    assert set(inner) == {"cse", "dnn-dedup-kernels"}
    assert set(outer) == {"canonicalize", "cse", "dnn-dedup-kernels"}
    assert outer["cse"] >= inner["cse"] > 0
    assert passes._TIMES is None    # off again: run_pipeline reads no clock


def test_a_bad_element_is_refused_every_time():
    for _ in range(2):
        with pytest.raises(PipelineError, match="unknown pass or bad pipeline element "
                                                "'no-such-pass'"):
            passes.parse_pipeline("builtin.module(cse,no-such-pass)")
    passes.parse_pipeline("builtin.module(cse)")
    assert "cse" in passes._CHECKED
