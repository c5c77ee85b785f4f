"""wgmma accumulators as values in registers, for kernels that compute on
them between products (the attention kernels, flash.py and
flash_backward.py).

An m64nN f32 accumulator is an ``!llvm.struct`` of N / 2 f32 values per
thread of the warpgroup: value e of thread (warp w, lane l) is row 16 w +
l / 4 + 8 ``row_of(e)`` of the 64, column 2 (l % 4) + ``column_of(e)``.
For 16-bit A operands the same positions, rounded in pairs
(``pairs``), are wgmma's A fragments of the next product: a thread's four
32-bit registers of 16-column slice kk are its values 8 kk .. 8 kk + 7, so
an accumulator becomes an A operand without any exchange.

``wgmma_ss`` issues a product of two shared-memory operands (both K-major,
128-byte swizzled boxes of 64 columns of K); ``wgmma_rs`` one with A from
registers and B from shared memory MN-major, each step a
``wgmma_registers_a`` (inline PTX: the NVVM op takes A only from shared
memory; the GEMM mainloop's tf32 A from registers uses it too).

The register arithmetic around them (``f32``, ``tree``, ``quad``, ``ex2``,
``pair``) lives in tensorcore/emit.py, which tc-sm80's attention kernel
shares.
"""

from mlir import ir
from mlir.dialects import llvm

from dnnc.codegen.gpu.tensorcore.emit import add as _add, pair
from dnnc.codegen.gpu.tensorcore.sm90.tma import SWIZZLE

BOX = 64                 # K elements of a 128-byte box row (16-bit types)
INSTR_K = 16             # wgmma's k for 16-bit types


def struct(n):
    """The accumulator type of n f32 values a thread."""
    return ir.Type.parse("!llvm.struct<(" + ", ".join(["f32"] * n) + ")>")


def unpack(acc, n):
    """The n f32 values of accumulator ``acc``."""
    t = ir.F32Type.get()
    return [llvm.extractvalue(t, acc, ir.DenseI64ArrayAttr.get([e])) for e in range(n)]


def pack(values):
    """An accumulator of ``values``."""
    out = llvm.mlir_undef(struct(len(values)))
    for e, x in enumerate(values):
        out = llvm.insertvalue(out, x, ir.DenseI64ArrayAttr.get([e]))
    return out








def row_of(e):
    """Which of a thread's two rows (0: r, 1: r + 8) accumulator value ``e`` is in."""
    return (e % 4) // 2


def column_of(e):
    """Accumulator value ``e``'s column, less the thread's first (2 x lane % 4)."""
    return 8 * (e // 4) + e % 2


def accumulator_position(e):
    """(row_of(e), column_of(e)): where accumulator value ``e`` lies among
    the thread's rows and from its first column (attention_tiles'
    ``position``)."""
    return row_of(e), column_of(e)




def pairs(values, element):
    """Accumulator values as wgmma A fragments: 4 i32 per 16 columns."""
    return [pair(values[2 * e], values[2 * e + 1], element) for e in range(len(values) // 2)]


def wgmma_ss(n, element, a_desc, a_box_bytes, b_desc, b_box_bytes, depth):
    """Issue acc = A Bᵀ, m64nNk16 steps over ``depth`` elements of K (a
    multiple of 8; the boxes hold zeros up to a multiple of 16), A and B
    K-major in boxes of 64 columns of K (``*_box_bytes`` apart) from the
    matrix descriptors ``a_desc`` and ``b_desc`` (i64). Returns the
    accumulator in flight (n / 2 f32 a thread): wait for it before use."""
    def step(kk):
        box, within = divmod(kk * INSTR_K, BOX)
        return (_add(a_desc, (box * a_box_bytes + 2 * within) >> 4),
                _add(b_desc, (box * b_box_bytes + 2 * within) >> 4))
    return _wgmma_chain(n, element, map(step, range(-(-depth // INSTR_K))), mn_major=False)


def wgmma_mn(n, element, a_desc, b_desc, depth):
    """Issue acc = A B, m64nNk16 steps over ``depth`` rows of K, A (64 x
    K) and B (K x N) both MN-major in shared memory: 128-byte rows of K,
    each next 16 rows 2048 bytes on (``*_desc``: the first row's
    descriptors). Returns the accumulator in flight."""
    def step(kk):
        offset = (kk * INSTR_K * SWIZZLE) >> 4
        return _add(a_desc, offset), _add(b_desc, offset)
    return _wgmma_chain(n, element, map(step, range(depth // INSTR_K)), mn_major=True)


def _wgmma_chain(n, element, steps, mn_major):
    """One nvvm.wgmma.mma_async m64nNk16 per (A, B descriptor) pair of
    ``steps`` (an iterator: each pair is made just before its wgmma), the
    first zeroing the accumulator; A and B K-major, or both
    MN-major (``mn_major``: layouts col A, row B, the transposed forms)."""
    acc_type = struct(n // 2)
    kind = ir.Attribute.parse(f"#nvvm.wgmma_type<{element}>")
    layouts = ("col", "row") if mn_major else ("row", "col")
    attrs = {
        "shape": ir.Attribute.parse(f"#nvvm.shape<m = 64, n = {n}, k = {INSTR_K}>"),
        "typeA": kind, "typeB": kind,
        "typeD": ir.Attribute.parse("#nvvm.wgmma_type<f32>"),
        "scaleA": ir.Attribute.parse("#nvvm.wgmma_scale_in<one>"),
        "scaleB": ir.Attribute.parse("#nvvm.wgmma_scale_in<one>"),
        "layoutA": ir.Attribute.parse(f"#nvvm.mma_layout<{layouts[0]}>"),
        "layoutB": ir.Attribute.parse(f"#nvvm.mma_layout<{layouts[1]}>"),
        "satfinite": ir.Attribute.parse("#nvvm.mma_int_overflow<wrapped>"),
    }
    acc = llvm.mlir_undef(acc_type)
    for kk, (da, db) in enumerate(steps):
        step = dict(attrs, scaleD=ir.Attribute.parse(
            f"#nvvm.wgmma_scale_out<{'zero' if kk == 0 else 'one'}>"))
        acc = ir.Operation.create("nvvm.wgmma.mma_async", results=[acc_type],
                                  operands=[acc, da, db], attributes=step).results[0]
    return acc


def wgmma_registers_a(acc, n, k, element, fragment, b_desc, transpose_b=None):
    """One wgmma m64nNk``k``, A from registers (``fragment``: four i32) and
    B from shared memory (``b_desc``), accumulating into ``acc`` (n / 2 f32
    a thread); ``transpose_b`` the instruction's transpose bit for B (1: B
    MN-major), None for a type that has none (tf32). Inline PTX:
    nvvm.wgmma.mma_async takes A only as a descriptor."""
    count = n // 2
    values = unpack(acc, count)
    d = ", ".join(f"${e}" for e in range(count))
    a = ", ".join(f"${2 * count + e}" for e in range(4))
    transpose = "" if transpose_b is None else f", {transpose_b}"
    asm = ("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
           f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{element}.{element} "
           f"{{{d}}}, {{{a}}}, ${2 * count + 4}, p, 1, 1{transpose};\n}}\n")
    constraints = ",".join(["=f"] * count + [str(e) for e in range(count)] + ["r"] * 4 + ["l"])
    return llvm.inline_asm(struct(count), values + list(fragment) + [b_desc], asm, constraints,
                           has_side_effects=True)


def wgmma_rs(acc, n, element, fragments, b_desc):
    """Issue acc += A B, A from registers (``fragments``: 4 i32 per 16
    columns of K, as ``pairs`` makes them) and B from shared memory
    MN-major (``b_desc``: its first 16 rows of K, 128-byte rows in boxes of
    64 columns of N; each next 16 rows lie 2048 bytes on)."""
    for kk in range(len(fragments) // 4):
        acc = wgmma_registers_a(acc, n, INSTR_K, element, fragments[4 * kk:4 * kk + 4],
                                _add(b_desc, (kk * INSTR_K * 128) >> 4), transpose_b=1)
    return acc
