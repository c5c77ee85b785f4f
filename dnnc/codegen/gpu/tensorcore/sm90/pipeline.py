"""tc-sm90's pipeline between the producer and the consumers: a ring of
``stages`` shared-memory stages, each guarded by an mbarrier pair.

* ``full[s]``: the producer arms it with the stage's transaction bytes
  (one arrival plus the bytes its TMA loads will write); the loads complete
  on it; the consumers wait on it before their wgmmas read the stage.
* ``empty[s]``: each consumer warpgroup arrives once it is done reading the
  stage (or each of its warps, where they also read it with loads of their
  own: ``arrivals`` 4); the producer waits on it before loading the stage
  again.

K steps are numbered globally across a block's work units (``slot``: stage
= step % stages, the phase parity from step / stages), so the ring is not
drained between tiles. A wait (``irutil.mbarrier_wait``) spins on
``mbarrier.try_wait.parity`` in inline PTX, with no suspend-time hint:
nvvm.mbarrier.try_wait.parity requires one, and with it ptxas puts a
NANOSLEEP in the retry path, which a stage arriving just after the first try
then waits out.

The ring's stages lie at the start of the block's dynamic shared memory
(after alignment); its barriers lie at ``barriers_at`` bytes, after
whatever else the kernel keeps there (kernel.py lays it out).
"""

from mlir.dialects import arith, nvvm

from dnnc.codegen.gpu.tensorcore.emit import (
    i as _i, idx as _idx, shared_ptr as _shared_ptr, to_i32 as _to_i32, to_i64 as _to_i64,
)


class Ring:
    """``stages`` stages of ``stage_bytes``; ``consumers`` warpgroups release
    each, with ``arrivals`` arrivals each. ``base`` (the block's aligned
    shared-memory base, an i64 value) is set on the device side before any
    address is asked for."""

    def __init__(self, stages, stage_bytes, barriers_at, consumers, arrivals=1):
        self.stages = stages
        self.stage_bytes = stage_bytes
        self.barriers_at = barriers_at
        self.consumers = consumers
        self.arrivals = arrivals
        self.base = None

    def init_barriers(self):
        """Initialize every stage's barrier pair (one thread, before the
        block's first barrier)."""
        for s in range(self.stages):
            nvvm.MBarrierInitOp(self.full(s), _i(1))
            nvvm.MBarrierInitOp(self.empty(s), _i(self.consumers * self.arrivals))

    def stage(self, s):
        """i64 shared address of stage ``s`` (an index value)."""
        return arith.addi(self.base, arith.muli(_to_i64(s), _i(self.stage_bytes, 64)))

    def _barrier(self, which, s):
        offset = self.barriers_at + 8 * which * self.stages
        if isinstance(s, int):
            address = arith.addi(self.base, _i(offset + 8 * s, 64))
        else:
            address = arith.addi(self.base, arith.addi(_i(offset, 64),
                                                       arith.muli(_to_i64(s), _i(8, 64))))
        return _shared_ptr(address)

    def full(self, s):
        """The pointer to stage ``s``'s full barrier (``s``: an int or index)."""
        return self._barrier(0, s)

    def empty(self, s):
        """The pointer to stage ``s``'s empty barrier."""
        return self._barrier(1, s)

    def slot(self, g):
        """(stage, parity of its fill) of global K step ``g``: steps run
        through the ring across tiles, each pass over it flips the parity."""
        stages = _idx(self.stages)
        return (arith.remui(g, stages),
                _to_i32(arith.andi(arith.divui(g, stages), _idx(1))))
