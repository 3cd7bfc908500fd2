"""Data the formulas read: models, GPUs, number formats, capacities, where the files live."""
