"""``fuzz build``: draw configurations, pack them into graphs, compile the
graphs into packages and write ``index.json`` for the runner.

Compiling costs mostly per module, so ``PER_PACKAGE`` configurations of
one type share a graph (each with its own inputs and outputs). A graph
the compiler refuses is split: each of its configurations is compiled
alone, and those refused alone are listed in the index with the error
(a clear refusal is a result, not a crash).
"""

import json
import multiprocessing
import os
import re
import time

from .families import draw
from .huge import COUNT, draw_huge
from .program import FAMILIES

FORMAT = 1
PER_PACKAGE = {"attention": 8, "conv": 10}
DEFAULT_PER_PACKAGE = 16


def configurations(family, seed, count, only=None, huge=False):
    """The configurations of ``family``: ``count`` of them, or just ``only``."""
    pick = draw_huge if huge else draw
    indices = [only] if only is not None else range(count)
    return [pick(family, seed, i) for i in indices]


def packs(configs, per_package):
    """Lists of at most ``per_package`` configurations of one type, in order."""
    by_type = {}
    for c in configs:
        by_type.setdefault(c["dtype"], []).append(c)
    out = []
    for group in by_type.values():
        out += [group[i:i + per_package] for i in range(0, len(group), per_package)]
    return out


def _compile(configs, arch):
    from dnnc import compiler, graph_mlir

    from .graph_builder import graph
    g, entries = graph(configs)
    package = compiler.compile_module(graph_mlir.to_module(g),
                                      compiler.Options(target="cuda", arch=arch))
    return package, entries


def build_pack(job):
    """Compile one pack (``job``: name, configurations, arch, folder); return
    (package entries, refused configurations, seconds)."""
    from dnnc.errors import DnncError

    name, configs, arch, out = job
    start = time.time()
    try:
        groups = [(name, configs, *_compile(configs, arch))]
        refused = []
    except DnncError:
        groups, refused = [], []
        for c in configs:
            try:
                groups.append((f"{name}-c{c['index']}", [c], *_compile([c], arch)))
            except DnncError as e:
                refused.append(dict(c, error=f"{type(e).__name__}: {e}"))
    entries = []
    for pack_name, group, package, outputs in groups:
        package.save(os.path.join(out, f"{pack_name}.dnnpkg"))
        for c, outs in zip(group, outputs):
            for key, entry in outs.items():
                c["outputs"][key]["entry"] = entry
        entries.append({"package": f"{pack_name}.dnnpkg", "kernels": len(package.kernels),
                        "strategies": sorted({k.get("strategy", "") for k in package.kernels}),
                        "configs": group})
    return entries, refused, time.time() - start


def _single(package):
    """(the pack's name, the configuration index) of a package name that a
    refused pack's split gave (``<pack>-c<index>``), else (package, None)."""
    match = re.fullmatch(r"(.*)-c(\d+)", package)
    return (match.group(1), int(match.group(2))) if match else (package, None)


def build(families, seed, count, out, arch="sm_90a", only=None, huge=False, jobs=1, log=print,
          package=None):
    """Build ``count`` configurations of each of ``families`` into ``out``;
    return the index written there. ``only``: just that configuration,
    alone in a package; ``package``: just the package of that name among
    those the whole build makes (packed with the same neighbours; a
    ``<pack>-c<index>`` name, that configuration alone as the split of a
    refused pack compiles it)."""
    if only is not None and package is not None:
        raise ValueError("--only and --package: expected one of them, got both")
    os.makedirs(out, exist_ok=True)
    jobs_list = []
    for family in families:
        if family not in FAMILIES:
            raise ValueError(f"family: expected one of {', '.join(FAMILIES)}, got {family!r}")
        # A huge configuration alone in its package: one at a time in memory.
        configs = configurations(family, seed, min(count, COUNT.get(family, 0)) if huge
                                 else count, only, huge)
        per = 1 if huge else PER_PACKAGE.get(family, DEFAULT_PER_PACKAGE)
        for j, pack in enumerate(packs(configs, per)):
            jobs_list.append((f"{family}-{pack[0]['dtype']}-{j:03d}", pack, arch, out))
    if package is not None:
        name, single = _single(package)
        jobs_list = [(n, p, a, o) for n, p, a, o in jobs_list if n == name]
        if not jobs_list:
            raise ValueError(f"package: expected one that {', '.join(families)} of seed {seed} "
                             f"and count {count} makes, got {package!r}")
        if single is not None:
            ((_, pack, a, o),) = jobs_list
            members = [c for c in pack if c["index"] == single]
            if not members:
                raise ValueError(f"package {package!r}: expected configuration {single} in "
                                 f"{name}, which holds {[c['index'] for c in pack]}")
            jobs_list = [(package, members, a, o)]
    start = time.time()
    if jobs > 1 and len(jobs_list) > 1:
        # Fresh interpreters (spawn): a forked copy of a process that has
        # loaded LLVM may inherit its threads' locks.
        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            results = list(_logged(pool.imap(build_pack, jobs_list), jobs_list, log))
    else:
        results = list(_logged(map(build_pack, jobs_list), jobs_list, log))
    index = {"format": FORMAT, "generated_by": "tools/fuzz build", "arch": arch, "seed": seed,
             "count": count, "only": only, "package": package, "huge": huge,
             "families": list(families), "packages": [], "refused": []}
    for entries, refused, _ in results:
        index["packages"] += entries
        index["refused"] += refused
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f, indent=None, separators=(",", ":"))
        f.write("\n")
    size = sum(os.path.getsize(os.path.join(out, n)) for n in os.listdir(out))
    log(f"{sum(len(p['configs']) for p in index['packages'])} configurations in "
        f"{len(index['packages'])} packages, {len(index['refused'])} refused, in {out} "
        f"({size / 2 ** 20:.1f} MiB, {time.time() - start:.0f} s)")
    return index


def _logged(results, jobs, log):
    for (name, pack, _, _), (entries, refused, seconds) in zip(jobs, results):
        log(f"{name:<28}{len(pack):>4} configurations {sum(e['kernels'] for e in entries):>5} "
            f"kernels {len(refused):>3} refused {seconds:6.1f} s")
        yield entries, refused, seconds
