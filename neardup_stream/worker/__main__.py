import sys

from neardup_stream.worker.main import main

sys.exit(main())
