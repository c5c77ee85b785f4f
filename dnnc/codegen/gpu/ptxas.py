"""Find and run NVIDIA's ptxas: check that PTX assembles for an arch and read
each kernel's registers, spills and shared memory (``ptxas -v``);
``assemble_cubin`` also returns the cubin, for dnnc.codegen.gpu.sass and for
the cubin a package carries beside its PTX (dnnc/targets/cuda.py);
``version`` says which ptxas made it.

No GPU is needed. The search order is ``DNNC_PTXAS`` (a path), the ``ptxas``
of the ``nvidia-cuda-nvcc`` wheel when installed, then ``ptxas`` on PATH.
"""

import functools
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from dnnc import env
from dnnc.errors import ToolError


def find():
    """The path of a ptxas executable, or None."""
    return find_tool("ptxas", env.ptxas())


def find_tool(name, override=None):
    """The path of the CUDA tool ``name`` (ptxas, cuobjdump...), or None:
    ``override`` (a path, from a DNNC_* variable) when given, else the one in
    an NVIDIA wheel's ``nvidia/*/bin``, else the one on PATH."""
    if override:
        return override if os.access(override, os.X_OK) else None
    spec = importlib.util.find_spec("nvidia")
    if spec is not None and spec.submodule_search_locations:
        for root in spec.submodule_search_locations:
            # CUDA 13 wheels: nvidia/cu13/bin; CUDA 12 wheels: nvidia/cuda_nvcc/bin
            # (ptxas), nvidia/cuda_cuobjdump/bin (cuobjdump).
            for path in sorted(glob.glob(os.path.join(root, "*", "bin", name)), reverse=True):
                if os.access(path, os.X_OK):
                    return path
    return shutil.which(name)


@dataclass
class KernelResources:
    """What ``ptxas -v`` reports for one entry."""

    registers: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    shared_bytes: int = 0
    stack_bytes: int = 0


def assemble(ptx, arch, ptxas=None):
    """Assemble ``ptx`` for ``arch`` (sm_80, sm_90a...); return
    {entry: KernelResources}. Raises ToolError (with ptxas's messages and a
    command to reproduce) when it fails or when no ptxas is found."""
    return assemble_cubin(ptx, arch, ptxas)[0]


def assemble_cubin(ptx, arch, ptxas=None, threads=1):
    """As ``assemble``, and also return the cubin ptxas wrote: a pair
    ({entry: KernelResources}, cubin bytes), the bytes for
    dnnc.codegen.gpu.sass.disassemble or a package. One ptxas release
    makes the same bytes of the same PTX every time. ``threads`` > 1 runs
    ptxas with ``--split-compile threads``, its entries compiled on that
    many threads: the cubin then differs from the one-thread cubin, and
    with the count, but is the same for one count on any machine (so the
    count is a fixed number, never the machine's cores; docs/artifact.md)."""
    ptxas = ptxas or find()
    if ptxas is None:
        raise ToolError("ptxas not found: set DNNC_PTXAS, install nvidia-cuda-nvcc, "
                        "or put ptxas on PATH")
    with tempfile.TemporaryDirectory(prefix="dnnc-ptxas-") as tmp:
        src = os.path.join(tmp, "kernels.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        out = os.path.join(tmp, "kernels.cubin")
        cmd = [ptxas, f"-arch={arch}", "-v"]
        if threads > 1:
            cmd.append(f"--split-compile={int(threads)}")
        cmd += ["-o", out, src]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise ToolError(f"ptxas failed for {arch} (exit {proc.returncode}); reproduce with: "
                            f"{' '.join(cmd[:-1])} kernels.ptx", stderr=proc.stderr)
        with open(out, "rb") as f:
            cubin = f.read()
    return parse_verbose(proc.stderr + proc.stdout), cubin


@functools.lru_cache(maxsize=None)
def version(ptxas):
    """The release of the ptxas at path ``ptxas`` (``13.5.37``, from
    ``ptxas --version``), or "unknown" when it does not say."""
    try:
        proc = subprocess.run([ptxas, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    m = re.search(r"\bV(\d+(?:\.\d+)+)", proc.stdout)
    return m.group(1) if m else "unknown"


def parse_verbose(text):
    """{entry: KernelResources} from ``ptxas -v`` output."""
    out, current = {}, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            current = out.setdefault(m.group(1), KernelResources())
            continue
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            current = out.setdefault(m.group(1), KernelResources())
            continue
        if current is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill "
                      r"loads", line)
        if m:
            current.stack_bytes, current.spill_stores, current.spill_loads = \
                (int(g) for g in m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            current.registers = int(m.group(1))
        m = re.search(r"(\d+) bytes smem", line)
        if m:
            current.shared_bytes = int(m.group(1))
    return out
