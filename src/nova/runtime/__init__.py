"""Nova runtime package."""
