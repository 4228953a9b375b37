"""`python -m audit.verifier PACKAGE.zip ...`: the verifier shipped in packages, run from the source tree."""

import sys

from .cli import main

sys.exit(main())
