"""nova.compiler."""
