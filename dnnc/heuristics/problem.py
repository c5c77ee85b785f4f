"""The problem a kernel solves, as the heuristics see it.

A ``Problem`` is plain data (frozen, hashable: a tuning database can key on
it): the kernel's anchor op and the dnn ops fused with it, the shapes and
element types of the kernel's arguments and results and of the anchor's
operands and results, the anchor's attributes, and the GPU architecture.
``problem_of`` reads one from a ``dnn.kernel`` function of the fused stage
(tensors); it also accepts a bufferized kernel function (memrefs, no dnn ops
left), where only the signature and the ``dnn.anchor`` name are known.
"""

from dataclasses import dataclass

# Streaming multiprocessors of the reference part of each architecture
# (A100 SXM, H100 SXM): how many blocks one wave of a grid runs at once.
SMS = {"sm_80": 108, "sm_90a": 132}

DTYPE_BYTES = {"f64": 8, "f32": 4, "tf32": 4, "f16": 2, "bf16": 2, "f8E4M3FN": 1,
               "f8E5M2": 1, "i64": 8, "i32": 4, "i8": 1, "si8": 1, "ui8": 1, "i1": 1, "index": 8}

# Anchors that are not op names (dnn-fuse): a pointwise chain, and
# reshape / transpose / slice kernels.
PSEUDO_FAMILIES = {"pointwise": "pointwise", "tensor": "tensor"}


@dataclass(frozen=True)
class TensorSpec:
    """Shape and element type of one tensor (or memref) value."""

    shape: tuple
    dtype: str

    @property
    def elements(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def element_bytes(self):
        return DTYPE_BYTES.get(self.dtype, 4)

    def __str__(self):
        return "x".join(map(str, self.shape)) + ("x" if self.shape else "") + self.dtype


@dataclass(frozen=True)
class Problem:
    """One kernel's problem; see the module docstring."""

    kernel: str                 # the kernel function's name (@main_k0_matmul)
    anchor: str                 # dnn.anchor: an op name, "pointwise" or "tensor"
    ops: tuple = ()             # the dnn op names in the kernel, program order
    inputs: tuple = ()          # TensorSpec of each kernel argument
    outputs: tuple = ()         # TensorSpec of each kernel result
    arch: str = "sm_90a"
    anchor_inputs: tuple = ()   # TensorSpec of the anchor op's operands
    anchor_outputs: tuple = ()  # and of its results
    anchor_attrs: tuple = ()    # (name, value) of the anchor's attributes, sorted
    column_sums: int = 0        # reductions over the leading dims beside the anchor's
    # Anchor operands computed in the kernel by pointwise ops from a kernel
    # argument (a matmul's operand prologue): (operand index, the argument's
    # element type), in operand order.
    prologues: tuple = ()

    @property
    def family(self):
        """The op family of the anchor (dnnc.dialect's families: pointwise,
        tensor, matmul, conv, attention, norm, softmax, reduction, pooling),
        or "generic" for an anchor that is no known op."""
        if self.anchor in PSEUDO_FAMILIES:
            return PSEUDO_FAMILIES[self.anchor]
        from dnnc import dialect
        from dnnc.errors import VerificationError

        try:
            return dialect.get(self.anchor).family
        except VerificationError:
            return "generic"

    @property
    def sms(self):
        return SMS.get(self.arch, SMS["sm_90a"])

    @property
    def output_elements(self):
        """Elements of the kernel's largest result (its widest launch, when
        each thread makes one element)."""
        return max((t.elements for t in self.outputs), default=1)

    @property
    def dtype(self):
        """The element type of the anchor's first operand (else of the first
        result): what a tensor-core or vector strategy would load."""
        for group in (self.anchor_inputs, self.inputs, self.outputs):
            if group:
                return group[0].dtype
        return "f32"

    def attr(self, name, default=None):
        """The anchor's attribute ``name`` as a Python value."""
        return dict(self.anchor_attrs).get(name, default)


# ----------------------------------------------------------------------------
# From IR


def _spec(type_):
    from mlir import ir

    if isinstance(type_, ir.ShapedType):
        return TensorSpec(tuple(int(d) for d in type_.shape), str(type_.element_type))
    return TensorSpec((), str(type_))


def _python_value(attr):
    """A Python value for the attribute kinds dnn ops use; text otherwise."""
    from mlir import ir

    for kind, convert in ((ir.BoolAttr, lambda a: bool(a.value)),
                          (ir.IntegerAttr, lambda a: int(a.value)),
                          (ir.FloatAttr, lambda a: float(a.value)),
                          (ir.StringAttr, lambda a: a.value),
                          (ir.DenseI64ArrayAttr, lambda a: tuple(int(v) for v in a)),
                          (ir.TypeAttr, lambda a: str(a.value))):
        if isinstance(attr, kind):
            return convert(attr)
    return str(attr)


def _anchor_op(dnn_ops, anchor):
    """The op the kernel is built around: the one named ``anchor``, else the
    first that is not a constant (a pointwise chain's head)."""
    for op in dnn_ops:
        if op.name == f"dnn.{anchor}":
            return op
    for op in dnn_ops:
        if op.name != "dnn.constant":
            return op
    return None


SEGMENT_ATTRS = ("operandSegmentSizes", "resultSegmentSizes")


def problem_of(kernel_func, arch):
    """The Problem of a ``dnn.kernel`` function (an ``mlir.ir`` func.func op)."""
    from mlir import ir

    from dnnc.codegen.gpu import irutil

    fn = getattr(kernel_func, "operation", kernel_func)
    with fn.context:
        name = irutil.symbol(fn)
        anchor = (ir.StringAttr(fn.attributes["dnn.anchor"]).value
                  if "dnn.anchor" in fn.attributes else "")
        ftype = irutil.function_type(fn)
        dnn_ops = [op for op in irutil.ops(fn) if op.name.startswith("dnn.")]
        op = _anchor_op(dnn_ops, anchor)
        if not anchor and op is not None:
            anchor = op.name[4:]
        attrs = ()
        if op is not None:
            named = [op.attributes[i] for i in range(len(op.attributes))]
            attrs = tuple(sorted((a.name, _python_value(a.attr)) for a in named
                                 if a.name not in SEGMENT_ATTRS))
        return Problem(
            kernel=name,
            anchor=anchor,
            ops=tuple(o.name[4:] for o in dnn_ops),
            inputs=tuple(_spec(t) for t in ftype.inputs),
            outputs=tuple(_spec(t) for t in ftype.results),
            arch=arch,
            anchor_inputs=tuple(_spec(v.type) for v in op.operands) if op else (),
            anchor_outputs=tuple(_spec(v.type) for v in op.results) if op else (),
            anchor_attrs=attrs,
            column_sums=sum(1 for o in dnn_ops if o is not op and _column_sum(o)),
            prologues=_prologues(op) if op is not None and anchor in ("matmul", "conv_fprop")
            else (),
        )


def _prologues(op):
    """(operand index, stored element type) of each operand of ``op`` that
    pointwise ops of its kernel compute from one kernel argument of its
    shape (their other operands constants, or per-channel tensors: a
    convolution's scale and shift)."""
    from mlir import ir

    from dnnc.codegen.gpu import irutil

    out = []
    for index, value in enumerate(list(op.operands)[:2]):
        chain = False
        shape = list(ir.ShapedType(value.type).shape)
        while not irutil.is_block_argument(value):
            producer = irutil.defining_op(value)
            inputs = [v for v in producer.operands
                      if (irutil.is_block_argument(v)
                          or irutil.defining_op(v).name != "dnn.constant")
                      and list(ir.ShapedType(v.type).shape) == shape]
            if not producer.name.startswith("dnn.") or len(inputs) != 1:
                break
            value, chain = inputs[0], True
        if chain and irutil.is_block_argument(value):
            out.append((index, _spec(value.type).dtype))
    return tuple(out)


def _column_sum(op):
    """True for a dnn.reduction over one run of dims of its operand, keeping
    the innermost (leading dims: dnn-fuse puts those of a norm backward
    beside its dx; middle ones: reductions of one input share a kernel)."""
    from mlir import ir

    if op.name != "dnn.reduction" or "axes" not in op.attributes:
        return False
    rank = len(ir.ShapedType(op.operands[0].type).shape)
    axes = sorted(int(a) for a in ir.DenseI64ArrayAttr(op.attributes["axes"]))
    return rank > 1 and bool(axes) and axes == list(range(axes[0], axes[-1] + 1)) and \
        axes[-1] < rank - 1
