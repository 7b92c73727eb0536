"""`python -m onnxc.bridge`: the bridge's command line (utils/fxir_export.py)."""
import sys

from . import main

sys.exit(main())
