"""The library's loggers, with `logging` imported on the first message rather than at start-up
(its import, with threading, traceback and string, costs about as much as the rest of
`import miopenkernels.handle`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

__all__ = ["get_logger"]


class _LazyLogger:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        import logging

        return getattr(logging.getLogger(self._name), attr)


def get_logger(name: str = "miopenkernels") -> logging.Logger:
    """`logging.getLogger(name)`, looked up on each use: a message imports logging."""
    return _LazyLogger(name)  # type: ignore[return-value]
