"""`python -m axon.frontend.torch PROBLEM.py`: the problem's forward as an `ax` module."""

import sys

from axon.frontend.torch.command import main

sys.exit(main())
