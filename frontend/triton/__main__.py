"""`python -m axon.frontend.triton FILE`: the report of FILE's Triton kernels and launches."""

import sys

from axon.frontend.triton.report import main

sys.exit(main())
