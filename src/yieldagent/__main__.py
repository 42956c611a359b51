"""``python -m yieldagent`` is the ``yieldagent`` command."""

import sys

from yieldagent.cli import main

sys.exit(main())
