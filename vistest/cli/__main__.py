"""``python -m vistest.cli``: the same as the ``vistest`` command."""
from . import main

main()
