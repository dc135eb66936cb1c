"""mxnet.runtime: compile-time features and the commit stamp."""
import collections
import ctypes

from .base import _LIB, check_call


class LibFeature(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("enabled", ctypes.c_bool)]


class Feature:
    def __init__(self, name, enabled):
        self.name, self.enabled = name, enabled

    def __repr__(self):
        return ("✔ " if self.enabled else "✖ ") + self.name


class Features(collections.OrderedDict):
    instance = None

    def __new__(cls):
        if cls.instance is None:
            cls.instance = super().__new__(cls)
            super(Features, cls.instance).__init__()
            array = ctypes.POINTER(LibFeature)()
            size = ctypes.c_size_t()
            check_call(_LIB.MXLibInfoFeatures(ctypes.byref(array), ctypes.byref(size)))
            for i in range(size.value):
                f = array[i]
                name = f.name.decode()
                cls.instance[name] = Feature(name, bool(f.enabled))
        return cls.instance

    def __init__(self):
        pass

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(f"Feature '{name}' is unknown, known features are: {list(self.keys())}")
        return self[name].enabled


def feature_list():
    return list(Features().values())


def get_commit_hash():
    out = ctypes.c_char_p()
    check_call(_LIB.MXGetCommitHash(ctypes.byref(out)))
    return out.value.decode()
