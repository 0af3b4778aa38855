"""Models of the semantic preference recall hook (Part B)."""
