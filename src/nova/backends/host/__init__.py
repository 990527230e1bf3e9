"""nova.backends.host.lower."""
