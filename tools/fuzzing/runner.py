"""``fuzz run``: every configuration of a folder built by ``fuzz build``,
run by the runtime alone and checked against PyTorch (needs dnnc_runtime,
torch and NumPy; no dnnc, no MLIR).

For each package: draw each configuration's inputs (values.py) and lay
them out with their strides; compute the reference (torch_ops.py) in
float64 on the GPU (float32 for the huge set); fill the outputs with the
poison; launch; compare (compare.py). Prints a line per failure with the
command that rebuilds and reruns just that configuration, then a table
per family: configurations, passed, failed, refused at build, seconds.
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


def check_config(config, run, device):
    """Run ``config`` through ``run(inputs, outputs)`` (the package's
    executable) and return [(output name, Mismatch or error text)] of its
    failures."""
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
    run(inputs, outputs)
    failures = []
    for name, spec in config["outputs"].items():
        entry = spec["entry"]
        rtol, atol = compare.tolerance(entry["dtype"], refs[name],
                                       config["tolerance"].get(name), drawn)
        bad = compare.check(outputs[entry["name"]], refs[name], entry["dtype"], rtol, atol)
        if bad is not None:
            failures.append((name, f"{bad.describe()} (rtol {rtol:g}, atol {atol:.3g})"))
    return failures


def failure_line(config, output, what, arch):
    return (f"FAIL {config['family']} #{config['index']} ({config['dtype']}) {output}: {what}\n"
            f"  repro: {repro(config['family'], config['seed'], config['index'], "
            f"config.get('huge', False), arch)}")


def run(folder, device="cuda", log=print):
    """Run every package of ``folder``; return the table rows by family."""
    import dnnc_runtime

    with open(os.path.join(folder, "index.json")) as f:
        index = json.load(f)
    arch = index["arch"]
    rows = {}

    def row(family):
        return rows.setdefault(family, {"configs": 0, "passed": 0, "failed": 0,
                                        "refused": 0, "seconds": 0.0})
    for c in index["refused"]:
        row(c["family"])["refused"] += 1
        log(f"REFUSED {c['family']} #{c['index']}: {c['error'].splitlines()[0][:300]}")
    start = time.time()
    for package in index["packages"]:
        t = time.time()
        try:
            exe = dnnc_runtime.load(os.path.join(folder, package["package"]))
        except Exception as e:  # the package itself does not load: all its configurations fail
            exe, load_error = None, f"{type(e).__name__}: {e}"

        def launch(inputs, outputs):
            torch.cuda.synchronize()
            exe(**inputs, outputs=outputs)
            torch.cuda.synchronize()
        for config in package["configs"]:
            r = row(config["family"])
            r["configs"] += 1
            if exe is None:
                failures = [("package", load_error)]
            else:
                try:
                    failures = check_config(config, launch, device)
                except Exception as e:  # reported as this configuration's failure
                    failures = [("launch", f"{type(e).__name__}: {str(e).splitlines()[0]}")]
            if failures:
                r["failed"] += 1
                for output, what in failures:
                    log(failure_line(config, output, what, arch))
            else:
                r["passed"] += 1
        row(package["configs"][0]["family"])["seconds"] += time.time() - t
    log(table(rows, time.time() - start))
    return rows


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
