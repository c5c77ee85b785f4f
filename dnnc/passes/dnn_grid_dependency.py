"""dnn-grid-dependency: let each kernel be launched before the one ahead of
it ends (programmatic dependent launch, sm_90).

Between two kernels of a plan the GPU normally drains the first grid, then
launches the second: a gap of a microsecond or two that a short kernel
(split-K's sum, a norm backward's column sums) pays in full. On sm_90 a
grid launched with the programmatic stream serialization attribute may start
as soon as every block of the grid ahead has run
``griddepcontrol.launch_dependents`` (or exited); it must then run
``griddepcontrol.wait``, which returns once the grid ahead has completed and
its memory is visible, before it touches memory.

This pass puts, at the entry of every kernel (``gpu.func`` with
``gpu.kernel``) of a ``gpu.module`` whose NVVM target is sm_90 or newer
whose launches have at most MAX_BLOCKS blocks (a larger grid runs long
enough that an early launch saves nothing, and its blocks would pay for
the lines)::

    griddepcontrol.wait;                  // the kernels ahead are done
    griddepcontrol.launch_dependents;     // the next kernel may launch now

so nothing the kernel does comes before its predecessors are complete, and
its successor's blocks are launched early enough to wait on the SMs this
one frees (they take SM room only once every block of this grid has
started). The second line is left out of a kernel launched with a grid
that is not constant, or that fills most of the SMs but not all (fewer
blocks than FULL_WAVE, an H100 / H200's SMs as tc-sm90's persistent grid
counts them, and at least half of them): its few idle SMs would take
the successor's first blocks all at once and leave them the work of many
(a split-K GEMM of 128 blocks made its 128-block sum 5% slower so on an
H200); its successor then launches when it ends. A smaller grid (a
statistics pass) leaves most SMs to its successor, and a full one frees
them as it drains. A column program (simt-reduce-columns) of FULL_WAVE / 2
blocks or more leaves the line out too: its blocks are sized to be resident
at once, two an SM, and an early successor took their slots (on an H200 a
column sum of 16384 x 8192 called back to back took 101 us with the line,
64-65 without; 16384 x 4096, 33 us both ways); a smaller one (a norm
backward's dscale over a few rows) is a statistics pass like any other. A
kernel launched without the attribute treats both lines as no-ops.
The compiler records in the manifest which kernels wait
(``dependent_launch``, read from the PTX), and the runtime launches only
those with the attribute (docs/artifact.md). Kernels for sm_80 are left
alone.

Before (in ``gpu.module @m [#nvvm.target<chip = "sm_90a">]``)::

    gpu.func @k(...) kernel { <body> }

After::

    gpu.func @k(...) kernel {
      llvm.inline_asm has_side_effects "griddepcontrol.wait;", ""  : () -> ()
      llvm.inline_asm has_side_effects "griddepcontrol.launch_dependents;", ""  : () -> ()
      <body>
    }

Lit test: test/lit/passes/dnn_grid_dependency.mlir.
"""

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import llvm

from dnnc.codegen.gpu import irutil
from dnnc.heuristics.config import Config
from dnnc.passes import DnncPass, register

# The first NVIDIA architecture with griddepcontrol (PTX ISA: sm_90).
FROM_SM = 90
WAIT = "griddepcontrol.wait;"
LAUNCH_DEPENDENTS = "griddepcontrol.launch_dependents;"
# Blocks a grid needs for its successor to launch early: one per SM of an
# H100 SXM / H200.
FULL_WAVE = 132
# Strategies whose grids are sized to be resident all at once: from
# FULL_WAVE / 2 blocks on, their successors launch when they end.
RESIDENT_STRATEGIES = ("simt-reduce-columns",)
# The most blocks a dependent kernel may have. A grid of more runs for 100 us
# or longer, where launching it early saves nothing, while its blocks pay
# for the two lines: on an H200 a softmax of 1048576 rows of 128 (262144
# blocks of 4 rows) took 0.318 ms with them and 0.184 without; of 524288 x
# 256 (131072 blocks) 0.162 and 0.131; of 262144 x 512 (65536 blocks) and a
# gelu of 16384 x 8192, the same with and without (whether or not the
# runtime launched them with the attribute).
MAX_BLOCKS = 65536


def _blocks(module):
    """{(gpu.module, kernel): (the fewest, the most) blocks its launches
    have; 0 for a grid that is not constant} and the set of kernels that a
    function of a RESIDENT_STRATEGIES config launches."""
    out, resident = {}, set()
    for launch in irutil.launches(module):
        view = launch.opview
        sizes = [irutil.constant_int(v) for v in (view.gridSizeX, view.gridSizeY, view.gridSizeZ)]
        blocks = 0 if None in sizes else sizes[0] * sizes[1] * sizes[2]
        key = irutil.launched_kernel(launch)
        fewest, most = out.get(key, (blocks, blocks))
        out[key] = (min(fewest, blocks), max(most, blocks))
        if _strategy(launch) in RESIDENT_STRATEGIES:
            resident.add(key)
    return out, resident


def _strategy(op):
    """The strategy of the ``dnn.config`` of the function holding ``op``;
    None without one."""
    fn = irutil.enclosing(op, "func.func")
    config = None if fn is None else Config.of_kernel(fn)
    return None if config is None else config.strategy


def triggers_early(blocks, resident=False):
    """Whether a kernel whose launches have ``blocks`` blocks at fewest (0:
    not constant) lets its successor launch as soon as it starts;
    ``resident``: a grid sized to be resident all at once."""
    return (blocks >= FULL_WAVE and not resident) or 0 < blocks < FULL_WAVE // 2


def mark(module):
    module = getattr(module, "operation", module)
    blocks, resident = _blocks(module)
    for gm in irutil.body(module).operations:
        gm = gm.operation
        if gm.name != "gpu.module" or (irutil.target_sm(gm) or 0) < FROM_SM:
            continue
        for f in irutil.body(gm).operations:
            f = f.operation
            if f.name != "gpu.func" or "gpu.kernel" not in f.attributes:
                continue
            key = (irutil.symbol(gm), irutil.symbol(f))
            fewest, most = blocks.get(key, (0, 0))
            if most > MAX_BLOCKS:
                continue
            lines = [WAIT]
            if triggers_early(fewest, key in resident):
                lines.append(LAUNCH_DEPENDENTS)
            entry = f.regions[0].blocks[0]
            with ir.InsertionPoint.at_block_begin(entry):
                for text in lines:
                    llvm.inline_asm(None, [], text, "", has_side_effects=True)


@register
@dataclass
class DnnGridDependency(DnncPass):
    NAME = "dnn-grid-dependency"

    def run(self, module):
        with module.context, ir.Location.unknown():
            mark(module)
