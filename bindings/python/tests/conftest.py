import os
import sys

# reference.py (the NumPy oracle) sits next to the tests.
sys.path.insert(0, os.path.dirname(__file__))
