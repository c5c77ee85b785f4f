"""CPU execution: compile a dnn module to LLVM and run it with MLIR's
ExecutionEngine.

    exe = dnnc.targets.cpu.compile_module(graph.to_module())
    outs = exe(x=x_array, w=w_array)   # {output name: array}

``compile_module`` runs the CPU pipeline (``dnnc.pipelines``) from its
``linalg`` stage on: the dnn ops become linalg on tensors, are bufferized
(results become out-parameters) and lowered to the LLVM dialect. The graph
function is called through its C interface: one pointer to a memref
descriptor per input, then one per output.

Inputs are NumPy arrays of each input's own dtype and dims, checked by the
rule the GPU runtime applies to NumPy arrays (cpu_arguments.py): nothing is
converted, and a wrong one is an ``ArgumentError`` naming it. A runtime
scalar (``Graph.scalar``) takes a number, read as the GPU runtime reads one
(dnnc_runtime/scalars.py), and crosses as a rank-0 f32 memref. Arrays cross in
their logical (row-major, C-contiguous) layout. Storage per element type: f32
and f16 as themselves, bf16 as 16 bits, fp8 as 8 bits and booleans as one
byte (0 or 1) per element.
"""

import ctypes
import os
from dataclasses import dataclass

import numpy as np
from mlir import ir

from dnnc import pipelines
from dnnc.dialect import builders
from dnnc.dialect.types import as_data_type, data_type
from dnnc.dialect.walk import by_value_arguments, entry_function
from dnnc.errors import LoweringError
from dnnc.targets import cpu_arguments

# Where the CPU pipeline takes over from the dnn-level front half.
FIRST_STAGE = "linalg"


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple
    dtype: data_type
    strides: tuple = None  # the graph's dnn.strides (None: not given, row-major)
    by_value: bool = False  # a runtime scalar: the call passes a number (Graph.scalar)


@dataclass(frozen=True)
class Signature:
    """The graph function's name, inputs and outputs, in call order."""

    function: str
    inputs: tuple
    outputs: tuple


def signature_of(module):
    """The Signature of a dnn-level module's graph function."""
    with module.context:
        fn = entry_function(module)
        name = ir.StringAttr(fn.attributes["sym_name"]).value
        ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        arg_names = _names(fn, "arg_attrs", len(ftype.inputs), "input")
        res_names = _names(fn, "res_attrs", len(ftype.results), "output")
        arg_strides = _strides(fn, "arg_attrs", len(ftype.inputs))
        res_strides = _strides(fn, "res_attrs", len(ftype.results))
        scalars = set(by_value_arguments(fn))
        inputs = tuple(_spec(*a, by_value=i in scalars)
                       for i, a in enumerate(zip(arg_names, ftype.inputs, arg_strides)))
        outputs = tuple(_spec(*a) for a in zip(res_names, ftype.results, res_strides))
    return Signature(name, inputs, outputs)


def _specs(items):
    return tuple(TensorSpec(str(n), tuple(int(d) for d in shape), as_data_type(dtype))
                 for n, shape, dtype in items)


def _names(fn, key, count, prefix):
    names = [f"{prefix}{i}" for i in range(count)]
    if key in fn.attributes:
        for i, attrs in enumerate(fn.attributes[key]):
            attrs = ir.DictAttr(attrs)
            if "dnn.name" in attrs:
                names[i] = ir.StringAttr(attrs["dnn.name"]).value
    return names


def _strides(fn, key, count):
    """Each argument's (or result's) ``dnn.strides``, None where not given."""
    strides = [None] * count
    if key in fn.attributes:
        for i, attrs in enumerate(fn.attributes[key]):
            attrs = ir.DictAttr(attrs)
            if "dnn.strides" in attrs:
                strides[i] = tuple(ir.DenseI64ArrayAttr(attrs["dnn.strides"]))
    return strides


def _spec(name, type_, strides=None, by_value=False):
    info = builders.info_of(type_)
    return TensorSpec(name, tuple(info.shape), info.dtype, strides, by_value)


def compile_module(module, dump_ir=None, basename="graph"):
    """Compile a dnn-level module (any stage before ``linalg``) for the CPU.

    The module is not modified: a copy is lowered. With ``dump_ir`` (a
    directory), each stage's IR is written there as ``<basename>.<stage>.mlir``.
    Raises the pass's DnncError, or LoweringError when LLVM translation fails.
    """
    from dnnc.passes import run_pipeline

    signature = signature_of(module)
    work = _copy(module)
    stages = pipelines.get("cpu")
    names = [s.name for s in stages]
    for stage in stages[names.index(FIRST_STAGE):]:
        run_pipeline(work, stage.pipeline)
        if dump_ir:
            os.makedirs(dump_ir, exist_ok=True)
            with open(os.path.join(dump_ir, f"{basename}.{stage.name}.mlir"), "w") as f:
                f.write(str(work))
    return CpuExecutable(work, signature)


def _copy(module):
    """A new Module holding a clone of ``module``'s contents (no round trip
    through text, which would lose locations and re-verify)."""
    with module.context, ir.Location.unknown():
        work = ir.Module.create()
        clone = module.operation.clone()
        for op in list(clone.regions[0].blocks[0].operations):
            work.body.append(op)
        for name, attr in clone.attributes.items():
            work.operation.attributes[name] = attr
        clone.erase()
    return work


# ----------------------------------------------------------------------------
# Memref descriptors


_DESCRIPTORS = {}


def _descriptor_class(rank):
    if rank not in _DESCRIPTORS:
        fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                  ("offset", ctypes.c_longlong)]
        if rank:
            fields += [("shape", ctypes.c_longlong * rank), ("strides", ctypes.c_longlong * rank)]
        _DESCRIPTORS[rank] = type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})
    return _DESCRIPTORS[rank]


def _descriptor(array):
    """Descriptor of a C-contiguous array (strides counted in elements)."""
    d = _descriptor_class(array.ndim)()
    d.allocated = d.aligned = array.ctypes.data
    d.offset = 0
    if array.ndim:
        step, strides = 1, []
        for n in reversed(array.shape):
            strides.append(step)
            step *= max(n, 1)
        d.shape[:] = list(array.shape)
        d.strides[:] = list(reversed(strides))
    return d


def _storage_view(array, dtype):
    """The bytes the compiled code reads, as a plain NumPy dtype."""
    if dtype is data_type.BOOLEAN or dtype.itemsize == 1:
        return array.view(np.uint8)
    if dtype is data_type.BFLOAT16:
        return array.view(np.uint16)
    return array


class CpuExecutable:
    """A graph compiled for the CPU; call it with NumPy arrays."""

    def __init__(self, llvm_module, signature, opt_level=2):
        from mlir.execution_engine import ExecutionEngine

        if not isinstance(signature, Signature):  # ([(name, shape, dtype)], [...])
            inputs, outputs = signature
            signature = Signature("main", _specs(inputs), _specs(outputs))
        self.signature = signature
        self.module = llvm_module
        _check_runtime_calls(llvm_module)
        try:
            with llvm_module.context:
                self._engine = ExecutionEngine(llvm_module, opt_level=opt_level)
            # Materializing the code happens here; an unresolved symbol makes
            # the lookup fail (the JIT prints which one on stderr).
            self._entry = self._engine.lookup(signature.function)
        except Exception as err:  # the bindings raise RuntimeError
            raise LoweringError(f"LLVM translation or JIT compilation of "
                                f"'{signature.function}' failed: {err}") from None

    @property
    def input_names(self):
        return [s.name for s in self.signature.inputs]

    @property
    def output_names(self):
        return [s.name for s in self.signature.outputs]

    def __call__(self, *inputs, **named):
        """Run on ``inputs`` (in order, or by name); returns {output name: array}."""
        return dict(zip(self.output_names, self.run(*inputs, **named)))

    def run(self, *inputs, **named):
        """Like calling the executable, but returns the outputs as a list."""
        arrays = self._inputs(inputs, named)
        outputs = [_output_array(s) for s in self.signature.outputs]
        buffers = [_storage_view(a, s.dtype) for a, s in zip(arrays, self.signature.inputs)]
        buffers += [_storage_view(a, s.dtype) for a, s in zip(outputs, self.signature.outputs)]
        descriptors = [_descriptor(b) for b in buffers]
        pointers = [ctypes.pointer(d) for d in descriptors]
        packed = (ctypes.c_void_p * len(pointers))()
        for i, p in enumerate(pointers):
            packed[i] = ctypes.cast(ctypes.pointer(p), ctypes.c_void_p)
        self._entry(packed)
        return [a.view(np.bool_) if s.dtype is data_type.BOOLEAN else a
                for a, s in zip(outputs, self.signature.outputs)]

    def _inputs(self, inputs, named):
        # Checked as the GPU runtime checks NumPy arrays (cpu_arguments.py).
        return cpu_arguments.bind(self.signature.inputs, inputs, named)


# Functions of MLIR's runtime libraries, which the engine does not load.
_RUNTIME_FUNCTIONS = ("memrefCopy", "printMemrefF32")


def _check_runtime_calls(module):
    for op in module.body.operations:
        if op.operation.name != "llvm.func" or "sym_name" not in op.attributes:
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        if name in _RUNTIME_FUNCTIONS:
            raise LoweringError(f"the lowered module calls '{name}' from MLIR's runtime library, "
                                "which the CPU executable does not load (a strided memref.copy "
                                "survived bufferization)")


def _output_array(spec):
    """A fresh output buffer, pre-filled with NaN (booleans with 0xFF bytes,
    integers with 0xA5 bytes) so that an element the code fails to write shows."""
    if spec.dtype is data_type.BOOLEAN:
        return np.full(spec.shape, 0xFF, dtype=np.uint8)
    if spec.dtype.is_integer:
        nbytes = int(np.prod(spec.shape, dtype=np.int64)) * spec.dtype.itemsize
        return np.full(nbytes, 0xA5, dtype=np.uint8).view(spec.dtype.numpy).reshape(spec.shape)
    return np.full(spec.shape, np.nan, dtype=spec.dtype.numpy)
