"""`python -m explorer.cli`: the `pgwx` command."""

import sys

from explorer.cli import main

sys.exit(main())
