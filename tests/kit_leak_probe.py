"""Run inside a built student kit by tests/test_kit.py: the probe of checker/platforms/kit_probe.py, as a script.

`python kit_leak_probe.py KIT CASES OUT [EXTRA.py ...]`: see checker/platforms/kit_probe.py (the same probe
`hwcheck validate` runs). Its file is run by path, not imported, so that the `checker` it finds is the
kit's, never the full package's.
"""
import os
import runpy

if __name__ == "__main__":
    runpy.run_path(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "checker", "platforms", "kit_probe.py"),
                   run_name="__main__")
