"""`python -m nova <tool> ...` runs a Nova command-line tool (translate, opt, run, objdump)."""

from nova.cli.dispatch import main

raise SystemExit(main())
