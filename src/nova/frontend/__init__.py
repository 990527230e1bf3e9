"""Nova frontend package."""
