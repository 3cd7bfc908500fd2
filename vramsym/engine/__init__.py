"""Stages 4-5: options, regimes, compiled regimes, binding, evaluation, the inverse solve, the cache."""
