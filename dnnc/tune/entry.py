"""A tuning database entry's config, both ways, and the reason it gives.

    text = config_text(config)     # "strategy:tc-sm90,block:384,tile:128x256x64,stages:4,split:1"
    config = config_of(text)       # the same Config
    why = reason(entry, best)      # dnn.config_reason of a kernel that uses the entry

The text is override fields (dnnc/heuristics/override.py, the part after
``KERNEL=``) with every field the strategy reads spelt out, so that applying
it to any config of that strategy gives exactly this config: the tuner
compiles each candidate through the override option, and dnn-configure
rebuilds the winner from it.
"""

from dnnc.errors import PipelineError
from dnnc.heuristics import override
from dnnc.heuristics.config import FIELDS, Config


def _text(value):
    return "x".join(map(str, value)) if isinstance(value, tuple) else str(value)


def config_text(config):
    """The override fields of ``config``: its strategy and every field the
    strategy reads (a tile left empty is left out: the strategy's default)."""
    parts = [f"strategy:{config.strategy}"]
    for name in FIELDS.get(config.strategy, ()):
        value = getattr(config, name)
        if name == "tile" and not value:
            continue
        parts.append(f"{name}:{_text(value)}")
    return ",".join(parts)


def fields_of(text):
    """The {field: value} of override fields ``text`` (PipelineError when bad)."""
    return next(iter(override.parse(f"kernel={text}").values()))


def config_of(text):
    """The Config that override fields ``text`` describe, every field not
    given at its default; PipelineError when the text or a field does not
    fit its strategy."""
    fields = fields_of(text)
    if "strategy" not in fields:
        raise PipelineError(f"tuned config '{text}': expected a strategy field")
    return override.apply(Config(fields["strategy"]), fields).replace(reason="")


def _ms(value):
    return f"{value:.3g} ms" if isinstance(value, (int, float)) else "not timed"


def reason(entry, best):
    """The ``dnn.config_reason`` of a kernel configured from ``entry``;
    ``best`` is the heuristics' first choice now (its reason is kept)."""
    won = config_of(entry["config"])
    heuristic = entry.get("heuristic") or {}
    tried = len(entry.get("candidates") or ())
    where = f"tuning DB: {entry['gpu']}, {tried} candidate{'s' if tried != 1 else ''}"
    if entry.get("date"):
        where += f", {entry['date'][:10]}"
    if heuristic.get("config") == entry["config"]:
        head = f"tuned: the heuristics' choice was the fastest, {_ms(entry['ms'])} ({where})"
    else:
        head = (f"tuned: {won} {_ms(entry['ms'])} vs {_ms(heuristic.get('ms'))} heuristic "
                f"({where})")
    tail = best.reason if best.reason else ""
    if won != best:
        tail = f"ranked first: {best}" + (f" ({best.reason})" if best.reason else "")
    return f"{head}; heuristics: {tail}" if tail else head
