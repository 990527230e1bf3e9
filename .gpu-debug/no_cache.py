"""Run a script with nova.lz4's LaunchCache bypassed (fresh views, general launches)."""
import runpy
import sys

from nova.lz4 import device as D

D.LaunchCache.view = lambda self, buf, dtype, count, byte_offset=0: D.view(buf, dtype, count, byte_offset)
D.LaunchCache.launch = (lambda self, kernel, args, grid, block, stream, shared_bytes=0:
                        kernel.launch(*args, grid=grid, block=block, stream=stream,
                                      shared_bytes=shared_bytes))
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
