"""Optional libraries imported on first use, each with the one line that says how to install it."""

from __future__ import annotations

from typing import Any

from fusion.errors import UsageError


def pyarrow_modules() -> tuple[Any, Any]:
    """``(pyarrow, pyarrow.parquet)``.

    Raises:
        UsageError: pyarrow is not installed (the ``parquet`` extra).
    """
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as err:
        raise UsageError(
            "writing Parquet needs pyarrow: pip install '.[parquet]' in the hyperframes "
            "clone, or pyarrow itself (or write a .hfr instead)"
        ) from err
    return pa, pq
