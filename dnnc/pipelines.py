"""Compilation pipelines, declared as data.

A pipeline is a list of stages; a stage has a name (which is also the extension
of its IR dump: ``graph.fused.mlir``) and the pass pipeline that produces it
from the previous stage. ``dnnc-opt --dump-pipeline`` prints these tables, and
``dnnc.compiler`` runs them with one generic loop.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    name: str
    passes: tuple

    @property
    def pipeline(self):
        return "builtin.module(" + ",".join(self.passes) + ")"


# The front half, shared by every target: check, simplify, split composite ops
# that no single kernel implements, and outline each kernel-to-be.
FRONT = (
    Stage("dnn", ("dnn-verify", "dnn-canonicalize")),
    Stage("decomposed", ("dnn-decompose", "dnn-canonicalize")),
    Stage("fused", ("dnn-recognize-sdpa", "dnn-fuse", "dnn-verify")),
)

# The CPU back end: dnn -> linalg on tensors -> bufferized loops -> LLVM dialect,
# executed by MLIR's ExecutionEngine.
CPU = FRONT + (
    Stage("linalg", ("convert-dnn-to-linalg", "canonicalize", "cse")),
    Stage("llvm", (
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

PIPELINES = {
    "front": FRONT,
    "cpu": CPU,
}


def get(name):
    """The stages of a named pipeline."""
    from dnnc.errors import PipelineError

    try:
        return PIPELINES[name]
    except KeyError:
        raise PipelineError(f"unknown pipeline '{name}': expected one of "
                            f"{', '.join(sorted(PIPELINES))}") from None


def describe(name=None):
    """Human-readable listing of one pipeline or of all of them."""
    lines = []
    for pname in [name] if name else sorted(PIPELINES):
        lines.append(f"{pname}:")
        for stage in get(pname):
            lines.append(f"  {stage.name}:")
            for p in stage.passes:
                lines.append(f"    {p}")
    return "\n".join(lines)
