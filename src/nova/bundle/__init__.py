"""Nova bundle package."""
