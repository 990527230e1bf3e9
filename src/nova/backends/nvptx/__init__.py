"""nova.backends.nvptx.ptx."""
