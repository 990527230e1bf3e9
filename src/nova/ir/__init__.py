"""Nova ir package."""
