"""The fast path of a call: torch tensors laid out as the manifest says.

Most calls after the first look alike: the same executable, called with
torch tensors on its device, of the dtypes, shapes and strides the manifest
fixes, only their addresses new. ``Relaunch`` serves those calls with what
``Executable`` worked out once: per argument, the torch dtype, dims and
strides to compare with and the pointer slots to rewrite; per launch, the
arguments of cuLaunchKernelEx. A call then costs five attribute reads per
tensor (dtype, shape, strides or torch's contiguity flag, device,
address) in checks written out once per executable (steady_checks.py),
no loop over the manifest, the pointer slots written only when an address
differs from the last call's, and one driver call per kernel. A runtime
scalar (a by-value input) is a Python number (or a one-element CPU
tensor) whose f32 bits go into the slots of the kernels that take it.

Anything else (NumPy or ``__cuda_array_interface__`` arguments, inputs by
name, ``outputs=`` as a dict, a tensor that fails a check) returns ``MISS``
and the executable takes the general path, which names what is wrong.
The checks are the general path's, in its order (dtype, shape, strides,
device, alignment), so a call either passes both or is refused the same
way; strides that differ from the manifest's only on size-1 dims (which
the general path accepts) go through ``binding.check_strides`` here too.

``run`` is the path itself, for callers that keep the arguments in the
manifest's order (``Executable.run_steady``: dnnc.frontend's execute, which
builds no positional tuple and takes no ``outputs=``): every input, then
every output, one flat sequence; on a MISS the caller makes the call the
general way.

The pointer slots are written once every argument passed (one loop over
the plan's pointer arguments, skipped when the call's addresses are the
ones the slots hold), so a MISS leaves them as they were. Every other
writer of the slots (the general path, ``Executable.time``) goes through
``Executable._bind``, which tells this path the slots no longer hold its
addresses. TMA descriptors are encoded only after every argument passed,
as the general path does, so a refused address never hides an error of a
later argument.

The executable's lock is held from the first argument checked to the last
launch, as on the general path (taken with acquire and release: a
``with`` block costs a few hundred nanoseconds more, a tenth of a small
call here), and the workspace slots are written for the call's stream; a
stream that has no workspace yet is a MISS (the general path allocates it).
"""

import struct
import sys

from . import binding, cuda, replay, scalars, steady_checks

MISS = object()   # what a Relaunch returns for a call the general path must serve

_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")


class Relaunch:
    """The steady-state call of one prepared ``Executable`` (see the module docstring).

    Built after the first call that went through the general path to the
    end (so the kernels are loaded, the launches packed, and every pointer
    slot and descriptor written once); dropped when the executable closes.
    Each call points the workspace slots at its stream's workspace (the
    general path may have pointed them at another stream's), and its
    descriptors when they hold another address.
    """

    __slots__ = ("tensor", "device", "torch_device", "cpu", "f32", "index", "raw_stream",
                 "empty_strided", "n_in", "n_out", "specs", "strides", "check",
                 "check_inputs", "allocations", "writes", "maps", "launches", "launch",
                 "read_context", "context_id", "lock", "replays",
                 "workspaces", "workspace_writes", "workspace_maps", "uses_workspace",
                 "written", "workspace_written")

    def __init__(self, exe):
        torch = sys.modules["torch"]
        device = exe.device
        self.tensor = torch.Tensor
        self.device = device
        self.index = device.index
        self.torch_device = torch.device("cuda", device.index)
        self.cpu, self.f32 = torch.device("cpu"), torch.float32
        self.raw_stream = _raw_stream_function(torch)
        self.empty_strided = torch.empty_strided
        specs = exe.inputs + exe.outputs
        self.n_in, self.n_out = len(exe.inputs), len(exe.outputs)
        # Per pointer argument of every launch: (slots, slot, index into the
        # call's address list, byte offset), written in one loop once every
        # argument passed, and only when an address differs from the ones
        # the slots hold (``written``).
        writes = []
        workspace_writes = []
        for k in exe._launches:
            for slot, source, offset in k.pointers:
                if source < len(specs):
                    writes.append((k.slots, slot, source, offset))
                else:                              # the workspace: per stream
                    workspace_writes.append((k.slots, slot, offset))
        self.writes = tuple(writes)
        self.workspace_writes = tuple(workspace_writes)
        self.workspace_maps = tuple(m for k in exe._launches for m in k.maps
                                    if m.source >= len(specs))
        self.uses_workspace = bool(self.workspace_writes or self.workspace_maps)
        self.workspaces = exe._workspaces          # stream handle -> (address, owner)
        self.lock = exe._lock
        # The checks of every argument (inputs, then outputs: the order of
        # the call's address list), and of the inputs alone (outputs
        # allocated here), written out per executable (steady_checks.py).
        # ``strides[i]`` is what argument i's strides are compared with
        # (None: packed, torch's is_contiguous answers); strides that differ
        # from the manifest's only on size-1 dims are judged once by
        # check_strides and remembered there, not judged on every call.
        self.specs = specs
        self.strides = steady_checks.expected_strides(specs)

        def compile_checks(specs):
            return steady_checks.compile_checks(
                specs, torch.Tensor, binding.torch_dtype, self.torch_device, self.strides,
                self._strides_differ, self._scalar_bits, MISS)
        self.check = compile_checks(specs)
        self.check_inputs = compile_checks(exe.inputs)
        self.allocations = tuple((s.dims, s.strides, binding.torch_dtype(s.dtype))
                                 for s in exe.outputs)
        self.maps = tuple(m for k in exe._launches for m in k.maps if m.source < len(specs))
        self.launches = exe._launch_args
        # Packed direct launches are run here (their run method), tuples by
        # cuda.launch_all; and the device's own current-context question.
        self.launch = None if type(self.launches) is tuple else self.launches.run
        # CUDA graphs of the launches, for calls whose addresses repeat
        # (replay.py); packed launches only, where turned on.
        self.replays = None
        self.use_replays(exe.graph_replay)
        self.read_context = getattr(device, "current_context", None)
        self.context_id = getattr(device, "context_id", None)
        # What the pointer slots and descriptors hold: the address list of
        # the last call that wrote them, and the workspace address; None
        # when unknown (the general path wrote them: Executable._bind).
        self.written = None
        self.workspace_written = None

    def __call__(self, args, outputs, stream):
        """Run the plan on ``args`` (positional inputs) and ``outputs``; MISS if this
        path cannot serve the call."""
        if len(args) != self.n_in:
            return MISS
        if outputs is None:
            return self.run(args, stream, allocate=True)
        if isinstance(outputs, self.tensor):
            if self.n_out != 1:
                return MISS
            return outputs if self.run((*args, outputs), stream) is not MISS else MISS
        if type(outputs) is list or type(outputs) is tuple:
            if len(outputs) != self.n_out or self.run((*args, *outputs), stream) is MISS:
                return MISS
            return outputs[0] if self.n_out == 1 else tuple(outputs)
        return MISS

    def run(self, tensors, stream, allocate=False):
        """Run the plan on ``tensors``, every input then every output in the
        manifest's order (a list or tuple; with ``allocate`` the inputs only,
        and the outputs are allocated). Checks them, writes the pointer slots
        and launches on ``stream`` (None: torch's current stream). Returns
        MISS, having launched nothing, when this path cannot serve the call;
        else the allocated outputs (one tensor, or a tuple), or None."""
        check = self.check_inputs if allocate else self.check
        if len(tensors) != (self.n_in if allocate else self.n_in + self.n_out):
            return MISS
        lock = self.lock
        lock.acquire()
        try:
            addresses = check(tensors)
            if addresses is MISS:
                return MISS
            if stream is None:
                handle = self.raw_stream(self.index)
            elif type(stream) is int:
                handle = stream
            else:
                handle = binding.stream_handle(stream)
            workspace = None
            if self.uses_workspace:
                workspace = self.workspaces.get(handle)
                if workspace is None:
                    return MISS                    # this stream's first call

            # The device's context is current (the usual answer, asked of
            # libcuda without a call of activate), or activate makes it so.
            read = self.read_context
            pushed = False if read is not None and read() == self.context_id else \
                self.device.activate()
            try:
                outputs = self._allocate(addresses) if allocate else None
                replays = self.replays
                if replays is None:
                    self._launch(addresses, workspace, handle)
                else:
                    key = (*addresses, workspace[0] if workspace is not None else 0)
                    if not replays.replay(key, handle):
                        self._launch(addresses, workspace, handle)
                        replays.launched(key, handle)
            finally:
                if pushed:
                    self.device.deactivate(True)
        finally:
            lock.release()
        if allocate:
            return outputs[0] if self.n_out == 1 else tuple(outputs)
        return None

    def use_replays(self, on):
        """Replay graphs of the launches (a plan of replay.MIN_LAUNCHES
        kernels or more, packed for libcuda), or stop: the graphs held are
        destroyed. Called under the executable's lock."""
        if on and self.replays is None and self.launch is not None and \
                len(self.launches) >= replay.MIN_LAUNCHES:
            self.replays = replay.Replays(self.launches)
        elif not on and self.replays is not None:
            replays, self.replays = self.replays, None
            pushed = self.device.activate()
            try:
                replays.close()
            finally:
                self.device.deactivate(pushed)

    def _launch(self, addresses, workspace, handle):
        """Point the slots at ``addresses`` and ``workspace`` where they hold
        others, and launch the plan's kernels one by one on ``handle``."""
        if addresses != self.written:
            self._point_at(addresses)
        if workspace is not None and workspace[0] != self.workspace_written:
            self._point_at_workspace(workspace[0])
        launch = self.launch
        if launch is None:
            cuda.launch_all(self.launches, handle)
        else:
            status, name = launch(handle)
            if status:
                cuda.launch_failed(status, name)

    def _strides_differ(self, i, t):
        """Argument i's strides differ from those it was compared with: raise
        the general path's ArgumentError, or (they differ from the
        manifest's only on size-1 dims) remember them for the next call."""
        got = t.stride()
        binding.check_strides(self.specs[i], got)
        if self.strides[i] is not None:
            self.strides[i] = got

    def _scalar_bits(self, value, spec):
        """A runtime scalar's f32 bits: a Python float, or a one-element f32
        CPU tensor (cudnn-frontend's pass-by-value form), read here; any
        other value is judged (and read, or refused) by scalars.bits."""
        if type(value) is float:
            number = value
        elif (isinstance(value, self.tensor) and value.dtype is self.f32
              and value.device == self.cpu and value.numel() == 1):
            number = value.item()
        else:
            return scalars.bits(value, spec.name, spec.label)
        try:
            return _U32.unpack(_F32.pack(number))[0]
        except OverflowError:
            return scalars.bits(value, spec.name, spec.label)   # raises, naming the input

    def _point_at(self, addresses):
        """Write the pointer slots and descriptors for ``addresses``."""
        self.written = None       # until every slot holds them (encode may raise)
        for slots, slot, source, offset in self.writes:
            slots[slot] = addresses[source] + offset
        for tensor_map in self.maps:
            address = addresses[tensor_map.source] + tensor_map.offset
            if address != tensor_map.encoded:
                tensor_map.encode(address)
        self.written = addresses

    def _point_at_workspace(self, base):
        """Rewrite the workspace slots and descriptors for the workspace at ``base``."""
        self.workspace_written = None
        for slots, slot, offset in self.workspace_writes:
            slots[slot] = base + offset
        for tensor_map in self.workspace_maps:
            if base + tensor_map.offset != tensor_map.encoded:
                tensor_map.encode(base + tensor_map.offset)
        self.workspace_written = base

    def _allocate(self, addresses):
        """Outputs the caller did not pass, from torch's allocator (as the general
        path allocates them for torch inputs); their addresses appended."""
        outputs = []
        device, empty_strided = self.torch_device, self.empty_strided
        for dims, strides, dtype in self.allocations:
            t = empty_strided(dims, strides, dtype=dtype, device=device)
            addresses.append(t.data_ptr())
            outputs.append(t)
        return outputs


def _raw_stream_function(torch):
    """index -> torch's current stream on that device, as an int handle.

    Read on every call, so a call follows ``torch.cuda.stream(...)`` as the
    caller switches streams; ``_cuda_getCurrentRawStream`` is the C function
    behind ``torch.cuda.current_stream`` without the Stream object.
    """
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw or (lambda index: torch.cuda.current_stream(index).cuda_stream)
