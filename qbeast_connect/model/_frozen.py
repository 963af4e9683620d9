"""A read-only, picklable dict for mapping fields of frozen models (internal)."""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

__all__ = ["FrozenDict"]

K = TypeVar("K")
V = TypeVar("V")


class FrozenDict(dict[K, V]):
    """A ``dict`` whose contents cannot change after construction.

    Unlike ``types.MappingProxyType`` it can be pickled, so models holding it can be shipped
    to Spark workers.
    """

    __slots__ = ()

    def _readonly(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(f"{type(self).__name__} is read-only")

    __setitem__ = _readonly
    __delitem__ = _readonly
    __ior__ = _readonly
    clear = _readonly
    pop = _readonly
    popitem = _readonly
    setdefault = _readonly
    update = _readonly

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the class applied to a plain dict copy."""
        return (type(self), (dict(self),))

    def __repr__(self) -> str:
        """Return ``FrozenDict({...})``."""
        return f"{type(self).__name__}({dict.__repr__(self)})"
