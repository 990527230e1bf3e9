"""nova.ir.dialects."""
