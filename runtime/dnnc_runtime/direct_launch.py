"""A plan's kernel launches called in libcuda itself, through ctypes.

cuda-python's ``cuLaunchKernel`` converts every argument into its own
objects on each call: 3.8-5.9 us of host time a launch on an H200's host
(docs/performance.md, "Launch overhead"), most of a small graph's
``execute``. Here the arguments are packed once per executable, into C
integers and, for a kernel launched with programmatic stream serialization,
a ``CUlaunchConfig`` with its one attribute, and each launch is one ctypes
call of libcuda's ``cuLaunchKernel`` / ``cuLaunchKernelEx`` (the stream
written into the config first).

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


_library = None     # the loaded libcuda; False once it could not be loaded


def library():
    """libcuda.so.1 with the two launch functions typed, or None."""
    global _library
    if _library is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            plain, extended = lib.cuLaunchKernel, lib.cuLaunchKernelEx
        except (OSError, AttributeError):
            _library = False
            return None
        vp = ctypes.c_void_p
        plain.restype = extended.restype = ctypes.c_int
        plain.argtypes = [vp, _UINT, _UINT, _UINT, _UINT, _UINT, _UINT, _UINT, vp, vp, vp]
        extended.argtypes = [ctypes.POINTER(Config), vp, vp, vp]
        _library = lib
    return _library or None


class Launches:
    """A plan's launches, packed once: ``run(stream)`` launches them in order
    on the stream (an int handle) and returns ``(0, None)``, or the first
    failing status and the function's name (nothing after it is launched)."""

    __slots__ = ("_items", "_keep", "_plain", "_extended")

    def __init__(self, lib, launch_args, serialization_id):
        items, keep = [], []
        for function, gx, gy, gz, bx, by, bz, shared, params, early in launch_args:
            config = None
            if early is not None:
                attribute = Attribute()
                attribute.id = serialization_id
                attribute.value[0] = 1   # programmaticStreamSerializationAllowed
                config = Config(gx, gy, gz, bx, by, bz, shared, None,
                                ctypes.pointer(attribute), 1)
                keep.append(attribute)
            items.append((int(function), gx, gy, gz, bx, by, bz, shared, params, config,
                          None if config is None else ctypes.byref(config)))
        self._items, self._keep = tuple(items), keep
        self._plain, self._extended = lib.cuLaunchKernel, lib.cuLaunchKernelEx

    def __len__(self):
        return len(self._items)

    def run(self, stream):
        plain, extended = self._plain, self._extended
        for function, gx, gy, gz, bx, by, bz, shared, params, config, ref in self._items:
            if config is None:
                status = plain(function, gx, gy, gz, bx, by, bz, shared, stream, params, None)
                if status:
                    return status, "cuLaunchKernel"
                continue
            config.hStream = stream
            status = extended(ref, function, params, None)
            if status:
                return status, "cuLaunchKernelEx"
        return 0, None


def pack(launch_args, serialization_id):
    """``Launches`` for cuda.launch_all's tuples, or None without libcuda."""
    lib = library()
    if lib is None:
        return None
    return Launches(lib, launch_args, serialization_id)
