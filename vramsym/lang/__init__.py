"""Stage 1-3: the formula language (grammar, parse, syntax tree, units, library, sympy builder)."""
