"""CUDA graphs of a plan's launches, replayed when a call's addresses repeat.

A steady caller may call an executable on the same memory again and
again: code that executes one cudnn-frontend-style plan on the same
buffers, or a loop whose allocator hands each step the blocks of a step
before. Each kernel launch costs a driver call of several microseconds of
host time; a CUDA graph of the whole plan costs one. Off unless the
executable's ``graph_replay`` is set (executable.py).

``Replays`` keeps up to ``KEPT`` instantiated graphs of one executable, each
under the key of the call it was captured from: the call's address list
(every input, output and runtime scalar, as ``steady_checks`` returns it)
and its workspace's address, which together fix every launch parameter.
The fast path (relaunch.py) asks ``replay(key, stream)`` before writing any
argument slot; a held key is one ``cuGraphLaunch``. Otherwise it launches
kernel by kernel, then calls ``launched(key, stream)``: a key that one of
the last ``RECENT`` calls launched this way also had is captured then,
while the argument slots hold its addresses, by recording the launches on
a private stream (recorded, not run) and instantiating the graph. (Not
only the call before: a loop that keeps one call's outputs while it makes
the next may alternate between sets of addresses.) The oldest graph makes room for a new one past ``KEPT`` (the driver frees a
graph still running when it ends).

Plans of fewer than ``MIN_LAUNCHES`` kernels are not captured. Nothing is
replayed or captured while the caller's own stream is being
captured (its launches then go into the caller's graph, kernel by kernel,
as before). A capture or instantiation the driver refuses turns replay off
for the executable, which keeps launching kernel by kernel.
"""

import ctypes

from . import cuda

KEPT = 4            # graphs held per executable
MIN_LAUNCHES = 3    # plans of fewer kernels launch them one by one (a one-kernel
                    # call measured slower through a graph than launched)
RECENT = 8          # keys of the calls launched kernel by kernel, remembered
CAPTURES = 16       # graphs captured per executable at most: past them, addresses
                    # that keep changing are not chased (the held graphs still serve)


class Replays:
    """The graphs of one executable's packed launches (``direct_launch.Launches``)."""

    __slots__ = ("launches", "graphs", "recent", "enabled", "captures", "_launch", "_capturing",
                 "_status", "_status_ref")

    def __init__(self, launches):
        lib = launches.lib
        self.launches = launches
        self.graphs = {}           # key -> graph exec handle (int), oldest first
        self.recent = {}           # keys of the last RECENT calls launched kernel by kernel
        self.enabled = True
        self.captures = 0          # graphs captured so far
        self._launch = lib.cuGraphLaunch
        self._capturing = lib.cuStreamIsCapturing
        self._status = ctypes.c_int()
        self._status_ref = ctypes.byref(self._status)

    def replay(self, key, stream):
        """Launch the graph of ``key`` on ``stream`` (an int handle); False,
        with nothing launched, when there is none or the stream is capturing."""
        graph = self.graphs.get(key)
        if graph is None or self._stream_capturing(stream):
            return False
        status = self._launch(ctypes.c_void_p(graph), ctypes.c_void_p(stream))
        if status:
            cuda.launch_failed(status, "cuGraphLaunch")
        return True

    def launched(self, key, stream):
        """After a call of ``key`` launched kernel by kernel on ``stream``:
        capture its graph when one of the last RECENT such calls had it."""
        recent = self.recent
        if key not in recent:
            if len(recent) >= RECENT:
                del recent[next(iter(recent))]
            recent[key] = None
            return
        del recent[key]
        if not self.enabled or self.captures >= CAPTURES or key in self.graphs or \
                self._stream_capturing(stream):
            return
        try:
            graph = cuda.capture_graph(self.launches.run)
        except cuda.CudaError:
            self.enabled = False       # this driver or context will not take it
            return
        self.captures += 1
        if len(self.graphs) >= KEPT:
            oldest = next(iter(self.graphs))
            cuda.graph_exec_destroy(self.graphs.pop(oldest))
        self.graphs[key] = graph

    def close(self):
        """Destroy every graph (the executable is unloading its kernels)."""
        graphs, self.graphs = self.graphs, {}
        for graph in graphs.values():
            cuda.graph_exec_destroy(graph)

    def _stream_capturing(self, stream):
        status = self._capturing(ctypes.c_void_p(stream), self._status_ref)
        return bool(status) or self._status.value != 0
