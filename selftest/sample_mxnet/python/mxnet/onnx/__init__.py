"""mxnet.onnx placeholder: the sample ships the package so the metadata gate can see it."""


def export_model(*args, **kwargs):
    raise NotImplementedError("the sample MXNet tree has no ONNX exporter")
