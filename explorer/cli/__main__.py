"""`python -m explorer.cli`: the `pgwx` command."""

import sys

from explorer.cli.entry import main

sys.exit(main())
