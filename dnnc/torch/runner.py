"""Run a dnnc graph on torch tensors: the one place that compiles graphs for
torch and calls the executables.

    exe = runner.compiled(key, build, device)   # cached per (key, device, arch)
    runner.run(exe, inputs, outputs)            # writes the torch ``outputs`` in place

Interface (kept small on purpose; the ``torch.compile`` back end uses it too):

* ``compiled(key, build, device) -> Compiled``: ``key`` is a hashable value
  that fixes the graph (op, attributes, each tensor's dtype, shape and
  strides); ``build()`` returns the ``dnnc.Graph`` (inputs and outputs in
  call order), called once per key and device. A CUDA ``device`` compiles
  with the JIT (``dnnc.jit``: the disk cache under it) for the arch of that
  device's GPU; a CPU device compiles with the CPU back end. The result is
  kept in this process, so a second call with the same key builds nothing.
  Each CUDA device gets its own executable (a loaded module belongs to one
  device's context).
* ``run(exe, inputs, outputs)``: run on torch tensors. ``outputs`` are torch
  tensors allocated by the caller with the dims and strides the graph's
  outputs declare (``empty_like_spec`` makes them); they are written in
  place. On CUDA the kernels are launched on the current torch stream of the
  tensors' device, so the call works under CUDA graph capture once the
  executable has run once outside it; on the CPU the outputs are computed
  by MLIR's ExecutionEngine and copied in.
* ``tensor_spec(t)``: (dtype, shape, strides) of a tensor, for keys.
* ``graph_input(graph, name, t)``: a graph input with ``t``'s dims, strides
  and element type.

Nothing here decides whether dnnc supports an op: callers build graphs for
what they accept. A dnnc error from building or compiling the graph reaches
the caller unchanged.
"""

import threading

import torch

from dnnc.dialect.types import data_type

_lock = threading.Lock()
_compiled = {}
_archs = {}   # CUDA device index -> dnnc arch

# torch dtype -> dnnc data_type, for what dnnc stores.
DTYPES = {torch.float32: data_type.FLOAT, torch.float16: data_type.HALF,
          torch.bfloat16: data_type.BFLOAT16, torch.bool: data_type.BOOLEAN,
          torch.int32: data_type.INT32}


class Compiled:
    """A graph compiled for one device: ``target`` is ``"cpu"`` or ``"cuda"``,
    ``executable`` the back end's object (``dnnc_runtime.Executable`` or the
    CPU back end's ``CpuExecutable``), ``outputs`` the (dims, strides) of
    each graph output, in order."""

    __slots__ = ("target", "executable", "outputs")

    def __init__(self, target, executable, outputs):
        self.target = target
        self.executable = executable
        self.outputs = outputs


def tensor_spec(t):
    """What of tensor ``t`` a compiled graph depends on."""
    return (t.dtype, tuple(t.shape), tuple(t.stride()))


def graph_input(graph, name, t):
    """A graph input with ``t``'s dims, strides and element type."""
    return graph.tensor(name=name, dim=list(t.shape), stride=list(t.stride()),
                        data_type=DTYPES[t.dtype])


def arch_of(device):
    """The dnnc arch of a CUDA device (compute capability 8.x: sm_80, 9.0: sm_90a)."""
    index = torch.device(device).index
    if index is None:
        index = torch.cuda.current_device()
    arch = _archs.get(index)
    if arch is None:
        from dnnc import compiler

        major, minor = torch.cuda.get_device_capability(index)
        arch = _archs[index] = compiler.arch_for_capability(major, minor)
    return arch


def compiled(key, build, device):
    """The graph of ``key`` compiled for ``device`` (see the module docstring)."""
    device = torch.device(device)
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        where = ("cuda", arch_of(index), index)
    else:
        where = ("cpu", None, None)
    full = (key, where)
    exe = _compiled.get(full)
    if exe is not None:
        return exe
    with _lock:
        exe = _compiled.get(full)
        if exe is None:
            graph = build()
            outputs = tuple((tuple(t.dim), tuple(t.get_stride())) for t in graph.outputs)
            if where[0] == "cuda":
                from dnnc import jit

                exe = Compiled("cuda", jit.jit(graph, arch=where[1]), outputs)
            else:
                exe = Compiled("cpu", graph.compile(target="cpu"), outputs)
            _compiled[full] = exe
    return exe


def cache_size():
    """How many compiled graphs this process holds."""
    return len(_compiled)


def empty_outputs(exe, dtypes, device):
    """Fresh torch tensors for ``exe``'s outputs (dims and strides as
    compiled), of ``dtypes`` (one torch dtype per output) on ``device``."""
    return [torch.empty_strided(dims, strides, dtype=dt, device=device)
            for (dims, strides), dt in zip(exe.outputs, dtypes)]


def run(exe, inputs, outputs):
    """Run ``exe`` on torch tensors ``inputs``, writing ``outputs`` in place."""
    if exe.target == "cuda":
        device = outputs[0].device if outputs else inputs[0].device
        stream = torch.cuda.current_stream(device).cuda_stream
        exe.executable(*inputs, outputs=list(outputs), stream=stream)
        return outputs
    results = exe.executable.run(*[t.detach() for t in inputs])
    for out, array in zip(outputs, results):
        out.copy_(_from_numpy(array, out.dtype))
    return outputs


def _from_numpy(array, dtype):
    if dtype == torch.bfloat16:
        import numpy as np

        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)
