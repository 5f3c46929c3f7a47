"""``python -m epsstar``: the same as the ``epsstar`` command."""

import sys

from epsstar.cli.main import main

sys.exit(main())
