"""``python -m commlab``: the same as the ``commlab`` console script."""
import sys

from commlab.cli import main

if __name__ == "__main__":          # so that a process started by multiprocessing's spawn does not run the CLI again
    sys.exit(main())
