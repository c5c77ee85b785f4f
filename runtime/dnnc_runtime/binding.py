"""Caller arguments -> device pointers, each checked against its manifest tensor.

What a call accepts for a tensor, recognised in this order:

| argument                                  | pointer from                | notes                                  |
|-------------------------------------------|-----------------------------|----------------------------------------|
| ``torch.Tensor`` (CUDA)                   | ``data_ptr()``              | stream: torch's current stream         |
| ``numpy.ndarray``                         | a staging copy              | copied in before, outputs copied back  |
| ``__cuda_array_interface__`` (CuPy, Numba) | ``data[0]``                 | the producer's ``stream`` is not awaited |
| ``__dlpack__`` object or DLPack capsule   | via ``torch.utils.dlpack``  | needs PyTorch; else a clear error      |

A runtime scalar (an input marked ``by_value``) takes a host number instead
(scalars.py), passed to the kernels by value.

Checks, all before anything touches the GPU (this module makes no CUDA call
except in ``DeviceArray``'s own methods): dtype (manifest spelling vs the
library's dtype: ``bf16`` is ``torch.bfloat16`` / ``ml_dtypes.bfloat16``,
``i1`` is one byte: ``torch.bool`` / ``numpy.bool_``), shape, strides in
elements (equal to the manifest's except on size-1 dims, where any stride
addresses the same bytes; NumPy arrays are exempt, since their staging copy
takes the manifest's layout), device (a CPU torch tensor is refused), and
the address alignment the kernels assume (16 bytes unless the manifest says
otherwise). Errors name the tensor and say ``expected X, got Y``. A NumPy
array's dtype and shape are checked by host_arrays.py, the rule dnnc's CPU
back end applies to its inputs too.
"""

import sys

from . import scalars
from .errors import ArgumentError

TORCH, DEVICE, NUMPY, SCALAR = "torch", "device", "numpy", "scalar"

_TORCH_NAMES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16",
                "f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2", "i1": "bool",
                "i32": "int32", "si8": "int8", "ui8": "uint8"}
# __cuda_array_interface__ typestrs. NumPy has no bf16/fp8, so producers describe
# them as raw bytes ('V') or as ml_dtypes does; a raw 1-byte type cannot tell
# the two fp8 formats apart and is trusted.
_FP8_TYPESTRS = ("|V1", "<V1", "|f1", "<f1")
_TYPESTRS = {"f32": ("<f4",), "f16": ("<f2",), "bf16": ("<V2", "|V2"),
             "f8E4M3FN": _FP8_TYPESTRS, "f8E5M2": _FP8_TYPESTRS, "i1": ("|b1",),
             "i32": ("<i4",), "si8": ("|i1",), "ui8": ("|u1",)}
_OUT_TYPESTR = {"f32": "<f4", "f16": "<f2", "bf16": "<V2", "f8E4M3FN": "|V1", "f8E5M2": "|V1",
                "i1": "|b1", "i32": "<i4", "si8": "|i1", "ui8": "|u1"}

_torch_dtypes = {}


class Bound:
    """One checked argument: its spec, what kind of object it is, its device address."""

    __slots__ = ("spec", "kind", "address", "device", "value")

    def __init__(self, spec, kind, address, device, value):
        self.spec = spec
        self.kind = kind          # TORCH, DEVICE, NUMPY or SCALAR
        self.address = address    # device address (0 for NumPy until staged); SCALAR: f32 bits
        self.device = device      # CUDA ordinal when known (torch), else None
        self.value = value        # the caller's object (torch tensor for DLPack)


# -- dtypes -------------------------------------------------------------------

def numpy_dtype(dtype, label="tensor"):
    """The NumPy dtype for a manifest spelling (host_arrays.numpy_dtype)."""
    from .host_arrays import numpy_dtype as of

    return of(dtype, label)


def torch_dtype(dtype):
    """The torch dtype for a manifest spelling (torch must already be imported)."""
    t = _torch_dtypes.get(dtype)
    if t is None:
        t = _torch_dtypes[dtype] = getattr(sys.modules["torch"], _TORCH_NAMES[dtype])
    return t


# -- matching the call's arguments to the signature -------------------------

_MISSING = object()


def _names(specs):
    return ", ".join(s.name for s in specs) or "none"


def match_inputs(specs, args, named, outputs=()):
    """Positional and named arguments -> one value per input, in manifest order."""
    n = len(specs)
    if not named and len(args) == n:
        return args
    if len(args) > n:
        raise ArgumentError(f"expected {n} input(s) ({_names(specs)}), got {len(args)} "
                            f"positional arguments")
    values = list(args) + [_MISSING] * (n - len(args))
    index = {s.name: s.index for s in specs}
    for name, value in named.items():
        i = index.get(name)
        if i is None:
            hint = " (outputs go in outputs=)" if any(o.name == name for o in outputs) else ""
            raise ArgumentError(f"unknown input '{name}': expected one of {_names(specs)}{hint}",
                                tensor=name)
        if values[i] is not _MISSING:
            raise ArgumentError(f"input '{name}' is given both by position and by name", tensor=name)
        values[i] = value
    missing = [s.name for s, v in zip(specs, values) if v is _MISSING]
    if missing:
        raise ArgumentError(f"missing input(s) {', '.join(missing)}: expected {n} input(s) "
                            f"({_names(specs)}), got {n - len(missing)}", tensor=missing[0])
    return values


def match_outputs(specs, outputs):
    """``outputs=`` (a list, a dict by name, or one array for one output) -> list."""
    n = len(specs)
    if isinstance(outputs, dict):
        index = {s.name: s.index for s in specs}
        for name in outputs:
            if name not in index:
                raise ArgumentError(f"outputs=: unknown output '{name}': expected one of "
                                    f"{_names(specs)}", tensor=name)
        missing = [s.name for s in specs if s.name not in outputs]
        if missing:
            raise ArgumentError(f"outputs=: missing output(s) {', '.join(missing)}: expected "
                                f"all of {_names(specs)}", tensor=missing[0])
        return [outputs[s.name] for s in specs]
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    if len(outputs) != n:
        raise ArgumentError(f"outputs=: expected {n} output(s) ({_names(specs)}), got {len(outputs)}")
    return list(outputs)


# -- one argument ---------------------------------------------------------------

def bind(value, spec, writable=False):
    """Check one argument against its spec; return a Bound. Makes no CUDA call.
    A runtime scalar's Bound holds its f32 bits where a tensor's holds its
    address (the kernels take it by value: scalars.py)."""
    if spec.by_value:
        return Bound(spec, SCALAR, scalars.bits(value, spec.name, spec.label), None, value)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return bind_torch(value, spec)
    np = sys.modules.get("numpy")   # NumPy, imported by whoever made an array of it
    if np is not None:
        if isinstance(value, np.ndarray):
            return bind_numpy(value, spec, writable)
        if isinstance(value, np.generic) and not writable:
            return bind_numpy(np.asarray(value), spec, writable)
    cai = getattr(value, "__cuda_array_interface__", None)
    if cai is not None:
        return bind_cuda_array(value, cai, spec, writable)
    if hasattr(value, "__dlpack__") or type(value).__name__ == "PyCapsule":
        return bind_torch(_from_dlpack(value, spec), spec)
    raise ArgumentError(f"{spec.label}: expected a torch tensor, a NumPy array, or an array with "
                        f"__cuda_array_interface__ or __dlpack__, got {type(value).__name__}",
                        tensor=spec.name)


def bind_torch(t, spec):
    want = torch_dtype(spec.dtype)
    if t.dtype != want:
        raise ArgumentError(f"{spec.label}: expected dtype {spec.dtype} ({want}), got {t.dtype}",
                            tensor=spec.name)
    if t.shape != spec.dims:
        _shape_error(spec, t.shape)
    strides = t.stride()
    if strides != spec.strides:
        check_strides(spec, strides)
    if not t.is_cuda:
        raise ArgumentError(f"{spec.label}: expected a CUDA tensor, got a tensor on {t.device}",
                            tensor=spec.name)
    address = t.data_ptr()
    if address % spec.alignment and spec.numel:
        _alignment_error(spec, address)
    return Bound(spec, TORCH, address, t.get_device(), t)


def bind_numpy(a, spec, writable):
    # The rule dnnc's CPU back end shares (host_arrays.py): dtype and shape exact,
    # one value along a broadcast dim.
    from . import host_arrays

    host_arrays.check(a, spec.dtype, spec.dims, spec.label, spec.name, spec.strides)
    if writable and not a.flags.writeable:
        raise ArgumentError(f"{spec.label}: expected a writable array, got a read-only one",
                            tensor=spec.name)
    return Bound(spec, NUMPY, 0, None, a)


def bind_cuda_array(value, cai, spec, writable):
    typestr = cai.get("typestr")
    if typestr not in _TYPESTRS[spec.dtype]:
        raise ArgumentError(f"{spec.label}: expected dtype {spec.dtype} (typestr "
                            f"{' or '.join(_TYPESTRS[spec.dtype])}), got typestr {typestr}",
                            tensor=spec.name)
    shape = tuple(cai.get("shape", ()))
    if shape != spec.dims:
        _shape_error(spec, shape)
    if cai.get("mask") is not None:
        raise ArgumentError(f"{spec.label}: expected an array without a mask, got a masked array",
                            tensor=spec.name)
    address, readonly = cai["data"]
    if writable and readonly:
        raise ArgumentError(f"{spec.label}: expected a writable array, got a read-only one",
                            tensor=spec.name)
    byte_strides = cai.get("strides")
    if byte_strides is None:
        strides = contiguous_strides(shape)
    else:
        if any(s % spec.itemsize for s in byte_strides):
            raise ArgumentError(f"{spec.label}: expected strides in whole elements of "
                                f"{spec.itemsize} bytes, got byte strides {list(byte_strides)}",
                                tensor=spec.name)
        strides = tuple(s // spec.itemsize for s in byte_strides)
    if strides != spec.strides:
        check_strides(spec, strides)
    address = address or 0
    if address % spec.alignment and spec.numel:
        _alignment_error(spec, address)
    return Bound(spec, DEVICE, address, None, value)


def _from_dlpack(value, spec):
    try:
        import torch.utils.dlpack
    except ImportError as e:
        raise ArgumentError(f"{spec.label}: a DLPack argument ({type(value).__name__}) is imported "
                            f"through PyTorch, which is not installed; pass a NumPy array or an "
                            f"object with __cuda_array_interface__ instead", tensor=spec.name) from e
    try:
        return torch.utils.dlpack.from_dlpack(value)
    except Exception as e:
        raise ArgumentError(f"{spec.label}: could not import the DLPack tensor "
                            f"({type(value).__name__}): {e}", tensor=spec.name) from e


def contiguous_strides(dims):
    strides, step = [], 1
    for d in reversed(dims):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def check_strides(spec, got):
    """Strides must equal the manifest's, except on size-1 dims and for empty tensors."""
    if spec.numel == 0:
        return
    for d, want, have in zip(spec.dims, spec.strides, got):
        if d != 1 and want != have:
            raise ArgumentError(f"{spec.label}: expected strides {list(spec.strides)} (in elements; "
                                f"any on size-1 dims), got {list(got)}", tensor=spec.name)


def _shape_error(spec, got):
    raise ArgumentError(f"{spec.label}: expected shape {list(spec.dims)}, got {list(got)}",
                        tensor=spec.name)


def _alignment_error(spec, address):
    raise ArgumentError(f"{spec.label}: expected an address aligned to {spec.alignment} bytes, "
                        f"got {address:#x} ({address % spec.alignment} bytes past a boundary)",
                        tensor=spec.name)


def common_device(bound):
    """The one CUDA ordinal the torch arguments share (None if none says)."""
    first = None
    for b in bound:
        if b.device is None:
            continue
        if first is None:
            first = b
        elif b.device != first.device:
            raise ArgumentError(f"{b.spec.label}: expected a tensor on cuda:{first.device} (where "
                                f"{first.spec.label} is), got cuda:{b.device}", tensor=b.spec.name)
    return None if first is None else first.device


def stream_handle(stream):
    """A stream-like object -> its CUstream handle as an int."""
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        return int(proto()[1])
    for attr in ("cuda_stream", "ptr"):   # torch.cuda.Stream, cupy.cuda.Stream
        handle = getattr(stream, attr, None)
        if isinstance(handle, int):
            return handle
    try:
        return int(stream)                 # int, CUstream, numba stream
    except (TypeError, ValueError):
        raise ArgumentError(f"stream=: expected a CUDA stream (an int handle, torch.cuda.Stream, "
                            f"a CuPy or Numba stream, a CUstream, or an object with "
                            f"__cuda_stream__), got {type(stream).__name__}") from None


# -- NumPy staging layout ---------------------------------------------------

def to_layout(array, spec):
    """A flat host buffer holding ``array`` laid out with the manifest's strides."""
    import numpy as np

    dtype = numpy_dtype(spec.dtype, spec.label)
    flat = np.empty(spec.extent, dtype)
    if spec.numel:
        view_of(flat, spec)[...] = array
    return flat


def view_of(flat, spec):
    """The logical array a flat buffer in the manifest's layout holds."""
    import numpy as np

    itemsize = flat.dtype.itemsize
    # as_strided goes through __array_interface__, whose type strings cannot
    # name every ml_dtypes type (fp8 E5M2 fails): stride the raw bytes instead.
    raw = flat.view(f"u{itemsize}")
    view = np.lib.stride_tricks.as_strided(
        raw, shape=spec.dims, strides=[s * itemsize for s in spec.strides])
    return view.view(flat.dtype)


# -- outputs allocated for callers that pass raw device arrays ------------------

class DeviceArray:
    """Device memory the runtime allocated for an output (when the inputs are CuPy/Numba arrays).

    Exposes ``__cuda_array_interface__`` so ``cupy.asarray(a)`` or
    ``numba.cuda.as_cuda_array(a)`` wraps it without a copy; ``numpy()`` copies it
    to the host. The memory is freed when the object is collected.
    """

    def __init__(self, spec, device):
        from . import cuda
        self.spec = spec
        self.shape = spec.dims
        self.dtype = spec.dtype
        self.device = device
        self.address = cuda.mem_alloc(spec.nbytes) if spec.nbytes else 0

    @property
    def __cuda_array_interface__(self):
        itemsize = self.spec.itemsize
        return {"shape": self.shape, "typestr": _OUT_TYPESTR[self.dtype],
                "data": (self.address, False), "version": 3,
                "strides": tuple(s * itemsize for s in self.spec.strides)}

    def numpy(self):
        """Copy to a NumPy array (waits for the device)."""
        import numpy as np

        from . import cuda
        flat = np.empty(self.spec.extent, numpy_dtype(self.dtype, self.spec.label))
        if flat.nbytes:
            pushed = self.device.activate()
            try:
                cuda.synchronize_context()  # the kernels may be on any stream
                cuda.copy_to_host(flat.ctypes.data, self.address, flat.nbytes, 0)
                cuda.synchronize(0)
            finally:
                self.device.deactivate(pushed)
        return view_of(flat, self.spec)

    def __del__(self):
        if getattr(self, "address", 0):
            try:
                from . import cuda
                pushed = self.device.activate()
                cuda.mem_free(self.address)
                self.device.deactivate(pushed)
            except Exception:
                pass  # interpreter shutdown: the driver may already be gone

    def __repr__(self):
        return f"DeviceArray({self.spec.name}, shape={list(self.shape)}, dtype={self.dtype})"
