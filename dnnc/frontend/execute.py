"""Plans and ``execute``: running a built frontend graph on the caller's buffers.

A ``Plan`` is one compiled form of a frontend graph: dnnc's executable and
which frontend tensor each of its inputs and outputs is. On a GPU (target
``cuda``) the executable is the runtime's (``dnnc_runtime.Executable``,
compiled through the JIT and its cache): ``execute`` passes the caller's
tensors (torch CUDA tensors, anything with ``__cuda_array_interface__`` or
DLPack, or raw device pointers as ints, which get the tensor's dims, strides
and type) in the executable's order and launches on the caller's stream.
Without a GPU (target ``cpu``) it is the CPU back end's executable: NumPy
arrays and CPU torch tensors go in, and the outputs are copied into the
caller's output buffers.

The variant pack maps tensors (or their uids) to buffers, as in
cudnn-frontend. Every input and output of the plan must be in it, with the
tensor's dims; pass-by-value scalars are read from it as numbers (a CPU
tensor, a NumPy array or a Python number), and a plan's runtime scalars
(inputs that are pass-by-value tensors) are passed to the executable as
floats, by value. The workspace argument is
accepted and not used: dnnc's executables own their workspace, which is why
``get_workspace_size`` is 0.

Steady calls (``Steady``): after a plan's first execute on the GPU, a
call whose pack holds exactly the plan's tensors (all keyed by tensor or
all by uid), torch CUDA tensors in the layout the plan was compiled for,
and the pass-by-value values the plan was compiled with, goes straight
from the pack to the runtime's fast path (``Executable.run_steady``): the
buffers read from the pack in one ``itemgetter`` call, no pack rebuilt,
no buffer viewed again, the runtime's checks (dtype, shape, strides,
device, alignment) made once.
Any other call takes the general path, ``Plan.run``, which accepts what
the fast one does not (buffers of other dims, raw pointers, int64 ragged
offsets) and raises the typed errors.
"""

from operator import itemgetter

from dnnc.frontend.enums import data_type
from dnnc.frontend.errors import InvalidVariantPackError


class Plan:
    """One compiled form of a frontend graph (see the module docstring)."""

    def __init__(self, target, exe, inputs, outputs, dnnc_graph=None, package=None):
        self.target = target          # "cuda" or "cpu"
        self.exe = exe
        self.inputs = inputs          # frontend tensors, in the executable's input order
        self.outputs = outputs        # frontend tensors, in its output order
        self.dnnc_graph = dnnc_graph  # the dnnc.Graph compiled (None after deserialize)
        self.package = package        # the .dnnpkg bytes (target cuda)
        self._in_dims = [tuple(t._dim) for t in inputs]
        # Runtime scalars (pass-by-value inputs): numbers, not buffers.
        self._by_value = [t.get_is_pass_by_value() for t in inputs]
        self._out_dims = [tuple(t._dim) for t in outputs]

    @property
    def kernels(self):
        """(kernel function, strategy and config) of each launch; the CPU
        back end runs one function of loops."""
        if self.target == "cpu":
            return [("main", "cpu: MLIR ExecutionEngine (linalg loops)")]
        seen = {}
        for k in self.exe.plan:   # one entry per kernel function, not per launch
            seen.setdefault(k.name, k.config_text)
        return list(seen.items())

    @property
    def name(self):
        return "; ".join(f"{name}: {config}" for name, config in self.kernels)

    def describe(self):
        """The executable's launch table (target cuda: and which code of the
        package the driver was given, or will be offered) or its signature."""
        if self.target == "cpu":
            return f"cpu executable {self.exe.input_names} -> {self.exe.output_names}"
        exe = self.exe
        if exe.loaded_from is not None:
            code = f"loaded from its {exe.loaded_from}: {exe.load_note}"
        else:
            cubins = ", ".join(f"{c.file} ({c.arch})" for c in exe.artifact.cubins)
            code = (f"PTX and {cubins}" if cubins else "PTX only") + ", loaded at the first execute"
        return f"{exe.plan}\ncode: {code}"

    def run(self, pack, stream):
        """Run on the buffers of ``pack`` (frontend tensor -> buffer)."""
        ins = [_scalar(pack, t) if by_value else _narrowed(_buffer(pack, t, d, "input"), t)
               for t, d, by_value in zip(self.inputs, self._in_dims, self._by_value)]
        outs = [_buffer(pack, t, d, "output") for t, d in zip(self.outputs, self._out_dims)]
        if self.target == "cpu":
            results = self.exe.run(*[b if by_value else _host_array(b)
                                     for b, by_value in zip(ins, self._by_value)])
            for t, out, value in zip(self.outputs, outs, results):
                _write_back(t, out, value)
            return
        if any(type(b) is int for b in ins) or any(type(b) is int for b in outs):
            ins = [_device(b, t) for b, t in zip(ins, self.inputs)]
            outs = [_device(b, t) for b, t in zip(outs, self.outputs)]
        self.exe(*ins, outputs=outs, stream=stream)


def _getter(keys):
    """pack -> the tuple of ``pack[k]`` for ``keys``, in one C call
    (``operator.itemgetter``; KeyError for a missing key)."""
    if len(keys) == 1:
        key = keys[0]
        return lambda pack: (pack[key],)
    return itemgetter(*keys)


class Steady:
    """execute's fast path on one compiled plan of target cuda (see the
    module docstring): what a call checks, worked out once."""

    __slots__ = ("plan", "forms", "keys", "run_steady")

    def __init__(self, plan, scalars, values):
        self.plan = plan
        tensors = (*plan.inputs, *plan.outputs)    # the runtime's order
        # The pack's two forms: (what reads the buffers from it in the
        # runtime's order, and per pass-by-value tensor read from it (key,
        # tensor, the value the plan compiled in)), keyed by tensor and by
        # uid; the form the last call used comes first.
        self.forms = ((_getter(tensors), tuple(zip(scalars, scalars, values))),
                      (_getter(tuple(t.get_uid() for t in tensors)),
                       tuple((t.get_uid(), t, v) for t, v in zip(scalars, values))))
        # A pack of exactly this many keys that holds every one of the plan's
        # holds nothing else: keys of other graphs, unknown uids, None keys
        # and extra tensors all go to the general path, which judges them.
        self.keys = len(tensors) + len(scalars)
        self.run_steady = plan.exe.run_steady

    def run(self, pack, stream):
        """Launch on ``pack`` (the caller's variant pack) and return True, or
        return False having launched nothing: the call is not a steady one."""
        if len(pack) != self.keys:
            return False
        try:
            buffers_of, scalars = self.forms[0]
            try:
                buffers = buffers_of(pack)
            except KeyError:
                self.forms = self.forms[::-1]
                buffers_of, scalars = self.forms[0]
                buffers = buffers_of(pack)
            for key, t, value in scalars:
                if scalar_value(pack[key], t) != value:
                    return False                   # another plan's (or a first) compile
        except (KeyError, TypeError):
            return False
        return self.run_steady(buffers, stream)


def _narrowed(value, t):
    """An int64 input (only ragged offsets are lowered from int64: cuDNN 9.6+
    takes them so) as the int32 tensor dnnc reads; offsets past int32 are an
    ``InvalidVariantPackError``."""
    if t.get_data_type() != data_type.INT64 or isinstance(value, int):
        return value
    if hasattr(value, "to") and hasattr(value, "dtype"):    # torch
        import torch

        narrow = value.to(torch.int32)
        fits = bool((narrow.to(value.dtype) == value).all())
    else:
        import numpy as np

        wide = np.asarray(value)
        narrow = wide.astype(np.int32)
        fits = bool((narrow == wide).all())
    if not fits:
        raise InvalidVariantPackError(f"variant pack: {_label(t)}: ragged offsets past 2^31 "
                                      "elements (dnnc reads them as int32)")
    return narrow


def _label(t):
    return f"tensor '{t.get_name()}' (uid {t.get_uid()})"


def _buffer(pack, t, dims, role):
    """The buffer of ``t``, viewed with ``t``'s dims and strides.

    cuDNN takes a buffer as a pointer: the tensor's dims and strides say
    where its elements are, whatever the buffer's own shape (cudnn-frontend's
    tests pass a [K] buffer for a [1, K, 1, 1] tensor). So does dnnc, where
    it can check it: a buffer of the tensor's dims is used as it is; one of
    other dims is taken as storage when it is dense (contiguous in some dim
    order, as channels-last is), of the tensor's element size, and holds
    every element the tensor's strides reach. Anything else is an
    ``InvalidVariantPackError``.
    """
    try:
        value = pack[t]
    except KeyError:
        raise InvalidVariantPackError(f"variant pack: {role} {_label(t)} is missing") from None
    shape = getattr(value, "shape", None)
    if shape is None or tuple(shape) == dims:
        return value
    extent = 1 + sum((d - 1) * s for d, s in zip(t._dim, t._stride) if d > 0)
    numel = 1
    for d in shape:
        numel *= int(d)
    itemsize = _ITEMSIZE.get(t.get_data_type().name)
    got_itemsize = _itemsize_of(value)
    dense = _is_dense(value)
    if numel < extent or not dense or (itemsize and got_itemsize != itemsize):
        raise InvalidVariantPackError(
            f"variant pack: {role} {_label(t)}: expected dims {list(t._dim)} (or dense "
            f"storage of at least {extent} elements of {itemsize} bytes), got dims "
            f"{list(shape)}{'' if dense else ', not dense'}, "
            f"{numel} elements of {got_itemsize} bytes")
    return _restride(value, t)


def _itemsize_of(value):
    dtype = getattr(value, "dtype", None)
    size = getattr(dtype, "itemsize", None)
    return size if size is not None else getattr(value, "itemsize", None)


def _element_strides(value):
    if hasattr(value, "stride") and callable(value.stride):
        return list(value.stride())
    return [st // value.itemsize for st in value.strides]


def _is_dense(value):
    """Whether ``value``'s elements fill one block of memory without gaps
    or overlaps, its first element lowest: packed strides in some order."""
    try:
        pairs = sorted(zip(_element_strides(value), value.shape))
    except (AttributeError, TypeError):
        return False
    step = 1
    for stride, size in pairs:
        if size != 1 and stride != step:
            return False
        step *= int(size)
    return True


def _restride(value, t):
    """The dense buffer ``value`` seen with ``t``'s dims and strides, from
    its first (lowest) element."""
    if hasattr(value, "as_strided"):      # torch: strides count from the storage offset
        return value.as_strided(t._dim, t._stride)
    import numpy as np

    base = np.lib.stride_tricks.as_strided(value, shape=(value.size,),
                                           strides=(value.itemsize,))
    return np.lib.stride_tricks.as_strided(base, shape=t._dim,
                                           strides=[st * value.itemsize for st in t._stride])


def _scalar(pack, t):
    """A runtime scalar's value from the variant pack, as a float."""
    try:
        value = pack[t]
    except KeyError:
        raise InvalidVariantPackError(f"variant pack: pass-by-value {_label(t)} is "
                                      "missing") from None
    return scalar_value(value, t)


def scalar_value(value, t):
    """A pass-by-value tensor's number from the variant pack: a one-element
    torch tensor or NumPy array (``item()``), or a Python number."""
    item = getattr(value, "item", None)
    try:
        if isinstance(value, (str, bytes, bool)):
            raise TypeError(value)            # float() would parse "1e-5"
        return float(item() if item is not None else value)
    except (TypeError, ValueError, RuntimeError):
        raise InvalidVariantPackError(f"variant pack: pass-by-value {_label(t)}: expected one "
                                      f"number (a CPU tensor, an array or a float), got "
                                      f"{type(value).__name__}") from None


def _host_array(value):
    """An input for the CPU back end: a NumPy array, or a torch tensor on
    the CPU, which the back end reads in its own element type (bf16 and fp8
    as ml_dtypes' types) and checks as the GPU runtime checks a tensor."""
    if hasattr(value, "detach"):         # torch
        return value.detach().cpu()
    if isinstance(value, int):
        raise InvalidVariantPackError("variant pack: a raw device pointer cannot be read by the "
                                      "CPU back end: pass arrays or CPU tensors")
    import numpy as np

    return np.asarray(value)


def _write_back(t, out, value):
    import numpy as np

    if hasattr(out, "copy_"):            # torch
        import torch

        host = np.asarray(value)
        if host.dtype.kind == "V" or host.dtype.name in ("bfloat16", "float8_e4m3fn",
                                                         "float8_e5m2"):
            host = host.astype(np.float32)
        out.copy_(torch.from_numpy(np.ascontiguousarray(host)))
        return
    if isinstance(out, np.ndarray):
        out[...] = np.asarray(value).astype(out.dtype)
        return
    raise InvalidVariantPackError(f"variant pack: output {_label(t)}: expected a NumPy array or "
                                  f"a torch tensor on the CPU back end, got {type(out).__name__}")


class _DevicePointer:
    """A raw device address (an int in the variant pack) seen as an array
    with the tensor's dims, strides and type, for the runtime's binding."""

    _TYPESTR = {"FLOAT": "<f4", "HALF": "<f2", "BFLOAT16": "<V2", "FP8_E4M3": "|V1",
                "FP8_E5M2": "|V1", "BOOLEAN": "|b1", "INT32": "<i4", "INT8": "|i1",
                "UINT8": "|u1"}

    def __init__(self, address, t, itemsize):
        dtype = t.get_data_type().name
        self.__cuda_array_interface__ = {
            "shape": tuple(t._dim), "typestr": self._TYPESTR[dtype],
            "strides": tuple(s * itemsize for s in t._stride), "data": (address, False),
            "version": 3}


_ITEMSIZE = {"FLOAT": 4, "HALF": 2, "BFLOAT16": 2, "FP8_E4M3": 1, "FP8_E5M2": 1, "BOOLEAN": 1,
             "INT32": 4, "INT8": 1, "UINT8": 1}


def _device(value, t):
    if isinstance(value, int):
        return _DevicePointer(value, t, _ITEMSIZE[t.get_data_type().name])
    return value
