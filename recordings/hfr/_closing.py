"""The close protocol the recorders share: ``with``, ``async with`` and ``aclose()``.

A recorder's one real operation is its blocking ``close()`` (seal the last
chunk, write the index, join its threads). Everything else follows from it:
``aclose()`` runs it in a worker thread through :func:`fusion._timing.run_sync`,
so the event loop keeps running and a virtual clock waits for it, and both
context-manager forms call the matching close on the way out, exception or
not. An error from closing propagates; with an exception already in flight
Python chains the two.
"""

from __future__ import annotations

import abc
from types import TracebackType
from typing import Self

from fusion import run_sync


class Closeable(abc.ABC):
    """A resource finished by a blocking :meth:`close` that is safe to call twice."""

    __slots__ = ()

    @abc.abstractmethod
    def close(self) -> None:
        """Finish the resource (blocking); a second call does nothing."""

    async def aclose(self) -> None:
        """:meth:`close` in a worker thread."""
        await run_sync(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
