"""dnn-io-strides: give the graph function's inputs and outputs the memory
layout their ``dnn.strides`` declare.

Bufferization gives every function argument a row-major (identity layout)
memref. A graph input or output whose declared strides differ (channels-last,
a transposed view) gets a strided memref type instead, and a copy kernel
between it and a row-major buffer: inputs are copied in at the start
(``<graph>_load_<name>``), outputs copied out at the end
(``<graph>_store_<name>``); everything else keeps working on row-major
buffers. Where the strides permute a dense layout (channels-last, a
transposed matrix), the copy is a transpose: a ``linalg.generic`` between
the two types configured ``simt-transpose``, whose tiles read along one
buffer's contiguous dim and write along the other's (a permutation that
keeps the contiguous dim stays a copy for the heuristics). Strides of
size-1 dims do not move any element and are ignored.
Run after dnn-host-to-kernels, on the bufferized graph function; outputs
are the arguments ``buffer-results-to-out-params{add-result-attr}`` marked
``bufferize.result``.

Before::

    func.func @g(%x: memref<2x3x4x5xf32> {dnn.name = "x",
                 dnn.strides = array<i64: 60, 1, 15, 3>}, ...) {
      call @g_k0(%x, ...)

After::

    func.func @g(%x: memref<2x3x4x5xf32, strided<[60, 1, 15, 3]>> {...}, ...) {
      %0 = memref.alloc() : memref<2x3x4x5xf32>
      call @g_load_x(%x, %0)
      call @g_k0(%0, ...)

An input whose only readers are kernels that load it themselves in any
layout is not copied: its strided memref is passed to them as it is. Those
are the kernels configured ``tc-sm90`` (their TMA descriptors describe the
buffer as it lies in memory, so a linear layer's weight stored N x K and read
as K x N needs no transposing copy) or ``tc-sm80`` (its cp.async copies read
rows along whichever of K and M/N is contiguous) or ``simt-transpose`` (its
tiles read and write any strides), each called once, and only when the
strides are a permutation of a dense layout (a transposed view, not a
slice). A slice is passed as it is only to tensor-core attention kernels
(tc-sm90, tc-sm80, carrying dnn.attention) that read it as q, k, v, o or
dO, whose rows TMA can step (tensorcore/attention.py's rows_problem): the
backward of attention reads q, k and v where the forward left them, inside
the qkv projection's buffer (dnnc/torch/aliases.py). Should such a kernel fall back to simt-generic, its loops read the
strided memref all the same. Likewise an output whose only users are
kernels configured ``simt-window`` (a pooling kernel stores each element at
its own strides, channels-last included), ``simt-transpose`` or
``simt-depthwise`` (a depthwise convolution stores channel vectors at the
output's strides), or a convolution configured ``tc-sm90`` or ``tc-sm80``
(an implicit GEMM, whose epilogue stores channels-last rows), or an
attention configured ``tc-sm90`` (its kernels store at the outputs' strides:
o laid out [B, S, H, D] as attention outputs usually are), is not copied
out. An argument that
already has its strided type (dnn-layout-views made views of it) is left as
it is.

Lit test: test/lit/passes/dnn_io_strides.mlir.
"""

import re
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from dnnc.codegen.gpu import irutil, outline
from dnnc.codegen.gpu.tensorcore.attention import argument_role, rows_problem
from dnnc.heuristics.config import Config
from dnnc.passes import DnncPass, register


def declared_strides(fn, index):
    """(name, strides) of argument ``index`` from its dnn.name / dnn.strides."""
    name, strides = f"arg{index}", None
    if "arg_attrs" in fn.attributes:
        attrs = ir.DictAttr(ir.ArrayAttr(fn.attributes["arg_attrs"])[index])
        if "dnn.name" in attrs:
            name = ir.StringAttr(attrs["dnn.name"]).value
        if "dnn.strides" in attrs:
            strides = irutil.int_list(attrs["dnn.strides"])
    return name, strides


def needs_layout(shape, strides):
    """True when ``strides`` place some element elsewhere than row-major does."""
    if strides is None:
        return False
    dense = irutil.row_major_strides(shape)
    return any(n != 1 and s != d for n, s, d in zip(shape, strides, dense))


def _symbol_part(name):
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


OUTPUT_ATTR = "bufferize.result"
TRANSPOSE = "simt-transpose"


def apply(module):
    module = getattr(module, "operation", module)
    with module.context, ir.Location.unknown():
        fn = irutil.graph_function(module)
        graph = irutil.symbol(fn)
        ftype = irutil.function_type(fn)
        block = irutil.body(fn)
        types = list(ftype.inputs)
        first = list(block.operations)[0]
        terminator = list(block.operations)[-1]
        for i, arg in enumerate(block.arguments):
            t = ir.MemRefType(arg.type) if isinstance(arg.type, ir.MemRefType) else None
            name, strides = declared_strides(fn, i)
            if t is None or not needs_layout(list(t.shape), strides):
                continue
            if not isinstance(t.layout, ir.AffineMapAttr):
                continue  # already strided: a view of it is read (dnn-layout-views)
            strided = ir.MemRefType.get(list(t.shape), t.element_type,
                                        layout=ir.StridedLayoutAttr.get(0, strides))
            readers = _strided_readers(module, arg, strides, is_output(fn, i))
            if readers is not None:
                arg.set_type(strided)
                types[i] = strided
                for callee, index in readers:
                    set_argument_type(callee, index, strided)
                continue
            with ir.InsertionPoint(first):
                buf = memref.alloc(t, [], [])
            arg.replace_all_uses_with(buf)
            arg.set_type(strided)
            types[i] = strided
            output = is_output(fn, i)
            base = f"{graph}_{'store' if output else 'load'}_{_symbol_part(name)}"
            where = ir.InsertionPoint(terminator if output else first)
            if _permuted_dense(list(t.shape), strides) and \
                    _moves_innermost(list(t.shape), strides):
                # A transpose between the row-major buffer and the strided
                # argument: simt-transpose's tiles, which read and write
                # any strides. (A copy that keeps the contiguous dim is
                # left to the heuristics: simt-pointwise's vectors.)
                source, dest = (t, strided) if output else (strided, t)
                kernel = outline.permuted_copy_kernel(module, base, source, dest,
                                                      list(range(t.rank)))
                kernel.attributes["dnn.config"] = Config(TRANSPOSE, (256, 1, 1)).to_attr()
                kernel.attributes["dnn.config_reason"] = ir.StringAttr.get(
                    f"created by dnn-io-strides after the heuristics: moves graph "
                    f"{'output' if output else 'input'} '{name}' between its declared "
                    f"strides {list(strides)} and the row-major buffer the kernels use")
            else:
                kernel = outline.copy_kernel(module, base, t, strided) if output else \
                    outline.copy_kernel(module, base, strided, t)
            with where:
                outline.call(kernel, [buf, arg] if output else [arg, buf])
        irutil.set_function_type(fn, types, list(ftype.results))


# Strategies whose kernels read an input in whatever layout it has.
LAYOUT_FREE = ("tc-sm90", "tc-sm80", "simt-window", "simt-transpose", "simt-depthwise",
               "simt-gemm", "simt-gemv")
# Those whose kernels also write an output in whatever layout it has; and a
# tensor-core convolution (a kernel function with IMPLICIT_GEMM's attribute
# configured one of IMPLICIT_GEMM_STRATEGIES), whose epilogue stores
# channels-last rows.
LAYOUT_FREE_OUTPUTS = ("simt-window", "simt-transpose", "simt-depthwise")
IMPLICIT_GEMM = "dnn.conv"
IMPLICIT_GEMM_STRATEGIES = ("tc-sm90", "tc-sm80")
# A tc-sm90 attention kernel (sm90/flash.py, flash_backward.py) stores its
# outputs through their memrefs' strides too (TMA in memory order, or
# vector stores).
ATTENTION = "dnn.attention"
# The attention operands its kernels read by TMA rows (rows_problem).
ATTENTION_INPUTS = ("q", "k", "v", "o", "do")



def call_counts(module):
    """{function name: number of func.call ops calling it} in ``module``."""
    calls = {}
    for f in irutil.functions(module):
        for op in irutil.ops(f, "func.call"):
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            calls[callee] = calls.get(callee, 0) + 1
    return calls


def layout_free_reader(use, functions, calls, strategies=LAYOUT_FREE):
    """(kernel function, argument index) when ``use`` is an operand of a
    call to a kernel whose strategy is one of ``strategies`` (those that read
    any layout: LAYOUT_FREE) and is called once (so retyping its argument
    changes no other call); None otherwise."""
    op = use.owner
    if op.name != "func.call":
        return None
    callee = functions.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
    config = None if callee is None else Config.of_kernel(callee)
    if config is None or calls[irutil.symbol(callee)] != 1:
        return None
    if config.strategy not in strategies and not (
            config.strategy in IMPLICIT_GEMM_STRATEGIES and IMPLICIT_GEMM in callee.attributes) \
            and not (config.strategy == "tc-sm90" and ATTENTION in callee.attributes):
        return None
    return callee, use.operand_number


def _strided_readers(module, arg, strides, output=False):
    """[(kernel function, argument index)] of every use of graph input
    ``arg`` when each is a layout-free reader (layout_free_reader) and
    ``strides`` are a permutation of a dense layout; None when the input
    needs its copy. For a graph ``output`` the kernels must write any
    layout too (LAYOUT_FREE_OUTPUTS)."""
    shape = list(ir.MemRefType(arg.type).shape)
    functions = {irutil.symbol(f): f for f in irutil.functions(module)}
    calls = call_counts(module)
    if not _permuted_dense(shape, strides):
        return None if output else _attention_readers(arg, strides, functions, calls)
    strategies = LAYOUT_FREE_OUTPUTS if output else LAYOUT_FREE
    readers = [layout_free_reader(use, functions, calls, strategies) for use in arg.uses]
    return readers if readers and None not in readers else None


def _attention_readers(arg, strides, functions, calls):
    """[(kernel function, argument index)] of every use of graph input
    ``arg``, whose ``strides`` are not dense (q, k or v of a backward, a
    slice of the qkv projection the forward returned as a view), when each
    is a tensor-core attention kernel that reads it through TMA at those
    strides (tensorcore/attention.py's rows_problem); None otherwise. A
    ragged (packed, THD) attention keeps the copy: its offsets address the
    rows of the declared layout, and that path through a strided input has
    not run on a GPU."""
    t = ir.MemRefType(arg.type)
    strided = ir.MemRefType.get(list(t.shape), t.element_type,
                                layout=ir.StridedLayoutAttr.get(0, strides))
    readers = []
    for use in arg.uses:
        found = layout_free_reader(use, functions, calls, ("tc-sm90", "tc-sm80"))
        if found is None or ATTENTION not in found[0].attributes:
            return None
        callee, index = found
        if "ragged_strides" in ir.DictAttr(callee.attributes[ATTENTION]):
            return None
        role = argument_role(callee, index)
        if role is None or role not in ATTENTION_INPUTS or rows_problem(role, strided):
            return None
        readers.append(found)
    return readers or None


def _moves_innermost(shape, strides):
    """True when ``strides`` make another dim than the row-major innermost
    (the last of more than one element) contiguous."""
    dims = [d for d, n in enumerate(shape) if n != 1]
    return bool(dims) and strides[dims[-1]] != 1


def _permuted_dense(shape, strides):
    """True when ``strides`` lay ``shape`` out densely in some dim order."""
    dims = sorted((d for d, n in enumerate(shape) if n != 1), key=lambda d: strides[d])
    step = 1
    for d in dims:
        if strides[d] != step:
            return False
        step *= shape[d]
    return True


def set_argument_type(fn, index, type_):
    arg = irutil.body(fn).arguments[index]
    arg.set_type(type_)
    retype_views(arg)
    ftype = irutil.function_type(fn)
    inputs = list(ftype.inputs)
    inputs[index] = type_
    irutil.set_function_type(fn, inputs, list(ftype.results))


def _reshaped_layout(op, source):
    """The strided layout of the result of ``op`` (a memref.expand_shape or
    collapse_shape) of a ``source`` of strided memref type, as MLIR infers
    it: an expanded group's innermost dim keeps the source dim's stride and
    each outer one steps over the dims inside it; a collapsed group takes its
    innermost stride that moves (a dim of more than one element)."""
    shape, strides, offset = irutil.memref_geometry(source.type)
    out = ir.MemRefType(op.results[0].type)
    groups = [irutil.int_list(g) for g in ir.ArrayAttr(op.attributes["reassociation"])]
    result = [0] * out.rank
    if op.name == "memref.expand_shape":
        for src, group in enumerate(groups):
            step = strides[src]
            for d in reversed(group):
                result[d] = step
                step *= out.shape[d]
    else:
        for dst, group in enumerate(groups):
            moving = [d for d in group if shape[d] != 1] or group
            result[dst] = strides[moving[-1]]
    return ir.StridedLayoutAttr.get(offset, result)


def retype_views(value):
    """Give the reshapes of ``value`` (memref.expand_shape and
    collapse_shape, and theirs in turn) the layout their source now has,
    after ``value`` was retyped from row-major to strided."""
    for use in list(value.uses):
        op = use.owner
        if op.name not in ("memref.expand_shape", "memref.collapse_shape") \
                or use.operand_number != 0:
            continue
        result = op.results[0]
        t = ir.MemRefType(result.type)
        result.set_type(ir.MemRefType.get(list(t.shape), t.element_type,
                                          layout=_reshaped_layout(op, value),
                                          memory_space=t.memory_space))
        retype_views(result)


def is_output(fn, index):
    """Outputs are the out-parameters ``buffer-results-to-out-params
    {add-result-attr}`` marked ``bufferize.result``."""
    if "arg_attrs" not in fn.attributes:
        return False
    return OUTPUT_ATTR in ir.DictAttr(ir.ArrayAttr(fn.attributes["arg_attrs"])[index])


@register
@dataclass
class DnnIoStrides(DnncPass):
    NAME = "dnn-io-strides"

    def run(self, module):
        apply(module)
