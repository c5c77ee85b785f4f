"""The ``.dnnpkg`` artifact: write, read and check it (docs/artifact.md).

A zip holding ``manifest.json`` (format version 1: versions, arch, the graph's
inputs and outputs, the workspace, the buffers kernels name and the kernels
in launch order), ``kernels.ptx`` (every kernel, one PTX module) and
``graph.mlir`` (the source dnn graph). ``Package`` is what
``compile_module(..., Options(target="cuda", arch=...))`` returns;
``read`` loads and validates a file. This module never needs a GPU.
"""

import io
import json
import zipfile
from dataclasses import dataclass

from dnnc.errors import DnncError
from dnnc.version import __version__

FORMAT_VERSION = 1
MANIFEST, PTX, SOURCE = "manifest.json", "kernels.ptx", "graph.mlir"
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


def build_manifest(graph, arch, inputs, outputs, plan):
    """The manifest dict: ``inputs`` / ``outputs`` are tensor_entry dicts,
    ``plan`` what dnnc.codegen.gpu.host_plan.extract returned."""
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
    }
    validate(manifest)
    return manifest


@dataclass
class Package:
    """A compiled graph: the manifest, the PTX and the source dnn text."""

    manifest: dict
    ptx: str
    source: str

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
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, text in ((MANIFEST, json.dumps(manifest, indent=2) + "\n"),
                           (PTX, package.ptx), (SOURCE, package.source)):
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, text)
    return buf.getvalue()


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
    except (zipfile.BadZipFile, json.JSONDecodeError, UnicodeDecodeError) as err:
        where = "" if isinstance(path_or_bytes, bytes) else f"{path_or_bytes}: "
        raise ArtifactError(f"{where}not a readable dnnpkg: {err}") from None
    validate(manifest)
    return Package(manifest, ptx, src)


def validate(m):
    """Check a manifest's structure and internal consistency; raise
    ArtifactError naming the first problem."""
    def fail(message):
        raise ArtifactError(f"manifest: {message}")

    if not isinstance(m, dict):
        fail(f"expected a JSON object, got {type(m).__name__}")
    if m.get("format_version") != FORMAT_VERSION:
        fail(f"format_version: expected {FORMAT_VERSION}, got {m.get('format_version')!r}")
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
