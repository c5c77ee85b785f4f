"""cudnn-frontend's graph helpers: the ``graph`` context manager, the ``jit``
and ``graph_cache`` decorators.

``graph(handle, name=, io_data_type=HALF, ...)`` yields ``(g, [])``, a new
``pygraph`` and an empty list for the caller to fill; ``jit(heur_modes)``
wraps a function returning ``(graph, tensors)`` so that the graph is built
(validate through build_plans) if it has no plan yet, and returns
``(graph, uids of tensors)``; ``graph_cache(key_fn)`` memoizes a graph
builder by ``key_fn(*args)`` (oldest entry dropped past ``maxsize``). With
dnnc's JIT cache underneath, a graph built again in a new process compiles
nothing it compiled before.
"""

import contextlib
import functools

from dnnc.frontend.enums import data_type, heur_mode
from dnnc.frontend.pygraph import pygraph


@contextlib.contextmanager
def graph(handle, name="cudnn_graph", io_data_type=data_type.HALF,
          intermediate_data_type=data_type.FLOAT, compute_data_type=data_type.FLOAT):
    """Yields ``(pygraph, [])``."""
    yield pygraph(handle=handle, name=name, io_data_type=io_data_type,
                  intermediate_data_type=intermediate_data_type,
                  compute_data_type=compute_data_type), []


def jit(heur_modes=heur_mode.A, **options):
    """Build the graph a function returns; see the module docstring."""
    modes = heur_modes if isinstance(heur_modes, list) else [heur_modes]

    def decorate(func):
        @functools.wraps(func)
        def build(*args, **kwargs):
            g, tensors = func(*args, **kwargs)
            if g.get_execution_plan_count() <= 0:
                g.build(modes)
            return g, [t.get_uid() for t in tensors]

        return build

    return decorate


def graph_cache(key_fn, maxsize=256):
    """Memoize a graph builder by ``key_fn`` of its arguments."""
    def decorate(func):
        cache = {}

        @functools.wraps(func)
        def cached(*args, **kwargs):
            key = key_fn(*args, **kwargs)
            if key in cache:
                return cache[key]
            result = func(*args, **kwargs)
            if len(cache) >= maxsize:
                cache.pop(next(iter(cache)))
            cache[key] = result
            return result

        return cached

    return decorate
