"""Probe: mxnet.runtime.Features() and mxnet.__version__, from the installed wheel."""
from probe_common import run


def main(mx, result):
    from mxnet.runtime import Features
    feats = Features()
    result["features"] = {name: bool(feats.is_enabled(name)) for name in feats.keys()}
    result["ok"] = True


if __name__ == "__main__":
    run(main, "features")
