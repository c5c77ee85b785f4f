"""Compilation pipelines, declared as data.

A pipeline is a list of stages; a stage has a name (which is also the extension
of its IR dump: ``graph.fused.mlir``; the ``ptx`` stage's dump is the PTX text,
``graph.ptx``) and the pass pipeline that produces it from the previous
stage. ``dnnc-opt --dump-pipeline`` prints these tables, and ``dnnc.stages``
runs them with one generic loop.

The ``cuda`` pipeline is a function of the GPU architecture (``cuda(arch)``,
or the names ``cuda-sm_80`` / ``cuda-sm_90a``): the ``configured`` stage's
heuristics and the ``nvvm`` stage's target differ. ``cuda(arch, config)``
also carries the user's config override (dnnc/heuristics/override.py) to
``dnn-configure``.
"""

from dataclasses import dataclass

from dnnc.archs import ARCHS


@dataclass(frozen=True)
class Stage:
    name: str
    passes: tuple
    extension: str = None  # of the stage's dump; default ".<name>.mlir"

    @property
    def dump_extension(self):
        return self.extension or f".{self.name}.mlir"

    @property
    def pipeline(self):
        return "builtin.module(" + ",".join(self.passes) + ")"


# The front half, shared by every target: check, simplify, split composite ops
# that no single kernel implements, and outline each kernel-to-be.
FRONT = (
    Stage("dnn", ("dnn-verify", "dnn-canonicalize")),
    # The norm backwards, group norms and batchnorms split into row and column
    # reductions with pointwise ops around them, which dnn-fuse makes into row
    # programs, column programs and broadcast pointwise kernels.
    Stage("decomposed", (
        "dnn-decompose",
        "dnn-decompose{ops=layernorm_backward,rmsnorm_backward,groupnorm,groupnorm_backward,"
        "batchnorm,batchnorm_backward}",
        # Reductions over separated axes ending at the innermost (NCHW's
        # [0, 2, 3]): a row reduction, then one over the axes left.
        "dnn-split-reductions",
        "dnn-canonicalize",
    )),
    # Transposes of pointwise results moved onto the inputs whose memory
    # order they are (a batchnorm backward's dy in its x's order).
    Stage("fused", ("dnn-hoist-transposes", "dnn-recognize-sdpa", "dnn-fold-operand-scales",
                    "dnn-sink-reshapes", "dnn-fuse", "dnn-verify")),
)

# dnn -> linalg on tensors, shared by the CPU and GPU back ends.
LINALG = Stage("linalg", ("convert-dnn-to-linalg", "canonicalize", "cse"))

# The GPU back end's: each elementwise producer with one use is merged into
# its consumer, so that a kernel's pointwise chain is one loop nest (one
# launch, no intermediate buffer) for the strategies to lower. (Not on the
# CPU: there it leaves strided copies that need MLIR's runner-utils library.)
LINALG_GPU = Stage("linalg", ("convert-dnn-to-linalg", "linalg-fuse-elementwise-ops",
                              "canonicalize", "cse"))

# The CPU back end: dnn -> linalg on tensors -> bufferized loops -> LLVM dialect,
# executed by MLIR's ExecutionEngine.
CPU = FRONT + (
    LINALG,
    Stage("llvm", (
        # fp8 conversions as integer code (LLVM has no f8 types).
        "dnn-expand-fp8",
        "one-shot-bufferize{bufferize-function-boundaries "
        "function-boundary-type-conversion=identity-layout-map}",
        # Results become out-parameters, filled by a copy (memcpy) of the
        # result buffer. Not hoist-static-allocs: it crashes MLIR 22 when a
        # function returns one buffer twice, which CSE can make of two outputs.
        "buffer-results-to-out-params{modify-public-functions}",
        # Bufferizing an extract_slice / write / insert_slice triple leaves a
        # copy of a subview onto an identical subview: cse makes the two one
        # value and canonicalize drops the self-copy (a strided memref.copy
        # would need MLIR's C runner-utils library, which is not loaded).
        "cse",
        "canonicalize",
        # Free the intermediate buffers (one-shot-bufferize only allocates).
        "buffer-deallocation-pipeline",
        "convert-bufferization-to-memref",
        "convert-linalg-to-loops",
        "arith-expand{include-bf16}",
        "arith-emulate-unsupported-floats{source-types=bf16,f16 target-type=f32}",
        "convert-math-to-libm",
        "expand-strided-metadata",
        "lower-affine",
        "convert-scf-to-cf",
        "finalize-memref-to-llvm",
        "convert-math-to-llvm",
        "convert-arith-to-llvm",
        "convert-func-to-llvm",
        "convert-cf-to-llvm",
        "reconcile-unrealized-casts",
    )),
)

# The GPU back end: linalg on tensors -> bufferized buffers, every compute op
# in a kernel function -> parallel loops (16-byte vector loops for the
# simt-pointwise strategy) spread over blocks and threads -> gpu.launch_func +
# one gpu.module -> NVVM -> PTX.
GPU = Stage("gpu", (
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map}",
    # Results become out-parameters (marked bufferize.result, which
    # dnn-io-strides reads); dnn-host-to-kernels then elides the copies into
    # them and turns any other host copy into a kernel.
    "buffer-results-to-out-params{modify-public-functions add-result-attr}",
    "cse",
    "canonicalize",
    "dnn-host-to-kernels",
    "dnn-layout-views",
    "dnn-io-strides",
    # Again: a reshape copy of an input that dnn-io-strides copied to
    # row-major becomes a view, that copy writing the output itself.
    "dnn-layout-views",
    # Slices (a qkv projection split into q, k and v) that attention
    # kernels read, directly or through a transpose, become views; then the
    # transposes.
    "dnn-slice-views",
    "dnn-transpose-views",
    # dq, dk and dv, which the attention backward now writes through views,
    # joined by a concat (the qkv projection's gradient): written in place.
    "dnn-concat-views",
    # Tensor-core convolutions' operands channels-last: intermediates
    # allocated so, anything else through a layout kernel.
    "dnn-conv-layouts",
    "dnn-default-config",
    "dnn-map-tensor-cores",
    "dnn-map-simt-gemm",
    "dnn-map-simt-gemv",
    # Before dnn-vectorize-pointwise: a "transpose" that is a plain copy
    # once views have permuted its operand is handed to simt-pointwise.
    "dnn-tile-transposes",
    "dnn-vectorize-pointwise",
    "dnn-reduce-rows",
    "dnn-reduce-rows-columns",
    "dnn-reduce-columns",
    "dnn-pool-windows",
    "dnn-depthwise-conv",
    "dnn-parallel-dims-first",
    "convert-linalg-to-parallel-loops",
    "canonicalize",
    # No canonicalize from here to the mapping: it would fold a one-block
    # outer loop away, and the threads would be mapped to blocks.
    "dnn-distribute-loops",
    "func.func(gpu-map-parallel-loops)",
    "convert-parallel-loops-to-gpu",
    "lower-affine",
    "gpu-launch-sink-index-computations",
    # Runtime scalars: one host-side load per kernel function, so that
    # outlining passes the f32 value as a kernel parameter.
    "dnn-scalar-args",
    "gpu-kernel-outlining",
    # Cluster launches (the split-row program): the shape onto the kernel.
    "dnn-kernel-clusters",
    # Kernels that reallocate registers between warpgroups: one block per SM.
    "dnn-register-budget",
    "dnn-merge-gpu-modules",
    "canonicalize",
    "cse",
    # Identical kernels (a network's repeated blocks) become one, so that
    # NVVM, LLVM and ptxas compile each once.
    "dnn-dedup-kernels",
))


def configured(arch, config="", db="", gpu=""):
    """The ``configured`` stage: the heuristics attach ``dnn.config`` (and
    ``dnn.config_reason``) to every kernel of the fused stage, for ``arch``,
    with the user's override ``config`` (``KERNEL=block:128``; whitespace is
    dropped, since pass options are separated by spaces), and the configs of
    the tuning database file ``db`` (dnnc/tune/db.py; its path percent-quoted
    in the option), preferring those tuned on GPU ``gpu``."""
    options = f"arch={arch}"
    config = "".join((config or "").split())
    if config:
        options += f" override={config}"
    if db:
        from urllib.parse import quote

        # Spaces, commas and brackets would end the option or the pass.
        options += f" db={quote(db, safe='/:._-~+@')}"
    if gpu:
        from dnnc.tune.db import gpu_token

        options += f" gpu={gpu_token(gpu)}"
    return Stage("configured", (f"dnn-configure{{{options}}}",))


def nvvm(arch):
    """The NVVM stage for ``arch``: target attached, kernels made to wait for
    the grids ahead (sm_90: programmatic dependent launch), math expanded (no
    libdevice), fp8 conversions lowered for the target, GPU, nvgpu, SCF and arith to the LLVM dialect with
    bare-pointer memref arguments (one pointer parameter per buffer), TMA
    descriptor parameters made by-value grid constants."""
    return Stage("nvvm", (
        f"nvvm-attach-target{{chip={arch} features=+ptx80 O=3}}",
        # sm_90: each kernel waits for the ones ahead, so it may launch early.
        "dnn-grid-dependency",
        "dnn-expand-math",
        # After expand-math, which reads the roundings to fp8.
        "dnn-expand-fp8",
        "gpu.module(convert-scf-to-cf,convert-nvgpu-to-nvvm,"
        "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=true},"
        "canonicalize,cse)",
        # TMA descriptors are passed by value (host_plan's tma arguments).
        "dnn-tma-grid-constant",
        "convert-nvvm-to-llvm",
        "reconcile-unrealized-casts",
    ))


PTX = Stage("ptx", ("gpu-module-to-binary{format=isa}",), extension=".ptx")


def cuda(arch, config="", db="", gpu=""):
    """The stages of the CUDA pipeline for ``arch`` (sm_80, sm_90a), with the
    config override ``config`` and the tuning database ``db`` of GPU ``gpu``
    (see ``configured``)."""
    from dnnc.errors import PipelineError

    if arch not in ARCHS:
        raise PipelineError(f"unknown GPU architecture '{arch}': expected one of "
                            f"{', '.join(ARCHS)}")
    # tc-sm80 applies no operand prologue (a matmul's, a convolution's x)
    # and sums no bias gradient beside a filter gradient: on sm_80 the ops
    # stay kernels of their own (the reduction split as any other).
    sm80 = {"dnn-fuse": "dnn-fuse{matmul_prologue=false conv_prologue=false "
                        "conv_bias_grad=false}",
            "dnn-split-reductions": "dnn-split-reductions{conv_bias_grad=false}"}
    # sm_90a: a convolution of a few channels a group runs as one of 64
    # channels a group with block-diagonal filters (dnn-widen-groups), on
    # tc-sm90's grouped implicit GEMM, which sm_80's tc-sm80 does not have.
    sm90 = {"dnn-split-reductions": ("dnn-widen-groups", "dnn-split-reductions")}
    if arch == "sm_90a":
        front = tuple(Stage(s.name, tuple(q for p in s.passes for q in sm90.get(p, (p,))))
                      for s in FRONT)
    else:
        front = tuple(Stage(s.name, tuple(sm80.get(p, p) for p in s.passes)) for s in FRONT)
    return front + (configured(arch, config, db, gpu), LINALG_GPU, GPU, nvvm(arch), PTX)


# Pipelines that are functions of the architecture are named <name>-<arch>.
PIPELINES = {
    "front": FRONT,
    "cpu": CPU,
    "cuda": cuda,
}


def names():
    """Every pipeline name ``get`` accepts."""
    out = []
    for name, value in PIPELINES.items():
        out += [f"{name}-{a}" for a in ARCHS] if callable(value) else [name]
    return sorted(out)


def get(name, arch=None, config="", db="", gpu=""):
    """The stages of a named pipeline; an architecture-dependent one needs
    ``arch`` or a name like ``cuda-sm_90a``. ``config`` is a config override,
    ``db`` a tuning database file and ``gpu`` the GPU whose entries to
    prefer, for the pipelines with a ``configured`` stage (cuda)."""
    from dnnc.errors import PipelineError

    base, _, suffix = name.partition("-")
    value = PIPELINES.get(name)
    if value is None and suffix and callable(PIPELINES.get(base)):
        value, arch = PIPELINES[base], suffix
    if value is None:
        raise PipelineError(f"unknown pipeline '{name}': expected one of "
                            f"{', '.join(names())}")
    if callable(value):
        if arch is None:
            raise PipelineError(f"pipeline '{name}' needs a GPU architecture: expected one of "
                                f"{', '.join(f'{name}-{a}' for a in ARCHS)}")
        return value(arch, config, db, gpu) if config or db or gpu else value(arch)
    if config or db:
        what = f"a config override applies to the cuda pipeline, got '{config}'" if config \
            else f"a tuning database applies to the cuda pipeline, got '{db}'"
        raise PipelineError(f"pipeline '{name}' has no configured stage: {what}")
    return value


def describe(name=None):
    """Human-readable listing of one pipeline or of all of them."""
    lines = []
    selected = [name] if name else names()
    if name and callable(PIPELINES.get(name)):
        selected = [f"{name}-{a}" for a in ARCHS]
    for pname in selected:
        lines.append(f"{pname}:")
        for stage in get(pname):
            lines.append(f"  {stage.name}:")
            for p in stage.passes:
                lines.append(f"    {p}")
    return "\n".join(lines)
