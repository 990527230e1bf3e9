"""Nova ir package.

Importing it makes xDSL parse op assembly formats on first use (`nova.ir.lazy_formats`), which
roughly a fifth of the dialect import cost of a cold compile; it must run before the dialect
modules (`nova.ir.context` loads them lazily, so any `nova.ir` import comes first).
"""

from nova.ir import lazy_formats as _lazy_formats

_lazy_formats.install()
