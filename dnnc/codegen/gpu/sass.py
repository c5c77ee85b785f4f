"""Find and run NVIDIA's cuobjdump: disassemble a cubin (what
``ptxas.assemble_cubin`` returns) to SASS, the machine code that runs, and
count its instructions, to check without a GPU what ptxas made of the PTX
(the tensor-core kernels' ``HGMMA``, ``UTMALDG``, ``SYNCS``; no ``LDL`` /
``STL`` local-memory traffic).

No GPU is needed. The search order is ``DNNC_CUOBJDUMP`` (a path), the
``cuobjdump`` of the ``nvidia-cuda-cuobjdump`` wheel when installed, then
``cuobjdump`` on PATH. ``cuobjdump -sass`` runs ``nvdisasm`` (the
``nvidia-cuda-nvdisasm`` wheel), which must be beside it, in a wheel, or on
PATH; ``missing()`` says which is lacking.

``cuobjdump -sass`` prints, per kernel, a ``Function : NAME`` header, then
one line per instruction::

    /*2380*/   @P0 HGMMA.64x128x16.F32.BF16 R24, gdesc[UR28].tnspB, R24, gsb0 ;  /* 0x41e0... */

an address, an optional guard predicate (``@P0``, ``@!UP1``), the opcode
with its modifiers, the operands, then the encoding in a comment (a second
comment-only line holds the rest of it). A wgmma is an ``HGMMA.MxNxK.D.AB``:
``HGMMA.64x256x16.F32.BF16`` (bf16 inputs, f32 accumulators); f16 inputs,
the default, print no input type: ``HGMMA.64x128x16.F32``.
"""

import collections
import os
import re
import subprocess
import tempfile

from dnnc import env
from dnnc.codegen.gpu.ptxas import find_tool
from dnnc.errors import ToolError

NO_CUOBJDUMP = ("cuobjdump not found: set DNNC_CUOBJDUMP, install nvidia-cuda-cuobjdump, "
                "or put cuobjdump on PATH")
_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s+(?:@!?U?P[0-9T]+\s+)?"
                          r"([A-Z][A-Za-z0-9_.]*)\s*([^;]*);")


def find():
    """The path of a cuobjdump executable, or None."""
    return find_tool("cuobjdump", env.cuobjdump())


def find_nvdisasm(cuobjdump):
    """The nvdisasm that ``cuobjdump -sass`` runs: the one beside
    ``cuobjdump``, else an NVIDIA wheel's (CUDA 12 wheels put it apart, in
    nvidia/cuda_nvdisasm/bin), else the one on PATH; or None."""
    beside = os.path.join(os.path.dirname(cuobjdump), "nvdisasm")
    return beside if os.access(beside, os.X_OK) else find_tool("nvdisasm")


def missing():
    """Why ``disassemble`` cannot run here (a sentence), or None when it can."""
    cuobjdump = find()
    if cuobjdump is None:
        return NO_CUOBJDUMP
    if find_nvdisasm(cuobjdump) is None:
        return _no_nvdisasm(cuobjdump)
    return None


def _no_nvdisasm(cuobjdump):
    return (f"nvdisasm not found (cuobjdump -sass runs it): install nvidia-cuda-nvdisasm, "
            f"or put nvdisasm beside {cuobjdump} or on PATH")


def disassemble(cubin, cuobjdump=None):
    """The SASS text of ``cubin`` (bytes: an ELF cubin, as ptxas writes it),
    ``cuobjdump -sass``'s output. Raises ToolError (with cuobjdump's messages)
    when it fails or when no cuobjdump or nvdisasm is found."""
    cuobjdump = cuobjdump or find()
    if cuobjdump is None:
        raise ToolError(NO_CUOBJDUMP)
    nvdisasm = find_nvdisasm(cuobjdump)
    if nvdisasm is None:
        raise ToolError(_no_nvdisasm(cuobjdump))
    # cuobjdump looks for nvdisasm beside itself, then on PATH.
    environ = dict(os.environ)
    environ["PATH"] = os.pathsep.join([os.path.dirname(nvdisasm), environ.get("PATH", "")])
    with tempfile.TemporaryDirectory(prefix="dnnc-sass-") as tmp:
        path = os.path.join(tmp, "kernels.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        cmd = [cuobjdump, "-sass", path]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=environ)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise ToolError(f"cuobjdump failed (exit {proc.returncode}); reproduce with: "
                        f"{cuobjdump} -sass kernels.cubin", stderr=proc.stderr)
    return proc.stdout


def functions(sass):
    """{kernel name: its SASS text} from ``disassemble``'s output, in order."""
    out, name = {}, None
    for line in sass.splitlines():
        m = _FUNCTION.match(line)
        if m:
            name = m.group(1)
            out[name] = []
        elif name is not None:
            out[name].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def _addressed(sass):
    """[(address, opcode, operands)] of the instructions in ``sass``, in order."""
    return [(int(m.group(1), 16), m.group(2), m.group(3).strip())
            for m in map(_INSTRUCTION.match, sass.splitlines()) if m]


def instructions(sass):
    """[(opcode, operands)] of the instructions in ``sass`` (all kernels'
    unless given one of ``functions``'s texts), in order, guard predicates
    left out: ("HGMMA.64x128x16.F32.BF16", "R24, gdesc[UR28].tnspB, R24, gsb0")."""
    return [(opcode, operands) for _, opcode, operands in _addressed(sass)]


def opcodes(sass):
    """A Counter of the instructions of ``sass`` by full opcode
    ("HGMMA.64x128x16.F32.BF16") and by mnemonic, the opcode before its first
    dot ("HGMMA"); an opcode without modifiers ("NOP") is counted once."""
    counts = collections.Counter()
    for opcode, _ in instructions(sass):
        counts[opcode] += 1
        mnemonic = opcode.split(".", 1)[0]
        if mnemonic != opcode:
            counts[mnemonic] += 1
    return counts


_HGMMA = re.compile(r"^HGMMA\.64x(\d+)x\d+\.F32")
_REGISTER = re.compile(r"(?<![A-Za-z_])R(\d+)\b")


def _registers(opcode, operands):
    """The general registers an instruction names: a data operand of a 64-
    or 128-bit access (an opcode with .64 or .128) as the 2 or 4 it spans,
    an address register in brackets as one (two as ``R2.64``)."""
    width = 4 if ".128" in opcode else 2 if ".64" in opcode else 1
    out = set()
    for part in re.split(r"(\[[^\]]*\])", operands):
        address = part.startswith("[")
        for m in _REGISTER.finditer(part):
            r = int(m.group(1))
            span = (2 if part[m.end():].startswith(".64") else 1) if address else width
            out.update(range(r, r + span))
    return out


_A_REGISTERS = re.compile(r"^R\d+\s*,\s*R(\d+)\s*,")


def wgmma_fragment_hazards(sass):
    """[(opcode, operands)] of the instructions of ``sass`` (one kernel's
    text) that name a register of a wgmma's A fragment while that wgmma may
    still be in flight. An ``HGMMA`` whose A is a register (``HGMMA... R24,
    R152, gdesc[...]``: R152 .. R155) joins the open group, which its
    ``gsb0`` commits; ``WARPGROUP.DEPBAR.LE gsb0, N`` leaves the N groups
    committed last in flight. PTX leaves touching a fragment before the wait
    that retires it undefined: a load of the next K step's fragment into the
    registers the step in flight reads is the hazard this finds. The text is
    scanned in program order, and the body of each backward branch (a loop)
    once more with the groups still in flight at its end, so a loop that
    reloads the registers its previous iteration's wgmma still reads is
    caught; forward branches are not followed."""
    lines = _addressed(sass)
    out = []
    state = {"open": set(), "groups": []}

    def scan(first, last, follow):
        for i in range(first, last):
            address, opcode, operands = lines[i]
            if opcode.startswith("HGMMA"):
                a = _A_REGISTERS.match(operands)
                if a:
                    state["open"] |= set(range(int(a.group(1)), int(a.group(1)) + 4))
                if "gsb0" in operands:
                    state["groups"].append(state["open"])
                    state["open"] = set()
                continue
            if opcode.startswith("WARPGROUP.DEPBAR"):
                kept = int(operands.rsplit(",", 1)[1], 0)
                state["groups"] = state["groups"][len(state["groups"]) - kept:] if kept else []
                continue
            live = set().union(state["open"], *state["groups"])
            if live and _registers(opcode, operands) & live \
                    and (opcode, operands) not in out:
                out.append((opcode, operands))
            if follow and opcode.startswith("BRA"):
                target = int(operands.split()[-1], 16) if operands else None
                if target is not None and target < address:
                    start = next((j for j, x in enumerate(lines) if x[0] == target), None)
                    if start is not None:
                        scan(start, i + 1, False)

    scan(0, len(lines), True)
    return out


def wgmma_hazards(sass):
    """[(opcode, operands)] of the instructions of ``sass`` (one kernel's
    text, from ``functions``) that name a register of a wgmma's accumulator
    while it may still be in flight: in program order, between an
    ``HGMMA.64xN...F32`` (accumulator registers Rd .. Rd + N/2 - 1) and the
    next ``WARPGROUP.DEPBAR.LE gsb0, 0x0``, any instruction but another
    HGMMA that names one of them. PTX leaves reading an accumulator before
    its ``wgmma.wait_group`` undefined; an empty list means ptxas put every
    such read after the wait. (A kernel whose code after an HGMMA, in
    program order, belongs to another branch can be reported though it is
    safe; the tc-sm90 kernels have none.)"""
    out, live = [], set()
    for opcode, operands in instructions(sass):
        m = _HGMMA.match(opcode)
        if m:
            first = _REGISTER.search(operands)
            if first:
                base = int(first.group(1))
                live = set(range(base, base + int(m.group(1)) // 2))
            continue
        if opcode.startswith("WARPGROUP.DEPBAR") and \
                operands.replace(" ", "").endswith(",0x0"):
            live = set()
            continue
        if live and _registers(opcode, operands) & live:
            out.append((opcode, operands))
    return out
