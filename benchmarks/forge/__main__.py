"""`python -m axon.benchmarks.forge --list | --check NAME|all [--small] [--device D]`: the problem
set's command (`problem_set.main`)."""

import sys

from axon.benchmarks.forge.problem_set import main

sys.exit(main())
