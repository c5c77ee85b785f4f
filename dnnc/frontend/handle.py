"""Handles, streams and versions, as cudnn-frontend exposes them.

A cuDNN handle carries the stream work is launched on. dnnc needs no library
context, so a handle here is an integer naming a small record of its stream
(``create_handle`` / ``destroy_handle`` / ``set_stream`` / ``get_stream``);
``execute`` launches on the stream of the handle it is given (else the
graph's), through the runtime. Stream 0 is the legacy default stream; a
handle whose stream was never set uses the runtime's choice (torch's current
stream when the call passes torch tensors).

``backend_version`` reports dnnc's version, not a cuDNN one: major * 10000 +
minor * 100 + patch (0.1.0 is 100); ``backend_version_string`` the text.
cudnn-frontend code often gates features on cuDNN versions
(``LooseVersion(cudnn.backend_version_string()) < "8.9.5"``) and skips them
on dnnc's 0.x; DNNC_FRONTEND_REPORTED_VERSION (dnnc/env.py) makes both
report the version it names instead, encoded as cuDNN 9 encodes its own
(major * 10000 + minor * 100 + patch).
"""

import itertools

from dnnc import env
from dnnc.errors import GraphError
from dnnc.version import __version__

_handles = {}                # handle -> its stream (None: not set)
_next = itertools.count(1)


def create_handle():
    """A new handle (an int), with no stream set."""
    handle = next(_next)
    _handles[handle] = None
    return handle


def destroy_handle(handle):
    _check(handle)
    del _handles[handle]


def set_stream(handle, stream):
    """Launch the work of ``handle`` on ``stream`` (an int CUstream, or a
    torch / CuPy stream object)."""
    _check(handle)
    _handles[handle] = stream


def get_stream(handle):
    _check(handle)
    stream = _handles[handle]
    return 0 if stream is None else int(getattr(stream, "cuda_stream", stream))


def stream_of(handle):
    """The stream set on ``handle`` (None: none set, or no handle)."""
    if handle is None:
        return None
    _check(handle)
    return _handles[handle]


def _check(handle):
    if handle not in _handles:
        raise GraphError(f"handle {handle!r}: expected a handle from create_handle() that is "
                         "not destroyed")


def backend_version():
    """The reported version as one number: major * 10000 + minor * 100 + patch."""
    parts = (backend_version_string().split("+")[0].split(".") + ["0"] * 3)[:3]
    major, minor, patch = (int(p) for p in parts)
    return major * 10000 + minor * 100 + patch


def backend_version_string():
    """dnnc's version, or DNNC_FRONTEND_REPORTED_VERSION's."""
    return env.frontend_reported_version() or __version__


def get_last_error_string():
    """cuDNN keeps its last error message; dnnc raises it instead, so there is none."""
    return ""
