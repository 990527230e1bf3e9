"""Nova runtime.cuda package."""
