"""nova.backends.cpu."""
