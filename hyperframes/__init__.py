"""hyperframes, the application: the command line, TOML configs, Ray fleets, the demo.

The library itself is three packages below this one, each importing only
those under it: :mod:`fusion` (the core), :mod:`adapters` (sources) and
:mod:`recordings` (storage). This package builds on all of them:

* :mod:`hyperframes.cli`: every ``hyperframes`` command;
* :mod:`hyperframes.config`: the TOML schema and the factory that builds a
  :class:`~fusion.Pipeline` from it;
* :mod:`hyperframes.fleet`: recordings processed on Ray;
* :mod:`hyperframes.demo`: the demo session and its report.
"""
