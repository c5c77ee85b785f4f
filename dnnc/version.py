"""dnnc's version, in a module of its own: the package ``__init__`` re-exports
it as ``dnnc.__version__``, and the modules that record it (the artifact's
manifest, the JIT cache key, tuning database entries) import it from here,
below everything that imports them."""

__version__ = "0.1.0"
