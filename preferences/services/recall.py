"""The semantic preference recall hook (Part B): config, providers, receipts."""
