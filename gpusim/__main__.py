import sys

from gpusim.cli.main import main

sys.exit(main())
