"""``Executable``: a loaded artifact that runs its launch plan on a GPU.

A call goes in three steps:

1. **Check** (pure Python, ``binding``): match positional/named inputs and
   ``outputs=`` to the manifest, check every argument. Any bad argument
   raises ``ArgumentError`` here, before the first CUDA call: nothing is
   launched.
2. **Prepare** (first call only): pick the device (the torch tensors', else
   the current context's, else 0), check the artifact's arch against it, load
   the kernels (the package's cubin for exactly this GPU when it has one
   and the driver takes it, else the PTX: modules.py; ``loaded_from`` says
   which), look up every kernel, opt kernels in to > 48 KiB of dynamic shared
   memory, allocate the workspace (torch's caching allocator when the call
   uses torch, else cuMemAlloc) and zero it on the call's stream (kernels
   that count arrivals there, a split-K GEMM's, find their counters at zero
   and leave them so), and pack each kernel's argument array once:
   scalars are written then, pointer slots are rewritten on every call, and
   each TMA descriptor (a 128-byte CUtensorMap the kernel takes by value)
   gets its own aligned buffer.
3. **Launch**: write the argument pointers into the packed arrays, encode
   the TMA descriptors whose tensor moved since they were last encoded (a
   host-only driver call; pointers are usually stable, so usually none),
   then launch each kernel of the plan in order on the caller's stream
   (``stream=`` if given, else torch's current stream when the call uses
   torch tensors, else the legacy default stream): cuLaunchKernel, or
   cuLaunchKernelEx with programmatic stream serialization for a kernel the
   manifest marks ``dependent_launch`` (it waits for the grids ahead, so it
   may be launched before they end). Kernels with an empty
   grid (zero-size tensors) are skipped, and a plan without kernels loads
   no module. A tensor with a zero-size dim may sit at address 0 (its
   alignment is not checked; the compiler drops the kernels that would
   touch it), and a NumPy one is not staged. Every launch is bound before
   the first is made, so an address TMA refuses (``ArgumentError``) still
   stops the call before anything runs.

Calls after the first with torch tensors in the manifest's layout take a
fast path (``relaunch.Relaunch``) that makes the same checks with what the
executable worked out once; any other call takes the steps above.
``run_steady`` is that fast path alone, for callers that hold their
arguments in the manifest's order (dnnc.frontend's execute). With
``graph_replay`` on, a call on the fast path that has the addresses of a
recent call captures the plan's launches into a CUDA graph, and later
calls with those addresses launch the graph instead of each kernel
(replay.py).

CUDA graph capture: a call whose arguments and ``outputs=`` are all CUDA
tensors / device arrays makes no allocation, synchronization or host copy,
so it can be captured (``torch.cuda.graph``) and replayed; encoding a TMA
descriptor is host work, which capture allows (the graph keeps the bytes
of the launch). Call the executable once before capturing: the first call
loads the module and allocates the workspace, and is refused under capture.
Outputs left to the runtime under capture come from torch's allocator, which
serves capture from the graph's private pool; NumPy arguments are refused
under capture.

Threads and streams: one Executable may be called from several threads
and on several streams at once. A lock serializes the host side of a call
(writing the packed arguments, encoding descriptors, the launches; the
kernels run asynchronously after it), and each stream gets a workspace of
its own, allocated and zeroed on that stream by its first call, so that
kernels of two streams never share scratch memory. Calls on one stream
share its workspace, which the stream's order makes safe. A stream's
workspace lives until ``close()``: an executable called on many streams
holds ``workspace_bytes`` for each. Under CUDA graph capture a stream
without a workspace gets one from torch's allocator (the graph's pool),
zeroed by a memset the graph records; a capture with no torch tensor
cannot allocate one and is refused: call once on that stream first.
"""

import ctypes
import os
import sys
import threading

from . import artifact as _artifact
from . import binding, cuda, modules, relaunch
from .binding import DEVICE, NUMPY, TORCH, Bound
from .errors import ArgumentError, ArtifactError, CudaError, DeviceError

_SCALAR_CTYPES = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "f32": ctypes.c_float}


def load(path_or_bytes, cubin=None):
    """Load a .dnnpkg (a path, its bytes, or a binary file) into an Executable.

    Reads and validates the artifact; touches no GPU until the first call.
    ``cubin`` False loads the PTX even where the package has a cubin for
    the GPU (None: unless DNNC_CUBIN is ``0``; see modules.py).
    """
    return Executable(_artifact.read(path_or_bytes), cubin=cubin)


class Plan(tuple):
    """The kernels an executable launches, in order (KernelSpec); ``str()`` is a table.

    ``name`` is the kernel function a launch came from (one function may make
    several launches); ``entry`` the PTX function launched. The table has one
    row per launch: kernel function, entry, strategy (with the config fields
    the launch does not show), grid, block, dynamic shared memory and the
    number of arguments; under the first launch of each kernel function, the
    reason for its config (wrapped), when the package records one.
    """

    WIDTH = 100   # reasons wrap at this column

    @property
    def labels(self):
        """One unique key per launch: its entry, with ``#i`` added if an entry repeats."""
        entries = [k.entry for k in self]
        return [e if entries.count(e) == 1 else f"{e}#{i}" for i, e in enumerate(entries)]

    def __str__(self):
        import textwrap

        rows = [("#", "kernel", "entry", "strategy", "grid", "block", "shared", "args")]
        for i, k in enumerate(self):
            note = "" if k.has_work else "  (skipped: empty grid)"
            rows.append((str(i), k.name, k.entry, k.config_text, "x".join(map(str, k.grid)),
                         "x".join(map(str, k.block)), str(k.shared_bytes), str(len(k.args)) + note))
        widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]) - 1)]
        indent = " " * (widths[0] + 2)   # reasons start under the kernel column
        lines, explained = [], set()
        for n, r in enumerate(rows):
            lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths)) + "  " + r[-1])
            k = self[n - 1] if n else None
            if k is not None and k.reason and k.name not in explained:
                explained.add(k.name)  # once per kernel function: its launches share it
                lines.append(textwrap.fill(f"why: {k.reason}", width=self.WIDTH,
                                           initial_indent=indent, subsequent_indent=indent + "     ",
                                           break_on_hyphens=False))
        return "\n".join(lines)


class _Launch:
    """One kernel ready to launch: function, dims, and its packed void*[] of arguments.

    Every pointer or scalar argument gets an 8-byte slot (big enough for a
    pointer, i64, i32 or f32; the driver copies as many bytes as the PTX
    parameter has). A runtime scalar's slot (``scalar_input``) is rewritten
    on every call as a pointer's is, with the f32 bits the call's address
    list holds for that input. A TMA argument gets a ``_TensorMap``: a 128-byte
    CUtensorMap buffer of its own, aligned as the CUtensorMap type is (the
    driver copies the 128 bytes into the kernel's ``.param .align 64 .b8
    [128]``). ``params`` is the address of the array of argument addresses
    that cuLaunchKernel wants. ``bind`` rewrites what changes between calls:
    pointer slots, and descriptors whose tensor moved.
    """

    __slots__ = ("index", "kernel", "function", "dims", "params", "slots", "pointers", "maps",
                 "_addresses")

    def __init__(self, index, kernel, function, sources, owners):
        n = len(kernel.args)
        self.index = index                # position in the plan
        self.kernel = kernel
        self.function = function
        self.dims = (*kernel.grid, *kernel.block, kernel.shared_bytes)
        self.slots = (ctypes.c_uint64 * max(n, 1))()
        base = ctypes.addressof(self.slots)
        addresses = [base + 8 * i for i in range(n)]
        pointers, maps = [], []
        for i, arg in enumerate(kernel.args):
            if arg.kind == "scalar":
                _SCALAR_CTYPES[arg.type].from_buffer(self.slots, 8 * i).value = arg.value
                continue
            source, offset = sources[arg.buffer]
            if arg.kind == "scalar_input":
                # The call's address list holds a runtime scalar's f32 bits
                # (binding.bind): written into the slot as a pointer is.
                pointers.append((i, source, 0))
                continue
            if arg.kind == "tma":
                tensor_map = _TensorMap(kernel, i, arg, source, offset + arg.byte_offset,
                                        owners[arg.buffer])
                addresses[i] = tensor_map.address
                maps.append(tensor_map)
            else:
                pointers.append((i, source, offset + arg.byte_offset))
        self._addresses = (ctypes.c_void_p * max(n, 1))(*addresses)
        self.params = ctypes.addressof(self._addresses) if n else 0
        self.pointers = tuple(pointers)   # (slot, index into the call's address list, byte offset)
        self.maps = tuple(maps)

    def bind(self, addresses):
        """Point the arguments at this call's buffers (``addresses``: the
        call's address list). Makes no stream operation: allowed under capture."""
        slots = self.slots
        for slot, source, offset in self.pointers:
            slots[slot] = addresses[source] + offset
        for tensor_map in self.maps:
            address = addresses[tensor_map.source] + tensor_map.offset
            if address != tensor_map.encoded:
                tensor_map.encode(address)


class _TensorMap:
    """The CUtensorMap of one TMA argument, and the tensor address it encodes.

    The descriptor holds the tensor's address, so it is encoded again
    whenever that moves. Encoding costs microseconds (about ten through the
    Python binding, more than many kernels run), so the address the bytes
    hold is kept, and an unchanged one costs a comparison; the bytes of the
    last ``RECENT`` addresses are kept too, so that a caller cycling through
    a few buffers (an allocator reusing them, rotating inputs) copies 128
    bytes instead of encoding.
    """

    RECENT = 8

    __slots__ = ("kernel", "position", "arg", "source", "offset", "owner", "address", "encoded",
                 "_storage", "_recent")

    def __init__(self, kernel, position, arg, source, offset, owner):
        self.kernel, self.position, self.arg = kernel, position, arg
        self.source, self.offset = source, offset  # as a pointer slot's
        self.owner = owner                  # TensorSpec of its input/output; None: the workspace
        align = cuda.TENSOR_MAP_ALIGNMENT
        self._storage = ctypes.create_string_buffer(cuda.TENSOR_MAP_BYTES + align)
        base = ctypes.addressof(self._storage)
        self.address = (base + align - 1) // align * align
        self.encoded = None                 # the tensor address the bytes hold (None: not yet)
        self._recent = {}                   # address -> its 128 bytes, oldest first

    def encode(self, address):
        raw = self._recent.get(address)
        if raw is None:
            raw = self._encode(address)
            if len(self._recent) >= self.RECENT:
                del self._recent[next(iter(self._recent))]
            self._recent[address] = raw
        ctypes.memmove(self.address, raw, cuda.TENSOR_MAP_BYTES)
        self.encoded = address

    def _encode(self, address):
        a = self.arg
        try:
            if a.im2col is None:
                raw = cuda.encode_tensor_map(a.dtype, a.shape, a.strides, a.box, a.swizzle,
                                             a.l2_promotion, a.oob_fill, address)
            else:
                i = a.im2col
                raw = cuda.encode_im2col_tensor_map(a.dtype, a.shape, a.strides, a.box, i.lower,
                                                    i.upper, i.element_strides, a.swizzle,
                                                    a.l2_promotion, a.oob_fill, address)
        except CudaError as e:
            what = (f"cannot encode the TMA descriptor of kernel '{self.kernel.name}' (argument "
                    f"{self.position}: {a.dtype}{list(a.shape)} at byte offset {self.offset}")
            if self.owner is None:   # the workspace: its address is the runtime's own
                raise ArtifactError(f"{what} of the workspace): {e}") from e
            why = (f"expected an address aligned to {_artifact.TMA_ALIGNMENT} bytes, got {address:#x}"
                   if address % _artifact.TMA_ALIGNMENT else f"the tensor at {address:#x} was refused")
            raise ArgumentError(f"{self.owner.label}: {what}): {why} ({e}); raised while binding the "
                                f"launches, before any kernel of this call ran",
                                tensor=self.owner.name) from e
        return raw


class _Call:
    """The state of one call between checking its arguments and returning."""

    __slots__ = ("inputs", "outputs", "given", "addresses", "stream", "device", "pushed", "staged")

    def release(self):
        for address in self.staged:
            cuda.mem_free(address)
        self.staged = ()
        self.device.deactivate(self.pushed)


class Executable:
    """A launch plan loaded from a .dnnpkg. Call it: ``y = exe(x, w)``.

    ``exe(*inputs, outputs=None, stream=None, **named)``: inputs by position or
    by name; ``outputs`` a list, a dict by name, or one array (for one output),
    else allocated like the inputs (torch tensors with the manifest's strides
    for torch inputs, DeviceArray for other device arrays, NumPy arrays for
    NumPy inputs). Returns the outputs: one object for one output, else a tuple.

    ``loaded_from`` is None until the first call loads the kernels, then
    "cubin" or "ptx": which code of the package the driver was given
    (modules.py); ``load_note`` says which cubin, or why not one.

    ``graph_replay``: whether the fast path replays a CUDA graph of the
    plan's launches for calls whose addresses repeat (replay.py); off
    unless the environment sets ``DNNC_GRAPH_REPLAY=1``; may be set at any
    time (turned off, the graphs held are destroyed).
    """

    def __init__(self, artifact, cubin=None):
        self.artifact = artifact
        self.use_cubin = cubin
        self.loaded_from = None
        self.load_note = ""
        self.inputs = artifact.inputs
        self.outputs = artifact.outputs
        self.plan = Plan(artifact.kernels)
        self.device = None          # cuda.Device, bound by the first call
        self._module = None
        self._launches = ()
        self._launch_args = ()      # cuda.launch_all's form of _launches
        self._relaunch = None       # relaunch.Relaunch once a call prepared the plan
        self._graph_replay = os.environ.get("DNNC_GRAPH_REPLAY", "0") == "1"
        # Per stream handle: (device address, owner: a torch tensor or "cuda"
        # for cuMemAlloc memory) of that stream's workspace.
        self._workspaces = {}
        self._first_stream = None   # the stream of the first call (whose workspace _workspace is)
        self._lock = threading.RLock()
        n_in, n_out = len(self.inputs), len(self.outputs)
        # Where each buffer's address comes from: the call's address list is
        # [inputs..., outputs..., workspace].
        self._sources = tuple(
            (b.index, 0) if b.kind == "input" else
            (n_in + b.index, 0) if b.kind == "output" else
            (n_in + n_out, b.offset) for b in artifact.buffers)
        # Whose tensor each buffer is, for messages (None: the workspace).
        self._owners = tuple(
            self.inputs[b.index] if b.kind == "input" else
            self.outputs[b.index] if b.kind == "output" else None for b in artifact.buffers)

    @property
    def arch(self):
        return self.artifact.arch

    def __repr__(self):
        sig = lambda ts: ", ".join(f"{t.name}: {t.dtype}{list(t.dims)}" for t in ts)
        return (f"<dnnc_runtime.Executable {self.artifact.graph or '?'} for {self.arch}: "
                f"({sig(self.inputs)}) -> ({sig(self.outputs)}), {len(self.plan)} kernel(s)>")

    @property
    def graph_replay(self):
        return self._graph_replay

    @graph_replay.setter
    def graph_replay(self, on):
        with self._lock:
            self._graph_replay = bool(on)
            if self._relaunch is not None:
                self._relaunch.use_replays(self._graph_replay)

    # -- calling ------------------------------------------------------------

    def __call__(self, *args, outputs=None, stream=None, **named):
        fast = self._relaunch
        if fast is not None and not named:
            result = fast(args, outputs, stream)
            if result is not relaunch.MISS:
                return result
        with self._lock:
            call = self._begin(args, named, outputs, stream)
            try:
                addresses = call.addresses
                # Bind every launch before the first: a TMA descriptor the driver
                # refuses stops the call with nothing launched. (Each launch has
                # its own slots, and cuLaunchKernel copies them when called.)
                self._bind(addresses)
                cuda.launch_all(self._launch_args, call.stream)
            except BaseException:
                call.release()
                raise
            if fast is None and self._relaunch is None and sys.modules.get("torch") is not None:
                # Every slot, the workspace's too, has now been written once.
                self._relaunch = relaunch.Relaunch(self)
        try:
            return self._finish(call)   # NumPy copies back: outside the lock
        finally:
            call.release()

    def _bind(self, addresses):
        """Point every launch's arguments at ``addresses`` (the general path's
        address list); the fast path, which skips rewriting slots that hold
        its call's addresses already, then knows they no longer do."""
        fast = self._relaunch
        if fast is not None:
            fast.written = fast.workspace_written = None
        for k in self._launches:
            k.bind(addresses)

    def run_steady(self, tensors, stream=None):
        """The fast path alone (``relaunch.Relaunch``), for callers that keep
        their arguments in the manifest's order, as dnnc.frontend's execute
        does: ``tensors`` is every input then every output (a list or tuple of
        torch tensors). Launches the plan on ``stream`` (None: torch's current
        stream) and returns True when the call is one the fast path serves;
        returns False, having launched nothing, otherwise (before the first
        call, other kinds of arguments, a tensor not in the manifest's
        layout): make the call the general way then, which names what is
        wrong. Strides that break the manifest's layout raise ArgumentError
        here as there."""
        fast = self._relaunch
        return fast is not None and fast.run(tensors, stream) is not relaunch.MISS

    def time(self, *args, repeat=100, warmup=10, outputs=None, stream=None, **named):
        """Median milliseconds of each kernel over ``repeat`` runs, timed with CUDA events.

        Returns a dict {label: ms} in plan order (``exe.plan.labels``: the PTX
        entry of each launch; kernels skipped for an empty grid are left out),
        plus "total" (first kernel's start to last kernel's end). Arguments
        are as for a call; not for use under graph capture.
        """
        self._lock.acquire()   # held throughout: every run reuses the bound slots
        try:
            return self._time(args, named, outputs, stream, repeat, warmup)
        finally:
            self._lock.release()

    def _time(self, args, named, outputs, stream, repeat, warmup):
        import statistics

        call = self._begin(args, named, outputs, stream)
        events = []
        try:
            handle = call.stream
            self._bind(call.addresses)   # the addresses stay for every run
            events = [(cuda.event_create(), cuda.event_create()) for _ in self._launches]
            samples = [[] for _ in self._launches]
            totals = []
            for r in range(warmup + repeat):
                for k, (start, end) in zip(self._launches, events):
                    cuda.event_record(start, handle)
                    cuda.launch(k.function, *k.dims, handle, k.params)
                    cuda.event_record(end, handle)
                if r >= warmup and events:
                    for (start, end), s in zip(events, samples):
                        s.append(cuda.event_elapsed_ms(start, end))
                    totals.append(cuda.event_elapsed_ms(events[0][0], events[-1][1]))
            self._finish(call)
        finally:
            for pair in events:
                for event in pair:
                    cuda.event_destroy(event)
            call.release()
        labels = self.plan.labels
        result = {labels[k.index]: statistics.median(s) for k, s in zip(self._launches, samples)}
        result["total"] = statistics.median(totals) if totals else 0.0
        return result

    # -- the steps of a call ------------------------------------------------

    def _begin(self, args, named, outputs, stream):
        # 1. Check every argument: pure Python, no CUDA call before this is done.
        values = binding.match_inputs(self.inputs, args, named, self.outputs)
        ins = [binding.bind(v, s) for v, s in zip(values, self.inputs)]
        given = outs = None
        if outputs is not None:
            given = binding.match_outputs(self.outputs, outputs)
            outs = [binding.bind(v, s, writable=True) for v, s in zip(given, self.outputs)]
        every = ins + outs if outs else ins
        index = binding.common_device(every)
        device = self.device
        if device is not None and index is not None and index != device.index:
            spec = next(b.spec for b in every if b.device is not None)
            raise ArgumentError(f"{spec.label}: expected a tensor on cuda:{device.index} (where "
                                f"this executable was loaded), got cuda:{index}", tensor=spec.name)
        handle = None if stream is None else binding.stream_handle(stream)
        kinds = {b.kind for b in every}
        use_torch = TORCH in kinds

        # 2. The GPU from here on.
        if device is None:
            device = self._bind_device(index)
        call = _Call()
        call.device, call.pushed, call.staged, call.given = device, device.activate(), (), given
        try:
            if handle is None:
                handle = _torch_stream(device.index) if use_torch else 0
            if self._module is None:
                self._prepare(device, handle, use_torch)
            workspace = self._workspace_for(handle, use_torch, device)
            staged = []
            call.staged = staged
            if NUMPY in kinds or (outs is None and not use_torch and DEVICE not in kinds):
                if cuda.is_capturing(handle):
                    raise ArgumentError("NumPy arguments are copied to and from the device, which "
                                        "CUDA graph capture forbids: pass device tensors and outputs=")
                for b in ins:
                    if b.kind is NUMPY:
                        b.address = _stage(b.spec, staged, binding.to_layout(b.value, b.spec), handle)
            if outs is None:
                outs = [self._allocate(spec, device, use_torch, kinds, handle, staged)
                        for spec in self.outputs]
            else:
                for b in outs:
                    if b.kind is NUMPY:
                        b.address = _stage(b.spec, staged, None, handle)
            call.inputs, call.outputs, call.stream = ins, outs, handle
            call.addresses = [b.address for b in ins] + [b.address for b in outs] + [workspace]
        except BaseException:
            call.release()
            raise
        return call

    def _allocate(self, spec, device, use_torch, kinds, handle, staged):
        """An output the caller did not pass, allocated like the inputs."""
        if use_torch:
            torch = sys.modules["torch"]
            t = torch.empty_strided(spec.dims, spec.strides, dtype=binding.torch_dtype(spec.dtype),
                                    device=_torch_device(device.index))
            return Bound(spec, TORCH, t.data_ptr(), device.index, t)
        if DEVICE in kinds:
            if cuda.is_capturing(handle):
                raise ArgumentError(f"{spec.label}: allocating an output is not allowed under CUDA "
                                    f"graph capture: pass outputs=")
            a = binding.DeviceArray(spec, device)
            return Bound(spec, DEVICE, a.address, None, a)
        return Bound(spec, NUMPY, _stage(spec, staged, None, handle), None, None)

    def _finish(self, call):
        """Copy NumPy outputs back; return what the caller gets."""
        pending = []
        for b in call.outputs:
            if b.kind is NUMPY:
                import numpy as np

                flat = np.empty(b.spec.extent, binding.numpy_dtype(b.spec.dtype))
                if flat.nbytes:
                    cuda.copy_to_host(flat.ctypes.data, b.address, flat.nbytes, call.stream)
                pending.append((b, flat))
        if call.staged:
            cuda.synchronize(call.stream)
        for b, flat in pending:
            view = binding.view_of(flat, b.spec)
            if b.value is not None:
                b.value[...] = view
            else:
                b.value = view
        if call.given is not None:
            results = call.given          # the caller's own objects, filled
        else:
            results = [b.value for b in call.outputs]
        return results[0] if len(results) == 1 else tuple(results)

    # -- first call -----------------------------------------------------------

    def _bind_device(self, index):
        if index is None:
            index = cuda.current_device_index()
        device = cuda.get_device(0 if index is None else index)
        _artifact.check_arch(self.arch, device.capability, f"{device.name} (cuda:{device.index})")
        self.device = device
        return device

    def _prepare(self, device, handle, use_torch):
        """Load the module, find the kernels, pack their arguments, allocate the workspace."""
        if cuda.is_capturing(handle):
            raise DeviceError("the first call of an Executable loads its kernels and allocates its "
                              "workspace, which CUDA graph capture forbids: call it once before "
                              "capturing")
        # A plan without kernels (every output empty) has no PTX to load.
        if self.artifact.kernels:
            module, source, note = modules.load(self.artifact, device.capability, self.use_cubin)
        else:
            module, source, note = _NO_MODULE, None, "no kernels to load"
        launches = []
        # One entry may be launched more than once (identical kernels share
        # one, dnn-dedup-kernels): its shared-memory opt-in is the most any
        # of its launches takes, set once.
        shared = {}
        for k in self.artifact.kernels:
            shared[k.entry] = max(shared.get(k.entry, 0), k.shared_bytes)
        functions = {}
        try:
            for i, k in enumerate(self.artifact.kernels):
                if k.shared_bytes > device.max_shared_optin:
                    raise ArtifactError(f"kernel '{k.name}': expected at most {device.max_shared_optin} "
                                        f"bytes of shared memory per block on {device.name}, got "
                                        f"shared_bytes = {k.shared_bytes}")
                function = functions.get(k.entry)
                if function is None:
                    function = functions[k.entry] = cuda.get_function(module, k.entry)
                    if shared[k.entry] > cuda.DEFAULT_SHARED_LIMIT:
                        cuda.allow_dynamic_shared(function, shared[k.entry])
                if k.has_work:
                    launches.append(_Launch(i, k, function, self._sources, self._owners))
            self._first_stream = handle
            self._workspace_for(handle, use_torch, device)
        except BaseException:
            self._free_workspaces()
            _unload(module)
            raise
        self._module, self._launches = module, tuple(launches)
        self.loaded_from, self.load_note = source, note
        self._launch_args = cuda.pack_launches(tuple(
            (k.function, *k.dims, k.params,
             cuda.dependent_launch_config(*k.dims) if k.kernel.dependent_launch else None)
            for k in launches))

    @property
    def _workspace(self):
        """The device address of the first call's stream's workspace (0: none)."""
        return self._workspaces.get(self._first_stream, (0, None))[0]

    def workspace_of(self, handle):
        """The device address of stream ``handle``'s workspace; None if that
        stream has none yet, 0 if the plan needs none."""
        if not self.artifact.workspace_bytes:
            return 0
        entry = self._workspaces.get(handle)
        return None if entry is None else entry[0]

    def _workspace_for(self, handle, use_torch, device):
        """Stream ``handle``'s workspace, allocated and zeroed on that stream by
        its first call (the kernels that count arrivals in it find zeros and
        leave zeros). Called with the lock held."""
        nbytes = self.artifact.workspace_bytes
        if not nbytes:
            return 0
        entry = self._workspaces.get(handle)
        if entry is not None:
            return entry[0]
        if use_torch:
            torch = sys.modules["torch"]
            owner = torch.empty(nbytes, dtype=torch.uint8, device=_torch_device(device.index))
            address = owner.data_ptr()
        else:
            if self._module is not None and cuda.is_capturing(handle):
                raise DeviceError("this stream is capturing a CUDA graph and has no workspace "
                                  "of this executable yet; without a torch tensor in the call "
                                  "none can be allocated under capture: call it once on this "
                                  "stream before capturing")
            owner, address = "cuda", cuda.mem_alloc(nbytes)
        self._workspaces[handle] = (address, owner)
        cuda.memset_async(address, nbytes, handle)
        return address

    def _free_workspaces(self):
        for address, owner in self._workspaces.values():
            if owner == "cuda":
                cuda.mem_free(address)
        self._workspaces = {}

    # -- lifecycle --------------------------------------------------------------

    def close(self):
        """Unload the kernels and free the workspace; the next call prepares again."""
        if self._module is None:
            return
        with self._lock:
            pushed = self.device.activate()
            try:
                # Kernels may still use the workspaces (on any stream): wait before
                # handing them back to cuMemFree or torch's allocator.
                cuda.synchronize_context()
                if self._relaunch is not None and self._relaunch.replays is not None:
                    self._relaunch.replays.close()   # before the kernels they launch
                self._free_workspaces()
                _unload(self._module)
            finally:
                self.device.deactivate(pushed)
                self._module, self._launches, self._relaunch = None, (), None
                self._launch_args = ()
                self._workspaces, self._first_stream = {}, None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass  # interpreter shutdown: the driver may already be gone


# The module of a plan without kernels: nothing was loaded (and _module is
# not None, so the executable counts as prepared).
_NO_MODULE = "no kernels"


def _unload(module):
    if module is not _NO_MODULE:
        cuda.unload_module(module)


def _stage(spec, staged, host, stream):
    """Device memory for a NumPy argument (freed after the call); copy ``host`` in."""
    if not spec.nbytes:
        return 0
    address = cuda.mem_alloc(spec.nbytes)
    staged.append(address)
    if host is not None:
        cuda.copy_to_device(address, host.ctypes.data, host.nbytes, stream)
    return address


_raw_stream = None
_torch_devices = {}


def _torch_stream(index):
    """torch's current stream on device ``index``, as a handle (cheaply)."""
    global _raw_stream
    if _raw_stream is None:
        torch = sys.modules["torch"]
        _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
            lambda i: torch.cuda.current_stream(i).cuda_stream)
    return _raw_stream(index)


def _torch_device(index):
    d = _torch_devices.get(index)
    if d is None:
        d = _torch_devices[index] = sys.modules["torch"].device("cuda", index)
    return d
