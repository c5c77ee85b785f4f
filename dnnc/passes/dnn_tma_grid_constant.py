"""dnn-tma-grid-constant: pass each TMA descriptor to its kernel by value.

A kernel function of the tensor-core GEMM strategy makes its TMA
descriptors on the host (``nvgpu.tma.create.descriptor``) and hands the
kernel their address, ``builtin.unrealized_conversion_cast`` to
``!llvm.ptr``. The runtime passes the 128-byte CUtensorMap itself, by value
(host_plan records a ``tma`` argument), and TMA instructions need it in the
parameter space: the kernel's parameter must be ``.param .align 64 .b8
NAME[128]``, whose address (``cvta.param``) the kernel uses.

This pass runs in the ``nvvm`` stage after ``convert-gpu-to-nvvm`` (kernels
are ``llvm.func`` with ``nvvm.kernel`` in their ``gpu.module``, with one
parameter per kernel operand: the bare-pointer convention; the host still has
``gpu.launch_func``). For every launch operand that is such a cast, it marks
the kernel's argument at that position ``llvm.byval = !llvm.array<128 x i8>``,
``llvm.align = 64`` and ``nvvm.grid_constant``, which the NVPTX backend
turns into that parameter. Other arguments and their attributes stay. A
kernel launched with a descriptor at some position by one launch and with
anything else there by another, a launched kernel that is not an
``llvm.func`` of the right arity, or a descriptor argument that is not
``!llvm.ptr`` in the kernel, is a LoweringError.

Before::

    %p = builtin.unrealized_conversion_cast %d : !nvgpu.tensormap.descriptor<...> to !llvm.ptr
    gpu.launch_func @m::@k blocks in (...) threads in (...) args(%p : !llvm.ptr, %x : memref<4xf32>)
    gpu.module @m {
      llvm.func @k(%arg0: !llvm.ptr, %arg1: !llvm.ptr) attributes {nvvm.kernel} {...}
    }

After::

    gpu.module @m {
      llvm.func @k(%arg0: !llvm.ptr {llvm.align = 64 : i64,
                                     llvm.byval = !llvm.array<128 x i8>,
                                     nvvm.grid_constant},
                   %arg1: !llvm.ptr) attributes {nvvm.kernel} {...}
    }

Lit test: test/lit/passes/dnn_tma_grid_constant.mlir.
"""

from dataclasses import dataclass

from mlir import ir

from dnnc.codegen.gpu import irutil
from dnnc.errors import LoweringError
from dnnc.passes import DnncPass, register

DESCRIPTOR_PREFIX = "!nvgpu.tensormap.descriptor<"
DESCRIPTOR_BYTES = 128
DESCRIPTOR_ALIGN = 64


def _is_descriptor_address(value):
    """True for the result of an unrealized_conversion_cast of a TMA
    descriptor (the host's ``!llvm.ptr`` for it)."""
    op = irutil.defining_op(value)
    return (op is not None and op.name == "builtin.unrealized_conversion_cast"
            and len(op.operands) == 1
            and str(op.operands[0].type).startswith(DESCRIPTOR_PREFIX))


def _kernels(module):
    """{(gpu.module name, function name): op} of the functions in gpu.modules."""
    found = {}
    for gm in irutil.body(module).operations:
        gm = gm.operation
        if gm.name != "gpu.module":
            continue
        for f in irutil.body(gm).operations:
            f = f.operation
            if "sym_name" in f.attributes:
                found[(irutil.symbol(gm), irutil.symbol(f))] = f
    return found


def _descriptor_positions(module):
    """{(module, kernel): set of argument positions that get a descriptor},
    checking that every launch of a kernel agrees."""
    seen = {}  # (module, kernel) -> (positions, number of operands, first launch)
    for launch in irutil.launches(module):
        ref = ir.SymbolRefAttr(launch.attributes["kernel"])
        parts = list(ref.value)
        key = (parts[0], parts[-1])
        operands = list(launch.opview.kernelOperands)
        positions = {i for i, v in enumerate(operands) if _is_descriptor_address(v)}
        if key not in seen:
            seen[key] = (positions, len(operands), launch)
            continue
        first, _, first_launch = seen[key]
        if first != positions:
            i = min(first ^ positions)
            with_descriptor, other = (first_launch, launch) if i in first else \
                (launch, first_launch)
            raise LoweringError(f"dnn-tma-grid-constant: kernel @{key[0]}::@{key[1]} gets a "
                                f"TMA descriptor as argument {i} from the launch at "
                                f"{with_descriptor.location} but not from the launch at "
                                f"{other.location}")
    return {key: (positions, count) for key, (positions, count, _) in seen.items()
            if positions}


def _merge(attrs, extra):
    """A DictAttr with ``attrs``' entries and ``extra`` (name -> attr) set."""
    entries = {}
    if attrs is not None:
        d = ir.DictAttr(attrs)
        for i in range(len(d)):
            entries[d[i].name] = d[i].attr
    entries.update(extra)
    return ir.DictAttr.get(entries)


def mark(module):
    module = getattr(module, "operation", module)
    wanted = _descriptor_positions(module)
    if not wanted:
        return
    kernels = _kernels(module)
    with module.context:
        i8 = ir.IntegerType.get_signless(8)
        extra = {
            "llvm.byval": ir.TypeAttr.get(
                ir.Type.parse(f"!llvm.array<{DESCRIPTOR_BYTES} x {i8}>")),
            "llvm.align": ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                             DESCRIPTOR_ALIGN),
            "nvvm.grid_constant": ir.UnitAttr.get(),
        }
        for key, (positions, count) in sorted(wanted.items()):
            name = f"@{key[0]}::@{key[1]}"
            fn = kernels.get(key)
            if fn is None or fn.name != "llvm.func" or not len(fn.regions[0].blocks):
                what = "not found" if fn is None else f"a {fn.name}" \
                    if fn.name != "llvm.func" else "an external llvm.func"
                raise LoweringError(f"dnn-tma-grid-constant: kernel {name}, launched with a "
                                    f"TMA descriptor, is {what}: expected an llvm.func (run "
                                    "after convert-gpu-to-nvvm)")
            inputs = [a.type for a in irutil.body(fn).arguments]
            if len(inputs) != count:
                raise LoweringError(f"dnn-tma-grid-constant: kernel {name} has {len(inputs)} "
                                    f"parameters, its launches pass {count} operands (expected "
                                    "the bare-pointer convention: one parameter per operand)")
            for i in sorted(positions):
                if str(inputs[i]) != "!llvm.ptr":
                    raise LoweringError(f"dnn-tma-grid-constant: kernel {name} argument {i} "
                                        f"gets a TMA descriptor but has type {inputs[i]}, "
                                        "expected !llvm.ptr")
            old = list(ir.ArrayAttr(fn.attributes["arg_attrs"])) \
                if "arg_attrs" in fn.attributes else [None] * len(inputs)
            new = [_merge(a, extra) if i in positions else (a or ir.DictAttr.get({}))
                   for i, a in enumerate(old)]
            fn.attributes["arg_attrs"] = ir.ArrayAttr.get(new)


@register
@dataclass
class DnnTmaGridConstant(DnncPass):
    NAME = "dnn-tma-grid-constant"

    def run(self, module):
        mark(module)
