"""The ``.dnnpkg`` artifact: write, read and check it (docs/artifact.md).

A zip holding ``manifest.json`` (format version 2: versions, arch, the graph's
inputs and outputs, the workspace, the buffers kernels name, the kernels
in launch order and the cubins), ``kernels.ptx`` (every kernel, one PTX
module), ``graph.mlir`` (the source dnn graph) and, where ptxas was found
at compile time, ``kernels.<arch>.cubin``: that PTX assembled by ptxas for
the arch, which a runtime on a GPU of exactly that arch loads instead of
having the driver compile the PTX. Version 1 packages (PTX only, no
``cubins`` key) are still read. ``Package`` is what
``compile_module(..., Options(target="cuda", arch=...))`` returns;
``read`` loads and validates a file. This module never needs a GPU.
"""

import hashlib
import io
import json
import re
import zipfile
from dataclasses import dataclass, field

from dnnc.errors import DnncError
from dnnc.version import __version__

FORMAT_VERSION = 2
# The versions ``read`` accepts: 1 had no cubins; 2 added the "cubins" list.
READ_VERSIONS = (1, 2)
MANIFEST, PTX, SOURCE = "manifest.json", "kernels.ptx", "graph.mlir"
CUBIN_KEYS = ("module", "file", "arch", "ptxas_version", "bytes", "sha256")
_ARCH = re.compile(r"^sm_(\d+)(\d)([af]?)$")
_CUBIN_FILE = re.compile(r"^[A-Za-z0-9_.-]+\.cubin$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
DTYPES = ("f32", "f16", "bf16", "f8E4M3FN", "f8E5M2", "i1", "i32", "si8", "ui8")
SCALAR_TYPES = ("i32", "i64", "f32")


class ArtifactError(DnncError):
    """A .dnnpkg is malformed, of an unknown format version, or inconsistent."""


# importlib.metadata is imported where it is used: it costs tens of
# milliseconds, and a JIT cache hit reads packages without building one.

def dnnc_version():
    """The installed dnnc's version (``dnnc.__version__`` when not installed)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("dnnc")
    except importlib.metadata.PackageNotFoundError:
        return __version__


def mlir_version():
    """The MLIR release of the bindings (package 22.1.8.4 is MLIR 22.1.8)."""
    import importlib.metadata

    try:
        version = importlib.metadata.version("xtc-mlir-python-bindings")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
    return ".".join(version.split(".")[:3])


def tensor_entry(name, dims, strides, dtype, by_value=False):
    """An input's or output's manifest entry; ``by_value`` marks a runtime
    scalar (a rank-0 f32 input the call passes as a number)."""
    entry = {"name": name, "dims": [int(d) for d in dims],
             "strides": [int(s) for s in strides], "dtype": dtype}
    if by_value:
        entry["by_value"] = True
    return entry


def cubin_file(arch):
    """The member name of the cubin of ``kernels.ptx`` for ``arch``."""
    return f"kernels.{arch}.cubin"


def cubin_entry(arch, data, ptxas_version):
    """The manifest entry of a cubin (``data``, bytes) that ptxas (release
    ``ptxas_version``) made of ``kernels.ptx`` for ``arch``."""
    return {"module": PTX, "file": cubin_file(arch), "arch": arch,
            "ptxas_version": ptxas_version, "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest()}


def build_manifest(graph, arch, inputs, outputs, plan, cubins=()):
    """The manifest dict: ``inputs`` / ``outputs`` are tensor_entry dicts,
    ``plan`` what dnnc.codegen.gpu.host_plan.extract returned, ``cubins``
    cubin_entry dicts."""
    manifest = {
        "format_version": FORMAT_VERSION,
        "dnnc_version": dnnc_version(),
        "mlir_version": mlir_version(),
        "arch": arch,
        "graph": graph,
        "inputs": list(inputs),
        "outputs": list(outputs),
        "workspace_bytes": plan["workspace_bytes"],
        "buffers": plan["buffers"],
        "kernels": plan["kernels"],
        "cubins": list(cubins),
    }
    validate(manifest)
    return manifest


@dataclass
class Package:
    """A compiled graph: the manifest, the PTX, the source dnn text and the
    cubins the manifest lists (member name -> bytes; none without ptxas)."""

    manifest: dict
    ptx: str
    source: str
    cubins: dict = field(default_factory=dict)

    @property
    def arch(self):
        return self.manifest["arch"]

    @property
    def kernels(self):
        return self.manifest["kernels"]

    def save(self, path):
        """Write the package to ``path`` (a .dnnpkg zip)."""
        write(path, self)
        return path

    def describe(self, resources=None):
        """The plan as text: tensors, workspace, then each kernel with its
        strategy (and the reason for it), launch shape and arguments (and,
        given ``resources`` from dnnc.codegen.gpu.ptxas.assemble, registers /
        spills / shared memory)."""
        return describe(self.manifest, resources)


def config_fields(kernel):
    """The config fields of a launch besides its strategy and block, which the
    plan shows anyway (``vector=4 unroll=2``; "" for none)."""
    parts = []
    for key, value in kernel.get("config", {}).items():
        if key in ("strategy", "block"):
            continue
        text = "x".join(map(str, value)) if isinstance(value, list) else str(value)
        parts.append(f"{key}={text}")
    return " ".join(parts)


def _buffer_text(manifest, index):
    b = manifest["buffers"][index]
    if b["kind"] == "workspace":
        return f"workspace[{b['offset']}:+{b['bytes']}]"
    return f"{b['kind']} '{manifest[b['kind'] + 's'][b['index']]['name']}'"


def _arg_text(manifest, a):
    """One kernel argument as describe() prints it: ``input 'x'+64`` (a
    buffer), ``i64 128`` (a scalar), ``tma(input 'a', bf16 box 128x64,
    swizzle 128)`` (a TMA descriptor of a buffer), ``f32 input 'eps'`` (a
    runtime scalar, by value)."""
    if a["kind"] == "scalar":
        return f"{a['type']} {a['value']}"
    if a["kind"] == "scalar_input":
        return f"{a['type']} {_buffer_text(manifest, a['buffer'])}"
    offset = f"+{a['byte_offset']}" if a.get("byte_offset") else ""
    text = _buffer_text(manifest, a["buffer"]) + offset
    if a["kind"] == "tma":
        box = "x".join(str(d) for d in a.get("box", []))
        fill = ", oob nan" if a.get("oob_fill") == "nan" else ""
        return (f"tma({text}, {a.get('dtype', '?')} box {box}, "
                f"swizzle {a.get('swizzle', 0)}{fill})")
    return text


def describe(manifest, resources=None):
    import textwrap

    m = manifest
    lines = [f"graph {m['graph']} for {m['arch']} (format {m['format_version']}, "
             f"dnnc {m['dnnc_version']}, MLIR {m['mlir_version']})"]
    cubins = m.get("cubins", [])
    lines.append("  code: PTX" + "".join(
        f", cubin {c['file']} ({c['arch']}, ptxas {c['ptxas_version']}, {c['bytes']} bytes)"
        for c in cubins) + ("" if cubins else " only (the driver compiles it when loading)"))
    tensors = [(kind[:-1], t) for kind in ("inputs", "outputs") for t in m[kind]]
    width = max([19] + [len(t["name"]) for _, t in tensors]) + 1
    for kind, t in tensors:
        lines.append(f"  {kind:<7}{t['name']:<{width}}{t['dtype']:<9}"
                     + ("by value (a runtime scalar)" if t.get("by_value") else
                        f"dims {t['dims']} strides {t['strides']}"))
    lines.append(f"  workspace {m['workspace_bytes']} bytes")
    lines.append(f"{len(m['kernels'])} kernel launch{'es' if len(m['kernels']) != 1 else ''}:")
    explained = set()  # kernel functions whose reason is shown (once: one makes many launches)
    for i, k in enumerate(m["kernels"]):
        lines.append(f"  {i}. {k['entry']}  [{k['strategy']}]  from {k['name']}")
        if k.get("reason") and k["name"] not in explained:
            explained.add(k["name"])
            lines.append(textwrap.fill(f"{k['strategy']}: {k['reason']}", width=100,
                                       initial_indent="     ", subsequent_indent="       ",
                                       break_on_hyphens=False))
        extra = config_fields(k)
        lines.append(f"     grid {k['grid']} block {k['block']} shared {k['shared_bytes']} B"
                     + (f"  config {extra}" if extra else "")
                     + ("  dependent launch" if k.get("dependent_launch") else ""))
        if resources is not None and k["entry"] in resources:
            r = resources[k["entry"]]
            lines.append(f"     ptxas: {r.registers} registers, {r.spill_stores} B spill stores, "
                         f"{r.spill_loads} B spill loads, {r.shared_bytes} B static shared, "
                         f"{r.stack_bytes} B stack")
        args = [_arg_text(m, a) for a in k["args"]]
        lines.append(f"     args: {', '.join(args) or 'none'}")
    return "\n".join(lines)


# A fixed timestamp, so one package always gives the same bytes.
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def to_bytes(package, extra=None):
    """The ``.dnnpkg`` bytes of ``package``; ``extra`` adds manifest fields.
    Deterministic: one package always gives the same bytes."""
    manifest = dict(package.manifest, **(extra or {}))
    validate(manifest)
    members = [(MANIFEST, json.dumps(manifest, indent=2) + "\n"), (PTX, package.ptx),
               (SOURCE, package.source)]
    for entry in manifest.get("cubins", []):
        data = package.cubins.get(entry["file"])
        check_cubin(manifest, entry, data, "package")
        members.append((entry["file"], data))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, content in members:
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, content)
    return buf.getvalue()


def kernel_names(manifest):
    """The kernel functions of a manifest, for messages: ``a, b, c, ...``."""
    names = sorted({k["name"] for k in manifest["kernels"]})
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


def check_cubin(manifest, entry, data, where):
    """Raise ArtifactError unless ``data`` (bytes or None: absent) is the
    cubin ``entry`` of ``manifest`` describes: an ELF file of its size and
    sha256. ``where`` names the package in the message, which also names
    the cubin and the kernels it holds."""
    name = (f"{where}: cubin {entry['file']} ({entry['arch']} code of kernels "
            f"{kernel_names(manifest)})")
    if data is None:
        raise ArtifactError(f"{name}: listed in {MANIFEST} but missing from the package")
    if len(data) != entry["bytes"]:
        raise ArtifactError(f"{name}: expected {entry['bytes']} bytes, got {len(data)}; the "
                            "package is corrupt: compile it again")
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry["sha256"]:
        raise ArtifactError(f"{name}: sha256 expected {entry['sha256']}, got {digest}; the "
                            "package is corrupt: compile it again")
    if not data.startswith(b"\x7fELF"):
        raise ArtifactError(f"{name}: expected an ELF file (a cubin), got bytes starting "
                            f"{data[:4]!r}")


def write(path, package):
    """Write ``package`` as a zip at ``path`` (written whole, then renamed)."""
    import os
    import tempfile

    data = to_bytes(package)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".dnnpkg-", dir=directory)
    except OSError as err:
        raise OSError(err.errno, f"cannot write '{path}': {err.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read(path_or_bytes):
    """Load and validate a .dnnpkg (a path or its bytes); returns a Package.
    Raises ArtifactError when it is not a dnnpkg of a known format version."""
    source = io.BytesIO(path_or_bytes) if isinstance(path_or_bytes, bytes) else path_or_bytes
    try:
        with zipfile.ZipFile(source) as z:
            names = set(z.namelist())
            missing = [n for n in (MANIFEST, PTX, SOURCE) if n not in names]
            if missing:
                raise ArtifactError(f"{path_or_bytes!s:.80}: not a dnnpkg: expected members "
                                    f"{MANIFEST}, {PTX}, {SOURCE}; missing {', '.join(missing)}")
            manifest = json.loads(z.read(MANIFEST).decode("utf-8"))
            ptx = z.read(PTX).decode("utf-8")
            src = z.read(SOURCE).decode("utf-8")
            validate(manifest)
            cubins = {e["file"]: z.read(e["file"]) if e["file"] in names else None
                      for e in manifest.get("cubins", [])}
    except (zipfile.BadZipFile, json.JSONDecodeError, UnicodeDecodeError) as err:
        where = "" if isinstance(path_or_bytes, bytes) else f"{path_or_bytes}: "
        raise ArtifactError(f"{where}not a readable dnnpkg: {err}") from None
    where = "<bytes>" if isinstance(path_or_bytes, bytes) else f"{path_or_bytes}"
    for entry in manifest.get("cubins", []):
        check_cubin(manifest, entry, cubins[entry["file"]], where)
    return Package(manifest, ptx, src, cubins)


def validate(m):
    """Check a manifest's structure and internal consistency; raise
    ArtifactError naming the first problem."""
    def fail(message):
        raise ArtifactError(f"manifest: {message}")

    if not isinstance(m, dict):
        fail(f"expected a JSON object, got {type(m).__name__}")
    version = m.get("format_version")
    if version not in READ_VERSIONS or isinstance(version, bool):
        fail(f"format_version: expected one of {', '.join(map(str, READ_VERSIONS))}, "
             f"got {version!r}")
    for key in ("dnnc_version", "mlir_version", "arch", "graph", "inputs", "outputs",
                "workspace_bytes", "buffers", "kernels"):
        if key not in m:
            fail(f"missing key '{key}'")
    for kind in ("inputs", "outputs"):
        for t in m[kind]:
            if t.get("dtype") not in DTYPES:
                fail(f"{kind} '{t.get('name')}': dtype expected one of {', '.join(DTYPES)}, "
                     f"got {t.get('dtype')!r}")
            if len(t.get("dims", [])) != len(t.get("strides", [None])):
                fail(f"{kind} '{t.get('name')}': expected one stride per dim")
            if t.get("by_value") and (kind != "inputs" or t["dims"] or t["dtype"] != "f32"):
                fail(f"{kind} '{t.get('name')}': by_value: expected a rank-0 f32 input, got "
                     f"{t['dtype']}{t['dims']} ({kind[:-1]})")
    workspace = m["workspace_bytes"]
    for i, b in enumerate(m["buffers"]):
        kind = b.get("kind")
        if kind in ("input", "output"):
            if not 0 <= b.get("index", -1) < len(m[kind + "s"]):
                fail(f"buffer {i}: {kind} index {b.get('index')} out of range")
        elif kind == "workspace":
            if b["offset"] % 256 or b["offset"] < 0 or b["offset"] + b["bytes"] > workspace:
                fail(f"buffer {i}: workspace slice [{b['offset']}, +{b['bytes']}) is not "
                     f"256-byte aligned inside {workspace} bytes")
        else:
            fail(f"buffer {i}: kind expected input, output or workspace, got {kind!r}")
    for k in m["kernels"]:
        for key in ("name", "entry", "strategy", "grid", "block", "shared_bytes", "args"):
            if key not in k:
                fail(f"kernel {k.get('entry', '?')}: missing key '{key}'")
        # Optional (older packages lack them): the kernel function's config and
        # why the heuristics chose it.
        if not isinstance(k.get("reason", ""), str):
            fail(f"kernel {k['entry']}: reason expected a string, got "
                 f"{type(k['reason']).__name__}")
        config = k.get("config", {})
        if not isinstance(config, dict):
            fail(f"kernel {k['entry']}: config expected an object, got {type(config).__name__}")
        if config.get("strategy", k["strategy"]) != k["strategy"]:
            fail(f"kernel {k['entry']}: config strategy expected {k['strategy']!r} (the "
                 f"kernel's strategy), got {config['strategy']!r}")
        if not isinstance(k.get("dependent_launch", False), bool):
            fail(f"kernel {k['entry']}: dependent_launch expected true or false, got "
                 f"{k['dependent_launch']!r}")
        for a in k["args"]:
            if a.get("kind") in ("buffer", "tma"):  # tma: a TMA descriptor of the buffer
                if not 0 <= a.get("buffer", -1) < len(m["buffers"]):
                    fail(f"kernel {k['entry']}: argument names buffer {a.get('buffer')}, "
                         f"expected 0 to {len(m['buffers']) - 1}")
            elif a.get("kind") == "scalar_input":
                b = a.get("buffer", -1)
                buffer = m["buffers"][b] if 0 <= b < len(m["buffers"]) else {}
                if buffer.get("kind") != "input" or \
                        not m["inputs"][buffer["index"]].get("by_value") or a.get("type") != "f32":
                    fail(f"kernel {k['entry']}: scalar_input argument names buffer {b}, "
                         "expected the buffer of an f32 input marked by_value")
            elif a.get("kind") == "scalar":
                if a.get("type") not in SCALAR_TYPES:
                    fail(f"kernel {k['entry']}: scalar type expected one of "
                         f"{', '.join(SCALAR_TYPES)}, got {a.get('type')!r}")
            else:
                fail(f"kernel {k['entry']}: argument kind expected buffer, scalar, "
                     "scalar_input or tma, "
                     f"got {a.get('kind')!r}")
    _validate_cubins(m, fail)


def _validate_cubins(m, fail):
    """The optional "cubins" list (format version 2): each entry the cubin
    of kernels.ptx for an arch that runs the package's code, under a member
    name of its own."""
    if "cubins" not in m:
        return
    if m["format_version"] < 2:
        fail(f"cubins: expected none in format version {m['format_version']} (cubins came "
             "with version 2)")
    if not isinstance(m["cubins"], list):
        fail(f"cubins: expected a list, got {type(m['cubins']).__name__}")
    files = set()
    for i, c in enumerate(m["cubins"]):
        if not isinstance(c, dict):
            fail(f"cubins[{i}]: expected an object, got {type(c).__name__}")
        for key in CUBIN_KEYS:
            if key not in c:
                fail(f"cubins[{i}]: missing key '{key}'")
        if c["module"] != PTX:
            fail(f"cubins[{i}]: module expected {PTX!r}, got {c['module']!r}")
        name = c["file"]
        if not isinstance(name, str) or not _CUBIN_FILE.match(name) or name in files:
            fail(f"cubins[{i}]: file expected a member name of its own ending in .cubin, "
                 f"got {name!r}")
        files.add(name)
        if not _cubin_fits(m["arch"], c["arch"]):
            fail(f"cubins[{i}] {name}: arch expected one that runs {m['arch']} code "
                 f"({m['arch']} itself for an arch-specific package), got {c['arch']!r}")
        if not isinstance(c["ptxas_version"], str):
            fail(f"cubins[{i}] {name}: ptxas_version expected a string, got "
                 f"{c['ptxas_version']!r}")
        if not isinstance(c["bytes"], int) or isinstance(c["bytes"], bool) or c["bytes"] < 0:
            fail(f"cubins[{i}] {name}: bytes expected a size, got {c['bytes']!r}")
        if not isinstance(c["sha256"], str) or not _SHA256.match(c["sha256"]):
            fail(f"cubins[{i}] {name}: sha256 expected 64 lowercase hex digits, got "
                 f"{c['sha256']!r}")


def _cubin_fits(package_arch, cubin_arch):
    """Whether a cubin for ``cubin_arch`` may stand for the PTX of a
    ``package_arch`` package: the same arch, or (for a package of portable
    code, sm_80) an arch of the same or a later GPU."""
    p = _ARCH.match(package_arch) if isinstance(package_arch, str) else None
    c = _ARCH.match(cubin_arch) if isinstance(cubin_arch, str) else None
    if not p or not c:
        return False
    if p.group(3):
        return cubin_arch == package_arch
    return (int(c.group(1)), int(c.group(2))) >= (int(p.group(1)), int(p.group(2)))
