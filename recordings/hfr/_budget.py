"""Moved: the decoded-cost budget is checked in :mod:`recordings.hfr._limits`.

Only :mod:`recordings.hfr._stamp_index` as committed still imports
:func:`walked_cost` from here (that module is being edited in another change);
this name goes with that import.
"""

from recordings.hfr._limits import walked_cost

__all__ = ["walked_cost"]
