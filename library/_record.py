"""`dataclass`, `field`, `fields` and `replace` for the modules on the runtime's start-up path.

The standard library's cost more than the rest of a first call: `import dataclasses` imports
`inspect` (about 10 ms) and each class costs about a millisecond, since its methods are written
out as source and compiled (bench/startup.py; the 25 classes a first call defines took 31 ms
of 82). Here the methods are shared functions that read the class's field list, and defining a
class costs microseconds.

Type checkers see the standard library's (the `TYPE_CHECKING` branch), so every class is
written and checked as a dataclass. At run time the subset the library uses is kept: `frozen`,
`eq`, `repr`; `field(default=, default_factory=, repr=, compare=)`; `__post_init__`; `fields`
(objects with the field's `name`); methods a
class defines itself are left alone; the hash follows the dataclass rules (from the compared
fields when frozen, none when mutable and compared, unless the class defines one); `replace`
builds a new instance through `__init__`, so `__post_init__` runs again, as in the standard
library. Instances pickle and copy like dataclasses (their fields live in `__dict__`), and
`dataclasses.fields`, `asdict`, `replace` and `is_dataclass` work on them.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dataclasses import FrozenInstanceError, dataclass, field, fields, replace
else:
    import operator

    _MISSING = object()

    class FrozenInstanceError(AttributeError):
        """Assigning to a field of a frozen instance."""

    class _Field:
        __slots__ = ("name", "default", "default_factory", "repr", "compare")

        def __init__(self, default, default_factory, repr, compare):  # noqa: A002
            self.name = ""
            self.default = default
            self.default_factory = default_factory
            self.repr = repr
            self.compare = compare

    def field(*, default=_MISSING, default_factory=_MISSING, repr=True,  # noqa: A002
              compare=True):
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")
        return _Field(default, default_factory, repr, compare)

    def _init(self, *args, **kwargs):
        # Hot: launches, the miss ranking and manifests of many thousand problems make many
        # records, so the fields are written as two dict updates: the defaults (in field order,
        # None where the caller must give one), then what the caller gave.
        cls = type(self)
        if args:
            kwargs = _keywords(self, cls.__record_init__, args, kwargs)
        given = kwargs.keys()
        if not (given <= cls.__record_names__ and cls.__record_required__ <= given):
            _refuse(self, kwargs)
        state = self.__dict__
        state.update(cls.__record_start__)
        state.update(kwargs)
        for name, factory in cls.__record_factories__:
            if name not in kwargs:
                state[name] = factory()
        post = cls.__record_post__
        if post is not None:
            post(self)

    def _refuse(self, kwargs):
        """The TypeError of an `__init__` call that misses a field or names none."""
        for name, default, factory in self.__record_init__:
            if name not in kwargs and default is _MISSING and factory is _MISSING:
                raise TypeError(f"{type(self).__name__}() missing 1 required argument: "
                                f"{name!r}")
        unknown = next(k for k in kwargs if k not in self.__record_names__)
        raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument "
                        f"{unknown!r}")

    def _keywords(self, spec, args, kwargs):
        """The positional arguments of a record's `__init__` as keywords."""
        if len(args) > len(spec):
            raise TypeError(f"{type(self).__name__}() takes {len(spec)} positional arguments "
                            f"but {len(args)} were given")
        out = dict(kwargs)
        for (name, _, _), value in zip(spec[:len(args)], args, strict=True):
            if name in kwargs:
                raise TypeError(f"{type(self).__name__}() got multiple values for "
                                f"argument {name!r}")
            out[name] = value
        return out

    def _repr(self):
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}"
                          for f in self.__record_fields__ if f.repr)
        return f"{type(self).__qualname__}({shown})"

    def _compared(self):
        return type(self).__record_key__(self)

    def _eq(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _compared(self) == _compared(other)

    def _hash(self):
        return hash(_compared(self))

    def _frozen_hash(self):
        # A frozen record's hash is made once (records key the hot path's caches) and never
        # pickled: string hashes differ between processes.
        state = self.__dict__
        cached = state.get("__record_hash__")
        if cached is None:
            cached = state["__record_hash__"] = hash(_compared(self))
        return cached

    def _getstate(self):
        state = self.__dict__
        if "__record_hash__" not in state:
            return state
        return {k: v for k, v in state.items() if k != "__record_hash__"}

    def _frozen_setattr(self, name, value):
        if type(self) is self.__record_class__ or name in self.__record_names__:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def _frozen_delattr(self, name):
        if type(self) is self.__record_class__ or name in self.__record_names__:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)

    def _fields_of(cls):
        fields = {}
        for base in reversed(cls.__mro__[1:]):
            for f in base.__dict__.get("__record_fields__", ()):
                fields[f.name] = f
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():
            if "ClassVar" in str(annotation):
                continue
            default = cls.__dict__.get(name, _MISSING)
            if isinstance(default, _Field):
                f = default
                if f.default is _MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, f.default)
            else:
                f = _Field(default, _MISSING, True, True)
            f.name = name
            fields[name] = f
        return tuple(fields.values())

    class _StdlibFields:
        """`__dataclass_fields__` made on first access, so that `dataclasses.fields`, `asdict`,
        `replace` and `is_dataclass` work on these classes too (dataclasses is imported then,
        by whoever asks)."""

        def __get__(self, obj, cls):
            import dataclasses

            made = cls.__dict__.get("__record_stdlib_fields__")
            if made is None:
                made = {}
                for f in cls.__record_fields__:
                    kwargs = {"repr": f.repr, "compare": f.compare}
                    if f.default is not _MISSING:
                        kwargs["default"] = f.default
                    if f.default_factory is not _MISSING:
                        kwargs["default_factory"] = f.default_factory
                    std = dataclasses.field(**kwargs)
                    std.name = f.name
                    std.type = cls.__annotations__.get(f.name)
                    std._field_type = dataclasses._FIELD
                    made[f.name] = std
                cls.__record_stdlib_fields__ = made
            return made

    def _set_new(cls, name, value):
        if name not in cls.__dict__:
            setattr(cls, name, value)

    def dataclass(cls=None, /, *, frozen=False, eq=True, repr=True):  # noqa: A002
        def wrap(cls):
            fields = _fields_of(cls)
            cls.__record_fields__ = fields
            cls.__record_names__ = frozenset(f.name for f in fields)
            cls.__record_class__ = cls
            cls.__match_args__ = tuple(f.name for f in fields)
            cls.__dataclass_fields__ = _StdlibFields()
            compared = tuple(f.name for f in fields if f.compare)
            cls.__record_key__ = (operator.attrgetter(*compared) if len(compared) > 1 else
                                  (lambda obj, get=operator.attrgetter(*compared): (get(obj),))
                                  if compared else (lambda obj: ()))
            cls.__record_init__ = tuple((f.name, f.default, f.default_factory) for f in fields)
            cls.__record_start__ = {f.name: None if f.default is _MISSING else f.default
                                    for f in fields}
            cls.__record_required__ = frozenset(
                f.name for f in fields
                if f.default is _MISSING and f.default_factory is _MISSING)
            cls.__record_factories__ = tuple((f.name, f.default_factory) for f in fields
                                             if f.default_factory is not _MISSING)
            post = getattr(cls, "__post_init__", None)
            cls.__record_post__ = post
            _set_new(cls, "__init__", _init)
            if repr:
                _set_new(cls, "__repr__", _repr)
            if eq:
                _set_new(cls, "__eq__", _eq)
            explicit_hash = cls.__dict__.get("__hash__", _MISSING) not in (_MISSING, None)
            if not explicit_hash and eq:
                cls.__hash__ = _frozen_hash if frozen else None
                if frozen:
                    _set_new(cls, "__getstate__", _getstate)
            if frozen:
                cls.__setattr__ = _frozen_setattr
                cls.__delattr__ = _frozen_delattr
            return cls

        return wrap if cls is None else wrap(cls)

    def fields(class_or_instance):
        return class_or_instance.__record_fields__

    def replace(obj, /, **changes):
        for f in obj.__record_fields__:
            changes.setdefault(f.name, getattr(obj, f.name))
        return obj.__class__(**changes)

__all__ = ["FrozenInstanceError", "dataclass", "field", "fields", "replace"]
