"""A kernel's config: the code-generation strategy and its parameters.

On a kernel function it is the ``dnn.config`` dictionary, beside a
``dnn.config_reason`` string that says why it was chosen::

    func.func private @main_k0_softmax(...) attributes {
        dnn.config = {block = [128, 1, 1], strategy = "simt-generic"},
        dnn.config_reason = "simt-reduce not implemented yet (...); block 128: ...",
        dnn.kernel}

``strategy`` and ``block`` are always written; ``tile``, ``stages``, ``warps``,
``vector``, ``unroll``, ``split``, ``cluster``, ``staged``, ``fold``, ``tiled``,
``promote_overlap``, ``persistent``, ``tail_split`` and ``fused`` only when they differ
from their defaults (a field that does not apply to the strategy is noise).
"""

import dataclasses
from dataclasses import dataclass, field

from dnnc.errors import PipelineError

# The strategies the GPU code generator lowers (dnn-distribute-loops): a
# config may only name these. DESIGN.md's faster ones not built yet are PLANNED.
IMPLEMENTED = ("simt-generic", "simt-pointwise", "simt-reduce", "simt-reduce-columns",
               "simt-reduce-rows-columns", "simt-window", "simt-transpose", "tc-sm90",
               "tc-sm80", "simt-depthwise", "simt-gemm", "simt-gemv")
PLANNED = ()

# The fields each implemented strategy reads; an override may set only these.
FIELDS = {"simt-generic": ("block",), "simt-pointwise": ("block", "vector", "unroll"),
          "simt-reduce": ("block", "vector", "tile", "split", "staged", "unroll"),
          "simt-reduce-columns": ("block", "vector", "unroll", "tile"),
          "simt-reduce-rows-columns": ("block", "vector", "tile"),
          "simt-window": ("block", "vector", "tile"),
          "simt-depthwise": ("block", "vector", "tile", "split"),
          "simt-transpose": ("block",),
          "tc-sm90": ("block", "tile", "stages", "split", "cluster", "fold", "tiled",
                      "promote_overlap", "persistent", "staged", "tail_split"),
          "tc-sm80": ("block", "tile", "stages", "split", "fused"),
          "simt-gemm": ("block", "tile", "split", "staged"),
          "simt-gemv": ("block", "split", "vector", "unroll")}
# Strategies whose blocks are 1-D: dnn-distribute-loops spreads one flat loop
# over block[0] threads (a [32, 2, 1] block would run as [64, 1, 1]).
FLAT_BLOCKS = ("simt-generic", "simt-pointwise", "simt-reduce", "simt-reduce-rows-columns",
               "simt-window", "simt-transpose", "simt-depthwise")

MAX_THREADS = 1024
# A block-scaled GEMM's K steps a group of its overlapped loop (0: none).
PROMOTE_OVERLAPS = (0, 2, 4, 8)
ATTR, REASON_ATTR = "dnn.config", "dnn.config_reason"


@dataclass(frozen=True)
class Config:
    """One way to generate a kernel. ``reason`` (one line, not part of the
    config's identity) says why the heuristics ranked it where they did."""

    strategy: str = "simt-generic"
    block: tuple = (256, 1, 1)  # threads per block (x, y, z)
    tile: tuple = ()            # output tile per block (tensor-core strategies); outputs
    #                             a thread per spatial dim (simt-window)
    stages: int = 1             # shared-memory pipeline depth
    warps: int = 0              # warps per block when not given by block; 0: unused
    vector: int = 1             # elements per vector load/store
    unroll: int = 1             # vectors per thread (simt-pointwise); rows in flight per
    #                             thread (simt-reduce-columns); vectors a staged pass
    #                             handles per iteration (simt-reduce, staged = 1)
    split: int = 1              # K split over this many blocks (tensor-core strategies);
    #                             a row over a cluster of this many (simt-reduce)
    cluster: int = 1            # a tile's K splits summed in clusters of this many blocks
    #                             through distributed shared memory (tc-sm90)
    staged: int = 0             # 1: each block of a split row stages its part of the
    #                             row's inputs in shared memory (simt-reduce); the
    #                             consumers of tc-sm90's fused attention backward sum
    #                             their dQ parts in shared memory (D 64); a K
    #                             split's partials summed by a second launch, not by
    #                             the tile's last block to arrive (simt-gemm)
    fold: int = 1               # query heads of a GQA group whose rows share one block
    #                             (tc-sm90's attention forward)
    tiled: int = 0              # 1: a 1x1, unit-stride, unpadded convolution's x (dy)
    #                             read as the [N*P*Q, C] matrix by tiled TMA boxes,
    #                             not by TMA's im2col mode (tc-sm90)
    promote_overlap: int = 0    # a block-scaled GEMM's K steps a group, in which step
    #                             kt - 1's products are promoted while step kt's wgmmas
    #                             run (2, 4 or 8; 0: each step whole; tc-sm90,
    #                             block_scales.py)
    persistent: int = 0         # tc-sm90's attention (its GEMMs always are): 1, a block an
    #                             SM, each looping over work units (query tiles forward, kv
    #                             tiles backward); 0, a block a unit; N > 1, at most N such
    #                             blocks (the forward; tests: many units a block)
    tail_split: int = 0         # S >= 2: the tiles of the persistent GEMM's last, partial
    #                             wave split along K S ways over the blocks it leaves idle,
    #                             summed by the last to arrive (tc-sm90; 0: off)
    fused: int = 0              # tc-sm80's attention backward: 1, one kernel (dQ summed by
    #                             f32 reductions, not deterministic) between a preprocess
    #                             and a conversion; 0, a dQ kernel and a dK dV kernel
    reason: str = field(default="", compare=False)

    def __post_init__(self):
        block = self.block
        if isinstance(block, int):
            block = (block,)
        block = tuple(int(b) for b in block) + (1,) * (3 - len(tuple(block)))
        object.__setattr__(self, "block", block)
        object.__setattr__(self, "tile", tuple(int(t) for t in self.tile))
        if self.strategy not in IMPLEMENTED + PLANNED:
            raise PipelineError(f"config: strategy '{self.strategy}': expected one of "
                                f"{', '.join(IMPLEMENTED + PLANNED)}")
        if len(block) != 3 or min(block) < 1 or not 1 <= self.threads <= MAX_THREADS:
            raise PipelineError(f"config: block {list(block)}: expected 1 to {MAX_THREADS} "
                                f"threads per block in up to 3 positive dims, got "
                                f"{self.threads} threads")
        for name in ("stages", "vector", "unroll", "split", "cluster", "fold"):
            if getattr(self, name) < 1:
                raise PipelineError(f"config: {name}: expected >= 1, got {getattr(self, name)}")
        for name in ("staged", "tiled", "fused"):
            if getattr(self, name) not in (0, 1):
                raise PipelineError(f"config: {name}: expected 0 or 1, got "
                                    f"{getattr(self, name)}")
        if self.tail_split < 0 or self.tail_split == 1:
            raise PipelineError(f"config: tail_split: expected 0 (off) or at least 2, got "
                                f"{self.tail_split}")
        if self.promote_overlap not in PROMOTE_OVERLAPS:
            raise PipelineError(f"config: promote_overlap: expected one of "
                                f"{', '.join(map(str, PROMOTE_OVERLAPS))}, got "
                                f"{self.promote_overlap}")
        if self.persistent < 0:
            raise PipelineError(f"config: persistent: expected >= 0, got {self.persistent}")
        if "\n" in self.reason:
            raise PipelineError("config: reason: expected one line")

    @property
    def threads(self):
        x, y, z = self.block
        return x * y * z

    @property
    def implemented(self):
        return self.strategy in IMPLEMENTED

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def fields(self):
        """The config as an ordered dict of the fields that are written."""
        out = {"strategy": self.strategy, "block": list(self.block)}
        if self.tile:
            out["tile"] = list(self.tile)
        for name, default in (("stages", 1), ("warps", 0), ("vector", 1), ("unroll", 1),
                              ("split", 1), ("cluster", 1), ("staged", 0), ("fold", 1),
                              ("tiled", 0), ("promote_overlap", 0), ("persistent", 0),
                              ("tail_split", 0), ("fused", 0)):
            if getattr(self, name) != default:
                out[name] = getattr(self, name)
        return out

    def __str__(self):
        """``simt-generic block=128x1x1`` (and any other written field)."""
        parts = [self.strategy]
        for key, value in self.fields().items():
            if key != "strategy":
                text = "x".join(map(str, value)) if isinstance(value, list) else str(value)
                parts.append(f"{key}={text}")
        return " ".join(parts)

    def to_attr(self):
        """The ``dnn.config`` DictAttr (needs an active MLIR context)."""
        from mlir import ir

        i64 = ir.IntegerType.get_signless(64)
        values = {}
        for key, value in self.fields().items():
            if isinstance(value, str):
                values[key] = ir.StringAttr.get(value)
            elif isinstance(value, list):
                values[key] = ir.ArrayAttr.get([ir.IntegerAttr.get(i64, v) for v in value])
            else:
                values[key] = ir.IntegerAttr.get(i64, value)
        return ir.DictAttr.get(values)

    def to_text(self):
        """The ``dnn.config`` attribute as MLIR prints it (keys sorted)."""
        items = []
        for key, value in sorted(self.fields().items()):
            if isinstance(value, str):
                items.append(f'{key} = "{value}"')
            elif isinstance(value, list):
                items.append(f"{key} = [{', '.join(map(str, value))}]")
            else:
                items.append(f"{key} = {value} : i64")
        return "{" + ", ".join(items) + "}"

    @classmethod
    def of_kernel(cls, fn):
        """The Config of kernel function ``fn``'s ``dnn.config`` (None when
        it has none); a bad one is a PipelineError naming the kernel."""
        from dnnc.codegen.gpu import irutil

        if ATTR not in fn.attributes:
            return None
        try:
            return cls.from_attr(fn.attributes[ATTR])
        except PipelineError as err:
            raise PipelineError(f"kernel '{irutil.symbol(fn)}': {err}") from None

    @classmethod
    def from_attr(cls, attr, reason="", default_block=(256, 1, 1)):
        """The Config of a ``dnn.config`` DictAttr; a missing block is
        ``default_block``. Unknown keys are refused: a misspelt field must not
        be silently ignored downstream."""
        from mlir import ir

        from dnnc.codegen.gpu import irutil

        d = ir.DictAttr(attr)
        known = {f.name for f in dataclasses.fields(cls)} - {"reason"}
        kwargs = {"block": tuple(default_block)}
        for entry in (d[i] for i in range(len(d))):
            key = entry.name
            if key not in known:
                raise PipelineError(f"config: unknown field '{key}': expected one of "
                                    f"{', '.join(sorted(known))}")
            if key == "strategy":
                kwargs[key] = ir.StringAttr(entry.attr).value
            elif key in ("block", "tile"):
                kwargs[key] = tuple(irutil.int_list(entry.attr))
            else:
                kwargs[key] = int(ir.IntegerAttr(entry.attr).value)
        return cls(reason=reason, **kwargs)


def kernels_of(module, strategy):
    """(kernel function, Config) of every kernel of ``module`` whose
    ``dnn.config`` names ``strategy``: what a strategy's lowering pass visits."""
    from dnnc.codegen.gpu import irutil

    for fn in irutil.kernel_functions(module):
        config = Config.of_kernel(fn)
        if config is not None and config.strategy == strategy:
            yield fn, config


def fall_back(fn, note, block=(256, 1, 1)):
    """Hand kernel function ``fn`` to simt-generic with ``block``: a lowering
    pass whose strategy does not apply after all says so in ``note``, which
    leads the kernel's reason, before the heuristics' own."""
    hand_over(fn, Config("simt-generic", block), note)


def _set_reason(fn, text):
    """Kernel function ``fn``'s reason becomes ``text(before)`` (its old
    reason, or "")."""
    from mlir import ir

    before = ir.StringAttr(fn.attributes[REASON_ATTR]).value if REASON_ATTR in fn.attributes \
        else ""
    fn.attributes[REASON_ATTR] = ir.StringAttr.get(text(before))


def add_note(fn, note):
    """Append ``note`` (what a lowering pass did beyond the config) to
    kernel function ``fn``'s reason."""
    _set_reason(fn, lambda before: f"{before}; {note}" if before else note)


def hand_over(fn, config, note):
    """Give kernel function ``fn`` the Config ``config`` in place of the one
    the heuristics chose, ``note`` (why) leading its reason."""
    fn.attributes[ATTR] = config.to_attr()
    _set_reason(fn, lambda before: f"{note}; heuristics: {before}" if before else note)
