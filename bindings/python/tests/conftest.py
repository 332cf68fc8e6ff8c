import os
import sys

# No test reaches the network by accident (as ctest's EDGEATTN_OFFLINE=1): the download tests turn
# it off per call (offline=False) for their loopback server.
os.environ["EDGEATTN_OFFLINE"] = "1"

# reference.py (the NumPy oracle) sits next to the tests.
sys.path.insert(0, os.path.dirname(__file__))
