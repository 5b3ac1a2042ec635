"""paddle.ParamAttr: how a layer creates a parameter."""


class ParamAttr:
    """ParamAttr(name=None, initializer=None, learning_rate=1.0, regularizer=None,
    trainable=True, do_model_average=True, need_clip=True)."""

    def __init__(self, name=None, initializer=None, learning_rate=1.0, regularizer=None,
                 trainable=True, do_model_average=True, need_clip=True):
        if name is not None and not isinstance(name, str):
            raise TypeError("ParamAttr: name must be a str, got {}".format(type(name).__name__))
        if not isinstance(learning_rate, (int, float)) or learning_rate < 0:
            raise ValueError("ParamAttr: learning_rate must be a number >= 0, got {!r}".format(
                learning_rate))
        self.name = name
        self.initializer = initializer
        self.learning_rate = float(learning_rate)
        self.regularizer = regularizer
        self.trainable = bool(trainable)
        self.do_model_average = do_model_average
        self.need_clip = bool(need_clip)

    def __repr__(self):
        return ('ParamAttr(name={!r}, initializer={!r}, learning_rate={}, regularizer={!r}, '
                'trainable={}, need_clip={})').format(self.name, self.initializer,
                                                     self.learning_rate, self.regularizer,
                                                     self.trainable, self.need_clip)

    @staticmethod
    def _to_attr(arg):
        """None -> ParamAttr(); str -> ParamAttr(name=str); ParamAttr as is;
        False -> False; an initializer -> ParamAttr(initializer=it);
        a list -> [each converted]."""
        if arg is None:
            return ParamAttr()
        if isinstance(arg, (list, tuple)):
            return [ParamAttr._to_attr(a) for a in arg]
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if isinstance(arg, bool):
            return ParamAttr() if arg else False
        if callable(arg):
            return ParamAttr(initializer=arg)
        raise TypeError("{} cast to ParamAttr is not supported".format(type(arg).__name__))
