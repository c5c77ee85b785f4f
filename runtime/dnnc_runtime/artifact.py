"""Reading and validating a ``.dnnpkg`` (format versions 1 and 2, see docs/artifact.md).

Everything here is pure Python: an artifact is read and checked completely
(keys, types, dims and strides, every kernel argument (buffer, scalar or
tma) naming an existing buffer, TMA descriptors the driver will encode,
workspace slices in range, every kernel entry present in the PTX with as many
and as wide parameters as the manifest binds) before any GPU is touched, so a bad
artifact fails the same way on a laptop and on an H100. Only the arch check
needs the device, and ``check_arch`` takes its compute capability as a plain
tuple.

Version 2 added ``cubins``: machine code ptxas made of ``kernels.ptx`` for
an arch, each a member of the zip that must hold exactly the bytes its
entry's size and sha256 say (else the package is refused, naming the
package and the kernels the cubin holds). Which code is loaded on a given
GPU is modules.py's choice, at the first call.
"""

import hashlib
import io
import json
import os
import re
import zipfile

from .cuda import TENSOR_MAP_BYTES, TMA_DATA_TYPES, TMA_L2_PROMOTIONS, TMA_OOB_FILLS, TMA_SWIZZLES
from .cuda import arch_name
from . import layout
from .errors import ArtifactError
from .record import Field, Record

FORMAT_VERSION = 2
# The versions this runtime reads: 1 (PTX only) and 2 (which added "cubins").
READ_VERSIONS = (1, 2)
MANIFEST = "manifest.json"
PTX = "kernels.ptx"
SOURCE = "graph.mlir"

# Storage types (MLIR spellings) and their size in bytes; i1 is one byte.
DTYPE_SIZES = {"f32": 4, "f16": 2, "bf16": 2, "f8E4M3FN": 1, "f8E5M2": 1, "i1": 1, "i32": 4,
               "si8": 1, "ui8": 1}
# Scalar kernel arguments and their size in bytes.
SCALAR_SIZES = {"i32": 4, "i64": 8, "f32": 4}
WORKSPACE_ALIGNMENT = 256
DEFAULT_ALIGNMENT = 16
# TMA (cuTensorMapEncodeTiled) limits: rank, box dims, the bytes its global
# address and strides (and the innermost box row) come in, the largest stride.
TMA_MAX_RANK = 5
TMA_MAX_BOX = 256
TMA_ALIGNMENT = 16
TMA_MAX_STRIDE_BYTES = 2**40
TMA_MAX_DIM = 2**32
# cuTensorMapEncodeIm2col's limits: rank, the box (channelsPerPixel,
# pixelsPerColumn), the pixel box's corners by rank (their precision shrinks
# as the rank grows), the traversal strides.
TMA_IM2COL_RANKS = (3, 5)
TMA_IM2COL_MAX_CHANNELS = 256
TMA_IM2COL_MAX_PIXELS = 1024
TMA_IM2COL_CORNERS = {3: (-32768, 32767), 4: (-128, 127), 5: (-16, 15)}
TMA_MAX_ELEMENT_STRIDE = 8
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_CUBIN_FILE = re.compile(r"^[A-Za-z0-9_.-]+\.cubin$")
_REQUIRED = ("format_version", "arch", "inputs", "outputs", "workspace_bytes", "buffers", "kernels")
_ARCH = re.compile(r"^sm_(\d+)(\d)([af]?)$")


class TensorSpec(Record):
    """One graph input or output: logical dims, strides in elements, dtype."""

    name: str
    role: str            # "input" or "output"
    index: int           # position among the inputs (or outputs)
    dims: tuple
    strides: tuple
    dtype: str
    alignment: int = DEFAULT_ALIGNMENT   # bytes the kernels assume of its address
    by_value: bool = False   # a runtime scalar: a number per call, no buffer (scalars.py)

    @property
    def label(self):
        """How messages name it: ``input 'x'``."""
        return f"{self.role} '{self.name}'"

    @property
    def itemsize(self):
        return DTYPE_SIZES[self.dtype]

    @property
    def numel(self):
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def extent(self):
        """Elements spanned in memory (from the first to the last, inclusive)."""
        if self.numel == 0:
            return 0
        return 1 + sum((d - 1) * s for d, s in zip(self.dims, self.strides))

    @property
    def nbytes(self):
        return self.extent * self.itemsize


class BufferSpec(Record):
    """A device buffer kernels name: a graph input/output, or a workspace slice."""

    kind: str            # "input", "output" or "workspace"
    index: int = 0       # for input/output: position
    offset: int = 0      # for workspace: byte offset in the workspace
    nbytes: int = 0      # size in bytes (tensor extent, or the slice size)


class Im2colSpec(Record):
    """What makes a "tma" argument an im2col-mode descriptor (a convolution's
    activation read as the rows of its implicit GEMM), outermost first:
    ``lower`` and ``upper``, the pixel box's corners, one per spatial dim
    (``[H, W]`` of an ``[N, H, W, C]`` tensor); ``element_strides``, the
    traversal stride of every dim (the convolution's strides on the spatial
    dims, 1 on N and C)."""

    lower: tuple
    upper: tuple
    element_strides: tuple


class ArgSpec(Record):
    """A kernel argument: a pointer into a buffer, a scalar, or a TMA descriptor.

    A "tma" argument is a CUtensorMap (128 bytes, by value) over the tensor
    at ``buffer`` + ``byte_offset``: ``dtype``, and ``shape``, ``strides``
    (elements) and ``box`` outermost first, as a tensor's dims; ``swizzle``
    and ``l2_promotion`` in bytes (0: none); ``oob_fill`` "zero" or "nan".
    The runtime encodes it on the host once it knows the tensor's address.
    ``im2col`` is None for a tiled descriptor (cuTensorMapEncodeTiled); an
    im2col one (cuTensorMapEncodeIm2col) has an ``Im2colSpec`` there, a
    tensor of rank 3 to 5 (``[N, (D,) H, W, C]``) and ``box`` ``[pixels,
    channels]``.
    """

    kind: str            # "buffer", "scalar", "scalar_input" or "tma"
    buffer: int = 0      # buffer, tma, scalar_input (a by-value input's): index into the buffers
    byte_offset: int = 0
    type: str = ""       # scalar type: i32, i64, f32
    value: object = None
    dtype: str = ""      # tma: storage type of the tensor (f32, f16, bf16, f8E4M3FN, f8E5M2)
    shape: tuple = ()    # tma: dims, outermost first
    strides: tuple = ()  # tma: strides in elements, outermost first; the innermost is 1
    box: tuple = ()      # tma: the tile one copy moves, outermost first
    swizzle: int = 0     # tma: shared-memory swizzle span in bytes: 0, 32, 64, 128
    l2_promotion: int = 0  # tma: L2 fetch granularity in bytes: 0, 64, 128, 256
    oob_fill: str = "zero"  # tma: out-of-bounds elements read as zero, or NaN ("nan")
    im2col: Im2colSpec = None  # tma: im2col mode's corners and strides; None: tiled

    @property
    def nbytes(self):
        """What the argument takes in the kernel's parameter space."""
        if self.kind in ("scalar", "scalar_input"):
            return SCALAR_SIZES[self.type]
        return TENSOR_MAP_BYTES if self.kind == "tma" else 8


class KernelSpec(Record):
    """One launch of the plan.

    ``name`` is the kernel function the launch came from, ``strategy`` and
    ``config`` that function's code-generation strategy and whole config
    (``{}`` in packages that predate the field), ``reason`` why the heuristics
    chose it (``""`` when the package does not say).
    """

    name: str
    entry: str
    strategy: str
    grid: tuple
    block: tuple
    shared_bytes: int
    args: tuple
    config: dict = Field(factory=dict, compare=False)
    reason: str = ""
    dependent_launch: bool = False   # waits for the grids ahead: may launch before they end

    @property
    def has_work(self):
        """False for an empty grid (zero-size tensors): such a kernel is skipped."""
        return all(self.grid)

    @property
    def config_text(self):
        """The strategy and the config fields a launch does not show
        (``simt-pointwise vector=4 unroll=2``); block is the launch's block."""
        parts = [self.strategy]
        for key, value in self.config.items():
            if key not in ("strategy", "block"):
                text = "x".join(map(str, value)) if isinstance(value, list) else str(value)
                parts.append(f"{key}={text}")
        return " ".join(parts)


class CubinSpec(Record):
    """A cubin of the package: ``module`` (kernels.ptx) assembled by ptxas
    (release ``ptxas_version``) for ``arch``; ``data``, its bytes, checked
    against the manifest's size and sha256."""

    module: str
    file: str
    arch: str
    ptxas_version: str
    sha256: str
    data: bytes = Field(repr=False)

    @property
    def capability(self):
        """The (major, minor) compute capability the cubin is machine code for."""
        m = _ARCH.match(self.arch)
        return int(m.group(1)), int(m.group(2))


class Artifact(Record):
    """A validated .dnnpkg: the manifest, parsed, plus the PTX and source
    text and the cubins (CubinSpec; none in a package without)."""

    manifest: dict
    ptx: str
    source: str
    arch: str
    graph: str
    dnnc_version: str
    mlir_version: str
    inputs: tuple
    outputs: tuple
    workspace_bytes: int
    buffers: tuple
    kernels: tuple
    cubins: tuple = ()


def read(path_or_bytes):
    """Read and validate a .dnnpkg from a path, bytes, or a binary file object."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        source, where = io.BytesIO(bytes(path_or_bytes)), "<bytes>"
    elif isinstance(path_or_bytes, (str, os.PathLike)):
        source = where = os.fspath(path_or_bytes)
        if not os.path.isfile(source):
            raise ArtifactError(f"{where}: no such artifact file")
    elif hasattr(path_or_bytes, "read"):
        source, where = path_or_bytes, getattr(path_or_bytes, "name", "<file>")
    else:
        raise ArtifactError(f"expected a path, bytes or a binary file, got {type(path_or_bytes).__name__}")
    try:
        with zipfile.ZipFile(source) as z:
            names = set(z.namelist())
            for member in (MANIFEST, PTX):
                if member not in names:
                    raise ArtifactError(f"{where}: not a .dnnpkg: the archive has no {member}")
            raw_manifest = z.read(MANIFEST)
            ptx = z.read(PTX).decode()
            source_text = z.read(SOURCE).decode() if SOURCE in names else ""
            cubins = {}
            for name in names:
                if name.endswith(".cubin"):
                    cubins[name] = z.read(name)
    except zipfile.BadZipFile as e:
        raise ArtifactError(f"{where}: not a .dnnpkg (zip) archive: {e}") from e
    except UnicodeDecodeError as e:
        raise ArtifactError(f"{where}: {PTX} or {SOURCE} is not UTF-8 text: {e}") from e
    try:
        manifest = json.loads(raw_manifest)
    except ValueError as e:
        raise ArtifactError(f"{where}: {MANIFEST} is not valid JSON: {e}") from e
    return parse(manifest, ptx, source_text, cubins, where)


def parse(manifest, ptx="", source="", cubins=None, where="<manifest>"):
    """Validate a manifest dict (and the PTX it refers to, and the cubins:
    member name -> bytes) into an Artifact; ``where`` names the package in
    messages about its cubins."""
    if not isinstance(manifest, dict):
        raise ArtifactError(f"{MANIFEST}: expected a JSON object, got {type(manifest).__name__}")
    if "format_version" not in manifest:
        raise ArtifactError(f"{MANIFEST}: missing required key: format_version")
    version = manifest["format_version"]
    if version not in READ_VERSIONS or isinstance(version, bool):
        raise ArtifactError(
            f"{MANIFEST}: format_version: expected one of "
            f"{', '.join(map(str, READ_VERSIONS))} (the versions this runtime reads), got "
            f"{version!r}; use a runtime and compiler of matching versions")
    missing = [k for k in _REQUIRED if k not in manifest]
    if missing:
        raise ArtifactError(f"{MANIFEST}: missing required key(s): {', '.join(missing)}")

    arch = manifest["arch"]
    if not isinstance(arch, str) or not _ARCH.match(arch):
        raise ArtifactError(f"{MANIFEST}: arch: expected a name like 'sm_80' or 'sm_90a', got {arch!r}")
    inputs = _tensors(manifest["inputs"], "input")
    outputs = _tensors(manifest["outputs"], "output")
    names = [t.name for t in inputs + outputs]
    for name in names:
        if names.count(name) > 1:
            raise ArtifactError(f"{MANIFEST}: tensor name {name!r} is used more than once")
    workspace = _int(manifest["workspace_bytes"], "workspace_bytes", minimum=0)
    buffers = _buffers(manifest["buffers"], inputs, outputs, workspace)
    kernels = _kernels(manifest["kernels"], buffers, inputs)
    _check_ptx(ptx, kernels)
    cubin_specs = _cubins(manifest, version, arch, kernels, cubins or {}, where)
    return Artifact(
        manifest=manifest, ptx=ptx, source=source, arch=arch,
        graph=str(manifest.get("graph", "")),
        dnnc_version=str(manifest.get("dnnc_version", "")),
        mlir_version=str(manifest.get("mlir_version", "")),
        inputs=inputs, outputs=outputs, workspace_bytes=workspace,
        buffers=buffers, kernels=kernels, cubins=cubin_specs)


# -- the arch check (needs only the device's compute capability) ------------

def arch_runs_on(arch, capability):
    """Can code built for ``arch`` run on a GPU of compute ``capability``?

    ``sm_XY`` is PTX for X.Y, which the driver JIT-compiles for any later GPU;
    ``sm_XYa`` uses arch-specific instructions (wgmma...) that exist on X.Y
    only; ``sm_XYf`` (family) runs on X.y for y >= Y.
    """
    m = _ARCH.match(arch)
    if not m:
        return False
    major, minor, suffix = int(m.group(1)), int(m.group(2)), m.group(3)
    if suffix == "a":
        return tuple(capability) == (major, minor)
    if suffix == "f":
        return capability[0] == major and capability[1] >= minor
    return tuple(capability) >= (major, minor)


def check_arch(arch, capability, device_name="this GPU"):
    """Raise ArtifactError unless ``arch`` runs on ``capability``, naming both."""
    if arch_runs_on(arch, capability):
        return
    m = _ARCH.match(arch)
    need = f"{m.group(1)}.{m.group(2)}"
    why = {"a": f"it uses arch-specific instructions and runs only on compute capability {need}",
           "f": f"it runs only on compute capability {m.group(1)}.x with x >= {m.group(2)}",
           "": f"it needs compute capability {need} or newer"}[m.group(3)]
    raise ArtifactError(
        f"artifact built for {arch} cannot run on {device_name} (compute capability "
        f"{capability[0]}.{capability[1]}, {arch_name(capability)}): {why}; "
        f"recompile with --arch {arch_name(capability)}")


def _cubins(manifest, version, arch, kernels, members, where):
    """The "cubins" entries (format version 2), each checked against its
    member's bytes: a corrupt or mismatching cubin is refused, never loaded
    and never silently skipped."""
    if "cubins" not in manifest:
        return ()
    if version < 2:
        raise ArtifactError(f"{MANIFEST}: cubins: expected none in format version {version} "
                            "(cubins came with version 2)")
    entries = _list(manifest["cubins"], "cubins")
    held = ", ".join(sorted({k.name for k in kernels})[:3]) + (
        ", ..." if len({k.name for k in kernels}) > 3 else "")
    specs, files = [], set()
    for i, c in enumerate(entries):
        at = f"cubins[{i}]"
        module = _field(c, "module", at)
        if module != PTX:
            raise ArtifactError(f"{MANIFEST}: {at}: module: expected {PTX!r}, got {module!r}")
        name = _field(c, "file", at)
        if not isinstance(name, str) or not _CUBIN_FILE.match(name) or name in files:
            raise ArtifactError(f"{MANIFEST}: {at}: file: expected a member name of its own "
                                f"ending in .cubin, got {name!r}")
        files.add(name)
        at = f"{at} {name}"
        cubin_arch = _field(c, "arch", at)
        m = _ARCH.match(cubin_arch) if isinstance(cubin_arch, str) else None
        fits = m and (cubin_arch == arch if _ARCH.match(arch).group(3) else
                      arch_runs_on(arch, (int(m.group(1)), int(m.group(2)))))
        if not fits:
            raise ArtifactError(f"{MANIFEST}: {at}: arch: expected an arch that runs {arch} code "
                                f"({arch} itself for arch-specific code), got {cubin_arch!r}")
        version_text = _field(c, "ptxas_version", at)
        if not isinstance(version_text, str):
            raise ArtifactError(f"{MANIFEST}: {at}: ptxas_version: expected a string, got "
                                f"{version_text!r}")
        size = _int(_field(c, "bytes", at), f"{at}: bytes", minimum=0)
        digest = _field(c, "sha256", at)
        if not isinstance(digest, str) or not _SHA256.match(digest):
            raise ArtifactError(f"{MANIFEST}: {at}: sha256: expected 64 lowercase hex digits, got "
                                f"{digest!r}")
        what = f"{where}: cubin {name} ({cubin_arch} code of kernels {held})"
        data = members.get(name)
        if data is None:
            raise ArtifactError(f"{what}: listed in {MANIFEST} but missing from the package")
        if len(data) != size:
            raise ArtifactError(f"{what}: expected {size} bytes, got {len(data)}; the package is "
                                "corrupt: compile it again")
        got = hashlib.sha256(data).hexdigest()
        if got != digest:
            raise ArtifactError(f"{what}: sha256 expected {digest}, got {got}; the package is "
                                "corrupt: compile it again")
        if not data.startswith(b"\x7fELF"):
            raise ArtifactError(f"{what}: expected an ELF file (a cubin), got bytes starting "
                                f"{data[:4]!r}")
        specs.append(CubinSpec(module, name, cubin_arch, version_text, digest, data))
    return tuple(specs)


# -- validation helpers -----------------------------------------------------

def _int(value, where, minimum=None, maximum=None):
    if not isinstance(value, int) or isinstance(value, bool):
        raise ArtifactError(f"{MANIFEST}: {where}: expected an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ArtifactError(f"{MANIFEST}: {where}: expected >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ArtifactError(f"{MANIFEST}: {where}: expected <= {maximum}, got {value}")
    return value


def _list(value, where, length=None):
    if not isinstance(value, list):
        raise ArtifactError(f"{MANIFEST}: {where}: expected a list, got {value!r}")
    if length is not None and len(value) != length:
        raise ArtifactError(f"{MANIFEST}: {where}: expected {length} entries, got {len(value)}")
    return value


def _field(entry, key, where):
    if not isinstance(entry, dict):
        raise ArtifactError(f"{MANIFEST}: {where}: expected an object, got {entry!r}")
    if key not in entry:
        raise ArtifactError(f"{MANIFEST}: {where}: missing key {key!r}")
    return entry[key]


def _tensors(entries, role):
    specs = []
    for i, t in enumerate(_list(entries, f"{role}s")):
        where = f"{role}s[{i}]"
        name = _field(t, "name", where)
        if not isinstance(name, str) or not name:
            raise ArtifactError(f"{MANIFEST}: {where}: name: expected a non-empty string, got {name!r}")
        where = f"{where} '{name}'"
        dims = [_int(d, f"{where}: dims", minimum=0) for d in _list(_field(t, "dims", where), f"{where}: dims")]
        strides = _list(_field(t, "strides", where), f"{where}: strides")
        if len(strides) != len(dims):
            raise ArtifactError(f"{MANIFEST}: {where}: strides: expected {len(dims)} (one per dim), "
                                f"got {len(strides)}")
        strides = [_int(s, f"{where}: strides", minimum=0) for s in strides]
        wrong = layout.problem(dims, strides, output=role == "output")
        if wrong:
            raise ArtifactError(f"{MANIFEST}: {where}: {wrong}")
        dtype = _field(t, "dtype", where)
        if dtype not in DTYPE_SIZES:
            raise ArtifactError(f"{MANIFEST}: {where}: dtype: expected one of "
                                f"{', '.join(DTYPE_SIZES)}, got {dtype!r}")
        alignment = _int(t.get("alignment", DEFAULT_ALIGNMENT), f"{where}: alignment", minimum=1)
        if alignment & (alignment - 1):
            raise ArtifactError(f"{MANIFEST}: {where}: alignment: expected a power of two, got {alignment}")
        by_value = t.get("by_value", False)
        if not isinstance(by_value, bool) or (by_value and (role != "input" or dims or
                                                            dtype != "f32")):
            raise ArtifactError(f"{MANIFEST}: {where}: by_value: expected true only on a rank-0 "
                                f"f32 input, got {by_value!r} on a {dtype}{dims} {role}")
        specs.append(TensorSpec(name, role, i, tuple(dims), tuple(strides), dtype, alignment,
                                by_value))
    return tuple(specs)


def _buffers(entries, inputs, outputs, workspace):
    buffers = []
    for i, b in enumerate(_list(entries, "buffers")):
        where = f"buffers[{i}]"
        kind = _field(b, "kind", where)
        if kind in ("input", "output"):
            tensors = inputs if kind == "input" else outputs
            index = _int(_field(b, "index", where), f"{where}: index", minimum=0)
            if index >= len(tensors):
                raise ArtifactError(f"{MANIFEST}: {where}: {kind} index: expected < {len(tensors)} "
                                    f"(the number of {kind}s), got {index}")
            buffers.append(BufferSpec(kind, index=index, nbytes=tensors[index].nbytes))
        elif kind == "workspace":
            offset = _int(_field(b, "offset", where), f"{where}: offset", minimum=0)
            nbytes = _int(_field(b, "bytes", where), f"{where}: bytes", minimum=0)
            if offset % WORKSPACE_ALIGNMENT:
                raise ArtifactError(f"{MANIFEST}: {where}: offset: expected a multiple of "
                                    f"{WORKSPACE_ALIGNMENT}, got {offset}")
            if offset + nbytes > workspace:
                raise ArtifactError(f"{MANIFEST}: {where}: workspace slice [{offset}, {offset + nbytes}) "
                                    f"out of range: expected within workspace_bytes = {workspace}")
            buffers.append(BufferSpec(kind, offset=offset, nbytes=nbytes))
        else:
            raise ArtifactError(f"{MANIFEST}: {where}: kind: expected input, output or workspace, "
                                f"got {kind!r}")
    return tuple(buffers)


def _kernels(entries, buffers, inputs):
    kernels = []
    for i, k in enumerate(_list(entries, "kernels")):
        where = f"kernels[{i}]"
        # ``name`` is the kernel function a launch came from; one function may
        # launch several entries, so names repeat.
        name = _field(k, "name", where)
        if not isinstance(name, str) or not name:
            raise ArtifactError(f"{MANIFEST}: {where}: name: expected a non-empty string, got {name!r}")
        where = f"kernels[{i}] '{name}'"
        entry = _field(k, "entry", where)
        if not isinstance(entry, str) or not entry:
            raise ArtifactError(f"{MANIFEST}: {where}: entry: expected a PTX entry name, got {entry!r}")
        strategy = str(_field(k, "strategy", where))
        grid = tuple(_int(g, f"{where}: grid", minimum=0, maximum=2**31 - 1)
                     for g in _list(_field(k, "grid", where), f"{where}: grid", 3))
        if grid[1] > 65535 or grid[2] > 65535:
            raise ArtifactError(f"{MANIFEST}: {where}: grid: expected y and z <= 65535, got {list(grid)}")
        block = tuple(_int(b, f"{where}: block", minimum=1, maximum=1024)
                      for b in _list(_field(k, "block", where), f"{where}: block", 3))
        if block[0] * block[1] * block[2] > 1024:
            raise ArtifactError(f"{MANIFEST}: {where}: block: expected at most 1024 threads, "
                                f"got {list(block)}")
        shared = _int(_field(k, "shared_bytes", where), f"{where}: shared_bytes", minimum=0)
        args = tuple(_arg(a, f"{where}: args[{j}]", buffers, inputs)
                     for j, a in enumerate(_list(_field(k, "args", where), f"{where}: args")))
        # Optional (packages of older compilers lack them): information only.
        config = k.get("config", {})
        if not isinstance(config, dict):
            raise ArtifactError(f"{MANIFEST}: {where}: config: expected an object, got {config!r}")
        if config.get("strategy", strategy) != strategy:
            raise ArtifactError(f"{MANIFEST}: {where}: config: strategy expected {strategy!r} "
                                f"(the kernel's strategy), got {config['strategy']!r}")
        reason = k.get("reason", "")
        if not isinstance(reason, str):
            raise ArtifactError(f"{MANIFEST}: {where}: reason: expected a string, got {reason!r}")
        dependent = k.get("dependent_launch", False)
        if not isinstance(dependent, bool):
            raise ArtifactError(f"{MANIFEST}: {where}: dependent_launch: expected true or false, "
                                f"got {dependent!r}")
        kernels.append(KernelSpec(name, entry, strategy, grid, block, shared, args, config, reason,
                                  dependent))
    return tuple(kernels)


def _arg(a, where, buffers, inputs):
    kind = _field(a, "kind", where)
    if kind == "buffer":
        index, offset = _buffer_ref(a, where, buffers)
        return ArgSpec("buffer", buffer=index, byte_offset=offset)
    if kind == "tma":
        return _tma_arg(a, where, buffers)
    if kind == "scalar_input":
        index = _int(_field(a, "buffer", where), f"{where}: buffer", minimum=0)
        if index >= len(buffers) or buffers[index].kind != "input" or \
                not inputs[buffers[index].index].by_value or a.get("type") != "f32":
            raise ArtifactError(f"{MANIFEST}: {where}: expected an f32 scalar_input naming the "
                                f"buffer of an input marked by_value, got buffer {index}, type "
                                f"{a.get('type')!r}")
        return ArgSpec("scalar_input", buffer=index, type="f32")
    if kind == "scalar":
        type_ = _field(a, "type", where)
        value = _field(a, "value", where)
        if type_ not in SCALAR_SIZES:
            raise ArtifactError(f"{MANIFEST}: {where}: type: expected one of "
                                f"{', '.join(SCALAR_SIZES)}, got {type_!r}")
        if type_ == "f32":
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ArtifactError(f"{MANIFEST}: {where}: value: expected a number, got {value!r}")
        else:
            bits = 8 * SCALAR_SIZES[type_]
            _int(value, f"{where}: value", minimum=-2**(bits - 1), maximum=2**(bits - 1) - 1)
        return ArgSpec("scalar", type=type_, value=value)
    raise ArtifactError(f"{MANIFEST}: {where}: kind: expected buffer, scalar, scalar_input or tma, "
                        f"got {kind!r}")


def _buffer_ref(a, where, buffers):
    """(buffer index, byte offset) of a buffer or tma argument, checked."""
    index = _int(_field(a, "buffer", where), f"{where}: buffer", minimum=0)
    if index >= len(buffers):
        raise ArtifactError(f"{MANIFEST}: {where}: buffer: expected an index < {len(buffers)} "
                            f"(the number of buffers), got {index}")
    offset = _int(a.get("byte_offset", 0), f"{where}: byte_offset", minimum=0)
    if offset > buffers[index].nbytes:
        raise ArtifactError(f"{MANIFEST}: {where}: byte_offset: expected <= {buffers[index].nbytes} "
                            f"(the size of buffers[{index}]), got {offset}")
    return index, offset


def _tma_arg(a, where, buffers):
    """A TMA descriptor argument, checked against what cuTensorMapEncodeTiled
    (or, with an ``im2col`` field, cuTensorMapEncodeIm2col) accepts, so that
    the only encode failure left at run time is about the caller's tensor
    (its address), never about the manifest."""
    index, offset = _buffer_ref(a, where, buffers)
    if offset % TMA_ALIGNMENT:
        raise ArtifactError(f"{MANIFEST}: {where}: byte_offset: expected a multiple of {TMA_ALIGNMENT} "
                            f"(TMA needs a {TMA_ALIGNMENT}-byte aligned address), got {offset}")
    dtype = _field(a, "dtype", where)
    if not isinstance(dtype, str) or dtype not in TMA_DATA_TYPES:
        raise ArtifactError(f"{MANIFEST}: {where}: dtype: expected one of {', '.join(TMA_DATA_TYPES)} "
                            f"(storage types TMA can move; tf32 is stored as f32), got {dtype!r}")
    itemsize = DTYPE_SIZES[dtype]
    im2col = a.get("im2col")
    shape = _list(_field(a, "shape", where), f"{where}: shape")
    rank = len(shape)
    low, high = TMA_IM2COL_RANKS if im2col is not None else (1, TMA_MAX_RANK)
    if not low <= rank <= high:
        mode = " (an im2col descriptor: N, [D, H,] W, C)" if im2col is not None else ""
        raise ArtifactError(f"{MANIFEST}: {where}: shape: expected {low} to {high} dims{mode}, "
                            f"got {rank}")
    shape = [_int(d, f"{where}: shape", minimum=1, maximum=TMA_MAX_DIM) for d in shape]
    strides = _list(_field(a, "strides", where), f"{where}: strides")
    if len(strides) != rank:
        raise ArtifactError(f"{MANIFEST}: {where}: strides: expected {rank} entries (one per dim "
                            f"of shape), got {len(strides)}")
    strides = [_int(s, f"{where}: strides", minimum=0) for s in strides]
    box = _list(_field(a, "box", where), f"{where}: box")
    if im2col is None:
        if len(box) != rank:
            raise ArtifactError(f"{MANIFEST}: {where}: box: expected {rank} entries (one per dim "
                                f"of shape), got {len(box)}")
        box = [_int(b, f"{where}: box", minimum=1, maximum=TMA_MAX_BOX) for b in box]
    else:
        if len(box) != 2:
            raise ArtifactError(f"{MANIFEST}: {where}: box: expected 2 entries ([pixels, channels] "
                                f"of an im2col descriptor), got {len(box)}")
        box = [_int(box[0], f"{where}: box: pixels", minimum=1, maximum=TMA_IM2COL_MAX_PIXELS),
               _int(box[1], f"{where}: box: channels", minimum=1, maximum=TMA_IM2COL_MAX_CHANNELS)]
        im2col = _im2col(im2col, f"{where}: im2col", shape)
    if strides[-1] != 1:
        raise ArtifactError(f"{MANIFEST}: {where}: strides: expected 1 for the innermost dim (TMA "
                            f"reads it contiguously), got {strides[-1]}")
    for s in strides[:-1]:
        nbytes = s * itemsize
        if nbytes % TMA_ALIGNMENT or nbytes >= TMA_MAX_STRIDE_BYTES:
            raise ArtifactError(f"{MANIFEST}: {where}: strides: expected the outer strides to be "
                                f"multiples of {TMA_ALIGNMENT} bytes below 2**40, got {s} elements "
                                f"of {dtype} = {nbytes} bytes")
    # The swizzle is part of how the kernel addresses shared memory: no default.
    swizzle = _int(_field(a, "swizzle", where), f"{where}: swizzle")
    if swizzle not in TMA_SWIZZLES:
        raise ArtifactError(f"{MANIFEST}: {where}: swizzle: expected one of "
                            f"{', '.join(map(str, TMA_SWIZZLES))} (bytes), got {swizzle}")
    row = box[-1] * itemsize
    if row % TMA_ALIGNMENT:
        raise ArtifactError(f"{MANIFEST}: {where}: box: expected the innermost box dim to span a "
                            f"multiple of {TMA_ALIGNMENT} bytes, got {box[-1]} x {itemsize} = {row} bytes")
    if swizzle and row > swizzle:
        raise ArtifactError(f"{MANIFEST}: {where}: box: expected the innermost box dim to span at most "
                            f"the swizzle ({swizzle} bytes), got {box[-1]} x {itemsize} = {row} bytes")
    l2_promotion = _int(a.get("l2_promotion", 0), f"{where}: l2_promotion")
    if l2_promotion not in TMA_L2_PROMOTIONS:
        raise ArtifactError(f"{MANIFEST}: {where}: l2_promotion: expected one of "
                            f"{', '.join(map(str, TMA_L2_PROMOTIONS))} (bytes), got {l2_promotion}")
    oob_fill = a.get("oob_fill", "zero")
    if not isinstance(oob_fill, str) or oob_fill not in TMA_OOB_FILLS:
        raise ArtifactError(f"{MANIFEST}: {where}: oob_fill: expected one of "
                            f"{', '.join(TMA_OOB_FILLS)}, got {oob_fill!r}")
    if oob_fill == "nan" and TMA_DATA_TYPES[dtype][0] == "UINT8":
        raise ArtifactError(f"{MANIFEST}: {where}: oob_fill: expected 'zero' for {dtype} (TMA moves "
                            f"fp8 as UINT8, which has no NaN), got 'nan'")
    extent = itemsize * (1 + sum((d - 1) * s for d, s in zip(shape, strides)))
    if offset + extent > buffers[index].nbytes:
        raise ArtifactError(f"{MANIFEST}: {where}: shape: expected the tensor to lie within "
                            f"buffers[{index}] ({buffers[index].nbytes} bytes), got byte_offset + extent "
                            f"= {offset} + {extent} bytes")
    return ArgSpec("tma", buffer=index, byte_offset=offset, dtype=dtype, shape=tuple(shape),
                   strides=tuple(strides), box=tuple(box), swizzle=swizzle,
                   l2_promotion=l2_promotion, oob_fill=oob_fill, im2col=im2col)


def _im2col(field, where, shape):
    """The ``im2col`` field of a tma argument over a tensor of ``shape``
    (rank 3 to 5, checked), checked against cuTensorMapEncodeIm2col."""
    if not isinstance(field, dict):
        raise ArtifactError(f"{MANIFEST}: {where}: expected an object, got {field!r}")
    rank = len(shape)
    spatial = rank - 2
    low, high = TMA_IM2COL_CORNERS[rank]
    corners = {}
    for key in ("lower", "upper"):
        value = _list(_field(field, key, where), f"{where}: {key}")
        if len(value) != spatial:
            raise ArtifactError(f"{MANIFEST}: {where}: {key}: expected {spatial} entries (one per "
                                f"spatial dim of a rank {rank} tensor), got {len(value)}")
        corners[key] = tuple(_int(v, f"{where}: {key} (rank {rank})", minimum=low, maximum=high)
                             for v in value)
    names = ("D", "H", "W")[-spatial:]
    for name, n, lower, upper in zip(names, shape[1:-1], corners["lower"], corners["upper"]):
        # The box spans [lower, n - 1 + upper] along a spatial dim: it must hold a pixel.
        if n + upper - lower < 1:
            raise ArtifactError(f"{MANIFEST}: {where}: expected a pixel box of at least one pixel "
                                f"along {name} (size + upper - lower >= 1), got {n} + {upper} - "
                                f"{lower} = {n + upper - lower}")
    steps = _list(_field(field, "element_strides", where), f"{where}: element_strides")
    if len(steps) != rank:
        raise ArtifactError(f"{MANIFEST}: {where}: element_strides: expected {rank} entries (one per "
                            f"dim of shape), got {len(steps)}")
    steps = tuple(_int(v, f"{where}: element_strides", minimum=1, maximum=TMA_MAX_ELEMENT_STRIDE)
                  for v in steps)
    return Im2colSpec(corners["lower"], corners["upper"], steps)


# A kernel's PTX signature: ".entry NAME(" up to the closing ")".
_PARAM_TYPE = re.compile(r"\.[bsuf](8|16|32|64)\b")
_PARAM_ARRAY = re.compile(r"\[(\d+)\]")


def ptx_params(ptx, entry):
    """Byte sizes of the parameters of ``.entry entry`` in ``ptx``; None if absent."""
    m = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\(", ptx)
    if not m:
        return None
    end = ptx.find(")", m.end())
    body = ptx[m.end():end].strip()
    sizes = []
    for param in filter(None, (p.strip() for p in body.split(","))):
        t = _PARAM_TYPE.search(param)
        count = _PARAM_ARRAY.search(param)
        sizes.append((int(t.group(1)) // 8 if t else 0) * (int(count.group(1)) if count else 1))
    return sizes


def _check_ptx(ptx, kernels):
    """Every entry exists in the PTX and takes the arguments the manifest binds:
    a pointer 8 bytes, a scalar its size, a TMA descriptor 128 (``.param
    .align 64 .b8 NAME[128]``)."""
    for k in kernels:
        sizes = ptx_params(ptx, k.entry)
        if sizes is None:
            raise ArtifactError(f"kernel '{k.name}': entry {k.entry!r} is not in {PTX}")
        if len(sizes) != len(k.args):
            raise ArtifactError(f"kernel '{k.name}': expected {len(sizes)} arguments (the parameters "
                                f"of .entry {k.entry} in {PTX}), got {len(k.args)} in {MANIFEST}")
        for j, (size, arg) in enumerate(zip(sizes, k.args)):
            want = arg.nbytes
            if size != want:
                what = {"buffer": "a pointer", "tma": "a TMA descriptor"}.get(arg.kind, f"an {arg.type}")
                raise ArtifactError(f"kernel '{k.name}': argument {j} is {what} ({want} bytes) in "
                                    f"{MANIFEST}, but parameter {j} of .entry {k.entry} is {size} bytes")
