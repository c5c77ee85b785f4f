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

_handles = {}                # handle -> its stream as given (None: not set)
_launch_streams = {}         # handle -> its stream as execute passes it on (see set_stream)
_next = itertools.count(1)


def create_handle():
    """A new handle (an int), with no stream set."""
    handle = next(_next)
    _handles[handle] = _launch_streams[handle] = None
    return handle


def destroy_handle(handle):
    _check(handle)
    del _handles[handle], _launch_streams[handle]


def set_stream(handle, stream):
    """Launch the work of ``handle`` on ``stream`` (an int CUstream, or a
    torch / CuPy stream object).

    The stream object is kept (so it lives as long as the handle names it),
    and its handle read once here, as cuDNN's cudnnSetStream takes the raw
    handle: every execute then passes an int to the runtime, which reads
    it as it is. An object the runtime cannot read is passed on as given,
    for the runtime's error to name at execute."""
    _check(handle)
    launch_stream = stream
    if stream is not None and type(stream) is not int:
        from dnnc_runtime.binding import stream_handle
        from dnnc_runtime.errors import ArgumentError

        try:
            launch_stream = stream_handle(stream)
        except ArgumentError:
            pass
    _handles[handle], _launch_streams[handle] = stream, launch_stream


def get_stream(handle):
    _check(handle)
    stream = _handles[handle]
    return 0 if stream is None else int(getattr(stream, "cuda_stream", stream))


def stream_of(handle):
    """The stream set on ``handle``, as the runtime takes it: an int handle
    (or an object set that is not a stream); None: none set, or no handle."""
    if handle is None:
        return None
    try:
        return _launch_streams[handle]
    except KeyError:
        _check(handle)          # raises, naming the handle


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
