"""Nova passes package."""
