"""dnn-default-config: give every kernel function without a ``dnn.config``
a config: ``simt-pointwise`` for a copy that vectorizes, else
``simt-generic``.

The heuristics (dnn-configure, the ``configured`` stage) choose a config per
kernel of the fused stage. That config survives to here on the kernel
function itself: convert-dnn-to-linalg, one-shot-bufferize and
buffer-results-to-out-params rewrite the function's body and signature in
place and keep its attributes, so the fused-stage kernel *is* the bufferized
kernel function, and dnn-distribute-loops reads its ``block``. This pass
honours such a config: it is checked (a bad block or an unknown field is a
PipelineError naming the kernel) and kept; one without a ``block`` gets this
pass's. Kernels born in the ``gpu`` stage, after the heuristics ran
(dnn-host-to-kernels' copies and fills, dnn-io-strides' layout copies), have
no config: a copy whose every op vectorizes (its innermost dim stays
innermost and contiguous, vectors aligned; dnnc/codegen/gpu/elementwise/vectorize.py)
gets ``simt-pointwise`` with vectors of 16 bytes of its widest element, one
a thread, in ``block``-thread blocks; any other gets the fallback that
makes every kernel compilable, a flat grid of ``block``-thread blocks, one
thread per point of the iteration space (see dnn-distribute-loops).
Option: ``block`` (threads per block, 1 to 1024; default 256).

Before::

    func.func private @main_k0_pointwise(...) attributes {dnn.kernel}

After::

    func.func private @main_k0_pointwise(...) attributes {dnn.config = {block = [256, 1, 1],
        strategy = "simt-generic"}, dnn.kernel}

Lit test: test/lit/passes/dnn_default_config.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import irutil
from dnnc.codegen.gpu.elementwise import vectorize
from dnnc.errors import PipelineError
from dnnc.heuristics import pointwise
from dnnc.heuristics.config import Config
from dnnc.passes import DnncPass, register

STRATEGY = "simt-generic"
VECTOR = "simt-pointwise"


def _copy_width(fn):
    """The vector (16 bytes of its widest element) by which every op of a
    kernel born in the ``gpu`` stage vectorizes (dnnc/codegen/gpu/elementwise/vectorize.py:
    a layout copy whose innermost dim stays innermost and contiguous), else 1."""
    ops = [op.operation for op in irutil.body(fn).operations]
    work = [op for op in ops if op.name in ("linalg.copy", "linalg.generic")]
    views = ("arith.constant", "func.return", "memref.subview", "memref.collapse_shape",
             "memref.expand_shape", "memref.cast")
    if not work or any(op.name not in views for op in ops if op not in work):
        return 1
    widest = max(irutil.element_bytes(ir.MemRefType(v.type).element_type)
                 for op in work for v in op.operands)
    width = max(1, pointwise.VECTOR_BYTES // widest)
    if all(vectorize.plan(op, width) is not None for op in work):
        return width
    return 1


def simt_generic(block):
    """The ``dnn.config`` dictionary of the simt-generic strategy."""
    return ir.DictAttr.get({"strategy": ir.StringAttr.get(STRATEGY),
                            "block": irutil.i64_array([block, 1, 1])})


@register
@dataclass
class DnnDefaultConfig(DnncPass):
    NAME = "dnn-default-config"
    block: int = 256

    def __post_init__(self):
        if not 1 <= self.block <= 1024:
            raise PipelineError(f"pass '{self.NAME}' option 'block': expected 1 to 1024 "
                                f"threads, got {self.block}")

    def run(self, module):
        with module.context:
            for fn in irutil.kernel_functions(module):
                if irutil.CONFIG_ATTR not in fn.attributes:
                    width = _copy_width(fn)
                    fn.attributes[irutil.CONFIG_ATTR] = simt_generic(self.block) if width == 1 \
                        else Config(VECTOR, (self.block, 1, 1), vector=width).to_attr()
                    continue
                attr = ir.DictAttr(fn.attributes[irutil.CONFIG_ATTR])
                try:
                    config = Config.from_attr(attr, default_block=(self.block, 1, 1))
                except PipelineError as err:
                    raise PipelineError(f"kernel '{irutil.symbol(fn)}': {err}") from None
                if "block" not in attr:
                    fn.attributes[irutil.CONFIG_ATTR] = config.to_attr()
