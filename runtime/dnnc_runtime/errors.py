"""The runtime's own error hierarchy.

The runtime never imports the compiler, so it cannot share ``dnnc.errors``.
Every error it raises on purpose is a ``DnncRuntimeError`` (itself a
``RuntimeError``); messages name the tensor or kernel and say
``expected X, got Y``.

    DnncRuntimeError
    ├── ArtifactError   the .dnnpkg is unreadable, malformed, of another format
    │                   version, or built for an arch this GPU cannot run
    ├── ArgumentError   a caller argument is wrong (count, name, shape, dtype,
    │                   strides, device, alignment); raised before any launch
    ├── CudaError       a CUDA driver call failed (carries the call, the
    │                   status and, for module loads, the JIT log)
    └── DeviceError     no usable GPU / driver / cuda-python, or the device is
                        used in a way the runtime does not allow
"""


class DnncRuntimeError(RuntimeError):
    """Base class of every error the runtime raises on purpose."""


class ArtifactError(DnncRuntimeError):
    """A ``.dnnpkg`` cannot be used: unreadable, malformed, wrong version or arch."""


class ArgumentError(DnncRuntimeError):
    """A caller argument does not match the executable's signature.

    ``tensor`` is the name of the input or output at fault (None when the
    error is about the call as a whole, e.g. the argument count).
    """

    def __init__(self, message, *, tensor=None):
        super().__init__(message)
        self.tensor = tensor


class CudaError(DnncRuntimeError):
    """A CUDA driver call returned an error status.

    ``call`` is the driver function (``cuLaunchKernel``), ``status`` the
    CUresult name (``CUDA_ERROR_INVALID_PTX``), ``log`` the JIT error log
    when a module load failed.
    """

    def __init__(self, call, status, description="", *, log=""):
        message = f"{call} failed: {status}"
        if description:
            message += f" ({description})"
        if log:
            message += f"\nJIT log:\n{log}"
        super().__init__(message)
        self.call = call
        self.status = status
        self.log = log


class DeviceError(DnncRuntimeError):
    """No usable GPU, driver or cuda-python; or a device used the wrong way."""
