"""Small IR helpers shared by the GPU passes and the host-plan extraction.

Walking, finding the graph and kernel functions, reading constants and
static memref geometry, the few constants the kernel builders make, and
the mbarrier wait they share.
"""

import re

from mlir import ir

from dnnc.dialect.walk import walk
from dnnc.errors import LoweringError

# Function attributes set by the front half (dnn-fuse, convert-dnn-to-linalg).
GRAPH_ATTR = "dnn.graph"
KERNEL_ATTR = "dnn.kernel"
CONFIG_ATTR = "dnn.config"
# Set by a kernel builder on its kernel function: the blocks an SM must hold
# of each of its gpu.launch ops, in order (0: no bound); dnn-register-budget
# makes them the launched kernels' launch bounds.
BLOCKS_PER_SM_ATTR = "dnn.blocks_per_sm"


def ops(root, name=None):
    """Every op nested under ``root`` (not ``root`` itself), in pre-order;
    only those named ``name`` when given."""
    return [op for op in walk(root) if name is None or op.name == name]


def contains(root, name):
    """Whether an op named ``name`` is nested under ``root`` (not ``root``
    itself); the walk stops at the first."""
    root = getattr(root, "operation", root)
    found = []

    def visit(op):
        if op.name == name and op != root:
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return bool(found)


def body(op):
    """The first block of ``op``'s first region."""
    return getattr(op, "operation", op).regions[0].blocks[0]


def functions(module):
    """The func.func ops at the top level of ``module``."""
    return [op.operation for op in body(module).operations if op.operation.name == "func.func"]


def symbol(op):
    return ir.StringAttr(op.attributes["sym_name"]).value


def graph_function(module):
    """The function marked ``dnn.graph`` (or the only public function)."""
    funcs = functions(module)
    marked = [f for f in funcs if GRAPH_ATTR in f.attributes]
    if not marked:
        marked = [f for f in funcs if KERNEL_ATTR not in f.attributes
                  and "sym_visibility" not in f.attributes]
    if len(marked) != 1:
        raise LoweringError(f"expected one graph function (marked {GRAPH_ATTR}), "
                            f"got {len(marked)}")
    return marked[0]


def kernel_functions(module):
    return [f for f in functions(module) if KERNEL_ATTR in f.attributes]


def function_type(fn):
    return ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)


def enclosing(op, name):
    """The nearest op named ``name`` around ``op`` (not ``op`` itself), or None."""
    parent = op.parent
    while parent is not None and parent.name != name:
        parent = parent.parent
    return parent


def launches(module):
    """Every gpu.launch_func of ``module``'s host functions (its top-level
    func.func ops), in order. The gpu.modules, where nearly all ops of a
    lowered module are and no launch is, are not walked."""
    return [op for fn in functions(module) for op in ops(fn, "gpu.launch_func")]


def launched_kernel(launch):
    """(gpu.module name, kernel name) of the kernel a gpu.launch_func launches."""
    parts = list(ir.SymbolRefAttr(launch.attributes["kernel"]).value)
    return parts[0], parts[-1]


def target_sm(gpu_module):
    """The sm number of the NVVM target of ``gpu_module`` (90 for sm_90a);
    None for no gpu.module, or one without an NVVM target."""
    if gpu_module is None or "targets" not in gpu_module.attributes:
        return None
    found = re.search(r'#nvvm\.target<[^>]*chip = "sm_(\d+)',
                      str(gpu_module.attributes["targets"]))
    return int(found.group(1)) if found else None


def set_function_type(fn, inputs, results):
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))


def is_block_argument(value):
    return isinstance(value.owner, ir.Block)


def defining_op(value):
    """The op that defines ``value``, or None for a block argument."""
    if is_block_argument(value):
        return None
    return value.owner.operation


def clone_op(op, operands, loc=None):
    """A copy of ``op`` (no regions) at the insertion point, on ``operands``,
    with its attributes and result types."""
    attrs = {op.attributes[i].name: op.attributes[i].attr for i in range(len(op.attributes))}
    return ir.Operation.create(op.name, results=[r.type for r in op.results],
                               operands=list(operands), attributes=attrs, loc=loc)


def constant_int(value):
    """The integer of an ``arith.constant`` integer or index value, else None."""
    number = constant_scalar(value)
    return number if isinstance(number, int) else None


def constant_scalar(value):
    """The number of a scalar ``arith.constant`` (int or float), else None."""
    op = defining_op(value)
    if op is None or op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    if isinstance(attr, ir.IntegerAttr):
        return int(ir.IntegerAttr(attr).value)
    if isinstance(attr, ir.FloatAttr):
        return float(ir.FloatAttr(attr).value)
    return None


def element_bytes(element_type):
    """Bytes per stored element (i1 is stored as one byte)."""
    if not isinstance(element_type, (ir.IntegerType, ir.FloatType)):
        raise LoweringError(f"no storage size for element type {element_type}")
    return max(1, (element_type.width + 7) // 8)


def memref_geometry(type_):
    """(shape, strides in elements, offset in elements) of a static memref type."""
    t = ir.MemRefType(type_)
    shape = list(t.shape)
    strides, offset = t.get_strides_and_offset()
    return shape, list(strides), offset


def memory_order(type_):
    """The dims of static memref type ``type_`` from outermost to innermost
    in memory: by decreasing stride, size-1 dims (which never advance)
    first, ties in logical order."""
    shape, strides, _ = memref_geometry(type_)
    return sorted(range(len(shape)), key=lambda d: (shape[d] != 1, -strides[d], d))


def indexing_maps(op):
    """The AffineMaps of a linalg op's ``indexing_maps``."""
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def body_ops(op):
    """The operations of the single block of ``op``'s first region."""
    return [o.operation for o in op.regions[0].blocks[0].operations]


def row_major_strides(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(int(n), 1)
    return list(reversed(strides))


def i64_array(values):
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.IntegerAttr.get(i64, int(v)) for v in values])


def int_list(attr):
    """Python ints of an ArrayAttr of integers or a DenseI64ArrayAttr."""
    try:
        return [int(ir.IntegerAttr(a).value) for a in ir.ArrayAttr(attr)]
    except (ValueError, TypeError):
        return [int(v) for v in ir.DenseI64ArrayAttr(attr)]


def index(n):
    """An ``index`` arith.constant at the current insertion point."""
    from mlir.dialects import arith

    return arith.constant(ir.IndexType.get(), int(n))


def cluster_launch(blocks, threads, cluster, attributions=(), shared=0):
    """A gpu.launch of ``blocks`` x ``threads`` in thread-block clusters of
    ``cluster`` blocks along x, with the workgroup buffers of types
    ``attributions`` and ``shared`` bytes of dynamic shared memory: (launch
    op, body block). The bindings' LaunchOp builder takes no clusters."""
    from mlir.dialects import arith

    sizes = [index(n) for n in (blocks, 1, 1, threads, 1, 1, cluster, 1, 1)]
    if shared:
        sizes.append(arith.constant(ir.IntegerType.get_signless(32), shared))
    launch = ir.Operation.create(
        "gpu.launch", results=[], operands=sizes, regions=1, attributes={
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([0] + [1] * 9 + [1 if shared else 0]),
            "workgroup_attributions": ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                         len(attributions))})
    # Block ids, thread ids, grid and block sizes, cluster ids and sizes;
    # then the workgroup buffers.
    block = launch.regions[0].blocks.append(*([ir.IndexType.get()] * 18))
    for t in attributions:
        block.add_argument(t, ir.Location.unknown())
    return launch, block


def zero_attr(element_type):
    """The 0 of an integer or float element type, as an attribute."""
    if isinstance(element_type, ir.IntegerType):
        return ir.IntegerAttr.get(element_type, 0)
    return ir.FloatAttr.get(element_type, 0.0)


def is_parallel(iterator):
    """True for a linalg ``parallel`` iterator attribute."""
    return str(iterator).endswith("<parallel>") or str(iterator) == '"parallel"'


# Spin on an mbarrier phase. No suspend-time hint: with one (as
# nvvm.mbarrier.try_wait.parity requires) ptxas puts a NANOSLEEP in the retry
# path, and a phase that completes just after the first try waits it out.
_MBARRIER_WAIT = ("{\n.reg .pred P1;\nLAB_WAIT:\n"
                  "mbarrier.try_wait.parity.shared::cta.b64 P1, [$0], $1;\n"
                  "@P1 bra DONE;\nbra LAB_WAIT;\nDONE:\n}")


def mbarrier_wait(barrier, parity):
    """Block until the phase of ``barrier`` (a shared-memory !llvm.ptr<3>)
    with parity ``parity`` (an i32) completes."""
    from mlir.dialects import llvm

    llvm.inline_asm(None, [barrier, parity], _MBARRIER_WAIT, "r,r", has_side_effects=True)
