"""`python -m nova <tool> ...` runs one of Nova's command-line tools (translate, opt, run, objdump)."""

from nova.cli.dispatch import main

raise SystemExit(main())
