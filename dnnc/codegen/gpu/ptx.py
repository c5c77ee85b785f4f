"""The PTX that ``gpu-module-to-binary{format=isa}`` made, read back.

After the ``ptx`` stage the module holds one ``gpu.binary`` (dnn-merge-gpu-modules
put every kernel into one ``gpu.module``) whose ``#gpu.object`` carries the PTX
text. ``extract`` returns it; ``entries`` lists each ``.entry`` with its
parameters, which the host plan checks its argument lists against;
``external_calls`` finds functions the PTX calls without defining them (a math
function that reached libdevice), which no runtime could link;
``waiting_entries`` the entries that wait for the grids ahead of them.
"""

import re

from mlir import ir
from mlir.dialects import gpu

from dnnc.codegen.gpu import irutil
from dnnc.errors import LoweringError


def extract(module):
    """The PTX text of the module's single ``gpu.binary``."""
    binaries = [op.operation for op in irutil.body(module).operations
                if op.operation.name == "gpu.binary"]
    if len(binaries) != 1:
        raise LoweringError(f"expected one gpu.binary after gpu-module-to-binary, "
                            f"got {len(binaries)}")
    objects = list(ir.ArrayAttr(binaries[0].attributes["objects"]))
    if len(objects) != 1:
        raise LoweringError(f"expected one target object in the gpu.binary, got {len(objects)}")
    data = gpu.ObjectAttr(objects[0]).object
    return data.decode("utf-8").rstrip("\0")


_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\)", re.S)
# One parameter: ".param .u64 NAME", ".param .u64 .ptr .align 1 NAME", or a
# byte array passed by value, ".param .align 64 .b8 NAME[128]".
_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)"
                    r"[^,\[]*?(?:\[\s*(\d+)\s*\])?\s*(?:,|$)")


def entries(ptx):
    """{entry name: [PTX parameter types]} in file order: a scalar or pointer
    parameter's type (u64, u32, f32...), an array parameter's element type and
    length (``b8[128]``: a TMA descriptor passed by value)."""
    return {m.group(1): [t + (f"[{n}]" if n else "") for t, n in _PARAM.findall(m.group(2))]
            for m in _ENTRY.finditer(ptx)}


def waiting_entries(ptx):
    """Names of the entries whose code runs ``griddepcontrol.wait``
    (dnn-grid-dependency): each waits for the grids ahead of it, so it may
    be launched before they end."""
    found = list(_ENTRY.finditer(ptx))
    waiting = set()
    for i, m in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(ptx)
        if "griddepcontrol.wait" in ptx[m.end():end]:
            waiting.add(m.group(1))
    return waiting


def external_calls(ptx):
    """Names of functions the PTX declares ``.extern`` (called, not defined)."""
    return re.findall(r"\.extern\s+\.func\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)", ptx)
