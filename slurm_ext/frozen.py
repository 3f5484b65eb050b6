"""A faster ``__init__`` for the frozen, slotted dataclasses built by the hundred thousand.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__`` (its
own ``__setattr__`` refuses), a generic call per field. A simulated run builds a ``Job`` per
queued job and a decision per start and resize, where this was a tenth of a DBES run.
:func:`fast_init` replaces that ``__init__`` with one of the same signature that writes the
slots as plain attribute stores: while it runs, the new instance is of a twin subclass that
adds no slots and sets attributes the ordinary way (CPython's specialised slot store, not a
call), and it is switched back to the class before ``__init__`` returns. The same values in the
same slots, in about a third of the time; nothing else of the class changes (it stays frozen,
hashable and comparable, and an instance is never seen as the twin). An instance of a subclass
(whose layout may differ from the twin's) gets each slot through the slot's own descriptor.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def fast_init(cls: type[T]) -> type[T]:
    """Give ``cls`` (``@dataclass(frozen=True, slots=True)``, plain defaults, no ``__post_init__``)
    an ``__init__`` that writes its slots directly."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if not cls.__dataclass_params__.frozen or "__slots__" not in cls.__dict__:  # type: ignore[attr-defined]
        raise TypeError(f"{cls.__name__}: fast_init is for frozen, slotted dataclasses")
    if hasattr(cls, "__post_init__") or any(
        not f.init or f.default_factory is not dataclasses.MISSING for f in fields
    ):
        raise TypeError(f"{cls.__name__}: fast_init needs plain fields (no __post_init__ or factories)")
    # Same layout as cls (no slots added), ordinary attribute setting: __class__ may go back and
    # forth. Both methods are object's: one Python method of the two (the frozen class's) would
    # send every store through a call again (they share the type's one setattr slot).
    ordinary = {"__slots__": (), "__setattr__": object.__setattr__, "__delattr__": object.__delattr__}
    twin = type(f"_{cls.__name__}Init", (cls,), ordinary)
    # __class__ is switched through its own descriptor: object.__setattr__ would parse its
    # arguments and look the name up first (twice the cost of a switch)
    env: dict[str, Any] = {"_cls": cls, "_twin": twin, "_set_class": object.__dict__["__class__"].__set__}
    params, fast, slow = ["self"], [], []
    for k, f in enumerate(fields):
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            env[f"_d{k}"] = f.default
            params.append(f"{f.name}=_d{k}")
        env[f"_s{k}"] = getattr(cls, f.name).__set__  # the slot's member descriptor
        fast.append(f"        self.{f.name} = {f.name}")
        slow.append(f"        _s{k}(self, {f.name})")
    src = (
        f"def __init__({', '.join(params)}):\n"
        "    if self.__class__ is _cls:\n"
        "        _set_class(self, _twin)\n"
        + "".join(line + "\n" for line in fast)
        + "        _set_class(self, _cls)\n"
        "    else:\n" + "".join(line + "\n" for line in slow or ["        pass"])
    )
    exec(src, env)  # noqa: S102 - generated from the dataclass's own field names, nothing external
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
