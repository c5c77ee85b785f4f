"""``Record``: the frozen value classes of a package's manifest, without
``dataclasses``.

A frozen dataclass writes the source of six methods (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``)
and compiles it when its class is made: for the seven classes of
artifact.py, about 4 ms of CPU time in every process that imports the
runtime (``import dnnc_runtime`` took 6.7 ms with them and 2.7 ms with
Records on the build machine, 2026-11-28, ``dataclasses`` itself already
imported), which a JIT cache hit in a new process (dnnc.frontend's
``build_plans`` of a graph seen before) pays before it reads one byte. A Record reads the same class body once, when
the class is made, and shares one generic copy of each method:

    class BufferSpec(Record):
        kind: str
        index: int = 0
        config: dict = Field(factory=dict, compare=False)   # field(default_factory=...)

What a frozen dataclass gives, a Record gives: fields in the order they
are annotated, passed by position or keyword, defaults and factories;
assigning or deleting an attribute raises ``FrozenInstanceError`` (an
AttributeError); equality and hash over the compared fields, between
records of one class; ``repr`` of the shown fields. Not given: inheritance
of fields (no record here derives from another) and ``dataclasses``'
module functions (``fields``, ``replace``), which nothing uses on these.
"""

_MISSING = object()


class FrozenInstanceError(AttributeError):
    """Raised on assigning or deleting a field of a Record."""


class Field:
    """A field's options, where a plain default is not enough: ``factory``
    makes the default (a new dict per record), ``compare=False`` leaves the
    field out of equality and hash, ``repr=False`` out of the repr."""

    __slots__ = ("default", "factory", "compare", "repr")

    def __init__(self, default=_MISSING, *, factory=None, compare=True, repr=True):  # noqa: A002
        self.default, self.factory, self.compare, self.repr = default, factory, compare, repr


class Record:
    """Base of a frozen value class whose fields are its annotations (see
    the module docstring)."""

    _fields = ()      # ((name, Field), ...) in declaration order
    _compared = ()    # names in equality and hash
    _shown = ()       # names in the repr

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fields, defaulted = [], None
        for name in cls.__dict__.get("__annotations__", {}):
            value = cls.__dict__.get(name, _MISSING)
            spec = value if isinstance(value, Field) else Field(value)
            has_default = spec.default is not _MISSING or spec.factory is not None
            if not has_default and defaulted:
                raise TypeError(f"{cls.__name__}: field '{name}' without a default follows "
                                f"'{defaulted}', which has one")
            if has_default:
                defaulted = name
            if isinstance(value, Field):   # the class attribute is the default, if any
                if spec.default is _MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, spec.default)
            fields.append((name, spec))
        cls._fields = tuple(fields)
        cls._compared = tuple(name for name, spec in fields if spec.compare)
        cls._shown = tuple(name for name, spec in fields if spec.repr)

    def __init__(self, *args, **kwargs):
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__}() takes {len(fields)} arguments, got "
                            f"{len(args)}")
        put = object.__setattr__
        for (name, _), value in zip(fields, args):
            if name in kwargs:
                raise TypeError(f"{type(self).__name__}() got multiple values for '{name}'")
            put(self, name, value)
        for name, spec in fields[len(args):]:
            if name in kwargs:
                value = kwargs.pop(name)
            elif spec.factory is not None:
                value = spec.factory()
            elif spec.default is not _MISSING:
                value = spec.default
            else:
                raise TypeError(f"{type(self).__name__}() missing required argument '{name}'")
            put(self, name, value)
        if kwargs:
            raise TypeError(f"{type(self).__name__}() got unexpected argument(s) "
                            f"{', '.join(map(repr, kwargs))}")

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field '{name}'")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field '{name}'")

    def _key(self):
        return tuple(getattr(self, name) for name in self._compared)

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown)
        return f"{type(self).__qualname__}({shown})"
