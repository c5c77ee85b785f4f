"""A model of the synchronization of tc-sm90's attention forward
(dnnc/codegen/gpu/tensorcore/sm90/flash.py), run without a GPU: each
warpgroup of a block is a Python generator that yields the kernel's
synchronizing operations in the order flash.py emits them, and ``run``
interleaves them (at random, from a seed) until every role finishes or none
can go on (a hang).

What is modelled, as the hardware does it:

* mbarriers (``Barrier``): an expected arrival count and transaction
  bytes; a phase completes when both are met; ``try_wait.parity p``
  passes once the phase of parity p is complete (a fresh barrier counts
  the phase before its first as complete: parity 1 passes at once);
* TMA loads: issued by the producer, landing later in any order (the
  ``tma`` role); until one lands the stage it writes must not be read or
  written by anyone;
* named barriers (``bar.sync`` / ``bar.arrive`` over a thread count): a
  warpgroup adds its 128 threads; the barrier releases its waiters when
  the count is reached, and more arrivals than the count is an error;
* setmaxnreg: the block's pool holds the registers its threads hold at
  entry (flash.entry_registers); ``dec`` gives back to it, ``inc`` waits
  until it holds what is asked for;
* the contents of shared memory: the Q tile and each K and V stage, per
  consumer warpgroup's 64 rows, so that a read of a stage that a load or
  a store has since overwritten, or a load into a stage someone still
  reads, is caught (``ProtocolError``).

Not modelled: the warps within a warpgroup (a warpgroup is one role: its
leader's arrivals, its warps' TMA stores and the named barrier of 128
threads that gathers them are one step), and the time a wgmma reads its
operands (a read is checked when it is issued, and the stage is held until
the warpgroup gives it back).

The kernel's choices come from the kernel's code: the tiles each block
runs (flash_scheduler.FlashScheduler.tiles_for), each tile's kv steps (the
index arithmetic of attention_tiles.query_unit, folded: ``tile_steps``),
where O is staged (flash.o_staging) and the warpgroups' registers
(flash.register_plan). What each role does between them mirrors the
kernel builder's code; a change there must be made here too, and the
tests in test_attention_persistent.py run this model over shapes whose
corners the GPU cases cannot all reach.
"""

import random
import re
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, func

from dnnc import passes
from dnnc.codegen.gpu.tensorcore.attention_tiles import query_unit
from dnnc.codegen.gpu.tensorcore.sm90.flash import (
    EPILOGUE_BARRIER, entry_registers, o_staging, register_plan,
)
from dnnc.codegen.gpu.tensorcore.sm90.flash_scheduler import FlashScheduler

WARPGROUP = 128


class ProtocolError(AssertionError):
    """A wait that can never pass, a barrier over-arrived, or shared memory
    read or written while another role may still change it."""


def tile_steps(att, m, n):
    """The kv steps of each query tile of ``att`` (no padding: the same for
    every head), from query_unit's index arithmetic folded to constants."""
    tiles = -(-att.sq // m)
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.create()
        index, i64 = ir.IndexType.get(), ir.IntegerType.get_signless(64)
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("f", ([], [i64] * tiles))
            with ir.InsertionPoint(fn.add_entry_block()):
                steps = [query_unit(att, m, n, arith.constant(index, t),
                                    arith.constant(index, 0))[5] for t in range(tiles)]
                func.ReturnOp([arith.index_cast(i64, s) for s in steps])
        passes.run_pipeline(module, "builtin.module(canonicalize)")
        text = str(module)
    consts = dict(re.findall(r"(%[\w]+) = arith.constant (-?\d+) : i64", text))
    values = re.search(r"return (.*) :", text).group(1).split(", ")
    return [int(consts[v]) for v in values]


class Barrier:
    """An mbarrier: ``count`` arrivals (and the bytes armed) a phase."""

    def __init__(self, name, count):
        self.name, self.count = name, count
        self.pending, self.bytes, self.phase = count, 0, 0

    def arrive(self, expect=0):
        if self.pending == 0:
            raise ProtocolError(f"{self.name}: an arrival beyond its count {self.count}")
        self.pending -= 1
        self.bytes += expect
        self._complete()

    def land(self, size):
        self.bytes -= size
        if self.bytes < 0:
            raise ProtocolError(f"{self.name}: more bytes landed than armed")
        self._complete()

    def _complete(self):
        if self.pending == 0 and self.bytes == 0:
            self.phase += 1
            self.pending = self.count

    def passes(self, parity):
        return self.phase % 2 != parity

    def idle(self):
        return self.pending == self.count and self.bytes == 0


@dataclass
class Named:
    """A named barrier: warpgroups arrive (and the syncing ones wait) until
    ``threads`` threads did."""

    name: str
    threads: int = 0
    arrived: int = 0
    generation: int = 0

    def arrive(self, threads):
        if self.threads and threads != self.threads:
            raise ProtocolError(f"{self.name}: {threads} threads, expected {self.threads}")
        self.threads = threads
        self.arrived += WARPGROUP
        if self.arrived > threads:
            raise ProtocolError(f"{self.name}: {self.arrived} threads arrived, expected "
                                f"{threads}")
        if self.arrived == threads:
            self.arrived = 0
            self.generation += 1


@dataclass
class Shapes:
    """The forward's shape as the model needs it: ``att`` (what
    FlashScheduler, query_unit and o_staging read), ``tile`` (a
    flash.FlashTile), ``same_type`` (o has q's type), ``ctas`` the
    persistent blocks (the grid's, ``tile.persistent`` > 1 or SMs)."""

    att: object
    tile: object
    same_type: bool = True
    ctas: int = 132
    plan: tuple = field(default=None)   # (producer, consumer) registers; None: register_plan's


class Block:
    """One block's roles over its tiles (``run`` interleaves them)."""

    def __init__(self, shapes, block, tiles, steps):
        t = shapes.tile
        self.t, self.c = t, t.consumers
        self.persistent = bool(t.persistent)
        self.tiles = tiles            # [(query tile, head)] in the block's order
        self.steps = steps            # kv steps of each query tile
        self.staging = o_staging(shapes.att, t, shapes.same_type)
        producer, consumer = shapes.plan or register_plan(shapes.att, t)
        threads = WARPGROUP * (1 + self.c)
        self.entry = entry_registers(threads)
        self.pool = 0
        self.plan = producer, consumer
        self.q_full = Barrier("q_full", 1)
        self.q_empty = Barrier("q_empty", self.c)
        self.full = {r: [Barrier(f"{r}.full[{s}]", 1) for s in range(t.stages)] for r in "KV"}
        self.empty = {r: [Barrier(f"{r}.empty[{s}]", self.c) for s in range(t.stages)]
                      for r in "KV"}
        self.named = {}
        self.smem = {}                # (region, part) -> what it holds
        self.holders = {}             # region -> consumers that read it, not yet given back
        self.in_flight = []           # TMA loads: (region, contents, barrier)
        self.stored = []              # (tile, head, consumer) of each O stored

    # -- shared memory --------------------------------------------------------

    def _busy(self, region):
        return any(r == region for r, _, _ in self.in_flight)

    def write(self, region, c, what):
        """Consumer ``c`` writes its rows of ``region`` (and holds it)."""
        if self._busy(region):
            raise ProtocolError(f"{region} written while a TMA load into it is in flight")
        self.smem[region, c] = what
        self.holders.setdefault(region, set()).add(c)

    def read(self, region, parts, what, c):
        """Consumer ``c`` reads rows ``parts`` of ``region``, which must hold
        ``what``; it holds the region until it gives it back (``give``)."""
        if self._busy(region):
            raise ProtocolError(f"{region} read while a TMA load into it is in flight")
        for p in parts:
            got = self.smem.get((region, p))
            if got != what:
                raise ProtocolError(f"consumer {c} read {what} in {region} rows {p}, it "
                                    f"holds {got}")
        self.holders.setdefault(region, set()).add(c)

    def give(self, region, c):
        self.holders.get(region, set()).discard(c)

    def load(self, region, what, barrier):
        """The producer's TMA load (its arrive.expect_tx before it)."""
        if self._busy(region):
            raise ProtocolError(f"{region}: a load issued over one in flight")
        if self.holders.get(region):
            raise ProtocolError(f"{region}: {what} loaded while consumers "
                                f"{sorted(self.holders[region])} still read it")
        barrier.arrive(expect=1)
        self.in_flight.append((region, what, barrier))

    def slot(self, g):
        return g % self.t.stages, (g // self.t.stages) % 2

    # -- the roles ------------------------------------------------------------

    def producer(self):
        """flash.FlashForward.producer over the block's tiles."""
        yield ("dec", self.plan[0])
        g0 = 0
        for count, (tile, head) in enumerate(self.tiles):
            steps = self.steps[tile]
            if self.persistent:
                yield ("wait", self.q_empty, count % 2 ^ 1)
            self.load("Q", ("Q", tile, head), self.q_full)
            for j in range(steps):
                for ring in "KV":
                    s, parity = self.slot(g0 + j)
                    yield ("wait", self.empty[ring][s], parity ^ 1)
                    self.load(f"{ring}{s}", (ring, tile, head, j), self.full[ring][s])
            g0 += steps

    def consumer(self, c):
        """flash.FlashForward.consumer, compute, steps_of and store_staged
        for consumer warpgroup ``c``: yields its waits and arrivals, reads
        and writes shared memory between them."""
        yield ("inc", self.plan[1])
        turns = self.c > 1
        last_c = self.c - 1
        mine, following = f"turn{1 + c}", f"turn{1 + (c + 1) % self.c}"
        every = range(self.c)
        g0 = 0
        for count, (tile, head) in enumerate(self.tiles):
            steps = self.steps[tile]
            yield ("wait", self.q_full, count % 2 if self.persistent else 0)

            def stage(ring, j):
                return f"{ring}{self.slot(g0 + j)[0]}"

            def product(ring, j):
                """Wait for step j's stage of ``ring``, read it (and Q for
                S = Q K^T)."""
                s, parity = self.slot(g0 + j)
                yield ("wait", self.full[ring][s], parity)
                if ring == "K":
                    self.read("Q", [c], ("Q", tile, head), c)
                self.read(stage(ring, j), every, (ring, tile, head, j), c)

            def release(ring, j):
                return ("arrive", self.empty[ring][self.slot(g0 + j)[0]], stage(ring, j))

            def end(j):       # Turns.end
                if turns and not (j == steps - 1 and c == last_c):
                    yield ("bar.arrive", following, 2 * WARPGROUP)
            release_q = ("arrive", self.q_empty, "Q")
            if turns and c == last_c and (self.persistent and steps
                                          or not self.persistent and count == 0):
                yield ("bar.arrive", following, 2 * WARPGROUP)   # Turns.start
            if steps:
                # Step 0: S_0; step j: S_j and P_{j-1} V_{j-1} in one turn.
                if turns:
                    yield ("bar.sync", mine, 2 * WARPGROUP)
                yield from product("K", 0)
                yield from end(0)
                yield release("K", 0)
                for j in range(1, steps):
                    if turns:
                        yield ("bar.sync", mine, 2 * WARPGROUP)
                    yield from product("K", j)
                    yield from product("V", j - 1)
                    yield from end(j)
                    yield release("K", j)
                    yield release("V", j - 1)
                if self.persistent and self.staging != "q":
                    yield release_q
                yield from product("V", steps - 1)
                if self.staging != "v":
                    yield release("V", steps - 1)
            elif self.persistent and self.staging is None:
                yield release_q
            # The epilogue: O staged and stored by TMA, or from registers.
            if self.staging:
                region = "Q"
                if self.staging == "v":
                    if self.c > 1:
                        yield ("bar.sync", "epilogue", self.c * WARPGROUP)
                    if steps:
                        region = stage("V", steps - 1)
                self.write(region, c, ("O", tile, head))
                self.read(region, [c], ("O", tile, head), c)   # the TMA store
            self.stored.append((tile, head, c))
            if self.staging and self.persistent:
                # After the stores' reads (wait_group.read), the warpgroup
                # gives the staging back.
                yield ("bar.sync", f"stored{EPILOGUE_BARRIER + 1 + c}", WARPGROUP)
                yield release("V", steps - 1) if self.staging == "v" and steps else release_q
            g0 += steps

    def tma(self, rng):
        """Land one in-flight load (any of them: TMA completes out of
        order)."""
        region, what, barrier = self.in_flight.pop(rng.randrange(len(self.in_flight)))
        for p in range(self.c):
            self.smem[region, p] = what
        barrier.land(1)

    # -- the interleaving -----------------------------------------------------

    def _try(self, role, op):
        """Do ``op`` for ``role`` if it can go on now: True if done."""
        kind = op[0]
        if kind == "wait":
            return op[1].passes(op[2])
        if kind == "arrive":
            if len(op) > 2:
                self.give(op[2], int(role[len("consumer"):]))
            op[1].arrive()
            return True
        if kind == "dec":
            self.pool += (self.entry - op[1]) * WARPGROUP
            return True
        if kind == "inc":
            need = (op[1] - self.entry) * WARPGROUP
            if need > self.pool:
                return False
            self.pool -= need
            return True
        bar = self.named.setdefault(op[1], Named(op[1]))
        if kind == "bar.arrive":
            bar.arrive(op[2])
            return True
        # bar.sync: arrive once, then wait for the generation to turn.
        if role not in self.syncing:
            self.syncing[role] = bar.generation
            bar.arrive(op[2])
        if bar.generation != self.syncing[role]:
            del self.syncing[role]
            return True
        return False

    def run(self, seed):
        """Interleave the roles at random (``seed``) to the end; raise
        ProtocolError on a hang or a misuse."""
        rng = random.Random(seed)
        roles = {"producer": self.producer()}
        roles.update({f"consumer{c}": self.consumer(c) for c in range(self.c)})
        pending = {name: next(gen) for name, gen in roles.items()}
        self.syncing = {}
        while pending or self.in_flight:
            ready = [name for name, op in pending.items() if self._ready(name, op)]
            if self.in_flight:
                ready.append("tma")
            if not ready:
                raise ProtocolError("hang: " + "; ".join(
                    f"{name} at {_describe(op)}" for name, op in pending.items()))
            name = rng.choice(ready)
            if name == "tma":
                self.tma(rng)
                continue
            if self._try(name, pending[name]):
                try:
                    pending[name] = next(roles[name])
                except StopIteration:
                    del pending[name]
        self.finished()

    def _ready(self, name, op):
        """Whether ``op`` may be tried: a bar.sync that already arrived
        waits without arriving again; an inc or wait that cannot pass is
        not ready."""
        kind = op[0]
        if kind == "wait":
            return op[1].passes(op[2])
        if kind == "inc":
            return (op[1] - self.entry) * WARPGROUP <= self.pool
        if kind == "bar.sync" and name in self.syncing:
            bar = self.named[op[1]]
            return bar.generation != self.syncing[name]
        return True

    def finished(self):
        """Every mbarrier between phases, every O stored once by each
        consumer warpgroup."""
        barriers = [self.q_full, self.q_empty] + [b for r in "KV" for b in
                                                   self.full[r] + self.empty[r]]
        for b in barriers:
            if not b.idle():
                raise ProtocolError(f"{b.name} left mid-phase ({b.count - b.pending} of "
                                    f"{b.count} arrivals)")
        # (A named barrier half met at the block's exit is harmless: a
        # block a tile with no step leaves Turns.start's arrival. One
        # carried into the next tile shows as a hang or an over-arrival.)
        expected = sorted((t, h, c) for t, h in self.tiles for c in range(self.c))
        if sorted(self.stored) != expected:
            raise ProtocolError("O stored for other tiles than the block's")


def _describe(op):
    kind, what = op[0], op[1]
    if kind == "wait":
        return f"wait {what.name} parity {op[2]} (phase {what.phase})"
    return f"{kind} {getattr(what, 'name', what)}"


def run_blocks(shapes, seeds=(0,), blocks=None):
    """Run the model for each block of ``shapes`` (the first few where
    ``blocks`` says how many) under each seed; a block a tile without
    ``tile.persistent``. Returns the tiles the blocks ran."""
    att, t = shapes.att, shapes.tile
    steps = tile_steps(att, t.m, t.n)
    if t.persistent:
        sched = FlashScheduler(att, t.m, shapes.ctas)
        work = [sched.tiles_for(b) for b in range(sched.ctas)]
    else:
        work = [[(tile, head)] for head in range(att.batch * att.heads)
                for tile in range(len(steps))]
    ran = []
    for b, tiles in enumerate(work[:blocks]):
        for seed in seeds:
            Block(shapes, b, tiles, steps).run(seed)
        ran.extend(tiles)
    return ran
