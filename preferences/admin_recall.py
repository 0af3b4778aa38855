"""Admin of the semantic preference recall hook (configs, extensions, provider notes)."""
