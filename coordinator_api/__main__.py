import sys

from coordinator_api._cli import main

sys.exit(main())
