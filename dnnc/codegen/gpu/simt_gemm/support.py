"""simt-gemm's tile and limits: ``Tile`` (a block's BM x BN x BK, its
threads, the K split, and the thread grid and micro-tiles they make),
``NotSupported``, and the constants the loader, the mainloop and the checks
share."""

from dataclasses import dataclass

# Floats after each shared row of K: a K-major operand's tile is stored
# transposed, lanes k = 0..7 of a row group writing one column each; a pitch
# of BM + 4 puts row k's column in bank 4 k + m, so the 32 lanes of such a
# store hit 32 banks. The pitch stays a multiple of 16 bytes, which the
# mainloop's float4 reads need.
PAD = 4
# A micro-tile is made of 4 x 4 chunks (a float4 of A by a float4 of B): the
# chunks of one thread lie a grid of threads apart (see Tile.rows).
CHUNK = 4
MAX_THREADS = 1024
# f32 accumulators a thread may hold: 8 x 8 with the operands of a K slice
# (16) and the staged loads fit under 255 registers.
MAX_ACCUMULATORS = 64
MAX_SPLIT = 64
# A K split of at most this many is summed in the GEMM's own launch by the
# last block of a tile to arrive (kernel.Kernel._sum_if_last); more, or a
# tile's ``second_launch``, by a second launch (splitk.py).
LAST_ARRIVAL_SPLITS = 4
# Static shared memory a block may use without the opt-in.
MAX_SHARED = 48 * 1024


class NotSupported(Exception):
    """simt-gemm does not take this GEMM; the message says why."""


@dataclass(frozen=True)
class Tile:
    """A block's ``m`` x ``n`` output tile, ``k`` elements of K a step, over
    ``threads`` threads; ``split`` blocks share each tile's K steps, summed
    in this launch up to LAST_ARRIVAL_SPLITS unless ``second_launch``."""

    m: int = 128
    n: int = 128
    k: int = 8
    threads: int = 256
    split: int = 1
    # A split's partials summed by a second launch even where the last
    # block to arrive could (config ``staged = 1``).
    second_launch: bool = False

    @property
    def micro(self):
        """(TM, TN): the accumulators of a thread, the squarest split of
        m * n / threads into multiples of CHUNK (TM >= TN)."""
        per = self.m * self.n // max(1, self.threads)
        best = None
        for tm in range(CHUNK, per + 1, CHUNK):
            if per % tm or (per // tm) % CHUNK or self.m % tm or self.n % (per // tm):
                continue
            tn = per // tm
            if tm < tn:
                continue
            if best is None or tm - tn < best[0] - best[1]:
                best = (tm, tn)
        return best

    @property
    def grid(self):
        """(TY, TX): threads down M and across N."""
        tm, tn = self.micro
        return self.m // tm, self.n // tn

    def pitch(self, rows):
        """Floats a shared row of K takes for a tile of ``rows`` (BM or BN)."""
        return rows + PAD

    @property
    def stage_floats(self):
        """Floats of one stage: A's K x (BM + PAD), then B's K x (BN + PAD)."""
        return self.k * (self.pitch(self.m) + self.pitch(self.n))

    @property
    def smem_bytes(self):
        """Two stages (double buffering)."""
        return 2 * self.stage_floats * 4
