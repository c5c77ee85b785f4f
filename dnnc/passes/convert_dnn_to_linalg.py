"""convert-dnn-to-linalg: rewrite every dnn op into linalg-on-tensors, tensor,
arith and math ops, in every func.func of the module.

1. Composite ops (normalizations, softmax, attention) are first expanded into
   primitive ops by ``dnnc.decompose.expand_all`` when that module exists; any
   composite op left is an UnsupportedError naming it. An sdpa that is a
   kernel function's whole work is first recorded on the function
   (``dnn.attention``, dnnc/codegen/linalg/attention.py) for the
   tensor-core attention kernel.
2. i1 tensors are stored as i8 once lowered (i1 memrefs do not lower to LLVM):
   function signatures and func.call results are retyped first.
3. Each dnn op, in program order, is replaced by what
   ``dnnc.codegen.linalg.LOWERINGS`` emits for it, and erased.
4. int8 / uint8 tensors, typed si8 / ui8 through the lowering so that they
   are not taken for booleans' i8 storage, are retyped to i8 (their storage;
   arith and everything after this pass take signless integers only), and
   the casts the bodies read them through (``emit.signless``) go away.
5. The graph function (marked ``dnn.graph``) gets ``llvm.emit_c_interface`` so
   the ExecutionEngine can call it with memref descriptors.

Lit test: test/lit/passes/convert_dnn_to_linalg.mlir (the shape of the IR);
test/python/test_cpu_ops.py runs every lowering against the reference.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.dialect import builders
from dnnc.dialect import opdef as _opdef
from dnnc.errors import DnncError, LoweringError, UnsupportedError
from dnnc.passes import DnncPass, register
from dnnc.passes.dnn_verify import dnn_ops

try:
    from dnnc.decompose import expand_all
except ImportError:
    expand_all = None


def _functions(module):
    body = module.regions[0].blocks[0]
    return [op for op in body.operations if op.operation.name == "func.func"]


def _check_supported(module):
    from dnnc.codegen.linalg import COMPOSITE_FAMILIES, LOWERINGS

    for op in dnn_ops(module):
        d = _opdef.get(op.name)
        if d.name in LOWERINGS:
            continue
        if d.family in COMPOSITE_FAMILIES:
            raise UnsupportedError(
                f"convert-dnn-to-linalg: '{d.mlir_name}' is not a primitive op; run "
                "dnn-decompose{all=true} first")
        raise UnsupportedError(
            f"convert-dnn-to-linalg: '{d.mlir_name}' has no linalg lowering")


# ----------------------------------------------------------------------------
# i1 -> i8 storage at function boundaries


def _storage(t):
    if isinstance(t, ir.RankedTensorType) and str(t.element_type) == "i1":
        return ir.RankedTensorType.get(list(t.shape), ir.IntegerType.get_signless(8))
    return t


def _retype_signatures(module):
    for fn in _functions(module):
        ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        inputs = [_storage(t) for t in ftype.inputs]
        results = [_storage(t) for t in ftype.results]
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))
        if len(fn.regions[0].blocks):
            for arg in fn.regions[0].blocks[0].arguments:
                arg.set_type(_storage(arg.type))
    calls = []

    def visit(op):
        if op.name == "func.call":
            calls.append(op)
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    visit(inner.operation)

    visit(module)
    for call in calls:
        types = [_storage(r.type) for r in call.results]
        if all(t == r.type for t, r in zip(types, call.results)):
            continue
        new = ir.Operation.create(
            "func.call", results=types, operands=list(call.operands),
            attributes=dict(call.attributes.items()), loc=call.location,
            ip=ir.InsertionPoint(call))
        for old, value in zip(call.results, new.results):
            old.replace_all_uses_with(value)
        call.erase()


# ----------------------------------------------------------------------------
# Lowering


def _lower_op(op):
    from dnnc.codegen.linalg import LOWERINGS

    view = builders.read(op)
    view.attrs = _opdef.complete_attrs(view.opdef, view.attrs)
    _describe_conv(op, view)
    try:
        with ir.InsertionPoint(op), op.location:
            results = LOWERINGS[view.name](view)
    except DnncError:
        raise
    except Exception as err:  # a lowering bug: report it against the op
        raise LoweringError(f"convert-dnn-to-linalg: lowering '{view.opdef.mlir_name}' failed: "
                            f"{type(err).__name__}: {err}") from err
    for name, value in view.results.items():
        if value is not None:
            value.replace_all_uses_with(results[name])
    op.erase()


def _describe_conv(op, view):
    """A convolution in a kernel function: record its geometry on the
    function (``dnn.conv``, conv.describe), which the tensor-core kernels
    read after the linalg form has folded it into indexing maps."""
    from dnnc.codegen.linalg import conv

    fn = op.parent
    if view.name not in conv.OPERANDS or fn.name != "func.func" \
            or "dnn.kernel" not in fn.attributes:
        return
    arguments = list(fn.regions[0].blocks[0].arguments)
    fn.attributes["dnn.conv"] = conv.describe(view, arguments)


def _describe_attention(op):
    """An sdpa or sdpa_backward that is a kernel's whole work: record it on the function
    (``dnn.attention``, linalg/attention.describe) before its expansion, for
    the tensor-core attention kernel."""
    from dnnc.codegen.linalg import attention

    fn = op.parent
    if op.name not in ("dnn.sdpa", "dnn.sdpa_backward") or fn.name != "func.func" \
            or "dnn.kernel" not in fn.attributes:
        return
    described = attention.describe(builders.read(op), fn)
    if described is not None:
        fn.attributes[attention.ATTR] = described


# ----------------------------------------------------------------------------
# si8 / ui8 -> i8 storage everywhere, once the lowering is done


def _byte_storage(t):
    """``t`` with an si8 / ui8 element type (tensor or scalar) made i8; None
    when it has none."""
    i8 = ir.IntegerType.get_signless(8)
    if isinstance(t, ir.IntegerType):
        return i8 if t.width == 8 and not t.is_signless else None
    if isinstance(t, ir.RankedTensorType):
        element = _byte_storage(t.element_type)
        return ir.RankedTensorType.get(list(t.shape), element) if element else None
    return None


def _retype_bytes(module):
    """Give every si8 / ui8 value of the lowered module the i8 type; a cast
    between si8 / ui8 and i8 becomes an identity and is removed."""
    for fn in _functions(module):
        ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        inputs = [_byte_storage(t) or t for t in ftype.inputs]
        results = [_byte_storage(t) or t for t in ftype.results]
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))
    casts = []

    def visit(op):
        for region in op.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    new = _byte_storage(arg.type)
                    if new is not None:
                        arg.set_type(new)
                for inner in block.operations:
                    inner = inner.operation
                    for r in inner.results:
                        new = _byte_storage(r.type)
                        if new is not None:
                            r.set_type(new)
                    if inner.name == "builtin.unrealized_conversion_cast":
                        casts.append(inner)
                    visit(inner)

    visit(module)
    for cast in casts:
        source, result = cast.operands[0], cast.results[0]
        if source.type == result.type:
            result.replace_all_uses_with(source)
            cast.erase()


def _mark_entry(module):
    funcs = _functions(module)
    marked = [f for f in funcs if "dnn.graph" in f.attributes]
    if not marked:
        marked = [f for f in funcs if "dnn.kernel" not in f.attributes
                  and "sym_visibility" not in f.attributes]
    for fn in marked:
        fn.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()


def convert(module):
    """Run the conversion on a module operation, in place."""
    module = getattr(module, "operation", module)
    with module.context, ir.Location.unknown():
        for op in dnn_ops(module):
            _describe_attention(op)
    if expand_all is not None:
        expand_all(module)
    _check_supported(module)
    with module.context, ir.Location.unknown():
        _retype_signatures(module)
        for op in dnn_ops(module):
            _lower_op(op)
        _retype_bytes(module)
        _mark_entry(module)


@register
@dataclass
class ConvertDnnToLinalg(DnncPass):
    NAME = "convert-dnn-to-linalg"

    def run(self, module):
        convert(module)
