"""The CPU back end's arguments: matched to the graph's inputs and checked
by the rules the GPU runtime applies, before any compiled code runs.

    arrays = bind(signature.inputs, args, named)   # one NumPy array per input

A call is matched to the inputs as ``dnnc_runtime`` matches one (binding.py:
by position, then by name; ``exe({"x": a})`` is taken as by name), and each
array is checked by ``dnnc_runtime.host_arrays``: its dtype is the input's
storage type exactly, its shape the input's dims, and along a dim the graph
broadcasts (stride 0) its values equal; a runtime scalar is a number, read
by ``dnnc_runtime.scalars`` as the GPU runtime reads it. So an input the GPU
refuses is refused here too, with the same message. Nothing is converted: a
float64 array for an f32 input, an int32 array for a boolean one, a list, a
bf16 tensor passed as float32 are all errors, where converting them would
hide on the CPU a bug that the GPU would show. A CPU torch tensor is taken
as the NumPy array of its bits (bf16 and fp8 as ml_dtypes' types), its dtype
checked as the runtime checks a torch tensor's.

The error is ``ArgumentError``, which is both the runtime's
``dnnc_runtime.ArgumentError`` (one ``except`` catches a wrong argument on
either back end) and a ``GraphError``, like every error dnnc raises on
purpose.
"""

import sys

import numpy as np

import dnnc_runtime
from dnnc_runtime import binding, host_arrays, scalars

from dnnc.errors import GraphError


class ArgumentError(GraphError, dnnc_runtime.ArgumentError):
    """A CPU executable's argument does not match its input: count, name,
    dtype or shape. ``tensor`` names the input at fault (None when the call
    as a whole is wrong)."""

    def __init__(self, message, *, tensor=None):
        GraphError.__init__(self, message)
        self.tensor = tensor


class _Input:
    """What binding.match_inputs reads of an input: its name and position."""

    __slots__ = ("name", "index")

    def __init__(self, name, index):
        self.name, self.index = name, index


def bind(specs, args, named):
    """One C-contiguous NumPy array per input of ``specs`` (TensorSpecs, in
    call order) from a call's positional ``args`` and keyword ``named``
    arguments, each checked; ArgumentError names what is wrong."""
    if len(args) == 1 and isinstance(args[0], dict) and not named:
        named = {getattr(k, "name", k): v for k, v in args[0].items()}
        args = ()
    try:
        values = binding.match_inputs([_Input(s.name, i) for i, s in enumerate(specs)],
                                      list(args), named)
        return [_host_array(s, v) for s, v in zip(specs, values)]
    except dnnc_runtime.ArgumentError as err:
        if isinstance(err, ArgumentError):
            raise
        raise ArgumentError(str(err), tensor=err.tensor) from None


def _host_array(spec, value):
    label = f"input '{spec.name}'"
    if getattr(spec, "by_value", False):
        return np.array(scalars.value(value, spec.name, label), np.float32)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        value = _from_torch(value, spec, label)
    elif not isinstance(value, (np.ndarray, np.generic)):
        raise ArgumentError(f"{label}: expected a NumPy array or a CPU torch tensor, got "
                            f"{type(value).__name__}", tensor=spec.name)
    array = np.asarray(value)
    host_arrays.check(array, spec.dtype.mlir, spec.shape, label, spec.name, spec.strides)
    return np.ascontiguousarray(array)


# torch dtypes NumPy has no twin of: read as the same bits in ml_dtypes' type.
_BITS = {"bf16": "int16", "f8E4M3FN": "uint8", "f8E5M2": "uint8"}


def _from_torch(t, spec, label):
    """A CPU torch tensor as a NumPy array of the same bits, checked as the
    GPU runtime checks a torch tensor's dtype (binding.bind_torch)."""
    dtype = spec.dtype.mlir
    want = binding.torch_dtype(dtype)
    if t.dtype != want:
        raise ArgumentError(f"{label}: expected dtype {dtype} ({want}), got {t.dtype}",
                            tensor=spec.name)
    if t.device.type != "cpu":
        raise ArgumentError(f"{label}: expected a CPU tensor (the CPU back end reads host "
                            f"memory), got a tensor on {t.device}", tensor=spec.name)
    t = t.detach().resolve_conj().resolve_neg()
    if dtype not in _BITS:
        return t.numpy()
    torch = sys.modules["torch"]
    bits = t.view(getattr(torch, _BITS[dtype])).numpy()
    return bits.view(host_arrays.numpy_dtype(dtype, label))
