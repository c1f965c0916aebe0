"""The metric model: what a metric is, what it records, and how its errors are counted.

Pure values and functions; nothing here reads or writes a store.

- :mod:`~pytest_ldd.model.metric`: specs, the metric kinds, factories, the gaming-guard;
- :mod:`~pytest_ldd.model.compose`: composite metrics (weighted sum, maximum, minimum);
- :mod:`~pytest_ldd.model.loss`: losses and signals over metrics;
- :mod:`~pytest_ldd.model.estimator`: estimators that predict a metric's next value;
- :mod:`~pytest_ldd.model.observation`: the value a test yields for a metric;
- :mod:`~pytest_ldd.model.gates`: gate bounds (``le``, ``lt``, ``ge``, ``gt``) on raw values;
- :mod:`~pytest_ldd.model.records`: the log lines (calibration pairs, observations);
- :mod:`~pytest_ldd.model.statistics`: the error statistics, the calibration gate, states.

The names users import stand in :mod:`pytest_ldd` itself.
"""
