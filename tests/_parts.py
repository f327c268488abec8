"""A model of named parts for the model-file refusal tests (tests/io, tests/r): parameters()
and buffers() return what was given, to_config() returns cfg or raises `raises`."""


class Parts:
    def __init__(self, params, bufs=None, cfg=None, raises=None):
        self.p, self.b, self.cfg, self.raises = params, bufs or {}, cfg, raises

    def parameters(self):
        return self.p

    def buffers(self):
        return self.b

    def to_config(self):
        if self.raises is not None:
            raise self.raises
        return self.cfg
