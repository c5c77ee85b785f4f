"""A plan's kernel launches called in libcuda itself, through ctypes.

cuda-python's ``cuLaunchKernel`` converts every argument into its own
objects on each call: 3.8-5.9 us of host time a launch on an H200's host
(docs/performance.md, "Launch overhead"), most of a small graph's
``execute``. Here the arguments are packed once per executable, into
ctypes objects: for each kernel a ``CUlaunchConfig`` (with its one
attribute for a kernel launched with programmatic stream serialization),
and each launch is one ctypes call of libcuda's ``cuLaunchKernelEx`` (or
``cuLaunchKernel``, ``entry=``), its arguments made once (``Libcuda``).
``context_reader`` reads the current context the same way, for the check
made before a plan's launches.

The structures mirror cuda.h (CUDA 12 and 13):

    CUlaunchAttribute: CUlaunchAttributeID id; char pad[4]; union value (64 bytes)
    CUlaunchConfig:    6 x unsigned grid and block dims, unsigned sharedMemBytes,
                       CUstream hStream, CUlaunchAttribute *attrs, unsigned numAttrs

(test_direct_launch.py compares their bytes with cuda-python's own.) Where
libcuda cannot be loaded, or lacks the functions, ``pack`` returns None and
the runtime launches through cuda-python as before.
"""

import ctypes

_UINT = ctypes.c_uint


class Attribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_uint * 16)]


class Config(ctypes.Structure):
    _fields_ = [("gridDimX", _UINT), ("gridDimY", _UINT), ("gridDimZ", _UINT),
                ("blockDimX", _UINT), ("blockDimY", _UINT), ("blockDimZ", _UINT),
                ("sharedMemBytes", _UINT), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(Attribute)), ("numAttrs", _UINT)]


ENTRIES = ("cuLaunchKernelEx", "cuLaunchKernel")
DEFAULT_ENTRY = "cuLaunchKernelEx"

_library = None     # the loaded libcuda; False once it could not be loaded


class Libcuda:
    """The libcuda functions called here, as ctypes function objects of their
    own with no ``argtypes``: each call passes ctypes objects made once
    (c_void_p, c_uint, a byref), which ctypes hands to C as they are.
    Typed functions (``argtypes``) convert every argument on every call:
    an 11-argument cuLaunchKernel cost 1.06 us of host time that way
    against 0.53 us with its arguments made once, and cuLaunchKernelEx's
    four 0.20 us (timed against a do-nothing libcuda on the build
    machine; docs/frontend.md, "Host overhead")."""

    def __init__(self, lib):
        self.cuLaunchKernel = lib["cuLaunchKernel"]
        self.cuLaunchKernelEx = lib["cuLaunchKernelEx"]
        self.cuCtxGetCurrent = lib["cuCtxGetCurrent"]
        # replay.py's: a captured plan's launch, and the check before it
        self.cuGraphLaunch = lib["cuGraphLaunch"]
        self.cuStreamIsCapturing = lib["cuStreamIsCapturing"]
        for function in (self.cuLaunchKernel, self.cuLaunchKernelEx, self.cuCtxGetCurrent,
                         self.cuGraphLaunch, self.cuStreamIsCapturing):
            function.restype = ctypes.c_int


def library():
    """libcuda.so.1's functions (``Libcuda``), or None."""
    global _library
    if _library is None:
        try:
            _library = Libcuda(ctypes.CDLL("libcuda.so.1"))
        except (OSError, AttributeError):
            _library = False
    return _library or None


def context_reader():
    """A function returning the calling thread's current CUcontext as an int
    (0: none), through libcuda's cuCtxGetCurrent; None without libcuda.
    ``cuda.Device.activate`` asks it first on every call: the usual answer
    (the device's primary context is current) then costs one ctypes call
    instead of one through cuda-python."""
    lib = library()
    if lib is None:
        return None
    get, context = lib.cuCtxGetCurrent, ctypes.c_void_p()
    ref = ctypes.byref(context)

    def current():
        return 0 if get(ref) else context.value or 0
    return current


class Launches:
    """A plan's launches, packed once: ``run(stream)`` launches them in order
    on the stream (an int handle) and returns ``(0, None)``, or the first
    failing status and the function's name (nothing after it is launched).

    ``entry`` picks the driver function of a launch without programmatic
    stream serialization: ``cuLaunchKernelEx`` (its grid, block, shared
    memory and stream in a CUlaunchConfig with no attribute: four
    arguments a call) or ``cuLaunchKernel`` (eleven); a launch with it is
    always cuLaunchKernelEx with its one attribute. The two make the same
    launch; bench/execute_host_path.py times both. The stream is written
    into the configs and the shared stream argument only when it differs
    from the last call's."""

    __slots__ = ("lib", "_items", "_configs", "_stream_arg", "_stream", "_keep")

    def __init__(self, lib, launch_args, serialization_id, entry=DEFAULT_ENTRY):
        if entry not in ENTRIES:
            raise ValueError(f"launch entry: expected one of {ENTRIES}, got {entry!r}")
        self.lib = lib        # the Libcuda they call (replay.py launches graphs through it)
        items, configs, keep = [], [], []
        stream_arg = ctypes.c_void_p(0)
        for function, gx, gy, gz, bx, by, bz, shared, params, early in launch_args:
            function, params = ctypes.c_void_p(int(function)), ctypes.c_void_p(params)
            if early is None and entry == "cuLaunchKernel":
                args = (function, *(_UINT(v) for v in (gx, gy, gz, bx, by, bz, shared)),
                        stream_arg, params, None)
                items.append((lib.cuLaunchKernel, args, "cuLaunchKernel"))
                continue
            attribute, count = None, 0
            if early is not None:
                attribute = Attribute()
                attribute.id = serialization_id
                attribute.value[0] = 1   # programmaticStreamSerializationAllowed
                attribute, count = ctypes.pointer(attribute), 1
            config = Config(gx, gy, gz, bx, by, bz, shared, None, attribute, count)
            configs.append(config)
            keep.append(attribute)
            items.append((lib.cuLaunchKernelEx, (ctypes.byref(config), function, params, None),
                          "cuLaunchKernelEx"))
        self._items, self._configs, self._keep = tuple(items), tuple(configs), keep
        self._stream_arg, self._stream = stream_arg, 0

    def __len__(self):
        return len(self._items)

    def run(self, stream):
        if stream != self._stream:
            self._set_stream(stream)
        for function, args, name in self._items:
            status = function(*args)
            if status:
                return status, name
        return 0, None

    def _set_stream(self, stream):
        for config in self._configs:
            config.hStream = stream
        self._stream_arg.value = stream
        self._stream = stream


def pack(launch_args, serialization_id, entry=DEFAULT_ENTRY):
    """``Launches`` for cuda.launch_all's tuples, or None without libcuda."""
    lib = library()
    if lib is None:
        return None
    return Launches(lib, launch_args, serialization_id, entry)
