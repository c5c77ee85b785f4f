"""The thin CUDA driver layer: every GPU call the runtime makes goes through here.

Built on cuda-python's ``cuda.bindings.driver``, imported lazily so that
``import dnnc_runtime``, loading and validating an artifact, and validating
arguments all work on a machine without cuda-python, a driver or a GPU.

Every driver function returns ``(CUresult, *values)``; ``call(fn, *args)``
runs one and turns a failing status into a ``CudaError`` that names the
function and the status (tinygrad's ``check`` habit: one place, no silent
errors). The one exception is ``launch``, the hot path, which checks the
status inline to save a Python call.

Contexts: the runtime works in each device's *primary* context, the one the
CUDA runtime API, PyTorch, CuPy and Numba use, so pointers and streams from
those libraries are valid in it. ``Device.activate`` makes it current only
when it is not already.

TMA descriptors: ``encode_tensor_map`` builds a CUtensorMap (Hopper's tensor
memory access descriptor, 128 opaque bytes a kernel takes by value) on the
host; ``tensor_map_dims``, the pure part, turns the manifest's outermost-first
shape, strides and box into the driver's innermost-first arrays.
``encode_im2col_tensor_map`` and ``im2col_tensor_map_dims`` do the same for
an im2col-mode descriptor (cuTensorMapEncodeIm2col: a convolution's
activation read as the rows of its implicit GEMM).
"""

from .errors import CudaError, DeviceError

# Dynamic shared memory above this needs cuFuncSetAttribute (opt-in), on every
# arch since Volta.
DEFAULT_SHARED_LIMIT = 48 * 1024

_JIT_LOG_BYTES = 16 * 1024

_d = None           # cuda.bindings.driver once imported
_SUCCESS = None     # CUresult.CUDA_SUCCESS
_initialized = False
_devices = {}


def driver():
    """Import cuda-python's driver module (once) or raise DeviceError."""
    global _d, _SUCCESS
    if _d is None:
        try:
            from cuda.bindings import driver as d
        except ImportError:
            try:
                from cuda import cuda as d  # cuda-python < 12.6 spelled it so
            except ImportError as e:
                raise DeviceError(
                    "cuda-python is not installed; the runtime needs it to use a GPU "
                    "(pip install cuda-python)") from e
        _d, _SUCCESS = d, d.CUresult.CUDA_SUCCESS
    return _d


def _status_text(status):
    """(name, description) of a CUresult, without raising."""
    name = getattr(status, "name", str(status))
    try:
        err, text = _d.cuGetErrorString(status)
        desc = text.decode() if err == _SUCCESS and text else ""
    except Exception:  # the driver library itself may be what is missing
        desc = ""
    return name, desc


def check(result, call="CUDA driver call"):
    """Turn a cuda-python result tuple into its values, or raise CudaError.

    Returns None for a call with no outputs, the value for one, a tuple for more.
    """
    status = result[0]
    if status != _SUCCESS:
        raise CudaError(call, *_status_text(status))
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


def call(fn, *args):
    """Run one driver function and check its status (see ``check``)."""
    return check(fn(*args), fn.__name__)


def init():
    """cuInit once per process; DeviceError when there is no driver or GPU."""
    global _initialized
    if _initialized:
        return
    d = driver()
    try:
        status = d.cuInit(0)[0]
    except Exception as e:  # cuda-python raises when libcuda.so cannot be loaded
        raise DeviceError(f"the NVIDIA driver could not be loaded: {e}") from e
    if status != _SUCCESS:
        name, desc = _status_text(status)
        raise DeviceError(f"cuInit failed: {name} ({desc}); no usable CUDA device")
    _initialized = True


def device_count():
    """Number of CUDA devices; 0 when there is no driver, GPU or cuda-python."""
    try:
        init()
        return call(_d.cuDeviceGetCount)
    except (DeviceError, CudaError):
        return 0


def current_device_index():
    """The device of the calling thread's current context, or None if it has none."""
    init()
    ctx = call(_d.cuCtxGetCurrent)
    if ctx is None or int(ctx) == 0:
        return None
    return int(call(_d.cuCtxGetDevice))


def arch_name(capability):
    """Compute capability -> the arch an artifact for exactly this GPU names.

    Hopper and later have arch-specific features (wgmma, TMA multicast...) that
    only the ``a`` variant may use: (9, 0) -> "sm_90a", (8, 0) -> "sm_80".
    """
    major, minor = capability
    return f"sm_{major}{minor}" + ("a" if major >= 9 else "")


class Device:
    """One GPU seen through its retained primary context."""

    def __init__(self, index):
        init()
        d = _d
        count = call(d.cuDeviceGetCount)
        if not 0 <= index < count:
            raise DeviceError(f"CUDA device {index} does not exist: expected 0..{count - 1}, "
                              f"got {index}")
        self.index = index
        self.handle = call(d.cuDeviceGet, index)
        attr = d.CUdevice_attribute
        self.capability = (
            call(d.cuDeviceGetAttribute, attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.handle),
            call(d.cuDeviceGetAttribute, attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.handle))
        self.max_shared_optin = call(
            d.cuDeviceGetAttribute, attr.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            self.handle)
        raw_name = call(d.cuDeviceGetName, 256, self.handle)
        self.name = raw_name.split(b"\0", 1)[0].decode(errors="replace")
        # Retained for the life of the process, as the CUDA runtime does.
        self.context = call(d.cuDevicePrimaryCtxRetain, self.handle)
        self.context_id = int(self.context)
        from . import direct_launch

        # () -> the current context as an int, through libcuda (None without
        # it): activate's first question, which the fast path asks itself.
        self.current_context = direct_launch.context_reader()

    @property
    def arch(self):
        return arch_name(self.capability)

    def activate(self):
        """Make this device's primary context current; return True if it was pushed.

        A thread with no current context gets ours set (what the runtime API
        does implicitly). A thread in another context gets ours pushed, and
        the caller must ``deactivate(True)`` afterwards so the caller's
        library (PyTorch tracks its current device this way) sees no change.
        The usual case (ours is current) is answered through libcuda itself
        where it loads (direct_launch.context_reader), without cuda-python.
        """
        read = self.current_context
        if read is not None and read() == self.context_id:
            return False
        current = _d.cuCtxGetCurrent()[1]
        if current == self.context:   # the usual case, on every call: one comparison
            return False
        current_id = 0 if current is None else int(current)
        if current_id == self.context_id:
            return False
        if current_id == 0:
            call(_d.cuCtxSetCurrent, self.context)
            return False
        call(_d.cuCtxPushCurrent, self.context)
        return True

    def deactivate(self, pushed):
        if pushed:
            call(_d.cuCtxPopCurrent)

    def __repr__(self):
        return f"Device({self.index}, {self.name!r}, {self.arch})"


def get_device(index):
    """The Device for an ordinal, created once per process."""
    dev = _devices.get(index)
    if dev is None:
        dev = _devices[index] = Device(index)
    return dev


# -- modules and functions --------------------------------------------------

def load_module(image):
    """Load a module into the current context: PTX text (a str, which the
    driver compiles) or a cubin (bytes, loaded as it is); on failure the
    error carries the JIT log."""
    d = driver()
    log = bytearray(_JIT_LOG_BYTES)
    options = [d.CUjit_option.CU_JIT_ERROR_LOG_BUFFER,
               d.CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
    values = [log, len(log)]
    data = image.encode() + b"\0" if isinstance(image, str) else bytes(image)
    status, module = d.cuModuleLoadDataEx(data, len(options), options, values)
    if status != _SUCCESS:
        text = bytes(log).split(b"\0", 1)[0].decode(errors="replace").strip()
        raise CudaError("cuModuleLoadDataEx", *_status_text(status), log=text)
    return module


def unload_module(module):
    call(_d.cuModuleUnload, module)


def get_function(module, entry):
    """The kernel named ``entry`` (its PTX .entry name)."""
    return call(_d.cuModuleGetFunction, module, entry.encode())


def allow_dynamic_shared(function, nbytes):
    """Opt a kernel in to more than 48 KiB of dynamic shared memory."""
    call(_d.cuFuncSetAttribute, function,
         _d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)


def launch(function, gx, gy, gz, bx, by, bz, shared, stream, params):
    """cuLaunchKernel; ``params`` is the address of a void*[] (0 for no arguments)."""
    status = _d.cuLaunchKernel(function, gx, gy, gz, bx, by, bz, shared, stream_object(stream),
                               params, 0)[0]
    if status != _SUCCESS:
        raise CudaError("cuLaunchKernel", *_status_text(status))


def dependent_launch_config(gx, gy, gz, bx, by, bz, shared):
    """The CUlaunchConfig of a kernel that may be launched before the grids
    ahead of it on its stream end (programmatic stream serialization, sm_90):
    one that runs ``griddepcontrol.wait`` before it touches memory. Made once
    per kernel; launch_all sets its stream."""
    config = _d.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = gx, gy, gz
    config.blockDimX, config.blockDimY, config.blockDimZ = bx, by, bz
    config.sharedMemBytes = shared
    attribute = _d.CUlaunchAttribute()
    attribute.id = _d.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attribute.value.programmaticStreamSerializationAllowed = 1
    config.attrs = [attribute]
    config.numAttrs = 1
    return config


def pack_launches(launch_args):
    """A plan's launches (launch_all's tuples) in the form launch_all runs
    fastest: packed for libcuda's own launch functions (direct_launch.py)
    where libcuda loads, else the tuples as they are."""
    from . import direct_launch

    if direct_launch.library() is None:
        return launch_args
    ids = driver().CUlaunchAttributeID
    return direct_launch.pack(
        launch_args, int(ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION))


def launch_all(launches, stream):
    """Launch each ``(function, gx, gy, gz, bx, by, bz, shared, params, early)`` of
    ``launches`` on ``stream``, in order: a plan's launches in one Python frame.
    ``launches`` may also be pack_launches' ``direct_launch.Launches``, which
    calls libcuda itself.

    ``function`` is the CUfunction the driver gave (the binding converts
    other types per call) and ``params`` the address of the kernel's void*[]
    (an int: the binding's cheapest form; a tuple of values and ctypes types
    would be packed again on every launch). ``early`` is None (cuLaunchKernel)
    or the kernel's dependent_launch_config (cuLaunchKernelEx).
    """
    if type(launches) is not tuple:
        status, name = launches.run(stream)
        if status:
            launch_failed(status, name)
        return
    handle = stream_object(stream)
    run, run_early = _d.cuLaunchKernel, _d.cuLaunchKernelEx
    for function, gx, gy, gz, bx, by, bz, shared, params, early in launches:
        if early is None:
            status = run(function, gx, gy, gz, bx, by, bz, shared, handle, params, 0)[0]
            if status != _SUCCESS:
                raise CudaError("cuLaunchKernel", *_status_text(status))
            continue
        early.hStream = handle
        status = run_early(early, function, params, 0)[0]
        if status != _SUCCESS:
            raise CudaError("cuLaunchKernelEx", *_status_text(status))


def launch_failed(status, name):
    """Raise the CudaError of a direct launch's failing status (an int)."""
    raise CudaError(name, *_status_text(_d.CUresult(status)))


_stream_objects = {}
_STREAM_OBJECTS_KEPT = 64


def stream_object(handle):
    """The binding's CUstream for an int handle, made once per handle.

    The binding turns an int stream into a new CUstream on every call (a
    tenth or so of cuLaunchKernel's host time in the binding); a CUstream
    wraps the handle without owning the stream, so one kept per handle
    stays valid however long the stream lives. The cache is bounded: a
    program that creates streams without end clears it now and then.
    """
    s = _stream_objects.get(handle)
    if s is None:
        if len(_stream_objects) >= _STREAM_OBJECTS_KEPT:
            _stream_objects.clear()
        s = _stream_objects[handle] = _d.CUstream(handle)
    return s


# -- memory -----------------------------------------------------------------

def mem_alloc(nbytes):
    """Device memory of ``nbytes`` bytes; returns the address as an int. Zero
    bytes (a tensor with a zero-size dim) is address 0 and no driver call:
    cuMemAlloc refuses a size of 0."""
    if nbytes == 0:
        return 0
    return int(call(_d.cuMemAlloc, nbytes))


def mem_free(address):
    """Free what mem_alloc returned (0, the empty allocation, is a no-op)."""
    if address:
        call(_d.cuMemFree, address)


def memset_async(address, nbytes, stream):
    """Zero ``nbytes`` bytes of device memory at ``address``, ordered on ``stream``."""
    if nbytes:
        call(_d.cuMemsetD8Async, address, 0, nbytes, stream_object(stream))


def copy_to_device(address, host_address, nbytes, stream):
    """Host -> device copy ordered on ``stream`` (host memory pageable: returns when staged)."""
    call(_d.cuMemcpyHtoDAsync, address, host_address, nbytes, stream)


def copy_to_host(host_address, address, nbytes, stream):
    """Device -> host copy ordered on ``stream``; synchronize the stream before reading."""
    call(_d.cuMemcpyDtoHAsync, host_address, address, nbytes, stream)


# -- streams and events -----------------------------------------------------

def synchronize(stream):
    call(_d.cuStreamSynchronize, stream)


def synchronize_context():
    """Wait for all work of the current context, on every stream."""
    call(_d.cuCtxSynchronize)


def is_capturing(stream):
    """True while ``stream`` is being captured into a CUDA graph."""
    status = call(_d.cuStreamIsCapturing, stream)
    return status != _d.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE


def capture_graph(record):
    """The instantiated CUDA graph (its CUgraphExec as an int) of what
    ``record(stream)`` launches on a new stream (an int handle) captured
    meanwhile: recorded, not run. ``record`` returns ``(status, name)`` as
    direct_launch.Launches.run does. CudaError when the driver refuses any
    step."""
    d = driver()
    stream = call(_d.cuStreamCreate, int(d.CUstream_flags.CU_STREAM_NON_BLOCKING))
    try:
        call(_d.cuStreamBeginCapture, stream,
             d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        try:
            status, name = record(int(stream))
        finally:
            graph = call(_d.cuStreamEndCapture, stream)
        if status:
            launch_failed(status, name)
        try:
            graph_exec = call(_d.cuGraphInstantiate, graph, 0)
        finally:
            call(_d.cuGraphDestroy, graph)
    finally:
        call(_d.cuStreamDestroy, stream)
    return int(graph_exec)


def graph_exec_destroy(graph_exec):
    """Destroy what capture_graph returned (a graph still running is freed
    by the driver when it ends)."""
    call(_d.cuGraphExecDestroy, _d.CUgraphExec(graph_exec))


def event_create():
    return call(_d.cuEventCreate, _d.CUevent_flags.CU_EVENT_DEFAULT)


def event_record(event, stream):
    call(_d.cuEventRecord, event, stream)


def event_elapsed_ms(start, end):
    """Milliseconds between two recorded events (waits for ``end``)."""
    call(_d.cuEventSynchronize, end)
    return call(_d.cuEventElapsedTime, start, end)


def event_destroy(event):
    call(_d.cuEventDestroy, event)


# -- TMA descriptors (CUtensorMap) ---------------------------------------------

TENSOR_MAP_BYTES = 128      # sizeof(CUtensorMap): the kernel parameter's size
TENSOR_MAP_ALIGNMENT = 128  # alignas(CUtensorMap) since CUDA 13 (64 before): the stricter
# Storage dtype -> (CUtensorMapDataType, after CU_TENSOR_MAP_DATA_TYPE_; bytes per
# element). TMA copies bytes without converting them, so fp8 travels as UINT8; an
# f32 tensor that a kernel reads as tf32 is stored, and encoded, as FLOAT32.
TMA_DATA_TYPES = {"f32": ("FLOAT32", 4), "f16": ("FLOAT16", 2), "bf16": ("BFLOAT16", 2),
                  "f8E4M3FN": ("UINT8", 1), "f8E5M2": ("UINT8", 1)}
# (driver, descriptor shape) -> the driver's arguments before and after the
# address, built once: converting them costs more than the encoding itself.
_TENSOR_MAP_ARGS = {}
_TENSOR_MAP_ARGS_LIMIT = 1024
# Manifest spellings -> the enum members' suffixes.
TMA_SWIZZLES = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}               # bytes
TMA_L2_PROMOTIONS = {0: "NONE", 64: "L2_64B", 128: "L2_128B", 256: "L2_256B"}  # bytes
TMA_OOB_FILLS = {"zero": "NONE", "nan": "NAN_REQUEST_ZERO_FMA"}


def tensor_map_dims(shape, strides, box, itemsize):
    """The driver's ``(globalDim, globalStrides, boxDim, elementStrides)``.

    ``shape``, ``strides`` (in elements) and ``box`` come outermost first, as
    a tensor's dims do; the driver wants dimension 0 to be the innermost, and
    strides in bytes for dims 1..rank-1 only (the innermost is contiguous:
    its stride must be 1 element). Every element stride is 1: the box is
    read densely. Pure: no driver call.
    """
    rank = len(shape)
    return (tuple(reversed(shape)),
            tuple(s * itemsize for s in reversed(strides[:-1])),
            tuple(reversed(box)),
            (1,) * rank)


def im2col_tensor_map_dims(shape, strides, box, lower, upper, element_strides, itemsize):
    """The driver's ``(globalDim, globalStrides, pixelBoxLowerCorner,
    pixelBoxUpperCorner, channelsPerPixel, pixelsPerColumn, elementStrides)``
    of an im2col descriptor.

    ``shape``, ``strides`` (in elements) and ``element_strides`` come one per
    dim, and ``lower`` and ``upper`` one per spatial dim, all outermost first
    (``[N, H, W, C]``: corners ``[H, W]``); ``box`` is ``[pixels, channels]``.
    The driver wants every array innermost first (dim 0 is C, corner 0 is
    W's) and strides in bytes for dims 1..rank-1, as ``tensor_map_dims``.
    Pure: no driver call.
    """
    dims, byte_strides, _, _ = tensor_map_dims(shape, strides, box, itemsize)
    pixels, channels = box
    return (dims, byte_strides, tuple(reversed(lower)), tuple(reversed(upper)),
            channels, pixels, tuple(reversed(element_strides)))


def _enums(d, dtype, swizzle, l2_promotion, oob_fill):
    """The driver's (data type, interleave, swizzle, L2 promotion, OOB fill)
    enum members for a descriptor in the manifest's terms."""
    return (getattr(d.CUtensorMapDataType, "CU_TENSOR_MAP_DATA_TYPE_" + TMA_DATA_TYPES[dtype][0]),
            d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            getattr(d.CUtensorMapSwizzle, "CU_TENSOR_MAP_SWIZZLE_" + TMA_SWIZZLES[swizzle]),
            getattr(d.CUtensorMapL2promotion,
                    "CU_TENSOR_MAP_L2_PROMOTION_" + TMA_L2_PROMOTIONS[l2_promotion]),
            getattr(d.CUtensorMapFloatOOBfill, "CU_TENSOR_MAP_FLOAT_OOB_FILL_" + TMA_OOB_FILLS[oob_fill]))


def _keep(key, head, tail):
    """Keep the driver's form of one descriptor shape (bounded)."""
    if len(_TENSOR_MAP_ARGS) >= _TENSOR_MAP_ARGS_LIMIT:
        _TENSOR_MAP_ARGS.clear()
    _TENSOR_MAP_ARGS[key] = head, tail
    return head, tail


def _tensor_map_args(d, key, dtype, shape, strides, box, swizzle, l2_promotion, oob_fill):
    itemsize = TMA_DATA_TYPES[dtype][1]
    dims, byte_strides, box_dims, element_strides = tensor_map_dims(shape, strides, box, itemsize)
    u64, u32 = d.cuuint64_t, d.cuuint32_t  # the binding takes no plain ints in these arrays
    data_type, *modes = _enums(d, dtype, swizzle, l2_promotion, oob_fill)
    return _keep(key, (data_type, len(dims)), (
        [u64(v) for v in dims], [u64(v) for v in byte_strides],
        [u32(v) for v in box_dims], [u32(v) for v in element_strides], *modes))


def _im2col_tensor_map_args(d, key, dtype, shape, strides, box, lower, upper, element_strides,
                            swizzle, l2_promotion, oob_fill):
    itemsize = TMA_DATA_TYPES[dtype][1]
    dims, byte_strides, lower_corner, upper_corner, channels, pixels, steps = \
        im2col_tensor_map_dims(shape, strides, box, lower, upper, element_strides, itemsize)
    u64, u32 = d.cuuint64_t, d.cuuint32_t
    data_type, *modes = _enums(d, dtype, swizzle, l2_promotion, oob_fill)
    # The corners are plain (signed) ints in the binding, the rest cuuintNN_t.
    return _keep(key, (data_type, len(dims)), (
        [u64(v) for v in dims], [u64(v) for v in byte_strides],
        list(lower_corner), list(upper_corner), u32(channels), u32(pixels),
        [u32(v) for v in steps], *modes))


def encode_tensor_map(dtype, shape, strides, box, swizzle, l2_promotion, oob_fill, address):
    """The 128 bytes of a tiled CUtensorMap over the tensor at device ``address``.

    Arguments are in the manifest's terms (an ``ArgSpec`` of kind "tma"):
    ``dtype`` a storage type of ``TMA_DATA_TYPES``; ``shape``, ``strides``
    (elements) and ``box`` outermost first; ``swizzle`` and ``l2_promotion``
    in bytes (0 for none); ``oob_fill`` "zero" or "nan". Interleave is always
    none. Encoding is host-only (no stream operation, so it is allowed under
    CUDA graph capture) and costs microseconds; a bad descriptor, an address
    not 16-byte aligned say, raises CudaError (CUDA_ERROR_INVALID_VALUE).
    The driver's form of everything but the address is made once per
    descriptor shape and kept (``_TENSOR_MAP_ARGS``).
    """
    d = driver()
    key = (id(d), dtype, shape, strides, box, swizzle, l2_promotion, oob_fill)
    head, tail = _TENSOR_MAP_ARGS.get(key) or _tensor_map_args(
        d, key, dtype, shape, strides, box, swizzle, l2_promotion, oob_fill)
    return _bytes(call(d.cuTensorMapEncodeTiled, *head, address, *tail))


def encode_im2col_tensor_map(dtype, shape, strides, box, lower, upper, element_strides, swizzle,
                             l2_promotion, oob_fill, address):
    """The 128 bytes of an im2col-mode CUtensorMap over the tensor at device
    ``address`` (cuTensorMapEncodeIm2col).

    As ``encode_tensor_map``, with ``shape`` and ``strides`` the activation's
    (``[N, H, W, C]`` or ``[N, D, H, W, C]``, outermost first), ``box``
    ``[pixels, channels]``, and ``lower``, ``upper`` (one per spatial dim)
    and ``element_strides`` (one per dim) outermost first: the manifest's
    ``im2col`` field. Kept per descriptor shape in ``_TENSOR_MAP_ARGS`` too.
    """
    d = driver()
    key = (id(d), "im2col", dtype, shape, strides, box, lower, upper, element_strides, swizzle,
           l2_promotion, oob_fill)
    head, tail = _TENSOR_MAP_ARGS.get(key) or _im2col_tensor_map_args(
        d, key, dtype, shape, strides, box, lower, upper, element_strides, swizzle,
        l2_promotion, oob_fill)
    return _bytes(call(d.cuTensorMapEncodeIm2col, *head, address, *tail))


def _bytes(tensor_map):
    """The 128 bytes of a CUtensorMap the binding returned."""
    import ctypes
    return ctypes.string_at(tensor_map.getPtr(), TENSOR_MAP_BYTES)
