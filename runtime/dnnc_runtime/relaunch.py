"""The fast path of a call: torch tensors laid out as the manifest says.

Most calls after the first look alike: the same executable, called with
torch tensors on its device, of the dtypes, shapes and strides the manifest
fixes, only their addresses new. ``Relaunch`` serves those calls with what
``Executable`` worked out once: per argument, the torch dtype, dims and
strides to compare with and the pointer slots to rewrite; per launch, the
arguments of cuLaunchKernel. A call then costs five attribute reads per
tensor (dtype, shape, strides, device, address), one slot write per
pointer argument and one driver call per kernel, and no loop over the
manifest. A runtime scalar (a by-value input) is a Python number whose f32
bits go into the slots of the kernels that take it.

Anything else (NumPy or ``__cuda_array_interface__`` arguments, inputs by
name, ``outputs=`` as a dict, a tensor that fails a check) returns ``MISS``
and the executable takes the general path, which names what is wrong.
The checks are the general path's, in its order (dtype, shape, strides,
device, alignment), so a call either passes both or is refused the same
way; strides that differ from the manifest's only on size-1 dims (which
the general path accepts) go through ``binding.check_strides`` here too.

A MISS may come after the pointer slots of the arguments before it were
rewritten; the general path rewrites them all again, and the driver copies
the slots when it launches, so nothing reads the stale ones. TMA
descriptors are encoded only after every argument passed, as the general
path does, so a refused address never hides an error of a later argument.

The executable's lock is held from the first slot written to the last
launch, as on the general path, and the workspace slots are written for
the call's stream; a stream that has no workspace yet is a MISS (the
general path allocates it).
"""

import sys

from . import binding, cuda, scalars

MISS = object()   # what a Relaunch returns for a call the general path must serve


class Relaunch:
    """The steady-state call of one prepared ``Executable`` (see the module docstring).

    Built after the first call that went through the general path to the
    end (so the kernels are loaded, the launches packed, and every pointer
    slot and descriptor written once); dropped when the executable closes.
    Each call points the workspace slots at its stream's workspace (the
    general path may have pointed them at another stream's), and its
    descriptors when they hold another address.
    """

    __slots__ = ("tensor", "device", "torch_device", "index", "raw_stream", "empty_strided",
                 "n_in", "n_out", "checks", "allocations", "maps", "launches", "lock",
                 "workspaces", "workspace_writes", "workspace_maps")

    def __init__(self, exe):
        torch = sys.modules["torch"]
        device = exe.device
        self.tensor = torch.Tensor
        self.device = device
        self.index = device.index
        self.torch_device = torch.device("cuda", device.index)
        self.raw_stream = _raw_stream_function(torch)
        self.empty_strided = torch.empty_strided
        specs = exe.inputs + exe.outputs
        self.n_in, self.n_out = len(exe.inputs), len(exe.outputs)
        # Per argument (inputs, then outputs: the order of the call's address
        # list): what it is checked against, and the (slots, index, byte
        # offset) of every pointer argument that points into it.
        writes = [[] for _ in specs]
        workspace_writes = []
        for k in exe._launches:
            for slot, source, offset in k.pointers:
                if source < len(specs):
                    writes[source].append((k.slots, slot, offset))
                else:                              # the workspace: per stream
                    workspace_writes.append((k.slots, slot, offset))
        self.workspace_writes = tuple(workspace_writes)
        self.workspace_maps = tuple(m for k in exe._launches for m in k.maps
                                    if m.source >= len(specs))
        self.workspaces = exe._workspaces          # stream handle -> (address, owner)
        self.lock = exe._lock
        self.checks = tuple(
            (None if s.by_value else binding.torch_dtype(s.dtype), s.dims, s.strides,
             s.alignment if s.numel else 1, s, tuple(w)) for s, w in zip(specs, writes))
        self.allocations = tuple((s.dims, s.strides, binding.torch_dtype(s.dtype))
                                 for s in exe.outputs)
        self.maps = tuple(m for k in exe._launches for m in k.maps if m.source < len(specs))
        self.launches = exe._launch_args

    def __call__(self, args, outputs, stream):
        """Run the plan on ``args`` (positional inputs) and ``outputs``; MISS if this
        path cannot serve the call."""
        if len(args) != self.n_in:
            return MISS
        tensor = self.tensor
        if outputs is None:
            tensors = args
        elif isinstance(outputs, tensor):
            if self.n_out != 1:
                return MISS
            tensors = (*args, outputs)
        elif type(outputs) is list or type(outputs) is tuple:
            if len(outputs) != self.n_out:
                return MISS
            tensors = (*args, *outputs)
        else:
            return MISS
        with self.lock:
            torch_device = self.torch_device
            addresses = []
            for t, (dtype, dims, strides, alignment, spec, writes) in zip(tensors, self.checks):
                if dtype is None:                  # a runtime scalar: its f32 bits
                    address = scalars.bits(t, spec.name, spec.label)
                    for slots, slot, offset in writes:
                        slots[slot] = address
                    addresses.append(address)
                    continue
                if not isinstance(t, tensor) or t.dtype is not dtype or t.shape != dims:
                    return MISS
                got = t.stride()
                if got != strides:
                    binding.check_strides(spec, got)   # raises as the general path would
                if t.device != torch_device:
                    return MISS
                address = t.data_ptr()
                if address % alignment:
                    return MISS
                for slots, slot, offset in writes:
                    slots[slot] = address + offset
                addresses.append(address)
            handle = self.raw_stream(self.index) if stream is None else binding.stream_handle(stream)
            workspace = self.workspaces.get(handle)
            if workspace is None and self.workspace_writes + self.workspace_maps:
                return MISS                        # this stream's first call

            device = self.device
            pushed = device.activate()
            try:
                if outputs is None:
                    outputs = self._allocate(addresses)
                for tensor_map in self.maps:
                    address = addresses[tensor_map.source] + tensor_map.offset
                    if address != tensor_map.encoded:
                        tensor_map.encode(address)
                if workspace is not None:
                    self._point_at_workspace(workspace[0])
                cuda.launch_all(self.launches, handle)
            finally:
                device.deactivate(pushed)
        if type(outputs) is list or type(outputs) is tuple:
            return outputs[0] if self.n_out == 1 else tuple(outputs)
        return outputs

    def _point_at_workspace(self, base):
        """Rewrite the workspace slots and descriptors for the workspace at ``base``."""
        for slots, slot, offset in self.workspace_writes:
            slots[slot] = base + offset
        for tensor_map in self.workspace_maps:
            if base + tensor_map.offset != tensor_map.encoded:
                tensor_map.encode(base + tensor_map.offset)

    def _allocate(self, addresses):
        """Outputs the caller did not pass, from torch's allocator (as the general
        path allocates them for torch inputs); their pointer slots written."""
        outputs = []
        device, empty_strided = self.torch_device, self.empty_strided
        checks = self.checks[self.n_in:]
        for (dims, strides, dtype), check in zip(self.allocations, checks):
            t = empty_strided(dims, strides, dtype=dtype, device=device)
            address = t.data_ptr()
            for slots, slot, offset in check[-1]:
                slots[slot] = address + offset
            addresses.append(address)
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
