"""The split-row program: simt-reduce with ``split = C`` (dnn-reduce-rows).
A row too long for one block's registers is spread over a thread-block
cluster of C blocks (sm_90), each holding ``N / C`` of it in registers, so
that the row's inputs are read from memory once where one block would loop
over them pass by pass (softmax: three reads of x).

The program is rowwise.py's, statement for statement (the same
interpreter, ``rowwise._Row``); what changes is where a thread's vectors lie
and how a reduction ends:

1. **Place**: block ``b`` is rank ``r = b mod C`` of the cluster of row
   ``b / C``; its thread ``t`` is thread ``r * T + t`` of the row's ``C * T``,
   so the row's vectors are dealt to the cluster as rowwise.py deals them to
   a block (a warp reads consecutive vectors; a ragged end is masked).
2. **Reduce**: each block folds its part of the row as rowwise.py does
   (per-thread fold, warp shuffles, shared memory across warps); then its
   first thread writes the block's partial to the reduction's slot in the
   block's own shared memory, ``exchange[k]``, and the cluster meets at a
   barrier (``barrier.cluster.arrive`` releases the write, ``wait``
   acquires the others'). Every thread then reads the C partials of slot
   ``k`` through distributed shared memory (``mapa.shared::cluster`` of the
   slot's address to rank ``q``, ``ld.shared::cluster``) and combines them
   in the order of ``q``: every block of the cluster gets the same bits, on
   every run. Each reduction has its own slot, so no block overwrites a
   partial another may still be reading.
3. **Stay**: a block's shared memory must outlive the other blocks' reads
   of it. After the last reduction's reads each thread arrives at the
   cluster barrier once more, and waits on it before exiting; the stores of
   the output lie in between.

Per-row scalar results (a norm's mean and rstd) are stored by rank 0's
first thread. The cluster shape is the kernel's own: the launch carries
``clusters in (C, 1, 1)``, which dnn-kernel-clusters turns into the
kernel's ``nvvm.cluster_dim`` (PTX ``.reqnctapercluster C, 1, 1``), so the
runtime launches it like any other kernel (cuLaunchKernel).

Before: a rowwise.py kernel (a softmax of 2 x 65536 bf16, config
``{block = [512, 1, 1], split = 4, strategy = "simt-reduce", vector = 8}``).

After::

    gpu.launch clusters(...) in (%c4, %c1, %c1) blocks(%b, ...) in (%c8, ...)
        threads(%t, ...) in (%c512, ...)
        workgroup(%smem : memref<32xf32, 3>, %exchange : memref<2xf32, 3>) {
      %row = arith.divui %b, %c4
      %lane = %t + (%b mod 4) * 512
      ... loads of the thread's 4 vectors, the max: folds, shuffles, %smem ...
      memref.store %max_block, %exchange[%c0]          // thread 0
      nvvm.cluster.arrive
      nvvm.cluster.wait
      %p0 = nvvm.mapa %slot0, %c0_i32 : !llvm.ptr<3> -> !llvm.ptr<7>
      %m0 = llvm.load %p0 : !llvm.ptr<7> -> f32
      ... the 4 partials combined in rank order; the same for the sum ...
      nvvm.cluster.arrive                              // done reading
      ... the output stored from registers ...
      nvvm.cluster.wait
    }

Lit test: test/lit/passes/dnn_reduce_rows_split.mlir.
"""

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, nvvm, scf

from dnnc.codegen.gpu import irutil, rowwise

# Blocks a cluster may have without the non-portable attribute (which the
# runtime would have to set on the kernel before launching it).
MAX_CLUSTER = 8

_index = irutil.index
_WORKGROUP = "#gpu.address_space<workgroup>"


class _SplitRow(rowwise._Row):
    """rowwise._Row over a row dealt to ``cluster`` blocks: a reduction ends
    with the exchange of the blocks' partials."""

    def __init__(self, shape, width, threads, cluster, smem, exchange, outputs, last_writes,
                 registers):
        super().__init__(shape, width, threads, 1, smem, outputs, last_writes, registers)
        self.cluster, self.exchange = cluster, exchange
        self.per_row = threads * cluster
        self.held = self.chunks * width <= registers
        self.exchanges = 0
        self.marks = []  # one op after each exchange's reads

    def start(self, block, thread):
        rank = arith.remui(block, _index(self.cluster))
        lane = arith.addi(arith.muli(rank, _index(self.in_block)), thread)
        self.at(arith.divui(block, _index(self.cluster)), lane, thread)
        i64 = ir.IntegerType.get_signless(64)
        # The exchange slots' shared::cta address, which mapa translates to
        # the same slots of another block of the cluster.
        self.exchange_at = arith.index_cast(
            i64, memref.extract_aligned_pointer_as_index(self.exchange))

    def across_threads(self, name, value):
        value = super().across_threads(name, value)
        slot = self.exchanges
        self.exchanges += 1
        first = arith.cmpi(arith.CmpIPredicate.eq, self.local, _index(0))
        guard = scf.IfOp(first)
        with ir.InsertionPoint(guard.then_block):
            memref.store(value, self.exchange, [_index(slot)])
            scf.YieldOp([])
        # Every thread of every block gets here (a row has no guard: the
        # grid is exactly rows x C), all its warps converged: .aligned.
        nvvm.cluster_arrive(aligned=True)
        nvvm.cluster_wait(aligned=True)
        i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
        address = arith.addi(self.exchange_at, arith.constant(i64, 4 * slot))
        local = llvm.inttoptr(ir.Type.parse("!llvm.ptr<3>"), address)
        total = None
        for rank in range(self.cluster):  # fixed order: the same sum in every block
            remote = nvvm.mapa(ir.Type.parse("!llvm.ptr<7>"), local, arith.constant(i32, rank))
            part = llvm.load(value.type, remote)
            total = part if total is None else rowwise.combine(name, total, part)
        self.marks.append(llvm.mlir_undef(i32).owner.operation)
        return total

    def finish(self):
        """The arrival after the last reads of another block's shared
        memory, and the wait for every block's before the kernel ends (at
        the current insertion point)."""
        if self.marks:
            with ir.InsertionPoint(self.marks[-1]):
                nvvm.cluster_arrive(aligned=True)
            nvvm.cluster_wait(aligned=True)
        for mark in self.marks:
            mark.erase()


def _cluster_launch(blocks, threads, cluster, attributions):
    """A gpu.launch of ``blocks`` x ``threads`` in clusters of ``cluster``
    blocks along x, with the workgroup buffers of types ``attributions``:
    (launch op, body block). The bindings' LaunchOp builder has no clusters."""
    sizes = [_index(blocks), _index(1), _index(1), _index(threads), _index(1), _index(1),
             _index(cluster), _index(1), _index(1)]
    launch = ir.Operation.create(
        "gpu.launch", results=[], operands=sizes, regions=1, attributes={
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([0] + [1] * 9 + [0]),
            "workgroup_attributions": ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                         len(attributions))})
    loc = ir.Location.unknown()
    # Block ids, thread ids, grid and block sizes, cluster ids and sizes;
    # then the workgroup buffers.
    block = launch.regions[0].blocks.append(*([ir.IndexType.get()] * 18))
    for t in attributions:
        block.add_argument(t, loc)
    return launch, block


def build(fn, width, threads, cluster, registers=rowwise.REGISTER_ELEMENTS):
    """Replace kernel ``fn``'s body by its split-row program: one gpu.launch
    of ``cluster`` blocks of ``threads`` per row, in clusters. A thread holds
    its part of the row in registers when that is at most ``registers``
    elements. rowwise.NotARowProgram (nothing changed) when it is not a row
    program or the split does not fit."""
    p = rowwise.program_of(fn, width)
    if threads % rowwise.WARP or threads > 1024:
        raise rowwise.NotARowProgram(f"{threads} threads per block")
    if not 2 <= cluster <= MAX_CLUSTER:
        raise rowwise.NotARowProgram(f"a cluster of {cluster} blocks: expected 2 to "
                                     f"{MAX_CLUSTER}")
    reductions = sum(1 for s in p.statements if s.reduction)
    f32 = ir.F32Type.get()
    space = ir.Attribute.parse(_WORKGROUP)
    smem_type = ir.MemRefType.get([max(1, reductions * threads // rowwise.WARP)], f32,
                                  memory_space=space)
    exchange_type = ir.MemRefType.get([max(1, reductions)], f32, memory_space=space)
    blocks = p.shape.count * cluster
    with ir.InsertionPoint(p.first), fn.location:
        launch, block = _cluster_launch(blocks, threads, cluster, [smem_type, exchange_type])
        smem, exchange = list(block.arguments)[18:]
        row = _SplitRow(p.shape, width, threads, cluster, smem, exchange, p.outputs,
                        p.last_writes, registers)
        try:
            with ir.InsertionPoint(block):
                terminator = gpu.TerminatorOp()
            with ir.InsertionPoint(terminator):
                row.start(block.arguments[0], block.arguments[3])
                row.load_row(rowwise._streamed(p.statements, p.args))
                for s in p.statements:
                    row.run(s)
                row.finish()
        except rowwise.NotARowProgram:
            launch.erase()
            raise
        rowwise._hardware_exp(launch)
        rowwise._shared_divisors(launch)
    rowwise.erase_statements(fn, p.statements)
    return blocks
