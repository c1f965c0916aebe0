"""Calibration: the registry of a project's metrics and what moves their states.

- :mod:`~pytest_ldd.calibration.registry`: every metric's spec, state, counted
  statistics and history, kept in the store's registry document;
- :mod:`~pytest_ldd.calibration.calibrator`: logs pairs, counts them, promotes and demotes;
- :mod:`~pytest_ldd.calibration.transfer`: ``ldd store export``, ``import`` and ``merge``.

The names users import stand in :mod:`pytest_ldd` itself.
"""
