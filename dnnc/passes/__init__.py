"""Pass infrastructure: the DnncPass base, the registry, and pipeline running.

This is the only module that touches the bindings' pass API
(``PassManager.add(callable)``), which changes between MLIR releases.

A dnnc pass is a small dataclass whose fields are its options::

    @register
    @dataclass
    class DnnFuse(DnncPass):
        NAME = "dnn-fuse"
        epilogue: bool = True

        def run(self, module):     # module: mlir.ir.Module's operation
            ...

Pipelines are written as MLIR writes them, and dnnc and upstream passes mix
freely: ``builtin.module(dnn-verify,dnn-fuse{epilogue=false},canonicalize)``.
The string is parsed and checked before anything runs.
"""

import dataclasses
import importlib
import contextlib
import os
import pkgutil
import re
import time

# walk and dnn_ops live with the dialect (the code generators and the
# decomposition rules use them too); the passes import them from here.
from dnnc.dialect.walk import dnn_ops, walk  # noqa: F401
from dnnc.errors import DnncError, LoweringError, PipelineError

_PASSES = {}
_LOADED = False
# Where run_pipeline adds each element's seconds while ``timing()`` is on.
_TIMES = None


class DnncPass:
    """Base of dnnc passes. Subclasses set NAME and implement ``run(module)``."""

    NAME = ""

    def run(self, module):
        raise NotImplementedError

    @classmethod
    def from_options(cls, text):
        """Build the pass from ``key=value key2=value2`` option text."""
        fields = {f.name: f for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
        kwargs = {}
        for item in text.split():
            key, sep, value = item.partition("=")
            if key not in fields:
                known = ", ".join(sorted(fields)) or "none"
                raise PipelineError(f"pass '{cls.NAME}' has no option '{key}'; options: {known}")
            kwargs[key] = _convert(cls.NAME, fields[key], value if sep else "true")
        return cls(**kwargs)

    def options_text(self):
        if not dataclasses.is_dataclass(self):
            return ""
        parts = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool):
                value = "true" if value else "false"
            elif isinstance(value, (list, tuple)):
                value = ",".join(map(str, value))
            parts.append(f"{f.name}={value}")
        return " ".join(parts)

    def __str__(self):
        opts = self.options_text()
        return f"{self.NAME}{{{opts}}}" if opts else self.NAME


def _convert(name, field, value):
    kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", "")
    try:
        if kind == "bool":
            if value not in ("true", "false", "1", "0"):
                raise ValueError
            return value in ("true", "1")
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        if kind.startswith("tuple"):
            return tuple(v for v in value.split(",") if v)
        return value
    except ValueError:
        raise PipelineError(f"pass '{name}' option '{field.name}': expected {kind}, "
                            f"got '{value}'") from None


def register(cls):
    """Class decorator: make a pass available under its kebab-case NAME."""
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", cls.NAME):
        raise ValueError(f"pass name {cls.NAME!r} is not kebab-case")
    _PASSES[cls.NAME] = cls
    return cls


def _load_all():
    here = os.path.dirname(__file__)
    for info in pkgutil.iter_modules([here]):
        if not info.name.startswith("_"):
            importlib.import_module(f"dnnc.passes.{info.name}")


def registry():
    """Mapping of pass name to pass class, every pass file loaded."""
    global _LOADED
    if not _LOADED:
        _load_all()
        _LOADED = True
    return dict(_PASSES)


# ----------------------------------------------------------------------------
# Pipeline strings


def split_top_level(text):
    """Split ``a,b{x=1},func.func(c,d)`` at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
            if depth < 0:
                raise PipelineError(f"unbalanced ')' or '}}' in pipeline at column {i}: {text}")
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if depth != 0:
        raise PipelineError(f"unbalanced brackets in pipeline: {text}")
    tail = text[start:].strip()
    if tail:
        parts.append(tail)
    return [p for p in parts if p]


def parse_pipeline(text):
    """Parse a pipeline into a list of elements: DnncPass instances, or strings
    of upstream pipeline text. Raises PipelineError before anything runs."""
    text = text.strip()
    m = re.fullmatch(r"builtin\.module\((.*)\)", text, re.S)
    if m:
        text = m.group(1)
    passes = registry()
    elements = []
    for part in split_top_level(text):
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)(\{(.*)\})?", part, re.S)
        name = m.group(1) if m else None
        if name in passes:
            elements.append(passes[name].from_options(m.group(3) or ""))
        else:
            elements.append(part)
    _check_upstream(elements)
    return elements


# Upstream pipeline elements already parsed without error: a compile parses
# each stage's pipeline, and every compile the same ones.
_CHECKED = set()


def _check_upstream(elements):
    from mlir import passmanager

    from dnnc.dialect import context

    unchecked = [e for e in elements if isinstance(e, str) and e not in _CHECKED]
    if not unchecked:
        return
    with context():
        for e in unchecked:
            try:
                passmanager.PassManager.parse(f"builtin.module({e})")
            except ValueError as err:
                raise PipelineError(f"unknown pass or bad pipeline element '{e}': "
                                    f"{_first_line(err)}") from None
            _CHECKED.add(e)


def _first_line(err):
    lines = [ln for ln in str(err).splitlines() if ln.strip()]
    for ln in lines:
        if "error:" in ln:
            return ln.split("error:", 1)[1].strip()
    return lines[0].strip() if lines else str(err)


def element_name(element):
    if isinstance(element, DnncPass):
        return element.NAME
    return re.split(r"[{(]", element, 1)[0]


def run_pipeline(module, pipeline, *, dump_dir=None, dump_prefix=""):
    """Run a pipeline (text or parsed elements) on ``module`` (an mlir.ir.Module),
    in place. With ``dump_dir``, write the IR after each element there.

    Raises the DnncError a dnnc pass raised, or LoweringError with MLIR's
    diagnostics for an upstream pass.
    """
    from mlir import ir, passmanager

    elements = parse_pipeline(pipeline) if isinstance(pipeline, str) else list(pipeline)
    if dump_dir:
        os.makedirs(dump_dir, exist_ok=True)
    for index, element in enumerate(elements):
        start = time.perf_counter() if _TIMES is not None else 0.0
        with module.context:
            if isinstance(element, DnncPass):
                _run_dnnc_pass(module, element)
            else:
                pm = passmanager.PassManager.parse(f"builtin.module({element})")
                try:
                    pm.run(module.operation)
                except ir.MLIRError as err:
                    raise LoweringError(f"pass '{element_name(element)}' failed:\n"
                                        f"{_diagnostics(err)}") from None
        if _TIMES is not None:
            name = element_name(element)
            _TIMES[name] = _TIMES.get(name, 0.0) + time.perf_counter() - start
        if dump_dir:
            path = os.path.join(dump_dir, f"{dump_prefix}{index:02d}-{element_name(element)}.mlir")
            with open(path, "w") as f:
                f.write(str(module))
    return module


@contextlib.contextmanager
def timing():
    """Within ``with timing() as times:``, ``times`` (a dict) gathers the
    wall-clock seconds of every pipeline element run in this process, by
    pass name (summed over runs): what bench/compile_time.py reports per
    pass. Off, ``run_pipeline`` reads no clock."""
    global _TIMES
    outer, _TIMES = _TIMES, {}
    try:
        yield _TIMES
    finally:
        inner, _TIMES = _TIMES, outer
        if outer is not None:
            for name, seconds in inner.items():
                outer[name] = outer.get(name, 0.0) + seconds


def _run_dnnc_pass(module, p):
    """Run a dnnc pass through a PassManager so it composes with MLIR's
    machinery (verification after the pass, timing) like any other pass."""
    from mlir import ir, passmanager

    failure = []

    def callback(op, pass_):
        try:
            p.run(op)
        except DnncError as err:
            failure.append(err)
            pass_.signal_pass_failure()

    pm = passmanager.PassManager("builtin.module")
    pm.add(callback, name=type(p).__name__, argument=p.NAME)
    try:
        pm.run(module.operation)
    except ir.MLIRError as err:
        if failure:
            raise failure[0] from None
        raise LoweringError(f"pass '{p.NAME}' produced invalid IR:\n{_diagnostics(err)}") from None
    if failure:
        raise failure[0]


def _diagnostics(err):
    diags = getattr(err, "error_diagnostics", None)
    if diags:
        return "\n".join(f"{d.location}: {d.message}" for d in diags)
    return str(err)
