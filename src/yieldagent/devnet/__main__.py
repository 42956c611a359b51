"""``python -m yieldagent.devnet`` (``make devnet``): see ``yieldagent.devnet.run``."""

import sys

from yieldagent.devnet.run import main

sys.exit(main())
