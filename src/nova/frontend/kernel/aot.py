"""placeholder replaced below"""
def save_bundle(path, kernels):  # noqa
    raise RuntimeError("x")
