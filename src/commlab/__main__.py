"""``python -m commlab``: the same as the ``commlab`` console script."""
import sys

from commlab.cli import main

sys.exit(main())
