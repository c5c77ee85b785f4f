"""A region of an ATen graph compiled by dnnc, and running it on torch tensors.

    region = CompiledRegion("region0", nodes, outputs, device)   # lowers, compiles
    ys = region.run([x, w])            # torch tensors in, torch tensors out

CUDA tensors run through dnnc's JIT for the device's arch (``Graph.compile
(target="cuda")``, its on-disk cache behind it), on torch's current stream,
into outputs torch allocates with the strides the graph was compiled for.
CPU tensors run through the CPU back end (MLIR's ExecutionEngine), copied
across as NumPy arrays in their logical layout. An input whose strides are
not the ones compiled (contiguous, or channels-last where the example was)
is copied into that layout first. On CUDA a call first tries the runtime's
fast path with the tensors as they are (``_run_steady``), which is what
every call after the first usually is.

A compiled region enters the FX graph as one call of the custom op
``dnnc::compiled_region(key, inputs) -> outputs``: opaque to Inductor, which
compiles the rest of the graph around it (a fallback kernel), and with a
fake implementation giving the outputs' dims, dtypes and strides, so that
torch traces through it. ``key`` names the region in this process's table
(``REGIONS``); it is a digest of the compiled graph, so a graph that Inductor
caches on disk names the same region in every process that compiles it.
A graph that Python runs calls ``run_region`` instead: the same work
without torch's dispatch of a custom op (backend._run_directly).
"""

import hashlib

import numpy as np
import torch

from dnnc_runtime.errors import ArgumentError

from dnnc.torch import aten_map
from dnnc.torch.lowering import Lowering

# key -> CompiledRegion, for dnnc::compiled_region.
REGIONS = {}


def compute_types(device):
    """(convolutions', matmuls') compute type of f32 operands on ``device``,
    as torch computes them there: tf32 where its flags allow it on CUDA."""
    if device.type != "cuda":
        return "float", "float"
    conv = "tf32" if torch.backends.cudnn.allow_tf32 else "float"
    matmul = "float" if torch.get_float32_matmul_precision() == "highest" else "tf32"
    return conv, matmul


def cuda_arch(device):
    """dnnc's arch for CUDA ``device`` (sm_90a for 9.0, sm_80 for 8.x)."""
    from dnnc import compiler

    major, minor = torch.cuda.get_device_capability(device)
    return compiler.arch_for_capability(major, minor)


class CompiledRegion:
    """Region ``nodes`` (ATen FX nodes, in graph order) whose ``outputs`` are
    read outside it, lowered to a dnnc graph and compiled for ``device``."""

    def __init__(self, name, nodes, outputs, device):
        self.name = name
        self.device = torch.device(device)
        self.nodes = list(nodes)
        low = Lowering(name, self.device.type, *compute_types(self.device))
        for node in self.nodes:
            aten_map.lower(low, node)
        low.set_outputs(outputs)
        self.graph = low.graph
        self.inputs = low.inputs        # lowering.InputSpec each
        self.outputs = low.outputs      # lowering.OutputSpec each
        self.arch = cuda_arch(self.device) if self.device.type == "cuda" else None
        text = "\n".join([self.graph.serialize(), str(self.device.type), str(self.arch),
                          repr([(s.shape, str(s.dtype), s.strides, s.filler)
                                for s in self.outputs])])
        self.key = f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:24]}"
        self.exe = None
        if self.graph.outputs:
            if self.device.type == "cuda":
                self.exe = self.graph.compile(target="cuda", arch=self.arch)
            else:
                self.exe = self.graph.compile(target="cpu")
        self._made_fillers = {}   # output index -> zeros (run's reuse_fillers)
        self._given = len(self.input_nodes)   # how many tensors run takes
        self._steady_args = self._steady_arguments() if self.device.type == "cuda" and \
            self.exe is not None else None
        REGIONS[self.key] = self

    @property
    def input_nodes(self):
        """The FX nodes the region reads, in the order ``run`` takes them."""
        return [s.node for s in self.inputs if s.node is not None]

    # -- running ---------------------------------------------------------------

    def run(self, tensors, reuse_fillers=False):
        """The outputs (torch tensors) of the region on ``tensors`` (one per
        ``input_nodes``). With ``reuse_fillers`` the filler outputs (zeros
        dnnc does not compute) are the same tensors on every call, made on
        the first: for a caller that neither writes them nor hands their
        memory to another op (the graph run by Python: backend's
        _run_directly; Inductor may reuse a dead output's buffer, so its
        graphs get fresh ones). Making them costs a fill kernel each."""
        fill = self._fillers if reuse_fillers else self._fresh_fillers
        if self._steady_args is not None:
            results = self._run_steady(tensors, fill)
            if results is not None:
                return results
        tensors = list(tensors)
        if len(tensors) != len(self.input_nodes):
            raise ValueError(f"region '{self.name}': expected {len(self.input_nodes)} inputs, "
                             f"got {len(tensors)}")
        args, given = [], iter(tensors)
        for spec in self.inputs:
            if spec.node is None:
                args.append(torch.zeros((), dtype=spec.dtype, device=self.device)
                            .expand(spec.shape))
                continue
            t = next(given)
            shape = spec.shape if spec.perm is None else \
                tuple(spec.shape[spec.perm.index(i)] for i in range(len(spec.perm)))
            if tuple(t.shape) != shape or t.dtype != spec.dtype:
                raise ValueError(f"region '{self.name}' input '{spec.node.name}': expected "
                                 f"{spec.dtype} {list(spec.shape)}, got {t.dtype} "
                                 f"{list(t.shape)}")
            if spec.perm is not None:
                if self.device.type == "cuda":
                    t = _with_strides(t, spec.base_strides)
                t = t.permute(spec.perm)
            args.append(t)
        if self.exe is None:
            computed = []
        elif self.device.type == "cuda":
            computed = self._run_cuda(args)
        else:
            computed = self._run_cpu(args)
        results, it = [], iter(computed)
        for i, spec in enumerate(self.outputs):
            if spec.filler:
                results.append(fill(i))
            else:
                results.append(next(it))
        return results

    def _steady_arguments(self):
        """Per graph input, what ``_run_steady`` passes: the index of its
        tensor among ``run``'s and the permutation to view it through (None:
        as it is), or (None, a zeros tensor made here once) for a zeros
        input."""
        plan, given = [], 0
        for spec in self.inputs:
            if spec.node is None:
                plan.append((None, torch.zeros((), dtype=spec.dtype, device=self.device)
                             .expand(spec.shape)))
            else:
                plan.append((given, spec.perm))
                given += 1
        return tuple(plan)

    def steady_inputs(self, tensors):
        """The executable's inputs as ``_run_steady`` passes them for
        ``tensors`` (one per ``input_nodes``; CUDA regions): each tensor as
        it is or permuted, and the zeros inputs."""
        args = []
        for i, how in self._steady_args:
            if i is None:
                args.append(how)                      # the zeros tensor
            else:
                args.append(tensors[i] if how is None else tensors[i].permute(how))
        return args

    def _run_steady(self, tensors, fill):
        """``run`` on CUDA when every tensor already has the strides, alignment
        and device the executable was compiled for (the usual call: torch
        hands a region the same layouts every step): the tensors go to the
        runtime's fast path as they are, which checks each of them once.
        None, with nothing launched, for any other call (the first one
        among them); ``run`` then copies what needs copying and says what
        is wrong."""
        if len(tensors) != self._given:
            return None
        args = self.steady_inputs(tensors)
        outs = [torch.empty_strided(s.shape, s.strides, dtype=s.dtype, device=self.device)
                for s in self.outputs if not s.filler]
        try:
            if not self.exe.run_steady(args + outs):   # on torch's current stream
                return None
        except ArgumentError:        # strides other than compiled: run copies the tensor
            return None
        if len(outs) == len(self.outputs):
            return outs
        it = iter(outs)
        return [fill(i) if s.filler else next(it) for i, s in enumerate(self.outputs)]

    def _fresh_fillers(self, i):
        return _zeros(self.outputs[i], self.device)

    def _fillers(self, i):
        made = self._made_fillers.get(i)
        if made is None:
            made = self._made_fillers[i] = _zeros(self.outputs[i], self.device)
        return made

    def _run_cuda(self, args):
        ins = [_with_strides(t, s.strides) if s.node is not None else t
               for t, s in zip(args, self.inputs)]
        outs = [torch.empty_strided(s.shape, s.strides, dtype=s.dtype, device=self.device)
                for s in self.outputs if not s.filler]
        if outs:
            self.exe(*ins, outputs=outs)   # on torch's current stream
        return outs

    def _run_cpu(self, args):
        arrays = [_to_numpy(t) for t in args]
        outs = self.exe.run(*arrays)
        specs = [s for s in self.outputs if not s.filler]
        return [_from_numpy(a, s) for a, s in zip(outs, specs)]

    def fake(self, tensors):
        """Outputs like ``run``'s, made in the caller's (fake) mode."""
        return [torch.empty_strided(s.shape, s.strides, dtype=s.dtype, device=self.device)
                for s in self.outputs]

    # -- reporting ---------------------------------------------------------------

    def kernels(self):
        """(kernel, strategy, reason) of each kernel of the plan: the loaded
        executable's on CUDA; on the CPU, the plan for sm_90a (what the GPU
        would run) as the ``gpu`` stage leaves it: the heuristics'
        strategies, the kernel builders' fallbacks and reasons, and without
        the copies that stage makes views (dnn-slice-views,
        dnn-transpose-views, dnn-layout-views)."""
        if self.exe is None:
            return []
        if self.device.type == "cuda":
            seen = {}
            for k in self.exe.plan:
                seen.setdefault(k.name, (k.name, k.config_text, k.reason))
            return list(seen.values())
        from dnnc import compiler, plan

        module = compiler.compile_cuda(self.graph, "sm_90a", stop_after="gpu")
        return [(k.name, k.strategy, k.reason) for k in plan.strategies(module)]


# Unsigned types torch fills on few devices: zeros of the signed type of
# their size, viewed as them.
_SIGNED = {getattr(torch, f"uint{n}", None): getattr(torch, f"int{n}") for n in (16, 32, 64)}


def _zeros(spec, device):
    """Zeros of ``spec``'s dims, dtype and strides (a Filler output)."""
    dtype = _SIGNED.get(spec.dtype, spec.dtype)
    out = torch.zeros(spec.shape, dtype=dtype, device=device)
    return out.view(spec.dtype) if dtype is not spec.dtype else out


def _with_strides(t, strides):
    """``t``, or a copy of it with ``strides`` (those of dims of size 1
    aside), also where it starts off a 16-byte boundary (a view at an
    offset), which the GPU kernels' vector and TMA loads do not take."""
    if all(n == 1 or a == b for n, a, b in zip(t.shape, t.stride(), strides)) and \
            (t.device.type != "cuda" or t.data_ptr() % 16 == 0):
        return t
    out = torch.empty_strided(t.shape, strides, dtype=t.dtype, device=t.device)
    out.copy_(t)
    return out


def _to_numpy(t):
    """A CPU tensor as the NumPy array (logical layout) the CPU back end takes."""
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _from_numpy(a, spec):
    """The CPU back end's output ``a`` as a torch tensor of ``spec``'s strides."""
    if a.dtype.itemsize == 2 and a.dtype.kind == "V" or a.dtype.name == "bfloat16":
        t = torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(np.ascontiguousarray(a))
    if tuple(t.shape) != spec.shape:   # a rank-0 result comes back as [1]
        t = t.reshape(spec.shape)
    return _with_strides(t, spec.strides)


def _region(key):
    try:
        return REGIONS[key]
    except KeyError:
        raise RuntimeError(f"dnnc::compiled_region: region '{key}' is not compiled in this "
                           "process (compile the model with backend='dnnc' first)") from None


def run_region(key, inputs):
    """Run compiled region ``key`` (a key of REGIONS) on ``inputs``, as
    dnnc::compiled_region does, for a graph run by Python, which calls it
    directly (the filler outputs reused: ``CompiledRegion.run``)."""
    return _region(key).run(inputs, reuse_fillers=True)


@torch.library.custom_op("dnnc::compiled_region", mutates_args=())
def compiled_region(key: str, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Run compiled region ``key`` (a key of REGIONS) on ``inputs``."""
    return _region(key).run(inputs)


@compiled_region.register_fake
def _compiled_region_fake(key, inputs):
    return REGIONS[key].fake(inputs)
