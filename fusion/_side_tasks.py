"""Tasks an async generator starts beside itself, not in a task group around its ``yield``.

A task group (or any cancel scope) open across an async generator's ``yield``
belongs to the consumer's task. A consumer that stops iterating without closing
the generator (a ``break`` out of ``async for``, the way most people write it)
leaves it to Python's finaliser, which closes it in another task, and that task
cannot leave the group: anyio cancelled the consumer's own task instead
(``CancelledError`` at its next ``await``; seen with ``BatchWorker.stream()``,
``StreamMux.results()`` and ``async for group in pipeline``).

On asyncio the generator's helpers are plain tasks that :meth:`SideTasks.close`
cancels and waits for, from whichever task closes the generator; each helper must
catch what it raises and hand it to the generator (nobody awaits it), and close the
async iterator it reads (:func:`close_input`). On another anyio backend they run in
a task group entered by :meth:`SideTasks.start`, as before: there, close the
generator (``contextlib.aclosing``) if you stop early.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import anyio
import anyio.abc


class SideTasks:
    """Start helpers with :meth:`start`; :meth:`close` in the generator's ``finally``."""

    __slots__ = ("_group", "_tasks")

    def __init__(self) -> None:
        self._tasks: list[asyncio.Task[None]] = []
        self._group: anyio.abc.TaskGroup | None = None

    async def start(self, func: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
        """Run ``func(*args)`` beside the caller until it returns or :meth:`close`."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio
            pass
        else:
            self._tasks.append(loop.create_task(func(*args)))
            return
        if self._group is None:
            self._group = anyio.create_task_group()
            await self._group.__aenter__()
        self._group.start_soon(func, *args)

    async def close(self) -> None:
        """Cancel the helpers and wait until every one has ended (shielded: the caller
        may be closing because it was cancelled); raise what a helper let out."""
        for task in self._tasks:
            task.cancel()
        with anyio.CancelScope(shield=True):
            if self._tasks:
                await asyncio.wait(self._tasks)
            if self._group is not None:
                self._group.cancel_scope.cancel()
                await self._group.__aexit__(None, None, None)
        for task in self._tasks:
            if not task.cancelled() and (error := task.exception()) is not None:
                raise error


async def close_input(iterator: AsyncIterator[Any]) -> None:
    """Close a helper's input (an async generator: a source's ``frames()``) from the
    helper's own task, which iterated it, rather than leave it to the finaliser;
    shielded, as the helper is closing because it was cancelled."""
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        with anyio.CancelScope(shield=True):
            await aclose()
