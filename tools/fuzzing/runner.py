"""``fuzz run``: every configuration of a folder built by ``fuzz build``,
run by the runtime alone and checked against PyTorch (needs dnnc_runtime,
torch and NumPy; no dnnc, no MLIR).

For each package: draw each configuration's inputs (values.py) and lay
them out with their strides; compute the reference (torch_ops.py) in
float64 on the GPU (float32 for the huge set); fill the outputs with the
poison; launch; compare (compare.py). Prints a line per failure with the
command that rebuilds and reruns just that configuration, then a table
per family: configurations, passed, failed, refused at build, seconds.
``--only I`` reruns a folder for configuration I alone (its package and
those before it launched as before, I alone checked): the repro's run.
"""

import json
import os
import time

import torch

from . import compare, torch_ops, values
from .program import prefixed, repro
from .shapes import row_major


def _reference(config, drawn, device):
    dtype = torch.float32 if config.get("huge") else torch.float64
    torch_ops.derive(config, drawn)
    refs = torch_ops.reference(config, drawn, dtype)
    return {name: refs[name].to(compare.TORCH[spec["entry"]["dtype"]]).to(dtype)
            for name, spec in config["outputs"].items()}


def prepare(config, device):
    """``config``'s inputs laid out with their strides, its poisoned
    outputs (by graph-wide name), its references and drawn values."""
    drawn = values.inputs(config, device)
    refs = _reference(config, drawn, device)
    inputs = {}
    for name, spec in config["tensors"].items():
        strides = spec["strides"] or row_major(spec["dims"])
        inputs[prefixed(config, name)] = values.laid_out(drawn[name], spec["dims"], strides)
    outputs = {spec["entry"]["name"]: compare.poisoned(spec["entry"]["dims"],
                                                       spec["entry"]["strides"],
                                                       spec["entry"]["dtype"], device)
               for spec in config["outputs"].values()}
    return {"inputs": inputs, "outputs": outputs, "refs": refs, "drawn": drawn}


def failures_of(config, prepared):
    """[(output name, what is wrong)] of ``config`` after its launch."""
    failures = []
    for name, spec in config["outputs"].items():
        entry = spec["entry"]
        ref = prepared["refs"][name]
        rtol, atol = compare.tolerance(entry["dtype"], ref, config["tolerance"].get(name),
                                       prepared["drawn"], spec.get("precision"))
        bad = compare.check(prepared["outputs"][entry["name"]], ref, entry["dtype"], rtol, atol)
        if bad is not None:
            failures.append((name, f"{bad.describe()} (rtol {rtol:g}, atol {atol:.3g})"))
    return failures


def check_package(configs, run, device):
    """Launch one package holding ``configs`` through ``run(inputs,
    outputs)`` (every configuration's tensors at once, as the package's
    graph takes them); return {configuration index: its failures}."""
    prepared = {c["index"]: prepare(c, device) for c in configs}
    inputs, outputs = {}, {}
    for p in prepared.values():
        inputs.update(p["inputs"])
        outputs.update(p["outputs"])
    try:
        run(inputs, outputs)
    except Exception as e:  # the launch failed: every configuration of it did
        error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        return {c["index"]: [("launch", error)] for c in configs}
    return {c["index"]: failures_of(c, prepared[c["index"]]) for c in configs}


def check_config(config, run, device):
    """check_package of ``config`` alone: its failures."""
    return check_package([config], run, device)[config["index"]]


def failure_line(config, output, what, arch, package=None, count=None):
    """The FAIL line of ``config``'s ``output`` and its repro command: one
    that rebuilds ``package`` (its name, without .dnnpkg) of a build of
    ``count`` configurations where given, else the configuration alone."""
    line = repro(config["family"], config["seed"], config["index"], config.get("huge", False),
                 arch, package, count)
    return (f"FAIL {config['family']} #{config['index']} ({config['dtype']}) {output}: {what}\n"
            f"  repro: {line}")


def _packages_up_to(packages, only):
    """``packages`` up to the last holding configuration ``only``: what a
    rerun of the folder launches before and with it (the same order, so
    that the allocator hands out memory as it did)."""
    last = max((i for i, p in enumerate(packages)
                if any(c["index"] == only for c in p["configs"])), default=None)
    return [] if last is None else packages[:last + 1]


def run(folder, device="cuda", log=print, load=None, only=None):
    """Run every package of ``folder``; return the table rows by family.
    ``load``: path -> executable (default dnnc_runtime.load). ``only``:
    launch the packages up to the one holding that configuration (the
    whole package: its neighbours too) and check and count it alone."""
    if load is None:
        import dnnc_runtime
        load = dnnc_runtime.load

    def sync():
        if device == "cuda":
            torch.cuda.synchronize()
    with open(os.path.join(folder, "index.json")) as f:
        index = json.load(f)
    arch = index["arch"]
    # A folder of a whole build (not of --only) names packages a repro can
    # rebuild as they were (--package), with their neighbours.
    count = index.get("count") if index.get("only") is None else None
    packages = index["packages"]
    if only is not None:
        packages = _packages_up_to(packages, only)
        if not packages and not any(c["index"] == only for c in index["refused"]):
            raise ValueError(f"--only: expected a configuration of {folder}, got {only}")
    rows = {}

    def row(family):
        return rows.setdefault(family, {"configs": 0, "passed": 0, "failed": 0,
                                        "refused": 0, "seconds": 0.0})
    for c in index["refused"]:
        if only is not None and c["index"] != only:
            continue
        row(c["family"])["refused"] += 1
        log(f"REFUSED {c['family']} #{c['index']}: {c['error'].splitlines()[0][:300]}")
    start = time.time()
    for package in packages:
        t = time.time()
        try:
            exe = load(os.path.join(folder, package["package"]))
        except Exception as e:  # the package itself does not load: all its configurations fail
            exe, load_error = None, f"{type(e).__name__}: {e}"

        def launch(inputs, outputs):
            sync()
            exe(**inputs, outputs=outputs)
            sync()
        configs = package["configs"]
        if exe is None:
            results = {c["index"]: [("package", load_error)] for c in configs}
        else:
            try:
                results = check_package(configs, launch, device)
            except Exception as e:  # drawing or the reference failed: a fuzzer bug, said so
                results = {c["index"]: [("reference", f"{type(e).__name__}: {e}")]
                           for c in configs}
        name = package["package"][:-len(".dnnpkg")] if count is not None else None
        for config in configs:
            if only is not None and config["index"] != only:
                continue
            r = row(config["family"])
            r["configs"] += 1
            failures = results[config["index"]]
            if failures:
                r["failed"] += 1
                for output, what in failures:
                    log(failure_line(config, output, what, arch, name, count))
            else:
                r["passed"] += 1
        if only is None or any(c["index"] == only for c in configs):
            row(package["configs"][0]["family"])["seconds"] += time.time() - t
    log(table(rows, time.time() - start))
    return rows


def merge(a, b):
    """Table rows ``a`` and ``b`` added up by family."""
    out = {f: dict(r) for f, r in a.items()}
    for family, r in b.items():
        if family in out:
            out[family] = {k: out[family][k] + v for k, v in r.items()}
        else:
            out[family] = dict(r)
    return out


def table(rows, seconds):
    """The results table (Markdown), with the total time."""
    lines = ["| family | configurations | passed | failed | refused | seconds |",
             "|---|---:|---:|---:|---:|---:|"]
    total = {"configs": 0, "passed": 0, "failed": 0, "refused": 0}
    for family, r in rows.items():
        lines.append(f"| {family} | {r['configs']} | {r['passed']} | {r['failed']} | "
                     f"{r['refused']} | {r['seconds']:.1f} |")
        for k in total:
            total[k] += r[k]
    lines.append(f"| all | {total['configs']} | {total['passed']} | {total['failed']} | "
                 f"{total['refused']} | {seconds:.1f} |")
    return "\n".join(lines)
