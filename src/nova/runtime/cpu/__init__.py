"""Nova runtime.cpu package."""
