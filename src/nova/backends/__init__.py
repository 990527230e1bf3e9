"""Nova backends package."""
