"""Nova cli package."""
