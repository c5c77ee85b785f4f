"""The seams of the tensor-core engine: what each part of a kernel must
provide, so that a new operand loader, mainloop, epilogue or scheduler can
replace one without touching the others.

A tc-sm90 kernel (sm90/kernel.py) is composed of

* two **operand loaders** (``OperandLoader``), one for A and one for B, that
  bring a tile of each K step into a stage of the ring;
* the **pipeline** (``sm90/pipeline.py``: stages and mbarrier pairs) that
  the mainloop's roles synchronize through;
* a **mainloop** of warp-specialized roles (``Role``): a producer that
  drives the loaders and consumers that run the wgmmas;
* an **epilogue** (``Epilogue``) that turns a work unit's accumulator into
  the kernel's outputs;
* a **tile scheduler** (``TileScheduler``) that says which work units a
  persistent block runs, in which order.

The parts share one ``Kernel`` object (the problem, the tile, the shared
memory layout, the device-side base and thread index) and are built in a
fixed order, so the IR each emits lands where the kernel expects it.

How the next kernels plug in:

* **Convolution** (implicit GEMM, tensorcore/conv.py) keeps the mainloop,
  the epilogue and the scheduler and replaces both loaders (sm90/im2col.py):
  A, the activation, read by one TMA load in im2col mode per K step (BM
  output pixels' input pixels at one filter tap, BK channels each); B, the
  filter viewed as [K, taps, C]. Their ``load`` completes on the same full
  barrier with the same transaction bytes, in the same swizzled layout.
* **Attention** keeps the loaders (Q, K, V tiles are plain TMA tiles), the
  pipeline and the epilogue's store path, and replaces the mainloop (two
  GEMMs per step with the softmax between them, P·V with P from registers)
  and the scheduler (sm90/flash_scheduler.py: query tiles per batch and
  head; causal work that shrinks along the diagonal, dealt in pairs of
  tiles of equal work).

tc-sm80 (sm80/) has the same layers on Ampere's instructions: a loader of
cp.async copies (``CopyLoader``), a block-per-tile scheduler, a
software-pipelined mma.sync mainloop and the same pair epilogue. Its
convolution replaces the loaders likewise (sm80/im2col.py): the activation
gathered by cp.async pixel by pixel, zero-filled in the padding, into the
stage layout the matmul's loader leaves.

These protocols are documentation a test checks (test_tensorcore_parts.py:
each implementation has every member); nothing calls through them.
"""

from typing import Protocol


class OperandLoader(Protocol):
    """How one GEMM operand reaches a stage of the ring (tc-sm90).

    Data: ``rows`` (the tile's rows of M or N: BM for A, BN for B),
    ``mn_major`` (the stage holds the tile MN-major, which wgmma reads
    transposed; else K-major), ``eb`` (bytes of an element as stored),
    ``tile_bytes`` (bytes one K step's tile takes in a stage: what ``load``
    writes, counted in the full barrier's transaction bytes)."""

    rows: int
    mn_major: bool

    @property
    def eb(self) -> int:
        """Bytes of an element as it lies in the stage."""

    @property
    def tile_bytes(self) -> int:
        """Bytes of one K step's tile in a stage."""

    def make_descriptor(self, bk):
        """Host side, before the launch: make what the device side needs to
        load (a TMA descriptor passed as a kernel argument), for tiles of
        ``bk`` elements of K."""

    def load(self, dest_i64, barrier, batch, mn0, k0):
        """Device side, one thread of the producer, once per K step: issue
        the asynchronous copies of the tile at batch ``batch``, first row of
        M or N ``mn0``, first K element ``k0`` (i32 values) into shared
        memory at ``dest_i64``, completing on the mbarrier ``barrier``, in
        the layout the consumers' wgmma descriptors assume (TMA's 128-byte
        swizzle unless the operand has a prologue, which converts it)."""


class TileScheduler(Protocol):
    """Which work units a persistent block runs (tc-sm90).

    Data: ``units`` (work units in all), ``ctas`` (blocks of the grid),
    ``steps`` (K steps of a whole tile), ``splits`` (work units a tile's K
    steps are split over, 1 without split-K)."""

    units: int
    ctas: int
    steps: int
    splits: int

    def loop(self, body, inits):
        """Emit the block's loop over its work units, calling ``body(batch,
        tile_m, tile_n, (first K step, end, split or None), *iter_args)``
        for each, which returns the new iter_args (the producer and each
        consumer thread its global K-step counter through); under a tail
        split the K steps' tuple holds a fourth entry, (i1 tail, tail tile)
        (sm90/scheduler.py). Every role of a block must get the same units
        in the same order."""


class Role(Protocol):
    """A warp-specialized role of the mainloop (tc-sm90's ``Producer``,
    ``Consumer``), built on ``kernel``; ``run`` emits what its warpgroup(s)
    execute for the whole block: the producer loads every unit's K steps
    through the loaders; a consumer accumulates them and hands each unit's
    accumulator to the epilogue (or split-K)."""

    def run(self):
        """Emit the role's code at the current insertion point."""


class Epilogue(Protocol):
    """What happens to a work unit's accumulator (tc-sm90).

    Data: ``slots`` (shared slots a consumer warp stages outputs in, 0 when
    it stores from registers), ``staging_offset`` / ``staging_bytes``
    (where those slots lie in shared memory and how much they take), ``note``
    (what the plan says of how it stores, or None)."""

    slots: int
    staging_offset: int
    staging_bytes: int

    def make_descriptors(self):
        """Host side, before the launch: any descriptors the stores need."""

    def inputs(self, consumer, local, batch, tile_m, tile_n, groups=None):
        """Device side, before the consumer's last wgmma wait: read the
        inputs the epilogue needs at this thread's accumulator positions
        (or None), so their latency hides behind the last K step."""

    def apply(self, acc, consumer, local, batch, tile_m, tile_n, inputs):
        """Device side: evaluate the fused epilogue on the accumulator
        ``acc`` of the tile (``tile_m``, ``tile_n``) of ``batch`` and store
        the outputs."""

    def finish(self, local):
        """Device side, after a consumer's last unit: wait for any stores
        still in flight that read shared memory."""


class CopyLoader(Protocol):
    """How one GEMM operand reaches a stage of tc-sm80's ring (cp.async),
    and how a warp reads its mma.sync fragments back.

    Data: ``bytes`` (a stage's share: lines x pitch), ``k_major``."""

    k_major: bool

    def prepare(self, tid, threads, batch, mn0):
        """Before the mainloop: this thread's copy plan for the tile at
        (``batch``, ``mn0``): where each of its chunks goes and comes from."""

    def load(self, plan, stage_i64, k0):
        """Issue this thread's cp.async copies of the K step at ``k0`` into
        the stage at ``stage_i64`` (zero-filled past the operand's ends)."""

    def lane_offset(self, lane, first_row, fragment_rows):
        """The byte offset in a stage of the row this lane gives ldmatrix."""

    def ldmatrix(self, stage_i64, lane_off, kk, block):
        """The 4 fragment registers of K slice ``kk``, fragment block ``block``."""
