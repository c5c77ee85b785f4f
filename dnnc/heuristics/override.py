"""User overrides of the heuristics: ``KERNEL=key:value[,key:value][;KERNEL=...]``.

The text of ``dnnc compile --config``, ``Options(config=...)`` and the
``override`` option of ``dnn-configure``::

    main_k0_softmax=block:128                   # one kernel, 128 threads per block
    main_k0_softmax=block:128;main_k1_matmul=block:64
    *=block:512                                 # every kernel (a named entry wins)

``KERNEL`` is a kernel function's name as the fused stage (and ``dnnc compile``'s
plan) shows it; ``*`` is every kernel. Keys are config fields: ``strategy``,
``block`` (``128`` or ``128x1x1``), ``vector`` (elements per load, a power
of two; simt-pointwise and simt-reduce), ``unroll`` (vectors per thread,
simt-pointwise; rows in flight per thread, simt-reduce-columns; vectors a
pass over a staged part takes per iteration, simt-reduce), ``tile`` (rows
per block for simt-reduce; ``BMxBNxBK`` for tc-sm90 and tc-sm80; output
pixels a thread owns per spatial dim for simt-window, ``HxW`` or
``DxHxW``, a shorter one naming the last dims),
``stages`` (the shared-memory ring's depth; tc-sm90,
tc-sm80), ``split`` (blocks that share each output tile's K, split-K;
tc-sm90 and tc-sm80; for simt-reduce, the blocks of the thread-block cluster that share
each row, 2 to 8, sm_90), ``cluster`` (1, 2, 4 or 8: a split tile's
consecutive K splits run as a thread-block cluster of this many blocks and
sum their accumulators through distributed shared memory; tc-sm90; a
``split`` without a ``cluster`` sets it to 1), ``staged`` (1: a split row's
blocks stage their parts of the row in shared memory; 0: in registers;
simt-reduce; tc-sm90's fused attention backward of head dim 64: 1, its two
consumer warpgroups sum their parts of a step's dQ in shared memory and
reduce-add one, 0 each reduce-adds its own; simt-gemm: 1 sums a K split
of up to 4 by a second launch instead of by the tile's last block to
arrive in the GEMM's launch), ``fold`` (tc-sm90's attention forward: the query heads of
a kv head's group whose rows one block holds; 1 or the group's size),
``tiled`` (tc-sm90 convolutions: 1 reads a 1x1, unit-stride, unpadded
convolution's x, or a data gradient's dy, as the [N*P*Q, C] matrix with
tiled TMA boxes; 0 with TMA's im2col mode),
``promote_overlap`` (tc-sm90's block-scaled fp8 GEMM: 2, 4 or 8 runs its
K steps in groups of that many, promoting each step's products while the
next step's wgmmas run, two temporaries a thread; 0 waits for each
step's; block_scales.py) and
``persistent`` (tc-sm90's attention: 1, a block an SM, each looping over
work units, query tiles forward and kv tiles in the fused backward; 0, a
block a unit; N > 1, at most N persistent blocks in the forward, which
gives a small problem many tiles a block),
``tail_split`` (tc-sm90 GEMMs and convolutions: S from 2 to 64 splits each
tile of the persistent grid's last, partial wave along K into at most S
parts, as many as the blocks that wave leaves idle hold, summed in split
order by the last part to arrive; 0, off; sm90/tail_split.py; a
``tail_split`` without a ``split`` sets split to 1) and ``fused`` (tc-sm80's
attention backward: 1, one kernel that sums dQ by f32 reductions, not
deterministic, sm80/flash_backward_fused.py; 0, a dQ kernel and a dK dV
kernel).
For simt-gemv, ``split`` is the threads of a block sharing an output's K,
``vector`` the elements of a load along the long operand's contiguous dim
and ``unroll`` the loads of K a thread has in flight. Switching a kernel to
tc-sm80 without a ``block`` gives it 4 warps (8 for a
tile 256 wide); a tc-sm90 ``tile`` brings its block (128 threads
per 64 rows, plus the producer's 128). ``strategy:simt-gemv`` starts from
its ranked config; on a kernel ranked simt-gemv first, naming another
strategy starts from the plan it displaced, and fields it does not read
(``tile``) from the first ranked strategy that reads them
(heuristics.choose)::

    main_k0_pointwise=vector:4,unroll:2
    main_k0_softmax=block:128,tile:4
    main_k0_matmul=tile:128x256x64,stages:4
    main_k0_matmul=tile:128x128x64,split:16
    main_k0_matmul=strategy:simt-gemv,block:256,split:16,unroll:4
    main_k0_matmul=tile:128x128x64,split:32,cluster:8
    main_k0_matmul=strategy:tc-sm80,tile:128x128x32,stages:4
    main_k0_matmul_block_scaled=tile:128x128x128,promote_overlap:4
    main_k0_pooling=tile:2x2                    # 2 x 2 output pixels a thread
    main_k0_sdpa_backward=persistent:0          # a block a work unit
    main_k0_sdpa_backward=staged:1              # D 64: dQ's parts summed first
    main_k0_sdpa=persistent:0                   # a block a query tile
    main_k0_conv_fprop=tile:128x256x64,tail_split:2  # the last wave's tiles in halves
    main_k0_sdpa_backward=strategy:tc-sm80,fused:1  # one kernel, dQ by reductions

No spaces, braces or parentheses: the text travels inside a pass
pipeline string (``dnn-configure{arch=sm_90a override=...}``). Everything is
checked when the text is parsed; that a named kernel exists is checked when
the kernels are known (dnn-configure).
"""

import re

from dnnc.errors import PipelineError
from dnnc.heuristics.config import (
    FIELDS, FLAT_BLOCKS, IMPLEMENTED, MAX_THREADS, PLANNED, PROMOTE_OVERLAPS, Config,
)

ALL = "*"
MAX_PER_THREAD = 16  # vector elements, or vectors a thread handles
MAX_STAGES = 8       # shared-memory ring depth (tensor-core strategies)
MAX_SPLIT = 64       # blocks sharing one output tile's K (tensor-core strategies)
MAX_PERSISTENT = 1024  # persistent blocks a grid (tc-sm90's attention forward)
CLUSTERS = (1, 2, 4, 8)  # blocks summing their splits in a cluster (tc-sm90; portable sizes)
_TEXT = re.compile(r"[A-Za-z0-9_.$*=:;,\-]*")
_NAME = re.compile(r"[A-Za-z_.$][A-Za-z0-9_.$\-]*|\*")


def _fail(text, message):
    raise PipelineError(f"config override '{text}': {message}")


def _value(text, key, raw):
    if key == "strategy":
        if raw in PLANNED:
            _fail(text, f"strategy '{raw}' is not implemented yet: expected one of "
                        f"{', '.join(IMPLEMENTED)}")
        if raw not in IMPLEMENTED:
            _fail(text, f"unknown strategy '{raw}': expected one of {', '.join(IMPLEMENTED)}")
        return raw
    if key == "block":
        parts = raw.split("x")
        if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
            _fail(text, f"block: expected threads per block as N or NxMxK, got '{raw}'")
        block = tuple(int(p) for p in parts)
        threads = 1
        for b in block:
            threads *= b
        if min(block) < 1 or threads > MAX_THREADS:
            _fail(text, f"block {raw}: expected 1 to {MAX_THREADS} threads per block, "
                        f"got {threads}")
        return block
    if key == "tile":
        parts = raw.split("x")
        if not 1 <= len(parts) <= 3 or not all(p.isdigit() and int(p) >= 1 for p in parts):
            _fail(text, f"tile: expected N or NxM positive integers, got '{raw}'")
        return tuple(int(p) for p in parts)
    if key == "stages":
        if not raw.isdigit() or not 1 <= int(raw) <= MAX_STAGES:
            _fail(text, f"stages: expected an integer from 1 to {MAX_STAGES}, got '{raw}'")
        return int(raw)
    if key == "split":
        if not raw.isdigit() or not 1 <= int(raw) <= MAX_SPLIT:
            _fail(text, f"split: expected an integer from 1 to {MAX_SPLIT}, got '{raw}'")
        return int(raw)
    if key == "fold":
        if not raw.isdigit() or int(raw) < 1:
            _fail(text, f"fold: expected a positive integer, got '{raw}'")
        return int(raw)
    if key == "cluster":
        if raw not in tuple(map(str, CLUSTERS)):
            _fail(text, f"cluster: expected one of {', '.join(map(str, CLUSTERS))}, got '{raw}'")
        return int(raw)
    if key == "tail_split":
        if not raw.isdigit() or not (int(raw) == 0 or 2 <= int(raw) <= MAX_SPLIT):
            _fail(text, f"tail_split: expected 0 (off) or an integer from 2 to {MAX_SPLIT}, "
                        f"got '{raw}'")
        return int(raw)
    if key in ("staged", "tiled", "fused"):
        if raw not in ("0", "1"):
            _fail(text, f"{key}: expected 0 or 1, got '{raw}'")
        return int(raw)
    if key == "promote_overlap":
        if raw not in tuple(map(str, PROMOTE_OVERLAPS)):
            _fail(text, f"promote_overlap: expected one of "
                        f"{', '.join(map(str, PROMOTE_OVERLAPS))}, got '{raw}'")
        return int(raw)
    if key == "persistent":
        if not raw.isdigit() or int(raw) > MAX_PERSISTENT:
            _fail(text, f"persistent: expected an integer from 0 to {MAX_PERSISTENT}, "
                        f"got '{raw}'")
        return int(raw)
    if key in ("vector", "unroll"):
        if not raw.isdigit() or not 1 <= int(raw) <= MAX_PER_THREAD:
            _fail(text, f"{key}: expected an integer from 1 to {MAX_PER_THREAD}, got '{raw}'")
        value = int(raw)
        if key == "vector" and value & (value - 1):
            _fail(text, f"vector: expected a power of two, got {value}")
        return value
    known = sorted({f for fields in FIELDS.values() for f in fields} | {"strategy"})
    _fail(text, f"unknown key '{key}': expected one of {', '.join(known)}")


def parse(text):
    """``{kernel or "*": {field: value}}`` of an override text; "" is no
    override. Raises PipelineError naming the entry at fault."""
    text = "".join((text or "").split())
    if not _TEXT.fullmatch(text):
        _fail(text, "expected KERNEL=key:value[,key:value][;KERNEL=...] (letters, digits, "
                    "_ . $ * = : ; , -)")
    out = {}
    for entry in filter(None, text.split(";")):
        kernel, sep, settings = entry.partition("=")
        if not sep or not _NAME.fullmatch(kernel) or not settings:
            _fail(text, f"entry '{entry}': expected KERNEL=key:value[,key:value]")
        if kernel in out:
            _fail(text, f"kernel '{kernel}' is given twice")
        fields = {}
        for item in settings.split(","):
            key, sep, raw = item.partition(":")
            if not sep or not raw:
                _fail(text, f"entry '{entry}': expected key:value, got '{item}'")
            fields[key] = _value(text, key, raw)
        out[kernel] = fields
    return out


def _block_text(block):
    """128 for (128, 1, 1), 32x2 for (32, 2, 1)."""
    block = list(block)
    while len(block) > 1 and block[-1] == 1:
        block.pop()
    return "x".join(map(str, block))


def fields_for(overrides, kernel):
    """The fields ``overrides`` sets for ``kernel``: its own entry over ``*``."""
    return {**overrides.get(ALL, {}), **overrides.get(kernel, {})}


def check_kernels(overrides, kernels):
    """Refuse an override that names a kernel not in ``kernels``."""
    unknown = [k for k in overrides if k != ALL and k not in kernels]
    if unknown:
        raise PipelineError(f"config override names kernel '{unknown[0]}', which is not in "
                            f"the module: expected one of {', '.join(kernels) or 'none'} "
                            f"(or '*')")


def apply(config, fields):
    """``config`` with the override ``fields`` set, checked against what its
    strategy reads; the reason keeps the heuristics' own."""
    if not fields:
        return config
    strategy = fields.get("strategy", config.strategy)
    extra = sorted(set(fields) - {"strategy"} - set(FIELDS.get(strategy, ())))
    if extra:
        raise PipelineError(f"config override: strategy '{strategy}' has no field "
                            f"'{extra[0]}': expected {', '.join(FIELDS.get(strategy, ()))}")
    if strategy != config.strategy:  # the old strategy's fields do not carry over
        block = config.block
        if strategy == "tc-sm80" and "block" not in fields:
            # tc-sm80 runs a warp per 32 threads: 4 warps, 8 for a tile 256
            # wide or tall.
            tile = fields.get("tile", ())
            block = (256 if len(tile) > 1 and max(tile[:2]) >= 256 else 128, 1, 1)
        config = Config(strategy, block, reason=config.reason)
    changed = config.replace(**fields)
    if fields.get("staged") == 0 and "unroll" not in fields and strategy == "simt-reduce":
        # A staged pass's vectors an iteration mean nothing to a row held in
        # registers or looped by one block: not left in the config.
        changed = changed.replace(unroll=1)
    if "split" in fields and "cluster" not in fields and strategy == "tc-sm90":
        # The heuristics' cluster was sized for their split: a split set by
        # hand sums without one unless it names one too.
        changed = changed.replace(cluster=1)
    if fields.get("tail_split", 0) > 1 and "split" not in fields and strategy == "tc-sm90":
        # A tail split splits the last wave's tiles instead of every
        # tile's K: the heuristics' split-K goes unless the override names
        # one too (which tc-sm90 then refuses beside it, saying why).
        changed = changed.replace(split=1, cluster=1)
    if strategy == "tc-sm90" and "tile" in fields and "block" not in fields:
        # A producer warpgroup and a consumer warpgroup per 64 rows of the tile.
        changed = changed.replace(block=(128 * (1 + changed.tile[0] // 64), 1, 1))
    if strategy in FLAT_BLOCKS and changed.block[1:] != (1, 1):
        raise PipelineError(f"config override: strategy '{strategy}' runs 1-D blocks: "
                            f"expected block N, got {_block_text(changed.block)}")
    what = " ".join(f"{k}={_block_text(changed.block) if k == 'block' else v}"
                    for k, v in fields.items())
    note = f"user override {what}"
    reason = f"{note}; heuristics: {config.reason}" if config.reason else note
    return changed.replace(reason=reason)
